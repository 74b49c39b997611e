import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { ClusterView } from '../../../src/live/cluster-board';
import type { BoardGroup, BoardGroupRow } from '../../../src/live/board-views';
import type { BoardListener, BoardSeat, TakenRows } from '../../../src/live/group-board';
import {
  PAGE_FLUSH_INTERVAL_MS,
  PAGE_STORM_CHANGES,
  PAGE_STORM_FLUSH_INTERVAL_MS,
  PageFlushes,
  PageStream,
} from '../../../src/live/page-stream';
import { ManualTime } from '../../../src/time';

/** A response whose write buffer the test fills and drains. */
class FakeResponse extends EventEmitter {
  readonly written: string[] = [];
  isFull = false;
  writableEnded = false;
  status = 0;
  socket = { setTimeout: jest.fn(), destroy: jest.fn() };
  writeHead(status: number): void {
    this.status = status;
  }
  write(chunk: string): boolean {
    this.written.push(chunk);
    return !this.isFull;
  }
  end(chunk?: string): void {
    if (chunk !== undefined) this.written.push(chunk);
    this.writableEnded = true;
  }
  /** Every frame written, in order, whatever the writes that carried them. */
  frames(): string[] {
    return this.written
      .flatMap((chunk) => chunk.split('\n\n').filter((f) => f !== ''))
      .map((f) => `${f}\n\n`);
  }
  /** The events of the frames written, in order. */
  events(): string[] {
    return this.frames().map((f) => /^event: (\w+)/.exec(f)![1]);
  }
  /** The data of the frames written, in order, parsed. */
  data<T>(): T[] {
    return this.frames().map((f) => JSON.parse(f.split('data: ')[1]) as T);
  }
}

/**
 * A page's seat on a GroupBoard stand-in: rows the test changes wait here until the page takes them, each
 * group once, its latest, the latest change last; the page is told once until it takes, as GroupBoard does.
 */
class FakeSeat implements BoardSeat {
  listener: BoardListener | undefined;
  left = 0;
  private readonly waiting = new Map<string, BoardGroupRow>();
  private changes = 0;
  private isTold = false;

  /** A group's row changed: after a change of the group (`isGroupChange`), or a lag round. */
  change(changed: BoardGroupRow, isGroupChange = true): void {
    this.waiting.delete(changed.groupId);
    this.waiting.set(changed.groupId, changed);
    if (isGroupChange) this.changes++;
    if (this.isTold || this.listener === undefined) return;
    this.isTold = true;
    this.listener.onRowsWaiting();
  }

  takeRows(): TakenRows {
    const taken = { rows: [...this.waiting.values()], changes: this.changes };
    this.waiting.clear();
    this.changes = 0;
    this.isTold = false;
    return taken;
  }

  pendingGroups(): number {
    return this.waiting.size;
  }

  leave(): void {
    this.left++;
  }

  /** PageStream.open's `join`. */
  readonly join = (listener: BoardListener): BoardSeat => {
    this.listener = listener;
    return this;
  };
}

function row(groupId: string, generationId: number): BoardGroupRow {
  return { groupId, generationId } as BoardGroupRow;
}

function view(groupId: string, generationId: number): BoardGroup {
  return { groupId, generationId, rebalances: [] } as unknown as BoardGroup;
}

describe('PageStream', () => {
  let time: ManualTime;
  let flushes: PageFlushes;
  let response: FakeResponse;
  let stream: PageStream;
  let board: FakeSeat;
  let dropped: number[];

  beforeEach(() => {
    time = new ManualTime();
    flushes = new PageFlushes(time);
    response = new FakeResponse();
    dropped = [];
    stream = newStream(response);
    board = new FakeSeat();
    stream.open(board.join);
  });

  afterEach(() => flushes.close());

  function newStream(into: FakeResponse): PageStream {
    return new PageStream(
      into as unknown as ServerResponse,
      { maxPendingGroups: 2, maxLagMs: 5_000 },
      time,
      flushes,
      (pending) => dropped.push(pending),
    );
  }

  /** Frames go out on the next flush, PAGE_FLUSH_INTERVAL_MS after the first waited. */
  const nextFlush = (): void => void time.advance(PAGE_FLUSH_INTERVAL_MS);

  /** Advances in steps of 50 ms (the manual clock runs a task that falls due at the end of its advance). */
  const advanceInSteps = (ms: number): void => {
    for (let t = 0; t < ms; t += 50) time.advance(50);
  };

  /** The monotonic times of the response's writes from now on. */
  const recordWrites = (): number[] => {
    const writtenAtMs: number[] = [];
    const write = response.write.bind(response);
    response.write = (chunk: string): boolean => {
      writtenAtMs.push(time.monotonicMs());
      return write(chunk);
    };
    return writtenAtMs;
  };

  it('writes nothing before the flush interval has passed since the first frame waited', () => {
    board.change(row('a', 1));
    time.advance(PAGE_FLUSH_INTERVAL_MS - 1);
    board.change(row('a', 2));
    expect(response.events()).toEqual(['hello']);
    time.advance(1);
    expect(response.frames().slice(1)).toEqual(['event: row\ndata: {"groupId":"a","generationId":2}\n\n']);
    // Nothing waits: no flush is due, and the next frame waits a whole interval again.
    time.advance(10 * PAGE_FLUSH_INTERVAL_MS);
    expect(response.written).toHaveLength(2);
    board.change(row('b', 1));
    time.advance(PAGE_FLUSH_INTERVAL_MS - 1);
    expect(response.written).toHaveLength(2);
    time.advance(1);
    expect(response.events()).toEqual(['hello', 'row', 'row']);
  });

  it('flushes every page in the same run, each writing the same frames', () => {
    const other = new FakeResponse();
    const second = newStream(other);
    const secondBoard = new FakeSeat();
    second.open(secondBoard.join);
    time.advance(PAGE_FLUSH_INTERVAL_MS / 2);
    const shared = row('a', 1);
    board.change(shared);
    time.advance(PAGE_FLUSH_INTERVAL_MS / 2);
    secondBoard.change(shared);
    expect(other.events()).toEqual(['hello']);
    // The second page's frame waited half an interval: it goes out with the first page's, not later.
    time.advance(PAGE_FLUSH_INTERVAL_MS / 2);
    expect(response.written[1]).toBe('event: row\ndata: {"groupId":"a","generationId":1}\n\n');
    expect(other.written[1]).toBe(response.written[1]);
  });

  it('writes once a storm interval while groups change 100 times a second or more, and within an interval after', () => {
    expect(PAGE_FLUSH_INTERVAL_MS).toBe(100);
    expect(PAGE_STORM_FLUSH_INTERVAL_MS).toBe(1_000);
    const writtenAtMs = recordWrites();
    // A change every 5 ms for 3 s: 20 an interval.
    let generation = 0;
    for (let t = 0; t < 3_000; t += 5) {
      board.change(row('a', ++generation));
      time.advance(5);
    }
    expect(flushes.isStorm).toBe(true);
    advanceInSteps(1_100);
    expect(flushes.isStorm).toBe(false);
    board.change(row('a', ++generation));
    advanceInSteps(100);
    // At 100 ms the first 20 changes: a storm's; then one write a second, the last with the storm's last
    // change (at 2,995 ms); then, a second after it, quick again.
    expect(writtenAtMs).toEqual([100, 1_100, 2_100, 3_100, 4_200]);
    // Nothing was lost: each write carried the latest frame (generation n changed at (n - 1) × 5 ms).
    const generations = response
      .data<{ generationId: number }>()
      .slice(1)
      .map((r) => r.generationId);
    expect(generations).toEqual([20, 220, 420, 600, 601]);
  });

  it('is no storm while one group rebalances over and over: its changes are written every interval', () => {
    const writtenAtMs = recordWrites();
    for (let t = 0; t < 2_000; t += 50) {
      board.change(row('a', t));
      time.advance(50);
    }
    expect(flushes.isStorm).toBe(false);
    expect(writtenAtMs).toHaveLength(20);
    expect(writtenAtMs.slice(0, 3)).toEqual([100, 200, 300]);
  });

  it('writes once a storm interval while many groups change in bursts, and within an interval once they stop', () => {
    expect(PAGE_STORM_CHANGES).toBe(10);
    const writtenAtMs = recordWrites();
    // 20 groups change together at 0 ms and every 400 ms until 2,000 ms: a pause between the bursts.
    for (let t = 0; t < 2_400; t += 50) {
      if (t % 400 === 0) for (let g = 0; g < 20; g++) board.change(row(`g${g}`, t / 400 + 1));
      time.advance(50);
    }
    // One group changes at 3,000 ms, within a second of the last busy write, and at 4,200 ms, after it.
    advanceInSteps(600);
    board.change(row('g0', 100));
    advanceInSteps(1_200);
    board.change(row('g0', 101));
    advanceInSteps(200);
    expect(writtenAtMs).toEqual([100, 1_400, 2_600, 4_000, 4_300]);
    // Each busy write carried every group, at its latest burst: nothing was lost.
    const rows = response.data<{ groupId: string; generationId: number }>().slice(1);
    expect(rows.filter((r) => r.groupId === 'g7').map((r) => r.generationId)).toEqual([1, 4, 6]);
  });

  it('takes no lag round for a storm: a change after one is written within an interval', () => {
    const writtenAtMs = recordWrites();
    for (let g = 0; g < 20; g++) board.change(row(`g${g}`, 1), false);
    advanceInSteps(200);
    board.change(row('g0', 2));
    advanceInSteps(100);
    expect(writtenAtMs).toEqual([100, 300]);
    expect(flushes.isStorm).toBe(false);
  });

  it('writes a tick due while frames wait in their write, with the clock of that write', () => {
    stream.onTick(time.nowMs());
    expect(response.events()).toEqual(['hello', 'tick']);
    board.change(row('a', 1));
    const dueMs = time.nowMs();
    stream.onTick(dueMs);
    expect(response.written).toHaveLength(2);
    nextFlush();
    expect(response.written).toHaveLength(3);
    expect(response.events()).toEqual(['hello', 'tick', 'row', 'tick']);
    const tick = response.data<{ nowMs: number }>()[3];
    expect(tick.nowMs).toBe(dueMs + PAGE_FLUSH_INTERVAL_MS);
    // Nothing waits: a tick goes out at once again.
    stream.onTick(time.nowMs());
    expect(response.written).toHaveLength(4);
  });

  it('writes the snapshot of a page that opens at once, in one write, without waiting for a flush', () => {
    const other = new FakeResponse();
    const otherBoard = new FakeSeat();
    otherBoard.change(row('a', 1), false);
    otherBoard.change(row('b', 1), false);
    newStream(other).open(otherBoard.join);
    expect(other.written).toHaveLength(2);
    expect(other.events()).toEqual(['hello', 'row', 'row']);
  });

  it('flushes again a page whose take threw, and the pages after it, on the next flush', () => {
    const other = new FakeResponse();
    const otherBoard = new FakeSeat();
    newStream(other).open(otherBoard.join);
    const takeRows = board.takeRows.bind(board);
    board.takeRows = (): TakenRows => {
      board.takeRows = takeRows;
      throw new Error('a broken board');
    };
    board.change(row('a', 1));
    otherBoard.change(row('b', 1));
    expect(nextFlush).toThrow('a broken board');
    expect(response.events()).toEqual(['hello']);
    nextFlush();
    expect(response.events()).toEqual(['hello', 'row']);
    expect(other.events()).toEqual(['hello', 'row']);
  });

  it('writes nothing once the flushes are closed (the server is closing)', () => {
    board.change(row('a', 1));
    flushes.close();
    time.advance(PAGE_FLUSH_INTERVAL_MS);
    expect(response.events()).toEqual(['hello']);
  });

  it('writes the frames of one flush in one write, one per group, the latest', () => {
    for (let generation = 1; generation <= 10; generation++) board.change(row('a', generation));
    board.change(row('b', 1));
    expect(response.events()).toEqual(['hello']);
    nextFlush();
    expect(response.written).toHaveLength(2);
    expect(response.frames().slice(1)).toEqual([
      'event: row\ndata: {"groupId":"a","generationId":10}\n\n',
      'event: row\ndata: {"groupId":"b","generationId":1}\n\n',
    ]);
    stream.onTick(7);
    expect(response.status).toBe(200);
    expect(response.events()).toEqual(['hello', 'row', 'row', 'tick']);
  });

  it("writes the cluster's latest view after the groups' frames of the flush, and holds one while the page is slow", () => {
    const cluster = (partitionCount: number): ClusterView => ({ partitionCount }) as ClusterView;
    stream.onCluster(cluster(1));
    board.change(row('a', 1));
    stream.onCluster(cluster(2));
    nextFlush();
    expect(response.written).toHaveLength(2);
    expect(response.frames().slice(1)).toEqual([
      'event: row\ndata: {"groupId":"a","generationId":1}\n\n',
      'event: cluster\ndata: {"partitionCount":2}\n\n',
    ]);
    // This write fills the buffer: the views after it wait.
    response.isFull = true;
    stream.onCluster(cluster(3));
    nextFlush();
    for (let count = 4; count <= 9; count++) stream.onCluster(cluster(count));
    nextFlush();
    // Blocked: nothing more written, and only the latest view waits (no group counts against the limit).
    expect(response.frames().slice(4)).toEqual([]);
    expect(stream.pendingFrames).toBe(0);
    expect(dropped).toEqual([]);
    response.isFull = false;
    response.emit('drain');
    expect(response.frames().slice(4)).toEqual(['event: cluster\ndata: {"partitionCount":9}\n\n']);
  });

  it("writes members' heartbeats after the groups' frames of the flush, so an older group view never overwrites them", () => {
    board.change(row('a', 1));
    stream.onHeartbeats([{ groupId: 'a', members: [['m', 100]] }]);
    stream.onHeartbeats([{ groupId: 'a', members: [['m', 200]] }]);
    nextFlush();
    expect(response.written).toHaveLength(2);
    expect(response.frames().slice(1)).toEqual([
      'event: row\ndata: {"groupId":"a","generationId":1}\n\n',
      'event: heartbeats\ndata: [{"groupId":"a","members":[["m",200]]}]\n\n',
    ]);
  });

  it("writes the shown group's latest view after the rows, and none once the group is gone", () => {
    stream.onGroup(view('a', 1));
    board.change(row('b', 1));
    stream.onGroup(view('a', 2));
    stream.onHeartbeats([{ groupId: 'a', members: [['m', 100]] }]);
    nextFlush();
    expect(response.written).toHaveLength(2);
    expect(response.frames().slice(1)).toEqual([
      'event: row\ndata: {"groupId":"b","generationId":1}\n\n',
      'event: group\ndata: {"groupId":"a","generationId":2,"rebalances":[]}\n\n',
      'event: heartbeats\ndata: [{"groupId":"a","members":[["m",100]]}]\n\n',
    ]);
    stream.onGroup(view('a', 3));
    stream.onGone('a', 'group-deleted', 5);
    nextFlush();
    expect(response.events().slice(4)).toEqual(['gone']);
  });

  it('writes a group gone and back within one flush as gone, then its new row', () => {
    board.change(row('a', 1));
    nextFlush();
    stream.onGone('a', 'group-deleted', 5);
    board.change(row('a', 1));
    nextFlush();
    expect(response.events()).toEqual(['hello', 'row', 'gone', 'row']);
    expect(response.data().slice(2)).toEqual([
      { groupId: 'a', reason: 'group-deleted', atMs: 5 },
      { groupId: 'a', generationId: 1 },
    ]);
  });

  it('merges heartbeats that wait, so a member sent once and another sent later both arrive', () => {
    // Every member when the page selects a group, then a round's move of one of them before the flush.
    stream.onHeartbeats([
      {
        groupId: 'a',
        members: [
          ['m', 100],
          ['n', null],
        ],
      },
    ]);
    stream.onHeartbeats([{ groupId: 'a', members: [['n', 300]] }]);
    nextFlush();
    expect(response.frames().slice(1)).toEqual([
      'event: heartbeats\ndata: [{"groupId":"a","members":[["m",100],["n",300]]}]\n\n',
    ]);
  });

  it("names the stream in its hello frame, for the page's select requests", () => {
    expect(response.frames()[0]).toBe(
      `event: hello\ndata: {"nowMs":${time.nowMs()},"streamId":"${stream.id}"}\n\n`,
    );
    expect(stream.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("leaves each group's latest row on the board while the page is slow, and sends them on drain", () => {
    response.isFull = true;
    board.change(row('a', 1));
    nextFlush(); // written: the buffer is now full
    board.change(row('a', 2));
    board.change(row('b', 1));
    board.change(row('a', 3));
    nextFlush();
    expect(stream.pendingFrames).toBe(2);
    expect(response.events()).toEqual(['hello', 'row']);
    response.isFull = false;
    response.emit('drain');
    // Taken only now: each group once, the one changed last last.
    expect(response.data().slice(2)).toEqual([
      { groupId: 'b', generationId: 1 },
      { groupId: 'a', generationId: 3 },
    ]);
    expect(stream.pendingFrames).toBe(0);
  });

  it('drops a page behind on more groups than allowed (checked each second), saying why, and leaves the board', () => {
    response.isFull = true;
    board.change(row('a', 1));
    nextFlush();
    for (const id of ['b', 'c', 'd']) board.change(row(id, 1));
    // The rows wait on the board, which keeps them once for every page: the page costs nothing more
    // until its next tick checks.
    expect(dropped).toEqual([]);
    stream.onTick(time.nowMs());
    expect(dropped).toEqual([3]);
    expect(board.left).toBe(1);
    expect(stream.pendingFrames).toBe(0);
    expect(response.writableEnded).toBe(true);
    expect(response.events().at(-1)).toBe('dropped');
    expect(response.frames().at(-1)).toContain('watchMaxPendingGroups');
    expect(response.socket.setTimeout).toHaveBeenCalled();
  });

  it('drops a page that reads nothing for longer than maxLagMs, even with no group changing', () => {
    response.isFull = true;
    board.change(row('a', 1));
    nextFlush();
    time.advance(5_000);
    stream.onTick(time.nowMs());
    expect(dropped).toEqual([]);
    time.advance(1);
    stream.onTick(time.nowMs());
    expect(dropped).toEqual([0]);
    expect(response.frames().at(-1)).toContain('watchMaxLagMs');
  });

  it('leaves the board when the page goes away', () => {
    response.emit('close');
    expect(board.left).toBe(1);
    board.change(row('a', 1));
    nextFlush();
    expect(response.events()).toEqual(['hello']);
  });
});
