import type { GroupChange, GroupChangeListener } from '../../../src/group';
import { encodeAssignment } from '../../../src/protocol/consumer-protocol';
import type { DescribedGroup, DescribedGroupMember } from '../../../src/protocol/group-messages';
import {
  GroupBoard,
  type BoardGroup,
  type BoardHeartbeats,
  type BoardListener,
} from '../../../src/server/group-board';
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

function group(state: string, generationId: number, members: DescribedGroupMember[]): DescribedGroup {
  return {
    errorCode: 0,
    errorMessage: '',
    groupId: 'g',
    groupState: state,
    protocolType: 'consumer',
    protocolData: state === 'Stable' ? 'range' : '',
    members,
    generationId,
  };
}

/** A page that keeps the last view of each group. */
class Page implements BoardListener {
  readonly views = new Map<string, BoardGroup>();
  lagEvents = 0;
  ticks: number[] = [];
  gone: string[] = [];
  heartbeats: BoardHeartbeats[][] = [];
  onGroup(g: BoardGroup): void {
    this.views.set(g.groupId, g);
  }
  onLag(g: BoardGroup): void {
    this.lagEvents++;
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

  it('watches nothing until the first page opens', () => {
    expect(changes.subscriptions).toBe(0);
    board.open(new Page());
    board.open(new Page());
    expect(changes.subscriptions).toBe(1);
  });

  it('records a session expiry as a departed member and a rebalance that ends with the new generation', () => {
    const page = new Page();
    board.open(page);
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

  it('samples lag once a second while a page is open, and tells pages only of changed lag', () => {
    const page = new Page();
    board.open(page);
    committed.set(0, 40);
    changes.emit(group('Stable', 1, [member('a', [0])]), 'snapshot', 1_000);
    expect(page.views.get('g')!.totalLag).toBe('60');
    time.advance(1_000);
    expect(page.lagEvents).toBe(0);
    expect(page.ticks).toHaveLength(1);
    committed.set(0, 90);
    time.advance(999);
    expect(page.lagEvents).toBe(0);
    time.advance(1);
    expect(page.lagEvents).toBe(1);
    const view = page.views.get('g')!;
    expect(view.totalLag).toBe('10');
    expect(view.partitions).toEqual([
      { topic: 't', partition: 0, committedOffset: '90', highWatermark: '100', lag: '10', memberId: 'a' },
    ]);
    expect(view.lagSamples.map(([, lag]) => lag)).toEqual([60, 10]);
  });

  it("reads members' last heartbeats once a second and tells pages only of those that moved", () => {
    const page = new Page();
    board.open(page);
    changes.emit(group('Stable', 1, [member('a', [0], 900), member('b', [1])]), 'snapshot', 1_000);
    expect(page.views.get('g')!.members.map((m) => m.lastHeartbeatMs)).toEqual([900, null]);

    changes.current.set('g', group('Stable', 1, [member('a', [0], 900), member('b', [1], 1_500)]));
    time.advance(1_000);
    expect(page.heartbeats).toEqual([[{ groupId: 'g', members: [['b', 1_500]] }]]);
    time.advance(1_000);
    expect(page.heartbeats).toHaveLength(1);

    // A page opened later gets the latest in its group view.
    const later = new Page();
    board.open(later);
    expect(later.views.get('g')!.members.map((m) => m.lastHeartbeatMs)).toEqual([900, 1_500]);
  });

  it('samples lag again for a page that opens after every page had closed', () => {
    const close = board.open(new Page())!;
    committed.set(0, 40);
    changes.emit(group('Stable', 1, [member('a', [0])]), 'snapshot', 1_000);
    close();
    committed.set(0, 70);
    const late = new Page();
    board.open(late);
    expect(late.views.get('g')!.totalLag).toBe('30');
  });

  it('hands a page opened later every group, its timeline included, and drops a group gone Dead', () => {
    board.open(new Page());
    changes.emit(group('Stable', 1, [member('a', [0])]), 'snapshot', 1_000);
    changes.emit(group('PreparingRebalance', 1, []), 'member-left', 2_000);
    changes.emit(group('Empty', 2, []), 'group-emptied', 2_100);
    const late = new Page();
    board.open(late);
    expect(late.views.get('g')!.rebalances).toMatchObject([{ reasons: ['member-left'], endState: 'Empty' }]);
    expect(late.views.get('g')!.departed).toMatchObject([{ memberId: 'a', reason: 'member-left' }]);
    changes.emit({ ...group('Dead', -1, []), errorCode: 69 }, 'group-deleted', 3_000);
    expect(late.gone).toEqual(['g']);
    expect(board.size).toBe(0);
  });
});
