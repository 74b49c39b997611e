import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { ClusterView } from '../../../src/server/cluster-board';
import type { BoardGroup, BoardListener } from '../../../src/server/group-board';
import { PageStream } from '../../../src/server/page-stream';
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
}

/** Frames go out once per event-loop turn. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function view(groupId: string, generationId: number): BoardGroup {
  return { groupId, generationId } as BoardGroup;
}

describe('PageStream', () => {
  let time: ManualTime;
  let response: FakeResponse;
  let stream: PageStream;
  let left: number;
  let dropped: number[];

  beforeEach(() => {
    time = new ManualTime();
    response = new FakeResponse();
    left = 0;
    dropped = [];
    stream = new PageStream(
      response as unknown as ServerResponse,
      { maxPendingGroups: 2, maxLagMs: 5_000 },
      time,
      (pending) => dropped.push(pending),
    );
    stream.open((_listener: BoardListener) => () => left++);
  });

  it('writes the frames of one turn in one write, one per group, the latest', async () => {
    for (let generation = 1; generation <= 10; generation++) stream.onGroup(view('a', generation));
    stream.onGroup(view('b', 1));
    expect(response.events()).toEqual(['hello']);
    await nextTurn();
    expect(response.written).toHaveLength(2);
    expect(response.frames().slice(1)).toEqual([
      'event: group\ndata: {"groupId":"a","generationId":10}\n\n',
      'event: group\ndata: {"groupId":"b","generationId":1}\n\n',
    ]);
    stream.onTick(7);
    expect(response.status).toBe(200);
    expect(response.events()).toEqual(['hello', 'group', 'group', 'tick']);
  });

  it("writes the cluster's latest view after the groups' frames of the turn, and holds one while the page is slow", async () => {
    const cluster = (partitionCount: number): ClusterView => ({ partitionCount }) as ClusterView;
    stream.onCluster(cluster(1));
    stream.onGroup(view('a', 1));
    stream.onCluster(cluster(2));
    await nextTurn();
    expect(response.written).toHaveLength(2);
    expect(response.frames().slice(1)).toEqual([
      'event: group\ndata: {"groupId":"a","generationId":1}\n\n',
      'event: cluster\ndata: {"partitionCount":2}\n\n',
    ]);
    // This write fills the buffer: the views after it wait.
    response.isFull = true;
    stream.onCluster(cluster(3));
    await nextTurn();
    for (let count = 4; count <= 9; count++) stream.onCluster(cluster(count));
    await nextTurn();
    // Blocked: nothing more written, and only the latest view waits (no group counts against the limit).
    expect(response.frames().slice(4)).toEqual([]);
    expect(stream.pendingFrames).toBe(0);
    expect(dropped).toEqual([]);
    response.isFull = false;
    response.emit('drain');
    expect(response.frames().slice(4)).toEqual(['event: cluster\ndata: {"partitionCount":9}\n\n']);
  });

  it("writes members' heartbeats after the groups' frames of the turn, so an older group view never overwrites them", async () => {
    stream.onGroup(view('a', 1));
    stream.onHeartbeats([{ groupId: 'a', members: [['m', 100]] }]);
    stream.onHeartbeats([{ groupId: 'a', members: [['m', 200]] }]);
    await nextTurn();
    expect(response.written).toHaveLength(2);
    expect(response.frames().slice(1)).toEqual([
      'event: group\ndata: {"groupId":"a","generationId":1}\n\n',
      'event: heartbeats\ndata: [{"groupId":"a","members":[["m",200]]}]\n\n',
    ]);
  });

  it('merges heartbeats that wait, so a member sent once and another sent later both arrive', async () => {
    // Every member when the page selects a group, then a round's move of one of them in the same turn.
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
    await nextTurn();
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

  it('keeps only the latest frame of each group while the page is slow, and sends them on drain', async () => {
    response.isFull = true;
    stream.onGroup(view('a', 1));
    await nextTurn(); // written: the buffer is now full
    stream.onGroup(view('a', 2));
    stream.onGroup(view('b', 1));
    stream.onLag(view('a', 3));
    await nextTurn();
    expect(stream.pendingFrames).toBe(2);
    expect(response.events()).toEqual(['hello', 'group']);
    response.isFull = false;
    response.emit('drain');
    expect(
      response
        .frames()
        .slice(2)
        .map((f) => JSON.parse(f.split('data: ')[1])),
    ).toEqual([
      { groupId: 'a', generationId: 3 },
      { groupId: 'b', generationId: 1 },
    ]);
    expect(stream.pendingFrames).toBe(0);
  });

  it('drops a page behind on more groups than allowed, saying why, and leaves the board', async () => {
    response.isFull = true;
    stream.onGroup(view('a', 1));
    await nextTurn();
    for (const id of ['b', 'c', 'd']) stream.onGroup(view(id, 1));
    expect(dropped).toEqual([3]);
    expect(left).toBe(1);
    expect(stream.pendingFrames).toBe(0);
    expect(response.writableEnded).toBe(true);
    expect(response.events().at(-1)).toBe('dropped');
    expect(response.frames().at(-1)).toContain('watchMaxPendingGroups');
    expect(response.socket.setTimeout).toHaveBeenCalled();
  });

  it('drops a page that reads nothing for longer than maxLagMs, even with no group changing', async () => {
    response.isFull = true;
    stream.onGroup(view('a', 1));
    await nextTurn();
    time.advance(5_000);
    stream.onTick(time.nowMs());
    expect(dropped).toEqual([]);
    time.advance(1);
    stream.onTick(time.nowMs());
    expect(dropped).toEqual([0]);
    expect(response.frames().at(-1)).toContain('watchMaxLagMs');
  });

  it('leaves the board when the page goes away', async () => {
    response.emit('close');
    expect(left).toBe(1);
    stream.onGroup(view('a', 1));
    await nextTurn();
    expect(response.events()).toEqual(['hello']);
  });
});
