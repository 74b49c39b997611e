import { CohortError, ErrorCode } from '../../../src/errors';
import type { GroupConfig } from '../../../src/group/group-config';
import type { StoredGroup } from '../../../src/group/stored-group';
import type { Protocol, RequestContext } from '../../../src/group/group-protocol';
import {
  type CoordinatorTestContextOptions,
  CoordinatorTestContext,
  groupMetadataRecord,
} from '../../support/coordinator-test-context';
import {
  CLIENT_HOST,
  DEFAULT_SESSION_TIMEOUT_MS,
  FOLLOWER_INSTANCE_ID,
  GROUP_ID,
  GROUP_INITIAL_REBALANCE_DELAY_MS,
  protocol,
  PROTOCOL_SUPERSET,
  PROTOCOL_TYPE,
  withoutLastHeartbeats,
} from '../../support/group-harness';

/**
 * What the coordinator acknowledges only once its records are durable, and what a restart brings back:
 * the coordinator writes through a fake `__consumer_offsets` partition whose appends commit when the test
 * says (`commit`) or fail (`failAppend`), and a restart is a new coordinator loading what the partition
 * committed (`restart`).
 */

const CONTEXT: RequestContext = { clientHost: CLIENT_HOST };
const LEADER_ASSIGNMENT = Buffer.from('leader-assignment');
const FOLLOWER_ASSIGNMENT = Buffer.from('follower-assignment');

function subscriptions(name: string): Protocol[] {
  return [protocol('range', Buffer.from(`${name}-range`)), protocol('roundrobin', Buffer.from(`${name}-rr`))];
}

interface FormedGroup {
  readonly leaderId: string;
  readonly followerId: string;
  /** The name its subscriptions were made from. */
  readonly followerName: string;
  readonly generationId: number;
}

const contexts: CoordinatorTestContext[] = [];
afterEach(() => {
  for (const context of contexts.splice(0)) context.shutdown();
});

/** Shut down after the test. */
function tracked(context: CoordinatorTestContext): CoordinatorTestContext {
  contexts.push(context);
  return context;
}

/** A loaded coordinator over a partition holding `options.records` (none by default). */
async function coordinator(
  config: Partial<GroupConfig> = {},
  options: Parameters<typeof CoordinatorTestContext.create>[1] = {},
): Promise<CoordinatorTestContext> {
  return tracked(await CoordinatorTestContext.create(config, options));
}

/** A coordinator over a partition holding `records`, whose load the test ends; and the election's promise. */
function loadingCoordinator(records: readonly StoredGroup[] = []): {
  h: CoordinatorTestContext;
  loaded: Promise<void>;
} {
  const { context, loaded } = CoordinatorTestContext.createLoading(
    {},
    { records: records.map(groupMetadataRecord) },
  );
  return { h: tracked(context), loaded };
}

/** The new coordinator after `before` stops: it loads what `before`'s partition committed. */
async function restart(
  before: CoordinatorTestContext,
  config: Partial<GroupConfig> = {},
): Promise<CoordinatorTestContext> {
  before.shutdown();
  return tracked(await before.restart(config));
}

/** The member ids of the group's committed record, sorted. */
function committedMemberIds(h: CoordinatorTestContext): string[] | undefined {
  return h
    .committedGroup(GROUP_ID)
    ?.members.map((m) => m.memberId)
    .sort();
}

/** Two dynamic members join, the leader assigns, both sync, the group's record commits: Stable at generation 1. */
async function formGroup(h: CoordinatorTestContext): Promise<FormedGroup> {
  const a = await h.sendDynamicJoin({ protocols: subscriptions('a'), clientId: 'client-a' });
  const b = await h.sendDynamicJoin({ protocols: subscriptions('b'), clientId: 'client-b' });
  // Members added during the initial delay extend it once more (KIP-134).
  h.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
  h.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
  const [joinA, joinB] = await Promise.all([a.promise, b.promise]);
  const isLeaderA = joinA.leaderId === joinA.memberId;
  const [leader, follower] = isLeaderA ? [joinA, joinB] : [joinB, joinA];
  const { generationId } = leader;
  const leaderSync = h.sendSync({
    generationId,
    memberId: leader.memberId,
    assignments: [
      [leader.memberId, LEADER_ASSIGNMENT],
      [follower.memberId, FOLLOWER_ASSIGNMENT],
    ],
  });
  const followerSync = h.sendSync({ generationId, memberId: follower.memberId });
  h.commit();
  expect(await leaderSync.answer.promise).toMatchObject({
    errorCode: ErrorCode.NONE,
    assignment: LEADER_ASSIGNMENT,
  });
  expect(await followerSync.answer.promise).toMatchObject({
    errorCode: ErrorCode.NONE,
    assignment: FOLLOWER_ASSIGNMENT,
  });
  return {
    leaderId: leader.memberId,
    followerId: follower.memberId,
    followerName: isLeaderA ? 'b' : 'a',
    generationId,
  };
}

describe('group metadata is stored when a generation completes', () => {
  test('the leader SyncGroup is answered, and the group Stable, only once its record is durable', async () => {
    const h = await coordinator();
    const a = await h.sendDynamicJoin({ protocols: subscriptions('a') });
    h.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    const { memberId, generationId } = await a.promise;
    const sync = h.sendSync({ generationId, memberId, assignments: [[memberId, LEADER_ASSIGNMENT]] });
    expect(h.pendingAppends).toBe(1);
    expect(sync.records).toMatchObject([
      {
        key: { groupId: GROUP_ID },
        value: {
          generationId,
          protocolType: PROTOCOL_TYPE,
          protocolName: 'range',
          leaderId: memberId,
          members: [{ memberId, assignment: LEADER_ASSIGNMENT, protocols: subscriptions('a') }],
        },
      },
    ]);
    expect(await h.state()).toBe('CompletingRebalance');
    expect(sync.answer.isSettled).toBe(false);

    h.commit();
    expect(await sync.answer.promise).toMatchObject({
      errorCode: ErrorCode.NONE,
      assignment: LEADER_ASSIGNMENT,
    });
    expect(await h.state()).toBe('Stable');
    expect(h.committedGroup(GROUP_ID)?.generationId).toBe(generationId);
  });

  test('a failed record fails every parked SyncGroup with Kafka’s code and starts another rebalance', async () => {
    const h = await coordinator();
    const a = await h.sendDynamicJoin();
    const b = await h.sendDynamicJoin();
    h.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    h.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    const [joinA, joinB] = await Promise.all([a.promise, b.promise]);
    const leader = joinA.leaderId === joinA.memberId ? joinA : joinB;
    const follower = leader === joinA ? joinB : joinA;
    const followerSync = h.sendSync({ generationId: 1, memberId: follower.memberId });
    const leaderSync = h.sendSync({ generationId: 1, memberId: leader.memberId, assignments: [] });
    expect(h.pendingAppends).toBe(1);
    h.failAppend(new CohortError(ErrorCode.NOT_LEADER_OR_FOLLOWER, 'lost the partition'));
    expect((await leaderSync.answer.promise).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect((await followerSync.answer.promise).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(await h.state()).toBe('PreparingRebalance');
    expect(h.committedGroup(GROUP_ID)).toBeUndefined();
  });

  test('the listener hears of a group record that could not be stored', async () => {
    const failures: Array<[string, number, unknown]> = [];
    let heard!: () => void;
    const isHeard = new Promise<void>((resolve) => (heard = resolve));
    const options: CoordinatorTestContextOptions = {
      listener: {
        onGroupStoreFailed: (groupId, generation, error) => {
          failures.push([groupId, generation, error]);
          heard();
        },
      },
    };
    const h = await coordinator({}, options);
    const join = await h.dynamicJoin({ protocols: subscriptions('a'), clientId: 'c' });
    expect(join.errorCode).toBe(ErrorCode.NONE);
    // The member leaves before syncing: the group empties, and its Empty record fails.
    const left = h.leave([{ memberId: join.memberId }]);
    expect(h.pendingAppends).toBe(1);
    const error = new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, 'fsync failed');
    h.failAppend(error);
    await isHeard;
    expect(failures).toEqual([[GROUP_ID, 2, error]]);
    // The leave's answer was the write's: it failed with it.
    expect(await h.answerGiven(left, 'LeaveGroup')).toEqual({
      errorCode: ErrorCode.UNKNOWN_SERVER_ERROR,
      members: [],
    });
  });

  test('a group whose last member leaves is stored Empty with its new generation', async () => {
    const h = await coordinator();
    const memberId = await h.stableSingleMemberGroup();
    expect(h.committedGroup(GROUP_ID)).toMatchObject({ generationId: 1, members: [{ memberId }] });
    await h.leaveAndCommit([{ memberId }]);
    expect(await h.state()).toBe('Empty');
    h.commit();
    expect(h.committedGroup(GROUP_ID)).toEqual({
      protocolType: PROTOCOL_TYPE,
      generationId: 2,
      protocolName: '',
      leaderId: '',
      currentStateTimestampMs: h.time.nowMs(),
      members: [],
    });
  });

  test('a member that leaves a Stable group is not written on its own: the rebalance it starts is', async () => {
    const h = await coordinator();
    const { leaderId, followerId } = await formGroup(h);
    const writes = h.writer.records.length;
    await h.leave([{ memberId: followerId }]);
    expect(h.writer.records).toHaveLength(writes);
    const rejoin = await h.join({ memberId: leaderId, protocols: subscriptions('a') });
    expect(rejoin.generationId).toBe(2);
    await h.sync({ generationId: 2, memberId: leaderId, assignments: [[leaderId, LEADER_ASSIGNMENT]] });
    expect(h.writer.records).toHaveLength(writes + 1);
    expect(h.committedGroup(GROUP_ID)?.members.map((m) => m.memberId)).toEqual([leaderId]);
  });

  test('a static member replaced in Stable is answered only once the record with its new id is durable', async () => {
    const h = await coordinator();
    const { leaderId, followerId } = await h.staticMembersJoinAndRebalance();
    const rejoin = h.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID, protocols: PROTOCOL_SUPERSET });
    expect(h.pendingAppends).toBe(1);
    const record = h.storedGroup(GROUP_ID)!;
    const newMemberId = record.members.find((m) => m.groupInstanceId === FOLLOWER_INSTANCE_ID)!.memberId;
    expect(newMemberId).not.toBe(followerId);
    expect(await h.state()).toBe('Stable');
    expect(rejoin.isSettled).toBe(false);
    h.commit();
    expect(await rejoin.promise).toMatchObject({
      errorCode: ErrorCode.NONE,
      memberId: newMemberId,
      generationId: 1,
      leaderId,
      skipAssignment: false,
    });
    expect(committedMemberIds(h)).toEqual([leaderId, newMemberId].sort());
  });

  test('a static replacement whose record fails keeps the new id in memory; the instance replaces it again', async () => {
    // docs/protocol.md, "Where cohort chose": Kafka undoes the replacement; cohort keeps it and lets the
    // instance, told to retry, replace itself once more.
    const h = await coordinator();
    const { leaderId, followerId } = await h.staticMembersJoinAndRebalance();
    const rejoin = h.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID });
    const firstNewId = h
      .storedGroup(GROUP_ID)!
      .members.find((m) => m.groupInstanceId === FOLLOWER_INSTANCE_ID)!.memberId;
    h.failAppend(new CohortError(ErrorCode.NOT_ENOUGH_REPLICAS, 'the log is short of replicas'));
    // Kafka's conversion of a failed group append: retriable, find the coordinator again.
    expect(await rejoin.promise).toMatchObject({
      errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE,
      memberId: '',
    });
    expect(await h.state()).toBe('Stable');
    expect((await h.memberIds()).sort()).toEqual([leaderId, firstNewId].sort());
    expect(await h.heartbeat(followerId, 1, FOLLOWER_INSTANCE_ID)).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(committedMemberIds(h)).toEqual([leaderId, followerId].sort());

    // The instance retries: a second replacement, stored this time, without a rebalance.
    const retry = h.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID });
    h.commit();
    const retried = await retry.promise;
    const secondNewId = retried.memberId;
    expect(retried).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1, leaderId });
    expect(secondNewId).not.toBe(firstNewId);
    expect(await h.heartbeat(firstNewId, 1, FOLLOWER_INSTANCE_ID)).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(await h.heartbeat(secondNewId, 1, FOLLOWER_INSTANCE_ID)).toBe(ErrorCode.NONE);
    expect(committedMemberIds(h)).toEqual([leaderId, secondNewId].sort());
    expect(h.transitions.filter((t) => t.to === 'PreparingRebalance')).toHaveLength(1); // the first rebalance only
  });
});

describe('after a restart, groups come back from the store', () => {
  test('a Stable group keeps its generation, protocol, leader, members, metadata and assignments', async () => {
    const before = await coordinator();
    const { leaderId, followerId, followerName, generationId } = await formGroup(before);
    const described = await before.describe();

    const after = await restart(before);
    // A loaded member's session starts over at the load (as Kafka's), and with it its last heartbeat.
    expect(withoutLastHeartbeats(await after.describe())).toEqual(withoutLastHeartbeats(described));
    expect(described).toMatchObject({ groupState: 'Stable', protocolData: 'range', generationId });
    expect(described.members.map((m) => [m.memberId, m.clientId, m.memberMetadata.toString()])).toEqual(
      expect.arrayContaining([
        [leaderId, expect.any(String), expect.stringMatching(/-range$/)],
        [followerId, expect.any(String), expect.stringMatching(/-range$/)],
      ]),
    );
    // Members carry on with their old ids and generation.
    expect(await after.heartbeat(leaderId, generationId)).toBe(ErrorCode.NONE);
    expect(await after.heartbeat(followerId, generationId)).toBe(ErrorCode.NONE);
    expect(await after.heartbeat(followerId, generationId + 1)).toBe(ErrorCode.ILLEGAL_GENERATION);
    const codes = await after.commitOffsetsAndAnswer({ memberId: followerId, generationId }, [
      { topic: 't', partition: 0, offset: 5 },
    ]);
    expect(codes.get('t-0')).toBe(ErrorCode.NONE);
    expect(await after.sync({ generationId, memberId: followerId })).toMatchObject({
      errorCode: ErrorCode.NONE,
      protocolName: 'range',
      assignment: FOLLOWER_ASSIGNMENT,
    });
    // A follower rejoining unchanged is recognised as unchanged: the current generation, no rebalance.
    const rejoin = await after.join({ memberId: followerId, protocols: subscriptions(followerName) });
    expect(rejoin).toMatchObject({ errorCode: ErrorCode.NONE, generationId, leaderId });
    expect(await after.state()).toBe('Stable');
  });

  test('every restored member starts a fresh session at load: silent ones expire a session later, not earlier', async () => {
    const before = await coordinator();
    const { leaderId, followerId, generationId } = await formGroup(before);
    // The members go silent for most of a session before the restart: that time does not count against them.
    before.time.advance(DEFAULT_SESSION_TIMEOUT_MS - 1);

    const after = await restart(before);
    after.time.advance(DEFAULT_SESSION_TIMEOUT_MS - 1);
    expect(await after.memberIds()).toHaveLength(2);
    expect(await after.heartbeat(leaderId, generationId)).toBe(ErrorCode.NONE);
    after.time.advance(1);
    expect(await after.memberIds()).toEqual([leaderId]);
    expect(await after.state()).toBe('PreparingRebalance');
    expect(await after.heartbeat(followerId, generationId)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('an Empty group comes back Empty with its generation and protocol type; a group with only offsets comes back too', async () => {
    const before = await coordinator();
    const memberId = await before.stableSingleMemberGroup();
    await before.leaveAndCommit([{ memberId }]);
    before.commit(); // the Empty group's record
    const codes = await before.commitOffsetsAndAnswer(
      { groupId: 'offsets-only', memberId: '', generationId: -1 },
      [{ topic: 't', partition: 0, offset: 3 }],
    );
    expect(codes.get('t-0')).toBe(ErrorCode.NONE);

    const after = await restart(before);
    expect(await after.describe()).toMatchObject({
      groupState: 'Empty',
      protocolType: PROTOCOL_TYPE,
      members: [],
    });
    expect(await after.describe('offsets-only')).toMatchObject({ groupState: 'Empty', protocolType: '' });
    // The next generation follows on from the stored one.
    const join = await after.dynamicJoin();
    expect(join.generationId).toBe(3);
  });

  test('a restored group over group.max.size rebalances at once', async () => {
    const before = await coordinator();
    await formGroup(before);
    const after = await restart(before, { groupMaxSize: 1 });
    expect(await after.state()).toBe('PreparingRebalance');
  });
});

describe('loading', () => {
  function storedGroup(overrides: Partial<StoredGroup> = {}): StoredGroup {
    return {
      groupId: GROUP_ID,
      protocolType: PROTOCOL_TYPE,
      generationId: 4,
      protocolName: 'range',
      leaderId: 'member-1',
      currentStateTimestampMs: 0,
      members: [
        {
          memberId: 'member-1',
          groupInstanceId: '',
          clientId: 'c',
          clientHost: 'h',
          rebalanceTimeoutMs: 500,
          sessionTimeoutMs: 500,
          protocols: subscriptions('m1'),
          assignment: Buffer.from('a1'),
        },
      ],
      ...overrides,
    };
  }

  test('every group request gets COORDINATOR_LOAD_IN_PROGRESS (Kafka: Heartbeat NONE, SyncGroup REBALANCE_IN_PROGRESS) until the load is done', async () => {
    // The partition holds the group; the load has replayed it and waits for the high watermark.
    const { h, loaded } = loadingCoordinator([storedGroup()]);
    const appends = jest.spyOn(h.writer, 'append');
    const inProgress = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    expect((await h.join({ memberId: '' })).errorCode).toBe(inProgress);
    // Kafka's two exceptions: a SyncGroup is told to rejoin (the rebalance it belonged to may be lost with
    // the old coordinator), a Heartbeat is answered blindly (the loaded group decides at the next one).
    expect((await h.sync({ generationId: 4, memberId: 'member-1' })).errorCode).toBe(
      ErrorCode.REBALANCE_IN_PROGRESS,
    );
    expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.NONE);
    expect((await h.leave([{ memberId: 'member-1' }])).errorCode).toBe(inProgress);
    expect(
      (
        await h.commitOffsetsAndAnswer({ memberId: 'member-1', generationId: 4 }, [
          { topic: 't', partition: 0, offset: 1 },
        ])
      ).get('t-0'),
    ).toBe(inProgress);
    expect((await h.fetch(GROUP_ID, [['t', [0]]])).errorCode).toBe(inProgress);
    expect((await h.describe()).errorCode).toBe(inProgress);
    expect((await h.router.listGroups({ statesFilter: [] }, CONTEXT)).errorCode).toBe(inProgress);
    expect((await h.deleteGroups([GROUP_ID]))[0]!.errorCode).toBe(inProgress);
    // An empty group id is still a bad request first, as in Kafka.
    expect((await h.join({ groupId: '' })).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
    // Nothing was written, nor tried: the partition holds the one record it was loaded from.
    expect(appends).not.toHaveBeenCalled();
    expect(h.writer.records).toHaveLength(1);

    h.writer.releaseLoad();
    await expect(loaded).resolves.toBeUndefined();
    expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.NONE);
    expect(await h.state()).toBe('Stable');
  });

  test('a member stored without a rebalance timeout comes back with its session timeout', async () => {
    // Stored before a 0 meant "the session timeout" (ab78416): restored as 0, a rebalance would complete
    // at the next tick and drop the member that is still heartbeating.
    const sessionMs = 2_000;
    const member = { ...storedGroup().members[0]!, rebalanceTimeoutMs: 0, sessionTimeoutMs: sessionMs };
    const h = await coordinator({}, { records: [groupMetadataRecord(storedGroup({ members: [member] }))] });
    const joining = await h.sendDynamicJoin({ rebalanceTimeoutMs: 100 });
    // Timers run inside the clock's advance.
    for (let waited = 0; waited < sessionMs - 500; waited += 500) {
      h.time.advance(500);
      expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    }
    h.time.advance(499);
    expect(await h.state()).toBe('PreparingRebalance');
    expect(joining.isSettled).toBe(false);
    h.time.advance(1);
    expect(await joining.promise).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 5 });
  });

  test('a load that fails leaves the coordinator unavailable instead of serving partial state', async () => {
    const { h, loaded } = loadingCoordinator();
    const failure = new Error('disk gone');
    h.writer.failLoad(failure);
    await expect(loaded).rejects.toBe(failure);
    expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await h.describe()).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  test('an unusable stored group fails the load and restores no group at all', async () => {
    const { h, loaded } = loadingCoordinator([
      storedGroup({ groupId: 'fine' }),
      storedGroup({ groupId: 'broken', leaderId: 'nobody' }),
    ]);
    h.writer.releaseLoad();
    const error: unknown = await loaded.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(CohortError);
    expect(String(error)).toContain('led by nobody');
    expect(h.router.numGroups).toBe(0);
    expect((await h.describe('fine')).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  test('a shutdown during the load answers COORDINATOR_NOT_AVAILABLE and the late load restores nothing', async () => {
    const { h, loaded } = loadingCoordinator([storedGroup()]);
    h.shutdown();
    expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    h.writer.releaseLoad();
    // The election's promise ends once the unloaded shard's load has.
    await expect(loaded).resolves.toBeUndefined();
    expect(h.router.numGroups).toBe(0);
  });
});
