import type { GroupChange, GroupChangeListener, MemberLastHeartbeat } from '../../../src/group';
import { encodeAssignment } from '../../../src/protocol/consumer-protocol';
import type { DescribedGroup, DescribedGroupMember } from '../../../src/protocol/group-messages';
import {
  BOARD_BACKLOG_LIMIT,
  GroupBoard,
  type BoardListener,
  type BoardSeat,
  type TakenRows,
} from '../../../src/live/group-board';
import type { RemoteGroupListener } from '../../../src/live/group-board';
import type { BoardGroup, BoardGroupRow, BoardHeartbeats } from '../../../src/live/board-views';
import { BOARD_HISTORY_LENGTH } from '../../../src/live/group-timeline';
import { ManualTime } from '../../../src/time';

/** A GroupEvents stand-in: the test emits each change itself, as the coordinator would. */
class Changes {
  listeners: GroupChangeListener[] = [];
  subscriptions = 0;
  /** The coordinator's description of each group now, handed to a new subscription as its snapshots. */
  readonly current = new Map<string, DescribedGroup>();
  readonly watchGroups = (_ids: readonly string[], listener: GroupChangeListener): (() => void) => {
    this.subscriptions++;
    for (const group of this.current.values()) {
      listener({ group, reason: 'snapshot', timestampMs: 0, isSnapshot: true } as GroupChange);
    }
    this.listeners.push(listener);
    return () => (this.listeners = this.listeners.filter((l) => l !== listener));
  };

  /** Groups whose last heartbeats were read, in order. */
  readonly heartbeatReads: string[] = [];
  readonly lastHeartbeats = (groupId: string): MemberLastHeartbeat[] | undefined => {
    this.heartbeatReads.push(groupId);
    return this.current.get(groupId)?.members.map((m) => [m.memberId, m.lastHeartbeatMs] as const);
  };

  emit(group: DescribedGroup, reason: string, timestampMs: number): void {
    const change = { group, reason, timestampMs, isSnapshot: false } as GroupChange;
    for (const l of this.listeners) l(change);
  }
}

function member(id: string, partitions: number[], lastHeartbeatMs = 0): DescribedGroupMember {
  return {
    memberId: id,
    groupInstanceId: '',
    clientId: `client-${id}`,
    clientHost: '10.0.0.1',
    memberMetadata: Buffer.alloc(0),
    memberAssignment: encodeAssignment({
      partitions: partitions.map((partition) => ({ topic: 't', partition })),
    }),
    lastHeartbeatMs,
  };
}

function group(
  state: string,
  generationId: number,
  members: DescribedGroupMember[],
  groupId = 'g',
): DescribedGroup {
  return {
    errorCode: 0,
    errorMessage: '',
    groupId,
    groupState: state,
    protocolType: 'consumer',
    protocolData: state === 'Stable' ? 'range' : '',
    members,
    generationId,
  };
}

/**
 * A page that keeps the last row of each group, and the last view of the group it selected. It takes its
 * rows as soon as it is told they wait (a PageStream takes them at its next write), unless `isReading` is
 * false.
 */
class Page implements BoardListener {
  seat: BoardSeat | undefined;
  isReading = true;
  readonly rows = new Map<string, BoardGroupRow>();
  rowEvents = 0;
  /** Of each row taken, whether its take counted a change of some group. */
  readonly rowCauses: boolean[] = [];
  /** Each take: its rows' group ids and the changes it counted. */
  readonly takes: { groupIds: string[]; changes: number }[] = [];
  readonly views = new Map<string, BoardGroup>();
  ticks: number[] = [];
  gone: string[] = [];
  heartbeats: BoardHeartbeats[][] = [];
  told = 0;
  onRowsWaiting(): void {
    this.told++;
    if (this.isReading) this.take();
  }
  take(): TakenRows {
    const taken = this.seat!.takeRows();
    this.takes.push({ groupIds: taken.rows.map((r) => r.groupId), changes: taken.changes });
    for (const row of taken.rows) {
      this.rowEvents++;
      this.rowCauses.push(taken.changes > 0);
      this.rows.set(row.groupId, row);
    }
    return taken;
  }
  onGroup(g: BoardGroup): void {
    this.views.set(g.groupId, g);
  }
  onHeartbeats(changes: readonly BoardHeartbeats[]): void {
    this.heartbeats.push([...changes]);
  }
  onGone(groupId: string): void {
    this.gone.push(groupId);
  }
  onTick(nowMs: number): void {
    this.ticks.push(nowMs);
  }
}

describe('GroupBoard', () => {
  let time: ManualTime;
  let changes: Changes;
  const committed = new Map<number, number>();
  let highWatermark = 100;
  let board: GroupBoard;

  beforeEach(() => {
    time = new ManualTime();
    changes = new Changes();
    committed.clear();
    highWatermark = 100;
    board = new GroupBoard({
      watchGroups: changes.watchGroups,
      lastHeartbeats: changes.lastHeartbeats,
      time,
      lag: {
        offsets: {
          list: () =>
            [...committed].map(([partition, offset]) => ({
              topic: 't',
              partition,
              offset: { committedOffset: offset },
            })) as never,
        },
        highWatermark: () => highWatermark,
      },
    });
  });

  afterEach(() => board.close());

  /** Opens `page` on the board and takes its first rows, as a PageStream does; returns how it leaves. */
  function open(page: Page): () => void {
    const seat = board.open(page)!;
    page.seat = seat;
    if (page.isReading) page.take();
    return () => seat.leave();
  }

  it('watches nothing until the first page opens', () => {
    expect(changes.subscriptions).toBe(0);
    open(new Page());
    open(new Page());
    expect(changes.subscriptions).toBe(1);
  });

  it('records a session expiry as a departed member and a rebalance that ends with the new generation', () => {
    const page = new Page();
    open(page);
    board.select(page, 'g');
    changes.emit(group('Stable', 3, [member('a', [0]), member('b', [1])]), 'snapshot', 1_000);
    changes.emit(group('PreparingRebalance', 3, [member('a', [])]), 'session-expired', 2_000);
    changes.emit(group('PreparingRebalance', 3, [member('a', [])]), 'member-joined', 2_100);
    changes.emit(group('CompletingRebalance', 4, [member('a', [])]), 'join-completed', 2_500);
    changes.emit(group('Stable', 4, [member('a', [0, 1])]), 'rebalance-completed', 2_600);

    const view = page.views.get('g')!;
    expect(view.departed).toEqual([
      {
        memberId: 'b',
        groupInstanceId: '',
        clientId: 'client-b',
        clientHost: '10.0.0.1',
        reason: 'session-expired',
        atMs: 2_000,
      },
    ]);
    expect(view.rebalances).toEqual([
      {
        startMs: 2_000,
        reasons: ['session-expired', 'member-joined'],
        generationId: 4,
        endMs: 2_600,
        endState: 'Stable',
      },
    ]);
    expect(view.members.map((m) => m.assignment)).toEqual([
      [
        { topic: 't', partition: 0 },
        { topic: 't', partition: 1 },
      ],
    ]);
  });

  it('holds changes until a page takes its rows, then works them in as if heard one by one', () => {
    const page = new Page();
    page.isReading = false;
    open(page);
    board.select(page, 'g');
    changes.emit(group('Stable', 3, [member('a', [0]), member('b', [1])]), 'snapshot', 1_000);
    changes.emit(group('PreparingRebalance', 3, [member('a', [])]), 'session-expired', 2_000);
    changes.emit(group('PreparingRebalance', 3, [member('a', []), member('c', [])]), 'member-joined', 2_100);
    changes.emit(group('PreparingRebalance', 3, [member('a', [])]), 'member-left', 2_200);
    changes.emit(group('CompletingRebalance', 4, [member('a', [])]), 'join-completed', 2_500);
    changes.emit(group('Stable', 4, [member('a', [0, 1])]), 'rebalance-completed', 2_600);
    // Told at the first change, so its write is due as before; nothing worked in yet.
    expect(page.told).toBe(1);
    expect(page.views.size).toBe(0);
    expect(page.take().rows).toMatchObject([{ groupId: 'g', state: 'Stable', generationId: 4 }]);
    expect(page.takes.at(-1)!.changes).toBe(6);
    // One view, the latest, with every step of the timeline: c joined and left between two takes.
    const view = page.views.get('g')!;
    expect(view.departed.map((d) => [d.memberId, d.reason])).toEqual([
      ['b', 'session-expired'],
      ['c', 'member-left'],
    ]);
    expect(view.rebalances).toEqual([
      {
        startMs: 2_000,
        reasons: ['session-expired', 'member-joined', 'member-left'],
        generationId: 4,
        endMs: 2_600,
        endState: 'Stable',
      },
    ]);
  });

  it('tells again a page that took from inside a catch-up, of the changes worked in after its take', () => {
    const first = new Page();
    const second = new Page();
    first.isReading = second.isReading = false;
    open(first);
    open(second);
    changes.emit(group('Stable', 1, [member('a', [0])], 'g'), 'snapshot', 1_000);
    first.take();
    second.take();
    // The second page takes as soon as it hears a group went (a PageStream only queues a frame).
    second.onGone = (groupId: string): void => {
      second.gone.push(groupId);
      second.take();
    };
    changes.emit({ ...group('Dead', -1, [], 'g'), errorCode: 69 }, 'group-deleted', 2_000);
    changes.emit(group('Stable', 1, [member('b', [0])], 'h'), 'snapshot', 2_000);
    expect(second.told).toBe(2);
    first.take();
    expect(second.gone).toEqual(['g']);
    // Its take inside the catch-up came before h was worked in: it is told again.
    expect(second.told).toBe(3);
    expect(second.take().rows.map((r) => r.groupId)).toEqual(['h']);
  });

  it('keeps the changes after one whose working-in throws', () => {
    const page = new Page();
    page.isReading = false;
    const failing = new GroupBoard({
      watchGroups: changes.watchGroups,
      lastHeartbeats: undefined,
      time,
      lag: {
        offsets: {
          list: (groupId: string) => {
            if (groupId === 'bad') throw new Error('a broken store');
            return [];
          },
        },
        highWatermark: () => undefined,
      },
    });
    page.seat = failing.open(page);
    changes.emit(group('Stable', 1, [member('a', [0])], 'bad'), 'snapshot', 1_000);
    changes.emit(group('Stable', 1, [member('b', [0])], 'h'), 'snapshot', 1_000);
    expect(() => page.take()).toThrow('a broken store');
    // The change that threw is lost (a bug, surfaced to the caller); the one after it is not.
    expect(page.take().rows.map((r) => r.groupId)).toEqual(['h']);
    failing.close();
  });

  it('works changes in at BOARD_BACKLOG_LIMIT, and each lag round, while no page takes', () => {
    const page = new Page();
    page.isReading = false;
    open(page);
    board.select(page, 'g');
    for (let generation = 1; generation < BOARD_BACKLOG_LIMIT; generation++) {
      changes.emit(group('Stable', generation, [member('a', [0])]), 'rebalance-completed', generation);
    }
    expect(page.views.size).toBe(0);
    changes.emit(group('Stable', BOARD_BACKLOG_LIMIT, [member('a', [0])]), 'rebalance-completed', 0);
    expect(page.views.get('g')!.generationId).toBe(BOARD_BACKLOG_LIMIT);
    changes.emit(group('Stable', BOARD_BACKLOG_LIMIT + 1, [member('a', [0])]), 'rebalance-completed', 0);
    time.advance(1_000);
    expect(page.views.get('g')!.generationId).toBe(BOARD_BACKLOG_LIMIT + 1);
    expect(page.ticks).toHaveLength(1);
  });

  it('never changes a view it has handed out: a later change makes a new one (pages serialise views once)', () => {
    const page = new Page();
    open(page);
    board.select(page, 'g');
    committed.set(0, 40);
    changes.emit(group('Stable', 3, [member('a', [0]), member('b', [1])]), 'snapshot', 1_000);
    changes.emit(group('PreparingRebalance', 3, [member('a', [])]), 'session-expired', 2_000);
    const during = page.views.get('g')!;
    const before = JSON.stringify(during);
    changes.emit(group('PreparingRebalance', 3, [member('a', [])]), 'member-joined', 2_100);
    changes.emit(group('CompletingRebalance', 4, [member('a', [])]), 'join-completed', 2_500);
    changes.emit(group('Stable', 4, [member('a', [0, 1])]), 'rebalance-completed', 2_600);
    committed.set(0, 90);
    time.advance(1_000);
    const after = page.views.get('g')!;
    expect(JSON.stringify(during)).toBe(before);
    expect(during.rebalances[0]).toMatchObject({ reasons: ['session-expired'], endMs: null });
    expect(after.rebalances[0]).toMatchObject({
      reasons: ['session-expired', 'member-joined'],
      endMs: 2_600,
    });
    expect(after.lagSamples.map(([, lag]) => lag)).toEqual([60, 10]);
    expect(during.lagSamples.map(([, lag]) => lag)).toEqual([60]);
  });

  it('keeps the last BOARD_HISTORY_LENGTH rebalances and departed members, oldest left out first', () => {
    const page = new Page();
    open(page);
    board.select(page, 'g');
    changes.emit(group('Empty', 0, []), 'snapshot', 0);
    for (let i = 1; i <= BOARD_HISTORY_LENGTH + 2; i++) {
      changes.emit(group('PreparingRebalance', i - 1, [member(`m${i}`, [])]), 'member-joined', i * 10);
      changes.emit(group('Empty', i, []), 'member-left', i * 10 + 5);
    }
    const view = page.views.get('g')!;
    expect(view.rebalances).toHaveLength(BOARD_HISTORY_LENGTH);
    expect(view.rebalances[0].startMs).toBe(30);
    expect(view.rebalances.at(-1)).toMatchObject({ startMs: 220, endMs: 225, endState: 'Empty' });
    expect(view.departed.map((d) => d.memberId)).toEqual(
      Array.from({ length: BOARD_HISTORY_LENGTH }, (_, i) => `m${i + 3}`),
    );
    expect(page.rows.get('g')).toEqual({
      groupId: 'g',
      state: 'Empty',
      generationId: BOARD_HISTORY_LENGTH + 2,
      protocolType: 'consumer',
      protocol: '',
      memberCount: 0,
      totalLag: null,
      lastRebalanceMs: 225,
      coordinatorId: null,
    });
  });

  it('sends every page the rows of all groups, and the whole view only to the pages that show the group', () => {
    const shows = new Page();
    const other = new Page();
    open(shows);
    open(other);
    changes.emit(group('Stable', 1, [member('a', [0])]), 'snapshot', 1_000);
    changes.emit(group('Stable', 1, [member('b', [0])], 'h'), 'snapshot', 1_000);
    expect([...other.rows.keys()]).toEqual(['g', 'h']);
    expect(shows.views.size).toBe(0);
    // Selecting: the view at once, then with each change; the other page still hears rows only.
    board.select(shows, 'g');
    expect(shows.views.get('g')!.members.map((m) => m.memberId)).toEqual(['a']);
    changes.emit(group('PreparingRebalance', 1, [member('a', [0])]), 'member-joined', 2_000);
    expect(shows.views.get('g')!.rebalances).toHaveLength(1);
    expect(shows.rows.get('g')).toMatchObject({ state: 'PreparingRebalance', lastRebalanceMs: 2_000 });
    expect(other.rows.get('g')).toBe(shows.rows.get('g'));
    changes.emit(group('PreparingRebalance', 1, [], 'h'), 'member-left', 2_000);
    expect([...shows.views.keys()]).toEqual(['g']);
    expect(other.views.size).toBe(0);
    // Showing none: rows only again.
    board.select(shows, undefined);
    const before = shows.views.get('g');
    changes.emit(group('Stable', 2, [member('a', [0])]), 'rebalance-completed', 2_100);
    expect(shows.views.get('g')).toBe(before);
    expect(shows.rows.get('g')!.generationId).toBe(2);
  });

  it('keeps which groups changed once for every page: a page takes each changed group once, oldest change first', () => {
    const first = new Page();
    const second = new Page();
    first.isReading = second.isReading = false;
    open(first);
    open(second);
    expect(first.take().rows).toEqual([]);
    changes.emit(group('Stable', 1, [member('a', [0])], 'g'), 'snapshot', 1_000);
    changes.emit(group('Stable', 1, [member('b', [0])], 'h'), 'snapshot', 1_000);
    changes.emit(group('PreparingRebalance', 1, [member('a', [0])], 'g'), 'member-joined', 1_100);
    // Told once until they take, however many changes: a change costs nothing per page.
    expect([first.told, second.told]).toEqual([1, 1]);
    // At most: the three changes held count one each until they are worked in.
    expect(first.seat!.pendingGroups()).toBe(3);
    const taken = first.take();
    expect(first.takes.at(-1)).toEqual({ groupIds: ['h', 'g'], changes: 3 });
    expect(taken.rows[1]).toMatchObject({ groupId: 'g', state: 'PreparingRebalance' });
    // Pages taking at the same point share one list of rows (and so their frames, page-stream.ts).
    expect(second.take().rows).toBe(taken.rows);
    expect(first.take()).toEqual({ rows: [], changes: 0 });
    expect(first.seat!.pendingGroups()).toBe(0);
    changes.emit(group('Stable', 1, [member('b', [0])], 'h'), 'member-updated', 1_200);
    expect([first.told, second.told]).toEqual([2, 2]);
    expect(first.take().rows.map((r) => r.groupId)).toEqual(['h']);
    // A page that left is told nothing more, and takes nothing.
    second.seat!.leave();
    changes.emit(group('Stable', 2, [member('b', [0])], 'h'), 'member-updated', 1_300);
    expect(second.told).toBe(2);
    expect(second.take()).toEqual({ rows: [], changes: 0 });
    expect(first.told).toBe(3);
  });

  it('samples lag once a second while a page is open, and tells pages only of changed lag', () => {
    const page = new Page();
    open(page);
    board.select(page, 'g');
    committed.set(0, 40);
    changes.emit(group('Stable', 1, [member('a', [0])]), 'snapshot', 1_000);
    expect(page.views.get('g')!.totalLag).toBe('60');
    expect(page.rows.get('g')!.totalLag).toBe('60');
    expect(page.rowEvents).toBe(1);
    time.advance(1_000);
    expect(page.rowEvents).toBe(1);
    expect(page.ticks).toHaveLength(1);
    committed.set(0, 90);
    time.advance(999);
    expect(page.rowEvents).toBe(1);
    time.advance(1);
    expect(page.rowEvents).toBe(2);
    expect(page.rows.get('g')!.totalLag).toBe('10');
    const view = page.views.get('g')!;
    expect(view.totalLag).toBe('10');
    expect(view.partitions).toEqual([
      { topic: 't', partition: 0, committedOffset: '90', highWatermark: '100', lag: '10', memberId: 'a' },
    ]);
    expect(view.lagSamples.map(([, lag]) => lag)).toEqual([60, 10]);
    // The group's first change, then the lag round's row, which is no change of the group (PageFlushes).
    expect(page.rowCauses).toEqual([true, false]);
    const later = new Page();
    open(later);
    expect(later.rowCauses).toEqual([false]);
  });

  it('reads the last heartbeats of the group a page shows, once a second, and tells it those that moved', () => {
    const page = new Page();
    open(page);
    const g = group('Stable', 1, [member('a', [0], 900), member('b', [1])]);
    const h = group('Stable', 1, [member('c', [0], 800)], 'h');
    changes.current.set('g', g).set('h', h);
    changes.emit(g, 'snapshot', 1_000);
    changes.emit(h, 'snapshot', 1_000);
    expect(page.rows.get('g')!.memberCount).toBe(2);
    expect(page.views.size).toBe(0);

    // A page that shows no group's detail costs no read.
    time.advance(1_000);
    expect(changes.heartbeatReads).toEqual([]);
    expect(page.heartbeats).toEqual([]);

    // Selecting a group sends its view and every member's heartbeat at once.
    board.select(page, 'g');
    expect(page.views.get('g')!.members.map((m) => m.lastHeartbeatMs)).toEqual([900, null]);
    expect(page.heartbeats).toEqual([
      [
        {
          groupId: 'g',
          members: [
            ['a', 900],
            ['b', null],
          ],
        },
      ],
    ]);
    changes.current.set('g', group('Stable', 1, [member('a', [0], 900), member('b', [1], 1_500)]));
    changes.current.set('h', group('Stable', 1, [member('c', [0], 1_700)], 'h'));
    changes.heartbeatReads.length = 0;
    time.advance(1_000);
    expect(page.heartbeats[1]).toEqual([{ groupId: 'g', members: [['b', 1_500]] }]);
    expect(changes.heartbeatReads).toEqual(['g']);
    time.advance(1_000);
    expect(page.heartbeats).toHaveLength(2);

    // Two pages on one group: one read a round, one message object for both (serialized once).
    const other = new Page();
    open(other);
    board.select(other, 'g');
    changes.current.set('g', group('Stable', 1, [member('a', [0], 2_900), member('b', [1], 1_500)]));
    changes.heartbeatReads.length = 0;
    time.advance(1_000);
    expect(changes.heartbeatReads).toEqual(['g']);
    expect(page.heartbeats[2]).toEqual([{ groupId: 'g', members: [['a', 2_900]] }]);
    expect(other.heartbeats[1][0]).toBe(page.heartbeats[2][0]);

    // Switching to another group: its members at once, read now; the other page still hears of g.
    board.select(page, 'h');
    expect(page.heartbeats[3]).toEqual([{ groupId: 'h', members: [['c', 1_700]] }]);
    // A page that left is read for no more.
    const leave = open(new Page());
    leave();
    changes.heartbeatReads.length = 0;
    time.advance(1_000);
    expect(changes.heartbeatReads.sort()).toEqual(['g', 'h']);

    // A page opened later gets the latest in its group view.
    const later = new Page();
    open(later);
    board.select(later, 'g');
    expect(later.views.get('g')!.members.map((m) => m.lastHeartbeatMs)).toEqual([2_900, 1_500]);
  });

  it('forgets what a page showed once it leaves or shows none', () => {
    const page = new Page();
    const leave = open(page);
    const g = group('Stable', 1, [member('a', [0], 900)]);
    changes.current.set('g', g);
    changes.emit(g, 'snapshot', 1_000);
    board.select(page, 'g');
    board.select(page, undefined);
    changes.heartbeatReads.length = 0;
    time.advance(1_000);
    expect(changes.heartbeatReads).toEqual([]);
    board.select(page, 'g');
    leave();
    changes.heartbeatReads.length = 0;
    time.advance(1_000);
    expect(changes.heartbeatReads).toEqual([]);
    // Selecting after leaving does nothing.
    board.select(page, 'g');
    expect(changes.heartbeatReads).toEqual([]);
  });

  it('samples lag again for a page that opens after every page had closed', () => {
    const close = open(new Page());
    committed.set(0, 40);
    changes.emit(group('Stable', 1, [member('a', [0])]), 'snapshot', 1_000);
    close();
    committed.set(0, 70);
    const late = new Page();
    open(late);
    expect(late.rows.get('g')!.totalLag).toBe('30');
  });

  it('hands a page opened later every group, its timeline included, and drops a group gone Dead', () => {
    open(new Page());
    changes.emit(group('Stable', 1, [member('a', [0])]), 'snapshot', 1_000);
    changes.emit(group('PreparingRebalance', 1, []), 'member-left', 2_000);
    changes.emit(group('Empty', 2, []), 'group-emptied', 2_100);
    const late = new Page();
    open(late);
    board.select(late, 'g');
    expect(late.views.get('g')!.rebalances).toMatchObject([{ reasons: ['member-left'], endState: 'Empty' }]);
    expect(late.views.get('g')!.departed).toMatchObject([{ memberId: 'a', reason: 'member-left' }]);
    changes.emit({ ...group('Dead', -1, []), errorCode: 69 }, 'group-deleted', 3_000);
    expect(late.gone).toEqual(['g']);
    expect(board.size).toBe(0);
  });

  it('keeps history from the start when asked: a page opened later shows the rebalance, the expiry and the lag before it', () => {
    committed.set(0, 90);
    board.keepHistory();
    expect(changes.subscriptions).toBe(1);
    changes.emit(group('Stable', 1, [member('a', [0]), member('b', [])]), 'snapshot', 1_000);
    time.advance(1_000);
    committed.set(0, 95);
    time.advance(1_000);
    changes.emit(group('PreparingRebalance', 1, [member('a', [])]), 'session-expired', 3_000);
    changes.emit(group('CompletingRebalance', 2, [member('a', [])]), 'join-completed', 3_100);
    changes.emit(group('Stable', 2, [member('a', [0])]), 'rebalance-completed', 3_200);
    committed.set(0, 100);
    time.advance(1_000);

    const late = new Page();
    open(late);
    board.select(late, 'g');
    const view = late.views.get('g')!;
    expect(view.rebalances).toMatchObject([
      { reasons: ['session-expired'], generationId: 2, endState: 'Stable' },
    ]);
    expect(view.departed).toMatchObject([{ memberId: 'b', reason: 'session-expired' }]);
    expect(view.lagSamples.map(([, lag]) => lag)).toEqual([10, 5, 0]);
    expect(late.rows.get('g')).toMatchObject({ totalLag: '0', lastRebalanceMs: 3_200 });
  });

  describe('in a cluster', () => {
    /** The other nodes' watches, as the ClusterGroupFeed passes them on. */
    let remote: RemoteGroupListener | undefined;
    let remoteSubscriptions = 0;
    const notCoordinator = (groupId = 'g'): DescribedGroup => ({
      ...group('', -1, [], groupId),
      errorCode: 16, // NOT_COORDINATOR
      protocolType: '',
    });

    beforeEach(() => {
      board.close();
      remote = undefined;
      remoteSubscriptions = 0;
      board = new GroupBoard({
        localNodeId: 1,
        watchGroups: changes.watchGroups,
        remoteGroups: (listener) => {
          remoteSubscriptions++;
          remote = listener;
          return () => (remote = undefined);
        },
        lastHeartbeats: undefined,
        lag: undefined,
        time,
      });
    });

    const fromNode = (nodeId: number, g: DescribedGroup, reason: string, atMs: number): void =>
      remote!.onChange(nodeId, { group: g, reason, timestampMs: atMs, isSnapshot: false } as GroupChange);

    it("lists the groups other nodes coordinate beside this node's, each with its coordinator", () => {
      const page = new Page();
      open(page);
      expect(remoteSubscriptions).toBe(1);
      changes.emit(group('Stable', 1, [member('a', [0])], 'local'), 'snapshot', 1_000);
      fromNode(3, group('Stable', 2, [member('b', [0])], 'billing'), 'snapshot', 1_000);
      expect(page.rows.get('local')).toMatchObject({ state: 'Stable', coordinatorId: 1 });
      expect(page.rows.get('billing')).toMatchObject({ state: 'Stable', generationId: 2, coordinatorId: 3 });
      board.select(page, 'billing');
      expect(page.views.get('billing')).toMatchObject({ coordinatorId: 3, members: [{ memberId: 'b' }] });
    });

    it('follows a group whose coordinator died to its new coordinator, timeline kept', () => {
      const page = new Page();
      open(page);
      board.select(page, 'billing');
      fromNode(3, group('Stable', 1, [member('a', [0]), member('b', [1])], 'billing'), 'snapshot', 1_000);
      remote!.onNodeLost(3);
      expect(page.rows.get('billing')).toMatchObject({ state: 'Stable', coordinatorId: null });
      expect(page.gone).toEqual([]);
      // Node 2 now leads the group's partition: it loads the group, and the member that died with node 3
      // expires there.
      fromNode(2, group('Stable', 1, [member('a', [0]), member('b', [1])], 'billing'), 'group-loaded', 5_000);
      fromNode(2, group('PreparingRebalance', 1, [member('a', [])], 'billing'), 'session-expired', 6_000);
      fromNode(2, group('Stable', 2, [member('a', [0, 1])], 'billing'), 'rebalance-completed', 6_500);
      expect(page.rows.get('billing')).toMatchObject({ state: 'Stable', generationId: 2, coordinatorId: 2 });
      expect(page.views.get('billing')).toMatchObject({
        coordinatorId: 2,
        departed: [{ memberId: 'b', reason: 'session-expired' }],
        rebalances: [{ reasons: ['session-expired'], generationId: 2, endState: 'Stable' }],
      });
    });

    it('keeps a group its coordinator unloads until the next coordinator tells of it, and hears only that one', () => {
      const page = new Page();
      open(page);
      changes.emit(group('Stable', 1, [member('a', [0])], 'g'), 'snapshot', 1_000);
      changes.emit(notCoordinator(), 'group-unloaded', 2_000);
      expect(page.rows.get('g')).toMatchObject({ state: 'Stable', coordinatorId: null });
      fromNode(2, group('Stable', 1, [member('a', [0])], 'g'), 'group-loaded', 2_100);
      expect(page.rows.get('g')).toMatchObject({ coordinatorId: 2 });
      // The old coordinator's late word changes nothing: neither an unload nor an end.
      changes.emit(notCoordinator(), 'group-unloaded', 2_200);
      changes.emit({ ...group('Dead', -1, [], 'g'), errorCode: 69 }, 'group-deleted', 2_300);
      remote!.onNodeLost(3);
      expect(page.rows.get('g')).toMatchObject({ state: 'Stable', coordinatorId: 2 });
      expect(page.gone).toEqual([]);
      fromNode(2, { ...group('Dead', -1, [], 'g'), errorCode: 69 }, 'group-deleted', 3_000);
      expect(page.gone).toEqual(['g']);
    });

    it("stops the other nodes' watches when it closes", () => {
      open(new Page());
      expect(remote).toBeDefined();
      board.close();
      expect(remote).toBeUndefined();
    });
  });
});
