import { CohortError, ErrorCode } from '../../../src/errors';
import type { CoordinatorRecordToWrite } from '../../../src/group/coordinator-partition-writer';
import type { GroupCoordinatorListener } from '../../../src/group/group-coordinator-options';
import { GroupCoordinatorRouter } from '../../../src/group/group-coordinator-router';
import type { GroupChange } from '../../../src/group/group-events';
import type { StoredGroup } from '../../../src/group/stored-group';
import type {
  GenerationWatcher,
  JoinGroupResponse,
  OffsetCommitRequest,
  RequestContext,
  SyncGroupResponse,
} from '../../../src/group/group-protocol';
import { groupPartitionFor } from '../../../src/protocol/group-placement';
import { DEFAULT_TURN_BUDGET_MS, ManualTime } from '../../../src/time';
import {
  CLIENT_HOST,
  CLIENT_ID,
  DEFAULT_REBALANCE_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  GROUP_INITIAL_REBALANCE_DELAY_MS,
  PROTOCOL_NAME,
  PROTOCOL_TYPE,
  PROTOCOLS,
  TEST_GROUP_CONFIG,
  Tracked,
  offsetCommitRequest,
} from '../../support/group-harness';
import { CommittingPartitionWriter } from '../../support/committing-partition-writer';
import { groupMetadataRecord, offsetCommitRecord } from '../../support/coordinator-test-context';
import { HeldTurns } from '../../support/held-turns';

/**
 * The router and its shards under the manual clock: Kafka's coordinator tests that need more than one
 * partition (GroupCoordinatorTest's `*WrongCoordinator` and `*CoordinatorLoadInProgress`, CoordinatorRuntime
 * Test's load/unload and stale epochs), run against partitions led, loading, resigned and re-elected.
 */

const NUM_PARTITIONS = 4;
const CONTEXT: RequestContext = { clientHost: CLIENT_HOST };

/** The first id of the form `group-N` that lands on `partitionIndex`. */
function groupOn(partitionIndex: number): string {
  for (let n = 0; ; n++) {
    const groupId = `group-${n}`;
    if (groupPartitionFor(groupId, NUM_PARTITIONS) === partitionIndex) return groupId;
  }
}

const GROUP_A = groupOn(0);
const GROUP_B = groupOn(1);

/**
 * Partition `partitionIndex` led at `leaderEpoch`, holding `records` (the groups' records by default), whose
 * load ends when the test says (`releaseLoad`); its appends commit as they are made.
 */
function loadingPartition(
  partitionIndex: number,
  leaderEpoch: number,
  records: readonly (StoredGroup | CoordinatorRecordToWrite)[] = [],
): CommittingPartitionWriter {
  const writer = new CommittingPartitionWriter(
    partitionIndex,
    leaderEpoch,
    records.map((record) => ('groupId' in record ? groupMetadataRecord(record) : record)),
  );
  writer.isLoadImmediate = false;
  return writer;
}

/** A Stable one-member group as its record holds it. */
function storedGroup(
  groupId: string,
  memberId: string,
  sessionTimeoutMs = DEFAULT_SESSION_TIMEOUT_MS,
): StoredGroup {
  return {
    groupId,
    protocolType: PROTOCOL_TYPE,
    generationId: 3,
    protocolName: PROTOCOL_NAME,
    leaderId: memberId,
    currentStateTimestampMs: 0,
    members: [
      {
        memberId,
        groupInstanceId: '',
        clientId: CLIENT_ID,
        clientHost: CLIENT_HOST,
        rebalanceTimeoutMs: DEFAULT_REBALANCE_TIMEOUT_MS,
        sessionTimeoutMs,
        protocols: PROTOCOLS,
        assignment: Buffer.from('assignment'),
      },
    ],
  };
}

class RouterHarness {
  readonly time = new ManualTime();
  readonly router: GroupCoordinatorRouter;
  readonly stale: Array<[number, number, number]> = [];
  readonly unloaded: Array<[number, number, number]> = [];

  constructor(listener: GroupCoordinatorListener = {}, leadershipGuard?: { isActive(): boolean }) {
    this.router = new GroupCoordinatorRouter(TEST_GROUP_CONFIG, this.time, {
      numPartitions: NUM_PARTITIONS,
      ...(leadershipGuard === undefined ? {} : { leadershipGuard }),
      listener: {
        ...listener,
        onStaleLeadership: (p, e, current) => this.stale.push([p, e, current]),
        onShardUnloaded: (p, e, groups) => this.unloaded.push([p, e, groups]),
      },
    });
  }

  advance(ms: number): void {
    this.time.advance(ms);
  }

  /** A static member's JoinGroup (one round trip: static members get their id at once). */
  sendJoin(groupId: string, groupInstanceId: string, memberId = ''): Tracked<JoinGroupResponse> {
    return new Tracked(
      this.router.joinGroup(
        {
          groupId,
          memberId,
          groupInstanceId,
          sessionTimeoutMs: DEFAULT_SESSION_TIMEOUT_MS,
          rebalanceTimeoutMs: DEFAULT_REBALANCE_TIMEOUT_MS,
          protocolType: PROTOCOL_TYPE,
          protocols: PROTOCOLS,
          clientId: CLIENT_ID,
          reason: '',
        },
        CONTEXT,
      ),
    );
  }

  sendSync(
    groupId: string,
    memberId: string,
    generationId: number,
    groupInstanceId = '',
  ): Tracked<SyncGroupResponse> {
    return new Tracked(
      this.router.syncGroup(
        {
          groupId,
          memberId,
          generationId,
          groupInstanceId,
          protocolType: '',
          protocolName: '',
          assignments: [{ memberId, assignment: Buffer.from('assignment') }],
        },
        CONTEXT,
      ),
    );
  }

  /** A one-member group, Stable: the member's id and generation. */
  async stableGroup(
    groupId: string,
    instanceId = 'instance',
  ): Promise<{ memberId: string; generationId: number }> {
    const join = this.sendJoin(groupId, instanceId);
    // Answered when the initial rebalance delay has passed; the sync once the group's record is stored.
    this.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    const { memberId, generationId, errorCode } = await join.promise;
    expect(errorCode).toBe(ErrorCode.NONE);
    const sync = this.sendSync(groupId, memberId, generationId, instanceId);
    expect((await sync.promise).errorCode).toBe(ErrorCode.NONE);
    expect(await this.state(groupId)).toBe('Stable');
    return { memberId, generationId };
  }

  async heartbeat(
    groupId: string,
    memberId: string,
    generationId: number,
    context: RequestContext = CONTEXT,
    groupInstanceId = '',
  ): Promise<ErrorCode> {
    return (await this.router.heartbeat({ groupId, memberId, generationId, groupInstanceId }, context))
      .errorCode;
  }

  async leave(groupId: string, memberId: string): Promise<ErrorCode> {
    return (
      await this.router.leaveGroup(
        { groupId, members: [{ memberId, groupInstanceId: '', reason: '' }] },
        CONTEXT,
      )
    ).errorCode;
  }

  commitRequest(groupId: string, offset: number): OffsetCommitRequest {
    return offsetCommitRequest(groupId, offset);
  }

  /** A commit outside any membership (generation -1); the code of its one partition. */
  sendCommit(groupId: string, offset: number): Tracked<ErrorCode> {
    return new Tracked(
      this.router
        .offsetCommit(this.commitRequest(groupId, offset), CONTEXT)
        .then((response) => response.topics[0].partitions[0].errorCode),
    );
  }

  /** A commit outside any membership, answered (its partition must not be holding appends). */
  commit(groupId: string, offset: number): Promise<ErrorCode> {
    return this.sendCommit(groupId, offset).promise;
  }

  async fetch(groupId: string): Promise<{ errorCode: ErrorCode; offset: number | undefined }> {
    const response = await this.router.offsetFetch(
      { groupId, topics: [{ name: 'topic', partitionIndexes: [0] }], requireStable: true },
      CONTEXT,
    );
    return { errorCode: response.errorCode, offset: response.topics[0]?.partitions[0]?.committedOffset };
  }

  async describe(groupId: string): Promise<{ errorCode: ErrorCode; state: string; members: number }> {
    const [group] = (await this.router.describeGroups({ groups: [groupId] }, CONTEXT)).groups;
    return { errorCode: group.errorCode, state: group.groupState, members: group.members.length };
  }

  async state(groupId: string): Promise<string> {
    return (await this.describe(groupId)).state;
  }

  async deleteCode(groupId: string): Promise<ErrorCode> {
    return (await this.router.deleteGroups({ groupsNames: [groupId] }, CONTEXT)).results[0].errorCode;
  }

  /** Heartbeat timer tasks and watched rebalance operations, over every shard. */
  timerLoad(): { heartbeats: number; rebalance: number } {
    const [rebalance, heartbeat] = this.router.purgatoryStats();
    return { heartbeats: heartbeat.numDelayed, rebalance: rebalance.numDelayed };
  }
}

const harnesses: RouterHarness[] = [];
function harness(
  listener?: GroupCoordinatorListener,
  leadershipGuard?: { isActive(): boolean },
): RouterHarness {
  const h = new RouterHarness(listener, leadershipGuard);
  harnesses.push(h);
  return h;
}
/** The event loop's turns, held by the tests that step through a load. */
let turns: HeldTurns | undefined;
afterEach(() => {
  turns?.restore();
  turns = undefined;
  for (const h of harnesses.splice(0)) h.router.shutdown();
});

test('the test groups land on different partitions', () => {
  expect(groupPartitionFor(GROUP_A, NUM_PARTITIONS)).toBe(0);
  expect(groupPartitionFor(GROUP_B, NUM_PARTITIONS)).toBe(1);
  const h = harness();
  expect(h.router.partitionFor(GROUP_A)).toBe(0);
  expect(h.router.partitionFor(GROUP_B)).toBe(1);
});

describe('NOT_COORDINATOR for a partition this node does not lead (Kafka: *WrongCoordinator)', () => {
  test('every request of a group whose partition is not led', async () => {
    const h = harness();
    // Partition 0 is led here, partition 1 (GROUP_B's) is not.
    await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    const notCoordinator = ErrorCode.NOT_COORDINATOR;
    const join = await h.sendJoin(GROUP_B, 'instance').promise;
    expect(join.errorCode).toBe(notCoordinator);
    expect(join.memberId).toBe('');
    expect((await h.sendSync(GROUP_B, 'member', 1).promise).errorCode).toBe(notCoordinator);
    expect(await h.heartbeat(GROUP_B, 'member', 1)).toBe(notCoordinator);
    expect(await h.leave(GROUP_B, 'member')).toBe(notCoordinator);
    expect(await h.commit(GROUP_B, 5)).toBe(notCoordinator);
    expect((await h.fetch(GROUP_B)).errorCode).toBe(notCoordinator);
    expect(await h.describe(GROUP_B)).toEqual({ errorCode: notCoordinator, state: '', members: 0 });
    expect(await h.deleteCode(GROUP_B)).toBe(notCoordinator);
    // The partition that is led serves.
    expect(await h.commit(GROUP_A, 5)).toBe(ErrorCode.NONE);
    expect((await h.fetch(GROUP_A)).offset).toBe(5);
    expect(h.router.numGroups).toBe(1);
  });

  test('a bad request is refused before routing, an empty group id is INVALID_GROUP_ID first', async () => {
    const h = harness();
    expect((await h.sendJoin('', 'instance').promise).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
    expect(await h.heartbeat('', 'member', 1)).toBe(ErrorCode.INVALID_GROUP_ID);
    await expect(h.router.joinGroup({ groupId: GROUP_B } as never, CONTEXT)).rejects.toBeInstanceOf(
      CohortError,
    );
  });

  test('DescribeGroups and DeleteGroups answer per group, in the request order', async () => {
    const h = harness();
    await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    expect(await h.commit(GROUP_A, 1)).toBe(ErrorCode.NONE);
    const described = await h.router.describeGroups({ groups: [GROUP_B, GROUP_A] }, CONTEXT);
    expect(described.groups.map((g) => [g.groupId, g.errorCode, g.groupState])).toEqual([
      [GROUP_B, ErrorCode.NOT_COORDINATOR, ''],
      [GROUP_A, ErrorCode.NONE, 'Empty'],
    ]);
    const deleted = await h.router.deleteGroups({ groupsNames: [GROUP_B, GROUP_A, GROUP_B] }, CONTEXT);
    expect(deleted.results).toEqual([
      { groupId: GROUP_B, errorCode: ErrorCode.NOT_COORDINATOR },
      { groupId: GROUP_A, errorCode: ErrorCode.NONE },
    ]);
    expect(h.router.numGroups).toBe(0);
  });

  test("lastHeartbeats: a led group's members and their last heartbeat, nothing for a group not led", async () => {
    const h = harness();
    await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    const { memberId, generationId } = await h.stableGroup(GROUP_A);
    h.advance(100);
    expect(await h.heartbeat(GROUP_A, memberId, generationId, CONTEXT, 'instance')).toBe(ErrorCode.NONE);
    const heartbeatAtMs = h.time.nowMs();
    h.advance(50);
    // As DescribeGroups tells it (member-metadata.ts), without the description.
    expect(h.router.lastHeartbeats(GROUP_A)).toEqual([[memberId, heartbeatAtMs]]);
    const [described] = (await h.router.describeGroups({ groups: [GROUP_A] }, CONTEXT)).groups;
    expect(described.members[0].lastHeartbeatMs).toBe(heartbeatAtMs);
    expect(h.router.lastHeartbeats(GROUP_B)).toBeUndefined();
    expect(h.router.lastHeartbeats('unknown-group-on-0')).toBeUndefined();
  });

  test('while the partition count is unknown every group is NOT_COORDINATOR; it is fixed while led', async () => {
    const h = new RouterHarness();
    const router = new GroupCoordinatorRouter(TEST_GROUP_CONFIG, h.time, {});
    try {
      expect(router.partitionFor(GROUP_A)).toBeUndefined();
      expect(
        (
          await router.heartbeat(
            { groupId: GROUP_A, memberId: 'm', generationId: 1, groupInstanceId: '' },
            CONTEXT,
          )
        ).errorCode,
      ).toBe(ErrorCode.NOT_COORDINATOR);
      expect(() => router.onElection(0, 0, new CommittingPartitionWriter(0, 0))).toThrow(RangeError);
      router.setNumPartitions(NUM_PARTITIONS);
      expect(router.partitionFor(GROUP_B)).toBe(1);
      router.onElection(1, 0, new CommittingPartitionWriter(1, 0));
      router.setNumPartitions(NUM_PARTITIONS);
      expect(() => router.setNumPartitions(NUM_PARTITIONS + 1)).toThrow(RangeError);
    } finally {
      router.shutdown();
      h.router.shutdown();
    }
  });
});

describe('a partition still loading (Kafka: *CoordinatorLoadInProgress)', () => {
  test('COORDINATOR_LOAD_IN_PROGRESS, with Kafka exceptions for Heartbeat and SyncGroup', async () => {
    const h = harness();
    const writer = loadingPartition(0, 1, [storedGroup(GROUP_A, 'member-1')]);
    const loaded = h.router.onElection(0, 1, writer);
    const inProgress = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    expect((await h.sendJoin(GROUP_A, 'instance').promise).errorCode).toBe(inProgress);
    // The rebalance a SyncGroup belonged to may be lost with the old coordinator: rejoin.
    expect((await h.sendSync(GROUP_A, 'member-1', 3).promise).errorCode).toBe(
      ErrorCode.REBALANCE_IN_PROGRESS,
    );
    // Answered blindly.
    expect(await h.heartbeat(GROUP_A, 'member-1', 3)).toBe(ErrorCode.NONE);
    expect(await h.leave(GROUP_A, 'member-1')).toBe(inProgress);
    expect(await h.commit(GROUP_A, 1)).toBe(inProgress);
    expect((await h.fetch(GROUP_A)).errorCode).toBe(inProgress);
    expect((await h.describe(GROUP_A)).errorCode).toBe(inProgress);
    expect(await h.deleteCode(GROUP_A)).toBe(inProgress);
    // Nothing was written: the partition holds its one record.
    expect(writer.records).toHaveLength(1);

    writer.releaseLoad();
    await loaded;
    expect(await h.describe(GROUP_A)).toEqual({ errorCode: ErrorCode.NONE, state: 'Stable', members: 1 });
    expect(await h.heartbeat(GROUP_A, 'member-1', 3)).toBe(ErrorCode.NONE);
  });

  test('ListGroups lists the loaded partitions and says COORDINATOR_LOAD_IN_PROGRESS while one loads', async () => {
    const h = harness();
    await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    expect(await h.commit(GROUP_A, 1)).toBe(ErrorCode.NONE);
    const writerB = loadingPartition(1, 0, [storedGroup(GROUP_B, 'member-b')]);
    const loadedB = h.router.onElection(1, 0, writerB);
    let listed = await h.router.listGroups({ statesFilter: [] }, CONTEXT);
    expect(listed.errorCode).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    expect(listed.groups.map((g) => g.groupId)).toEqual([GROUP_A]);
    writerB.releaseLoad();
    await loadedB;
    listed = await h.router.listGroups({ statesFilter: [] }, CONTEXT);
    expect(listed.errorCode).toBe(ErrorCode.NONE);
    expect(listed.groups.map((g) => [g.groupId, g.groupState]).sort()).toEqual(
      [
        [GROUP_A, 'Empty'],
        [GROUP_B, 'Stable'],
      ].sort(),
    );
    expect(
      (await h.router.listGroups({ statesFilter: ['stable'] }, CONTEXT)).groups.map((g) => g.groupId),
    ).toEqual([GROUP_B]);
    expect(h.router.numGroups).toBe(2);
    expect(h.router.groupStats().Stable).toEqual({ groups: 1, members: 1 });
    expect(h.router.groupStats().Empty).toEqual({ groups: 1, members: 0 });
  });

  test('loaded members get a fresh session timeout from the end of the load', async () => {
    const h = harness();
    const sessionMs = 1_000;
    const writer = loadingPartition(0, 2, [storedGroup(GROUP_A, 'member-1', sessionMs)]);
    const loaded = h.router.onElection(0, 2, writer);
    // The load outlasts the member's session: its session must not have been running meanwhile.
    h.advance(3 * sessionMs);
    writer.releaseLoad();
    await loaded;
    // A session runs out inside the clock's advance.
    h.advance(sessionMs - 1);
    expect(await h.describe(GROUP_A)).toMatchObject({ state: 'Stable', members: 1 });
    // Nobody heartbeats: the fresh session runs out, and only then.
    h.advance(1);
    expect((await h.describe(GROUP_A)).members).toBe(0);
  });

  test('a partition of many groups is restored in slices, one per turn; sessions start after the last', async () => {
    const h = harness();
    const stored: StoredGroup[] = [];
    const sessionMs = 1_000;
    const groupIds: string[] = [];
    // The clock stands still while loading: steps of RESTORE_GROUPS_PER_SLICE (100), ten to check the
    // groups, ten to restore them, ten to start their sessions.
    for (let n = 0; groupIds.length < 1_000; n++) {
      const groupId = `many-${n}`;
      if (groupPartitionFor(groupId, NUM_PARTITIONS) !== 0) continue;
      groupIds.push(groupId);
      stored.push(storedGroup(groupId, `member-${n}`, sessionMs));
    }
    const first = groupIds[0]!;
    const last = groupIds[groupIds.length - 1]!;
    const writer = loadingPartition(0, 2, stored);
    turns = new HeldTurns();
    const loaded = h.router.onElection(0, 2, writer);
    writer.releaseLoad();
    // The first step after the replay: the shard yields the event loop, still loading.
    await turns.yielded();
    expect(await h.commit(first, 1)).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    expect((await h.describe(last)).errorCode).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    // The clock moves while slices are restored: no session may run before the last slice is in.
    h.advance(sessionMs);
    // Step by step to the end of the load: 30 yields (the first one's turn is pending now), after ten
    // steps that check the groups, ten that restore them, ten that start their sessions.
    expect(await turns.stepUntil(loaded)).toBe(30);
    turns.restore();
    expect(await h.describe(first)).toMatchObject({ state: 'Stable', members: 1 });
    expect(await h.describe(last)).toMatchObject({ state: 'Stable', members: 1 });
    expect(h.router.numGroups).toBe(groupIds.length);
    // Sessions run out inside the clock's advance.
    h.advance(sessionMs - 1);
    expect((await h.describe(first)).members).toBe(1);
    h.advance(1);
    expect((await h.describe(first)).members).toBe(0);
    expect((await h.describe(last)).members).toBe(0);
  });

  test('a restore step ends once it has used its time, however few groups it handled', async () => {
    const h = harness();
    const stored: StoredGroup[] = [];
    const groupIds: string[] = [];
    const costMs = 3;
    for (let n = 0; groupIds.length < 40; n++) {
      const groupId = `costly-${n}`;
      if (groupPartitionFor(groupId, NUM_PARTITIONS) !== 0) continue;
      groupIds.push(groupId);
      stored.push(storedGroup(groupId, `member-${n}`));
    }
    // The loading node's clock moves 3 ms each time it is read: a step reads it once per group it handles
    // (checks, restores), so each group takes 3 ms of the step.
    const monotonicMs = h.time.monotonicMs.bind(h.time);
    let isAdvancing = false;
    const ticking = jest.spyOn(h.time, 'monotonicMs').mockImplementation(() => {
      if (!isAdvancing) {
        isAdvancing = true;
        h.advance(costMs);
        isAdvancing = false;
      }
      return monotonicMs();
    });
    const writer = loadingPartition(0, 2, stored);
    turns = new HeldTurns();
    const loaded = h.router.onElection(0, 2, writer);
    let isLoaded = false;
    void loaded.then(() => (isLoaded = true));
    writer.releaseLoad();
    const duringLoad = h.commit(groupIds[0]!, 1);
    // One sample per step, the shard taking one step per event-loop turn.
    const perTurn: number[] = [];
    let previous = h.router.numGroups;
    await turns.stepUntil(loaded, () => {
      perTurn.push(h.router.numGroups - previous);
      previous = h.router.numGroups;
    });
    turns.restore();
    ticking.mockRestore();
    expect(await duringLoad).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    expect(isLoaded).toBe(true);
    expect(perTurn.reduce((sum, n) => sum + n, 0)).toBe(groupIds.length);
    // A 10 ms step holds 4 groups of 3 ms: the one that crosses the line is the last of its step.
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(Math.ceil(DEFAULT_TURN_BUDGET_MS / costMs));
    // Checking 40 groups took 10 steps before the first was restored, restoring them 10 more.
    expect(perTurn.filter((n) => n > 0).length).toBeGreaterThanOrEqual(10);
    expect(await h.describe(groupIds[groupIds.length - 1]!)).toMatchObject({ state: 'Stable', members: 1 });
  });

  test('a failed load serves nothing until the next election', async () => {
    const failures: unknown[] = [];
    const h = harness({ onShardLoadFailed: (_p, _e, error) => failures.push(error) });
    const writer = loadingPartition(0, 0);
    const loaded = h.router.onElection(0, 0, writer);
    // Reading the partition fails: the load fails.
    writer.failLoad(new Error('replay failed'));
    // The election's promise rejects once the router has told the listener.
    await expect(loaded).rejects.toThrow('replay failed');
    expect(failures).toHaveLength(1);
    expect(await h.commit(GROUP_A, 1)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await h.router.listGroups({ statesFilter: [] }, CONTEXT)).errorCode).toBe(
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
    );
    await h.router.onElection(0, 1, new CommittingPartitionWriter(0, 1));
    expect(await h.commit(GROUP_A, 1)).toBe(ErrorCode.NONE);
  });
});

describe('resignation', () => {
  test('while the leadership guard says no, every group request is NOT_COORDINATOR before any resignation', async () => {
    // A node resumed after a pause past its session: its requests may run before the expiry timer that
    // resigns its shards; the guard reads the clock and answers for it.
    let isSessionAlive = true;
    const h = harness({}, { isActive: () => isSessionAlive });
    await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    const groupId = groupOn(0);
    const { memberId, generationId } = await h.stableGroup(groupId);
    expect(await h.heartbeat(groupId, memberId, generationId)).toBe(ErrorCode.NONE);
    isSessionAlive = false;
    expect(await h.heartbeat(groupId, memberId, generationId)).toBe(ErrorCode.NOT_COORDINATOR);
    expect((await h.sendSync(groupId, memberId, generationId, 'instance').promise).errorCode).toBe(
      ErrorCode.NOT_COORDINATOR,
    );
    expect((await h.sendJoin(groupId, 'instance', memberId).promise).errorCode).toBe(
      ErrorCode.NOT_COORDINATOR,
    );
    expect((await h.describe(groupId)).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect((await h.router.listGroups({ statesFilter: [] }, CONTEXT)).groups).toEqual([]);
    // The shard is still there (nobody resigned it): a session that comes back serves it again.
    isSessionAlive = true;
    expect(await h.heartbeat(groupId, memberId, generationId)).toBe(ErrorCode.NONE);
  });

  test('a parked JoinGroup is answered NOT_COORDINATOR, and so is every later request', async () => {
    const h = harness();
    await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    // Parked through the initial rebalance delay.
    const join = h.sendJoin(GROUP_A, 'instance');
    expect(await h.state(GROUP_A)).toBe('PreparingRebalance');
    expect(join.isSettled).toBe(false);
    expect(h.timerLoad()).toEqual({ heartbeats: 1, rebalance: 1 });
    h.router.onResignation(0, 0);
    expect((await join.promise).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    // Its timers are gone: the member's session task and the group's DelayedJoin.
    expect(h.timerLoad()).toEqual({ heartbeats: 0, rebalance: 0 });
    expect(h.unloaded).toEqual([[0, 0, 1]]);
    expect(h.router.numGroups).toBe(0);
    expect((await h.sendJoin(GROUP_A, 'instance').promise).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect((await h.describe(GROUP_A)).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
  });

  test('a SyncGroup waiting for its group record is answered NOT_COORDINATOR; the late write touches nothing', async () => {
    const h = harness();
    const writer = new CommittingPartitionWriter(0, 0);
    await h.router.onElection(0, 0, writer);
    const join = h.sendJoin(GROUP_A, 'instance');
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    const { memberId, generationId } = await join.promise;
    writer.isHeld = true;
    const sync = h.sendSync(GROUP_A, memberId, generationId, 'instance');
    expect(writer.pending).toHaveLength(1);
    // Not Stable, nobody answered, until the record is durable.
    expect(await h.state(GROUP_A)).toBe('CompletingRebalance');
    expect(sync.isSettled).toBe(false);
    h.router.onResignation(0, 0);
    expect((await sync.promise).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    // Led again at a newer epoch, on the same log: the new shard loads what is durable (nothing yet).
    await h.router.onElection(0, 1, new CommittingPartitionWriter(0, 1, writer.committedRecords()));
    expect(await h.describe(GROUP_A)).toEqual({
      errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
      state: 'Dead',
      members: 0,
    });
    // The deposed shard's write completes now: it must not make the group Stable in the new shard (its
    // callbacks have run once the write's outcome is out).
    const lateWrite = writer.pendingOutcome(0);
    writer.releaseAppends();
    await lateWrite;
    expect((await h.describe(GROUP_A)).state).toBe('Dead');
    expect(h.router.numGroups).toBe(0);
  });

  test('an OffsetCommit waiting for its append is answered NOT_COORDINATOR; its late failure touches nothing', async () => {
    const h = harness();
    const writer = new CommittingPartitionWriter(0, 0);
    await h.router.onElection(0, 0, writer);
    writer.isHeld = true;
    const commit = h.sendCommit(GROUP_A, 7);
    expect(writer.pending).toHaveLength(1);
    expect(commit.isSettled).toBe(false);
    h.router.onResignation(0, 0);
    expect(await commit.promise).toBe(ErrorCode.NOT_COORDINATOR);
    await h.router.onElection(0, 1, new CommittingPartitionWriter(0, 1));
    expect(await h.commit(GROUP_A, 8)).toBe(ErrorCode.NONE);
    // The deposed write fails late; the new shard's state is its own.
    const lateFailure = writer.pendingOutcome(0);
    writer.failAppend(new CohortError(ErrorCode.NOT_LEADER_OR_FOLLOWER, 'deposed'));
    await lateFailure;
    expect((await h.fetch(GROUP_A)).offset).toBe(8);
    expect(await h.describe(GROUP_A)).toMatchObject({ errorCode: ErrorCode.NONE, state: 'Empty' });
  });

  test("an append's NOT_LEADER_OR_FOLLOWER reaches the client as NOT_COORDINATOR", async () => {
    const h = harness();
    const writer = new CommittingPartitionWriter(0, 0);
    await h.router.onElection(0, 0, writer);
    writer.isHeld = true;
    const commit = h.sendCommit(GROUP_A, 7);
    writer.failAppend(new CohortError(ErrorCode.NOT_LEADER_OR_FOLLOWER, 'deposed'));
    expect(await commit.promise).toBe(ErrorCode.NOT_COORDINATOR);
  });

  test("a member's heartbeat stream hears NOT_COORDINATOR; another shard's members hear nothing", async () => {
    const h = harness();
    await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    await h.router.onElection(1, 0, new CommittingPartitionWriter(1, 0));
    const a = await h.stableGroup(GROUP_A, 'a');
    const b = await h.stableGroup(GROUP_B, 'b');
    const heard: Array<[string, ErrorCode]> = [];
    const watcherOf = (name: string): GenerationWatcher => ({
      onGenerationOver: (code) => heard.push([name, code]),
    });
    const contextA: RequestContext = { clientHost: CLIENT_HOST, generationWatcher: watcherOf('a') };
    const contextB: RequestContext = { clientHost: CLIENT_HOST, generationWatcher: watcherOf('b') };
    expect(await h.heartbeat(GROUP_A, a.memberId, a.generationId, contextA, 'a')).toBe(ErrorCode.NONE);
    expect(await h.heartbeat(GROUP_B, b.memberId, b.generationId, contextB, 'b')).toBe(ErrorCode.NONE);
    h.router.onResignation(0, 0);
    expect(heard).toEqual([['a', ErrorCode.NOT_COORDINATOR]]);
  });

  test('two shards are independent: one resigns, the other keeps its groups, sessions and rebalances', async () => {
    const h = harness();
    await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    await h.router.onElection(1, 0, new CommittingPartitionWriter(1, 0));
    const a = await h.stableGroup(GROUP_A, 'a');
    const b = await h.stableGroup(GROUP_B, 'b');
    expect(h.timerLoad().heartbeats).toBe(2);
    h.router.onResignation(0, 0);
    expect(h.timerLoad().heartbeats).toBe(1);
    expect(await h.heartbeat(GROUP_A, a.memberId, a.generationId, CONTEXT, 'a')).toBe(
      ErrorCode.NOT_COORDINATOR,
    );
    // B's member keeps its session by heartbeating, across more than a session.
    for (
      let elapsed = 0;
      elapsed < 3 * DEFAULT_SESSION_TIMEOUT_MS;
      elapsed += DEFAULT_SESSION_TIMEOUT_MS / 2
    ) {
      h.advance(DEFAULT_SESSION_TIMEOUT_MS / 2);
      expect(await h.heartbeat(GROUP_B, b.memberId, b.generationId, CONTEXT, 'b')).toBe(ErrorCode.NONE);
    }
    // And B's timers still work: without heartbeats its member expires (inside the clock's advance).
    h.advance(DEFAULT_SESSION_TIMEOUT_MS);
    expect(await h.describe(GROUP_B)).toMatchObject({ errorCode: ErrorCode.NONE, members: 0 });
    expect(h.router.numGroups).toBe(1);
  });

  test('a stale election or resignation (older epoch) is ignored', async () => {
    const h = harness();
    const writer = new CommittingPartitionWriter(0, 5);
    await h.router.onElection(0, 5, writer);
    expect(await h.commit(GROUP_A, 1)).toBe(ErrorCode.NONE);
    // A late election of an older epoch, or the same one again, must not replace the shard.
    await h.router.onElection(0, 4, new CommittingPartitionWriter(0, 4));
    await h.router.onElection(0, 5, new CommittingPartitionWriter(0, 5));
    expect((await h.fetch(GROUP_A)).offset).toBe(1);
    // A late resignation of an older epoch must not unload it.
    h.router.onResignation(0, 4);
    expect((await h.fetch(GROUP_A)).offset).toBe(1);
    expect(h.stale).toEqual([
      [0, 4, 5],
      [0, 5, 5],
      [0, 4, 5],
    ]);
    h.router.onResignation(0, 5);
    expect((await h.fetch(GROUP_A)).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    // Resigned at 5: an election of 5 (or older) arriving late is stale too.
    h.router.onElection(0, 5, writer);
    expect((await h.fetch(GROUP_A)).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
  });

  test('a resignation while loading: the load that ends later brings nothing back', async () => {
    const h = harness();
    const writer = loadingPartition(0, 0, [storedGroup(GROUP_A, 'member-1')]);
    const loaded = h.router.onElection(0, 0, writer);
    expect((await h.fetch(GROUP_A)).errorCode).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    h.router.onResignation(0, 0);
    writer.releaseLoad();
    // The election's promise resolves once the deposed shard's load has ended.
    await loaded;
    expect(await h.describe(GROUP_A)).toEqual({
      errorCode: ErrorCode.NOT_COORDINATOR,
      state: '',
      members: 0,
    });
    expect(h.router.numGroups).toBe(0);
    expect(h.timerLoad()).toEqual({ heartbeats: 0, rebalance: 0 });
  });

  test('a resignation while loading, the writer resigned first as the log does: the election still resolves', async () => {
    const failures: unknown[] = [];
    const h = harness({ onShardLoadFailed: (_p, _e, error) => failures.push(error) });
    const writer = loadingPartition(0, 0, [storedGroup(GROUP_A, 'member-1')]);
    const loaded = h.router.onElection(0, 0, writer);
    expect((await h.fetch(GROUP_A)).errorCode).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    // The log resigns the partition's writer before it tells the router, so the load fails with
    // NOT_LEADER_OR_FOLLOWER: that is the resignation, not a failed load.
    writer.resign();
    h.router.onResignation(0, 0);
    writer.releaseLoad();
    await expect(loaded).resolves.toBeUndefined();
    expect(failures).toEqual([]);
    expect((await h.fetch(GROUP_A)).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(h.router.numGroups).toBe(0);
  });

  test('a writer whose load throws at once, or a listener that throws on the replay, fails the load: never loading for ever', async () => {
    const failures: unknown[] = [];
    const h = harness({
      onShardLoadFailed: (_p, _e, error) => failures.push(error),
      onPartitionReplayed: (partitionIndex) => {
        if (partitionIndex === 1) throw new Error('listener bug');
      },
    });
    const throwing = loadingPartition(0, 0);
    throwing.load = () => {
      throw new Error('cannot read the log');
    };
    await expect(h.router.onElection(0, 0, throwing)).rejects.toThrow('cannot read the log');
    await expect(h.router.onElection(1, 0, new CommittingPartitionWriter(1, 0))).rejects.toThrow(
      'listener bug',
    );
    expect(failures).toHaveLength(2);
    // GROUP_A is on partition 0, GROUP_B on 1.
    expect((await h.fetch(GROUP_A)).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await h.fetch(GROUP_B)).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  test('a newer election of a partition led is a resignation then an election', async () => {
    const h = harness();
    const writer = new CommittingPartitionWriter(0, 0);
    await h.router.onElection(0, 0, writer);
    expect(await h.commit(GROUP_A, 3)).toBe(ErrorCode.NONE);
    const join = h.sendJoin(GROUP_A, 'instance');
    const successor = loadingPartition(0, 1, writer.committedRecords());
    const loaded = h.router.onElection(0, 1, successor);
    expect((await join.promise).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(h.unloaded).toEqual([[0, 0, 1]]);
    expect((await h.fetch(GROUP_A)).errorCode).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    successor.releaseLoad();
    await loaded;
    // The new shard has what the log has: the commit, in an Empty group.
    expect((await h.fetch(GROUP_A)).offset).toBe(3);
    expect((await h.describe(GROUP_A)).state).toBe('Empty');
  });
});

describe('watching groups across shards', () => {
  test('a watch of every group sees groups of partitions elected later, and their unloading', async () => {
    const h = harness();
    const changes: GroupChange[] = [];
    const unwatch = h.router.watchGroups([], (change) => changes.push(change));
    const writer = new CommittingPartitionWriter(0, 0, [
      groupMetadataRecord(storedGroup(GROUP_A, 'member-1')),
    ]);
    await h.router.onElection(0, 0, writer);
    expect(changes.map((c) => [c.group.groupId, c.reason, c.isSnapshot, c.group.groupState])).toEqual([
      [GROUP_A, 'group-loaded', true, 'Stable'],
    ]);
    h.router.onResignation(0, 0);
    expect(
      changes.slice(1).map((c) => [c.group.groupId, c.reason, c.group.errorCode, c.group.groupState]),
    ).toEqual([[GROUP_A, 'group-unloaded', ErrorCode.NOT_COORDINATOR, '']]);
    // Back on this node: a new group to the watch again.
    await h.router.onElection(0, 1, new CommittingPartitionWriter(0, 1, writer.committedRecords()));
    expect(changes.slice(2).map((c) => [c.group.groupId, c.reason, c.isSnapshot])).toEqual([
      [GROUP_A, 'group-loaded', true],
    ]);
    unwatch();
  });

  test('a watch by name is told its group is not coordinated here, and when it is', async () => {
    const h = harness();
    await h.router.onElection(1, 0, new CommittingPartitionWriter(1, 0));
    const changes: GroupChange[] = [];
    h.router.watchGroups([GROUP_A], (change) => changes.push(change));
    expect(changes.map((c) => [c.reason, c.group.errorCode])).toEqual([
      ['snapshot', ErrorCode.NOT_COORDINATOR],
    ]);
    // Another shard's changes are not this watch's business.
    expect(await h.commit(GROUP_B, 1)).toBe(ErrorCode.NONE);
    expect(changes).toHaveLength(1);
    // Its partition is elected here, without the group: now it is known not to exist.
    await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    expect(await h.commit(GROUP_A, 1)).toBe(ErrorCode.NONE);
    expect(changes.slice(1).map((c) => [c.reason, c.group.errorCode, c.group.groupState])).toEqual([
      ['group-loaded', ErrorCode.GROUP_ID_NOT_FOUND, 'Dead'],
      ['group-created', ErrorCode.NONE, 'Empty'],
    ]);
  });

  test('a watch by name of a group its partition lacks hears the partition come and go', async () => {
    const h = harness();
    const changes: GroupChange[] = [];
    h.router.watchGroups([GROUP_A], (change) => changes.push(change));
    const writer = loadingPartition(0, 0);
    const loaded = h.router.onElection(0, 0, writer);
    writer.releaseLoad();
    await loaded;
    h.router.onResignation(0, 0);
    expect(changes.map((c) => [c.reason, c.group.errorCode])).toEqual([
      ['snapshot', ErrorCode.NOT_COORDINATOR],
      ['group-loaded', ErrorCode.GROUP_ID_NOT_FOUND],
      ['group-unloaded', ErrorCode.NOT_COORDINATOR],
    ]);
  });
});

test('maxGroups bounds the node, over every shard', async () => {
  const h = new RouterHarness();
  const router = new GroupCoordinatorRouter({ ...TEST_GROUP_CONFIG, maxGroups: 1 }, h.time, {
    numPartitions: NUM_PARTITIONS,
  });
  try {
    await router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
    await router.onElection(1, 0, new CommittingPartitionWriter(1, 0));
    const commit = (groupId: string): Promise<ErrorCode> =>
      router
        .offsetCommit(h.commitRequest(groupId, 1), CONTEXT)
        .then((r) => r.topics[0].partitions[0].errorCode);
    expect(await commit(GROUP_A)).toBe(ErrorCode.NONE);
    expect(await commit(GROUP_B)).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
  } finally {
    router.shutdown();
    h.router.shutdown();
  }
});

test('shutdown answers the parked calls of every shard COORDINATOR_NOT_AVAILABLE', async () => {
  const h = harness();
  await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
  await h.router.onElection(1, 0, new CommittingPartitionWriter(1, 0));
  const joinA = h.sendJoin(GROUP_A, 'a');
  const joinB = h.sendJoin(GROUP_B, 'b');
  h.router.shutdown();
  expect((await joinA.promise).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  expect((await joinB.promise).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  expect(await h.commit(GROUP_A, 1)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  // Leadership news after shutdown changes nothing.
  h.router.onElection(2, 0, new CommittingPartitionWriter(2, 0));
  expect(h.router.isLeading(2)).toBe(false);
});

test('one retention check covers every serving shard; a loading shard joins once loaded', async () => {
  const summaries: number[] = [];
  const h = harness({ onOffsetRetentionCheckCompleted: (summary) => summaries.push(summary.groupsExpired) });
  await h.router.onElection(0, 0, new CommittingPartitionWriter(0, 0));
  await h.router.onElection(1, 0, new CommittingPartitionWriter(1, 0));
  expect(await h.commit(GROUP_A, 1)).toBe(ErrorCode.NONE);
  expect(await h.commit(GROUP_B, 1)).toBe(ErrorCode.NONE);
  const GROUP_C = groupOn(2);
  const writerC = loadingPartition(2, 0, [
    offsetCommitRecord(GROUP_C, 'topic', 0, {
      committedOffset: 1,
      committedLeaderEpoch: -1,
      metadata: '',
      commitTimestampMs: h.time.nowMs(),
    }),
  ]);
  const loadedC = h.router.onElection(2, 0, writerC);
  // The one check the retention timer runs (its interval has passed many times over, checks never overlap);
  // it runs inside the advance, and removes the groups it expires at once.
  h.advance(TEST_GROUP_CONFIG.offsetsRetentionMinutes * 60_000);
  expect(summaries).toEqual([2]);
  expect((await h.describe(GROUP_A)).state).toBe('Dead');
  expect((await h.describe(GROUP_B)).state).toBe('Dead');
  writerC.releaseLoad();
  await loadedC;
  expect((await h.describe(GROUP_C)).state).toBe('Empty');
  h.advance(TEST_GROUP_CONFIG.offsetsRetentionCheckIntervalMs);
  expect(summaries).toEqual([2, 1]);
  expect((await h.describe(GROUP_C)).state).toBe('Dead');
});
