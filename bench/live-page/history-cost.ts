/**
 * What the live page's history costs a server with no page open (GroupBoard.keepHistory, which the
 * server calls as it starts), in this process, against the same work without it (a board that never
 * subscribed: the server before history was kept), in the same run:
 *
 * 1. CPU in a storm: the 20 groups' JoinGroup → SyncGroup → LeaveGroup cycles of board-storm.ts against a
 *    GroupCoordinator alone, and against one whose board keeps history, in alternating rounds; µs a cycle.
 * 2. CPU of the once-a-second lag round: `groups` Stable groups of two members on three partitions, each
 *    with its lag changing every second (the worst case: a sample a group a round); µs a round, and per
 *    group, over `lagRounds` rounds, against the same clock steps with a board that keeps nothing.
 * 3. Memory once full: after BOARD_LAG_SAMPLES rounds and BOARD_HISTORY_LENGTH rebalances (each with a
 *    departed member) a group, every list is at its bound; the heap (after a full GC, `--expose-gc`)
 *    with the history against without, per group.
 */
import type { GroupChange, GroupChangeListener } from '../../src/group';
import { DEFAULT_GROUP_CONFIG } from '../../src/group/group-config';
import { GroupCoordinator } from '../../src/group/group-coordinator';
import { encodeAssignment } from '../../src/protocol/consumer-protocol';
import type { DescribedGroup, DescribedGroupMember } from '../../src/protocol/group-messages';
import { GroupBoard } from '../../src/live/group-board';
import { BOARD_LAG_SAMPLES } from '../../src/live/group-lag';
import { BOARD_HISTORY_LENGTH } from '../../src/live/group-timeline';
import { ManualTime } from '../../src/time';
import { median } from '../support/stats';
import { stormCycle, type StormCalls } from './storm-cycle';

const STORM_GROUPS = 20;
const CLOCK_STEP_MS = 20;
const CONTEXT = { clientHost: '127.0.0.1' };
const TOPIC = 'history-orders';

export interface HistoryCostFigures {
  /** Storm: µs of CPU a cycle (two rebalances), the coordinator alone and with the board keeping history. */
  readonly stormAloneUs: number;
  readonly stormWithHistoryUs: number;
  /** Lag round over `groups` groups: µs without history (the clock step alone) and with. */
  readonly lagRoundWithoutUs: number;
  readonly lagRoundWithUs: number;
  readonly groups: number;
  /** Heap per group once every history list is full, bytes. */
  readonly bytesPerGroup: number;
}

const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

function member(id: string, partitions: number[]): DescribedGroupMember {
  return {
    memberId: id,
    groupInstanceId: '',
    clientId: `client-${id}`,
    clientHost: '10.0.0.1',
    memberMetadata: Buffer.alloc(0),
    memberAssignment: encodeAssignment({
      partitions: partitions.map((partition) => ({ topic: TOPIC, partition })),
    }),
    lastHeartbeatMs: 0,
  };
}

function described(groupId: string, state: string, generationId: number, members: DescribedGroupMember[]) {
  return {
    errorCode: 0,
    errorMessage: '',
    groupId,
    groupState: state,
    protocolType: 'consumer',
    protocolData: state === 'Stable' ? 'range' : '',
    members,
    generationId,
  } as DescribedGroup;
}

async function stormCost(rounds: number, cycles: number): Promise<[number, number]> {
  const time = new ManualTime();
  const coordinator = new GroupCoordinator(
    { ...DEFAULT_GROUP_CONFIG, groupInitialRebalanceDelayMs: 0 },
    time,
  );
  const calls: StormCalls = {
    joinGroup: (request) => coordinator.joinGroup(request, CONTEXT),
    syncGroup: (request) => coordinator.syncGroup(request, CONTEXT),
    leaveGroup: (request) => coordinator.leaveGroup(request, CONTEXT),
  };
  const groupIds = Array.from({ length: STORM_GROUPS }, (_, g) => `history-storm-${g}`);
  const run = async (count: number): Promise<number> => {
    const start = process.cpuUsage();
    for (let i = 0; i < count; i++) {
      await Promise.all(groupIds.map((groupId) => stormCycle(calls, groupId)));
      time.advance(CLOCK_STEP_MS);
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / (count * STORM_GROUPS);
  };
  const withHistory = async (count: number): Promise<number> => {
    const board = new GroupBoard({
      watchGroups: coordinator.watchGroups.bind(coordinator),
      lastHeartbeats: coordinator.lastHeartbeats.bind(coordinator),
      lag: undefined,
      time,
    });
    board.keepHistory();
    const us = await run(count);
    board.close();
    return us;
  };
  await run(cycles);
  await withHistory(cycles);
  const pairs: [number, number][] = [];
  for (let round = 0; round < rounds; round++) pairs.push([await run(cycles), await withHistory(cycles)]);
  coordinator.shutdown();
  return [median(pairs.map(([a]) => a)), median(pairs.map(([, b]) => b))];
}

/** Lag rounds and memory over `groups` groups; a board keeping history, or none (`isKept` false). */
function lagAndMemory(groups: number, isKept: boolean): { roundUs: number; heapBytes: number } {
  const time = new ManualTime();
  const listeners: GroupChangeListener[] = [];
  const ids = Array.from({ length: groups }, (_, g) => `history-${g}`);
  const current = new Map(
    ids.map((id) => [id, described(id, 'Stable', 1, [member('a', [0, 1]), member('b', [2])])]),
  );
  const emit = (group: DescribedGroup, reason: string): void => {
    const change = { group, reason, timestampMs: time.nowMs(), isSnapshot: false } as GroupChange;
    for (const l of listeners) l(change);
  };
  let highWatermark = 1_000;
  const committed = [{ topic: TOPIC, partition: 0, offset: { committedOffset: 500 } }];
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const board = new GroupBoard({
    watchGroups: (_ids, listener) => {
      for (const group of current.values())
        listener({ group, reason: 'snapshot', timestampMs: 0, isSnapshot: true } as GroupChange);
      listeners.push(listener);
      return () => listeners.splice(listeners.indexOf(listener), 1);
    },
    lastHeartbeats: undefined,
    lag: {
      offsets: { list: () => committed as never },
      highWatermark: () => highWatermark,
    },
    time,
  });
  if (isKept) board.keepHistory();
  // Every group's timeline full: BOARD_HISTORY_LENGTH rebalances, each losing a member that comes back.
  for (let r = 0; r < BOARD_HISTORY_LENGTH; r++) {
    for (const id of ids) {
      emit(described(id, 'PreparingRebalance', r + 1, [member('a', [])]), 'member-left');
      emit(
        described(id, 'CompletingRebalance', r + 2, [member('a', []), member(`b${r}`, [])]),
        'join-completed',
      );
      emit(
        described(id, 'Stable', r + 2, [member('a', [0, 1]), member(`b${r}`, [2])]),
        'rebalance-completed',
      );
    }
    time.advance(10);
  }
  // Lag rounds: the high watermark moves every second, so every group takes a sample each round.
  const roundsUs: number[] = [];
  for (let round = 0; round < BOARD_LAG_SAMPLES; round++) {
    highWatermark++;
    const start = process.cpuUsage();
    time.advance(1_000);
    const used = process.cpuUsage(start);
    roundsUs.push(used.user + used.system);
  }
  gc();
  const heapBytes = process.memoryUsage().heapUsed - heapBefore;
  board.close();
  return { roundUs: median(roundsUs.slice(BOARD_LAG_SAMPLES / 2)), heapBytes };
}

export async function historyCost(
  rounds: number,
  cycles: number,
  groups: number,
): Promise<HistoryCostFigures> {
  const [stormAloneUs, stormWithHistoryUs] = await stormCost(rounds, cycles);
  // Warm both paths, then measure each, twice, alternating; the medians.
  lagAndMemory(Math.min(groups, 100), false);
  lagAndMemory(Math.min(groups, 100), true);
  const without: { roundUs: number; heapBytes: number }[] = [];
  const withHistory: { roundUs: number; heapBytes: number }[] = [];
  for (let i = 0; i < 2; i++) {
    without.push(lagAndMemory(groups, false));
    withHistory.push(lagAndMemory(groups, true));
  }
  const heapWithout = median(without.map((w) => w.heapBytes));
  const heapWith = median(withHistory.map((w) => w.heapBytes));
  return {
    stormAloneUs,
    stormWithHistoryUs,
    lagRoundWithoutUs: median(without.map((w) => w.roundUs)),
    lagRoundWithUs: median(withHistory.map((w) => w.roundUs)),
    groups,
    bytesPerGroup: (heapWith - heapWithout) / groups,
  };
}
