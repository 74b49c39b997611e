import { CohortError, ErrorCode } from '../../../src/errors';
import type { JoinGroupResponse } from '../../../src/group/group-protocol';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import {
  DEFAULT_REBALANCE_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  FOLLOWER_INSTANCE_ID,
  GROUP_ID,
  LEADER_INSTANCE_ID,
  PROTOCOL_NAME,
  PROTOCOL_SUPERSET,
  PROTOCOL_TYPE,
  type Tracked,
} from '../../support/group-harness';

let ctx: CoordinatorTestContext;
beforeEach(async () => {
  ctx = await CoordinatorTestContext.create();
});
afterEach(() => ctx.shutdown());

/** A Stable group of two dynamic members at generation 2: the first leads. */
async function stableGroupOfTwo(): Promise<{ leaderId: string; followerId: string; generationId: number }> {
  const leaderId = await ctx.stableSingleMemberGroup();
  const other = await ctx.sendDynamicJoin();
  const rejoin = await ctx.join({ memberId: leaderId });
  const followerId = (await other.promise).memberId;
  const generationId = rejoin.generationId;
  const followerSync = ctx.sendSync({ generationId, memberId: followerId });
  await ctx.sync({
    generationId,
    memberId: leaderId,
    assignments: [
      [leaderId, Buffer.from([0])],
      [followerId, Buffer.from([1])],
    ],
  });
  expect((await followerSync.answer.promise).errorCode).toBe(ErrorCode.NONE);
  expect(await ctx.state()).toBe('Stable');
  return { leaderId, followerId, generationId };
}

describe('Heartbeat', () => {
  test('an empty group id gets INVALID_GROUP_ID', async () => {
    expect(await ctx.heartbeat('m', 1, '', '')).toBe(ErrorCode.INVALID_GROUP_ID);
  });

  test('a heartbeat to an unknown group gets UNKNOWN_MEMBER_ID', async () => {
    expect(await ctx.heartbeat('memberId', -1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a heartbeat from an unknown member of an existing group gets UNKNOWN_MEMBER_ID', async () => {
    await ctx.stableSingleMemberGroup();
    expect(await ctx.heartbeat('memberId', 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a heartbeat to an Empty group gets UNKNOWN_MEMBER_ID', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    await ctx.leaveAndCommit([{ memberId }]);
    expect(await ctx.state()).toBe('Empty');
    expect(await ctx.heartbeat(memberId, 2)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a heartbeat during CompletingRebalance is answered NONE (the newest behaviour)', async () => {
    const join = await ctx.dynamicJoin();
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(await ctx.heartbeat(join.memberId, join.generationId)).toBe(ErrorCode.NONE);
  });

  test('heartbeats during CompletingRebalance keep the session alive while the leader is slow to sync', async () => {
    // Session 500 ms, rebalance timeout 5 s: without the re-arm the member would expire at 500 ms.
    const join = await ctx.dynamicJoin({ rebalanceTimeoutMs: 10 * DEFAULT_SESSION_TIMEOUT_MS });
    expect(await ctx.state()).toBe('CompletingRebalance');
    for (
      let elapsed = 0;
      elapsed < 4 * DEFAULT_SESSION_TIMEOUT_MS;
      elapsed += DEFAULT_SESSION_TIMEOUT_MS / 2
    ) {
      ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS / 2);
      expect(await ctx.heartbeat(join.memberId, join.generationId)).toBe(ErrorCode.NONE);
    }
    expect(await ctx.memberIds()).toEqual([join.memberId]);
    expect(await ctx.state()).toBe('CompletingRebalance');
  });

  test('a heartbeat with the wrong generation gets ILLEGAL_GENERATION', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    expect(await ctx.heartbeat(memberId, 2)).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test('a heartbeat of a member of a Stable group gets NONE', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
  });

  test('a heartbeat during PreparingRebalance gets REBALANCE_IN_PROGRESS', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    await ctx.sendDynamicJoin();
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a member that stops heartbeating is removed when its session ends, never before', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS - 1);
    expect(await ctx.memberIds()).toEqual([memberId]);
    ctx.time.advance(1);
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await ctx.state()).toBe('Empty');
  });

  test('heartbeats keep a session alive', async () => {
    const sessionTimeoutMs = 1000;
    const memberId = await ctx.stableSingleMemberGroup({
      sessionTimeoutMs,
      rebalanceTimeoutMs: sessionTimeoutMs,
    });
    ctx.time.advance(sessionTimeoutMs / 2);
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
    ctx.time.advance(sessionTimeoutMs / 2 + 100);
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
  });

  test('an accepted offset commit keeps a session alive', async () => {
    const sessionTimeoutMs = 1000;
    const memberId = await ctx.stableSingleMemberGroup({
      sessionTimeoutMs,
      rebalanceTimeoutMs: sessionTimeoutMs,
    });
    ctx.time.advance(sessionTimeoutMs / 2);
    const codes = await ctx.commitOffsetsAndAnswer({ memberId, generationId: 1 }, [
      { topic: 'topic', partition: 0, offset: 0 },
    ]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    ctx.time.advance(sessionTimeoutMs / 2 + 100);
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
  });

  test('a member whose session ends during a rebalance falls out, and the rebalance completes without it', async () => {
    const first = await ctx.dynamicJoin({ rebalanceTimeoutMs: 2000, sessionTimeoutMs: 1000 });
    await ctx.sync({ generationId: 1, memberId: first.memberId, assignments: [] });
    const other = await ctx.sendDynamicJoin();
    ctx.time.advance(500);
    expect(await ctx.heartbeat(first.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    ctx.time.advance(1000);
    expect(await ctx.heartbeat(first.memberId, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    const otherJoin = await other.promise;
    expect(otherJoin).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(otherJoin.members.map((m) => m.memberId)).toEqual([otherJoin.memberId]);
  });

  test('a member that keeps heartbeating through a rebalance longer than its session stays in the group', async () => {
    const first = await ctx.dynamicJoin({ rebalanceTimeoutMs: 3000, sessionTimeoutMs: 500 });
    await ctx.sync({ generationId: 1, memberId: first.memberId, assignments: [] });
    const other = await ctx.sendDynamicJoin();
    for (let t = 0; t < 2000; t += 400) {
      ctx.time.advance(400);
      expect(await ctx.heartbeat(first.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    }
    const rejoin = await ctx.join({
      memberId: first.memberId,
      rebalanceTimeoutMs: 3000,
      sessionTimeoutMs: 500,
    });
    expect(rejoin).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2, leaderId: first.memberId });
    expect(rejoin.members).toHaveLength(2);
    expect((await other.promise).generationId).toBe(2);
  });

  test('a heartbeat for a deleted group gets UNKNOWN_MEMBER_ID', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    await ctx.leaveAndCommit([{ memberId }]);
    await ctx.deleteGroups([GROUP_ID]);
    expect(await ctx.heartbeat(memberId, 2)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });
});

describe('SyncGroup', () => {
  test('an empty group id gets INVALID_GROUP_ID', async () => {
    expect((await ctx.sync({ groupId: '', generationId: 1, memberId: 'm' })).errorCode).toBe(
      ErrorCode.INVALID_GROUP_ID,
    );
  });

  test('a sync to an unknown group gets UNKNOWN_MEMBER_ID', async () => {
    expect((await ctx.sync({ generationId: 1, memberId: 'memberId' })).errorCode).toBe(
      ErrorCode.UNKNOWN_MEMBER_ID,
    );
  });

  test('a sync from an unknown member gets UNKNOWN_MEMBER_ID', async () => {
    await ctx.stableSingleMemberGroup();
    expect((await ctx.sync({ generationId: 1, memberId: 'blah' })).errorCode).toBe(
      ErrorCode.UNKNOWN_MEMBER_ID,
    );
  });

  test('a sync with the wrong generation gets ILLEGAL_GENERATION', async () => {
    const join = await ctx.dynamicJoin();
    const response = await ctx.sync({
      generationId: join.generationId + 1,
      memberId: join.memberId,
      assignments: [],
    });
    expect(response.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test('a sync during PreparingRebalance gets REBALANCE_IN_PROGRESS', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    await ctx.sendDynamicJoin();
    expect((await ctx.sync({ generationId: 1, memberId })).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a leader assigning nothing gets an empty assignment, and the group is Stable', async () => {
    const join = await ctx.dynamicJoin();
    const sync = await ctx.sync({
      generationId: join.generationId,
      memberId: join.memberId,
      assignments: [],
    });
    expect(sync).toMatchObject({
      errorCode: ErrorCode.NONE,
      protocolType: PROTOCOL_TYPE,
      protocolName: PROTOCOL_NAME,
    });
    expect(sync.assignment).toHaveLength(0);
    expect(await ctx.heartbeat(join.memberId, 1)).toBe(ErrorCode.NONE);
  });

  test.each([
    ['an inconsistent protocol type', 'whatever', '', ErrorCode.INCONSISTENT_GROUP_PROTOCOL],
    ['an inconsistent protocol name', '', 'whatever', ErrorCode.INCONSISTENT_GROUP_PROTOCOL],
    ['no protocol type or name', '', '', ErrorCode.NONE],
    ['the group protocol type and name', PROTOCOL_TYPE, PROTOCOL_NAME, ErrorCode.NONE],
  ])('a sync naming %s gets the matching answer', async (_what, protocolType, protocolName, expected) => {
    const leaderJoin = ctx.sendJoin({ groupInstanceId: LEADER_INSTANCE_ID });
    const followerJoin = ctx.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID });
    ctx.time.advance(50);
    ctx.time.advance(50);
    const { memberId: leaderId, generationId } = await leaderJoin.promise;
    const followerId = (await followerJoin.promise).memberId;
    const leaderSync = await ctx.sync({
      generationId,
      memberId: leaderId,
      protocolType,
      protocolName,
      assignments: [],
    });
    const followerSync = await ctx.sync({ generationId, memberId: followerId, protocolType, protocolName });
    for (const sync of [leaderSync, followerSync]) {
      expect(sync.errorCode).toBe(expected);
      expect(sync.protocolType).toBe(expected === ErrorCode.NONE ? PROTOCOL_TYPE : '');
      expect(sync.protocolName).toBe(expected === ErrorCode.NONE ? PROTOCOL_NAME : '');
    }
  });

  test('a follower syncing after the leader gets its assignment at once', async () => {
    const { leaderId, followerId, generationId } = await stableGroupOfTwo();
    const follower = await ctx.sync({ generationId, memberId: followerId });
    expect(follower.assignment).toEqual(Buffer.from([1]));
    const leader = await ctx.sync({ generationId, memberId: leaderId });
    expect(leader.assignment).toEqual(Buffer.from([0]));
  });

  test('a follower syncing before the leader waits for the leader assignment', async () => {
    const leaderId = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = await ctx.join({ memberId: leaderId });
    const followerId = (await other.promise).memberId;
    const followerSync = ctx.sendSync({ generationId: rejoin.generationId, memberId: followerId });
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(followerSync.answer.isSettled).toBe(false);
    const leaderSync = await ctx.sync({
      generationId: rejoin.generationId,
      memberId: leaderId,
      assignments: [
        [leaderId, Buffer.from([0])],
        [followerId, Buffer.from([1])],
      ],
    });
    expect(leaderSync.assignment).toEqual(Buffer.from([0]));
    const followerAnswer = await followerSync.answer.promise;
    expect(followerAnswer).toMatchObject({ errorCode: ErrorCode.NONE, protocolName: PROTOCOL_NAME });
    expect(followerAnswer.assignment).toEqual(Buffer.from([1]));
  });

  test('a second SyncGroup while the first is parked answers the first with REBALANCE_IN_PROGRESS', async () => {
    const leaderId = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = await ctx.join({ memberId: leaderId });
    const followerId = (await other.promise).memberId;
    const firstSync = ctx.sendSync({ generationId: rejoin.generationId, memberId: followerId });
    const secondSync = ctx.sendSync({ generationId: rejoin.generationId, memberId: followerId });
    expect((await firstSync.answer.promise).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(secondSync.answer.isSettled).toBe(false);
    await ctx.sync({
      generationId: rejoin.generationId,
      memberId: leaderId,
      assignments: [[followerId, Buffer.from([7])]],
    });
    expect((await secondSync.answer.promise).assignment).toEqual(Buffer.from([7]));
  });

  test('a follower waiting for a leader that never syncs is told REBALANCE_IN_PROGRESS at the rebalance timeout', async () => {
    const leaderId = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = await ctx.join({ memberId: leaderId });
    const followerId = (await other.promise).memberId;
    const followerSync = ctx.sendSync({ generationId: rejoin.generationId, memberId: followerId });
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS - 1);
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(followerSync.answer.isSettled).toBe(false);
    ctx.time.advance(1);
    expect((await followerSync.answer.promise).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(await ctx.memberIds()).toEqual([followerId]);
    expect(await ctx.state()).toBe('PreparingRebalance');
  });

  test('a member that leaves while parked in SyncGroup is answered UNKNOWN_MEMBER_ID; the others must rejoin', async () => {
    const leaderId = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = await ctx.join({ memberId: leaderId });
    const followerId = (await other.promise).memberId;
    const followerSync = ctx.sendSync({ generationId: rejoin.generationId, memberId: followerId });
    await ctx.leave([{ memberId: followerId }]);
    expect((await followerSync.answer.promise).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await ctx.state()).toBe('PreparingRebalance');
  });
});

describe('DelayedSync: members that never sync', () => {
  // Shorter than the session, so that it is the missing SyncGroup, not the session, that removes members.
  const rebalanceTimeoutMs = 300;

  async function threeMembersJoined(): Promise<JoinGroupResponse[]> {
    const joins = [];
    for (let i = 0; i < 3; i++) joins.push(await ctx.sendDynamicJoin({ rebalanceTimeoutMs }));
    ctx.time.advance(50);
    ctx.time.advance(50);
    const results = await Promise.all(joins.map((j) => j.promise));
    for (const r of results) expect(r).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1 });
    expect(await ctx.state()).toBe('CompletingRebalance');
    return results;
  }

  test('when nobody syncs, everyone is removed at the rebalance timeout and the group is Empty', async () => {
    await threeMembersJoined();
    ctx.time.advance(rebalanceTimeoutMs - 1);
    expect(await ctx.memberIds()).toHaveLength(3);
    ctx.time.advance(1);
    expect(await ctx.memberIds()).toEqual([]);
    expect(await ctx.state()).toBe('Empty');
    expect(ctx.transitions.at(-1)).toMatchObject({
      from: 'PreparingRebalance',
      to: 'Empty',
      generationId: 2,
    });
  });

  test('followers that never sync are removed and the group rebalances', async () => {
    const results = await threeMembersJoined();
    const leader = results.find((r) => r.leaderId === r.memberId) as JoinGroupResponse;
    const sync = await ctx.sync({ generationId: 1, memberId: leader.memberId, assignments: [] });
    expect(sync.errorCode).toBe(ErrorCode.NONE);
    expect(await ctx.state()).toBe('Stable');
    ctx.time.advance(rebalanceTimeoutMs);
    expect(await ctx.memberIds()).toEqual([leader.memberId]);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(await ctx.heartbeat(leader.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a leader that never syncs is removed, and the parked followers are told to rejoin', async () => {
    const results = await threeMembersJoined();
    const followers = results.filter((r) => r.leaderId !== r.memberId);
    const syncs = followers.map((f) => ctx.sendSync({ generationId: 1, memberId: f.memberId }));
    ctx.time.advance(rebalanceTimeoutMs);
    for (const sync of syncs)
      expect((await sync.answer.promise).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect((await ctx.memberIds()).sort()).toEqual(followers.map((f) => f.memberId).sort());
    expect(await ctx.state()).toBe('PreparingRebalance');
  });

  test('when everyone syncs, the rebalance timeout removes nobody', async () => {
    const results = await threeMembersJoined();
    const leader = results.find((r) => r.leaderId === r.memberId) as JoinGroupResponse;
    for (const r of results) if (r !== leader) ctx.sendSync({ generationId: 1, memberId: r.memberId });
    await ctx.sync({ generationId: 1, memberId: leader.memberId, assignments: [] });
    ctx.time.advance(rebalanceTimeoutMs - 1);
    for (const r of results) expect(await ctx.heartbeat(r.memberId, 1)).toBe(ErrorCode.NONE);
    ctx.time.advance(rebalanceTimeoutMs); // past the sync deadline, within every session
    expect(await ctx.memberIds()).toHaveLength(3);
    expect(await ctx.state()).toBe('Stable');
  });
});

describe('pending members (KIP-394)', () => {
  test('a member that never comes back with its member id expires and the group stays Stable', async () => {
    const first = await ctx.stableSingleMemberGroup();
    ctx.time.advance(100);
    const second = await ctx.join();
    expect(second.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect(await ctx.state()).toBe('Stable');
    ctx.time.advance(300);
    expect(await ctx.heartbeat(first, 1)).toBe(ErrorCode.NONE);
    ctx.time.advance(200); // the pending id expired at 500 ms after it was handed out
    expect(await ctx.state()).toBe('Stable');
    expect(await ctx.memberIds()).toEqual([first]);
    // The expired id is unknown now.
    expect((await ctx.join({ memberId: second.memberId })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  /** Kafka's setupGroupWithPendingMember: two members rejoining, a third id pending with a 100 ms session. */
  async function groupWithPendingMember(): Promise<{
    pendingId: string;
    joins: Tracked<JoinGroupResponse>[];
  }> {
    const { leaderId, followerId } = await stableGroupOfTwo();
    const leaderJoin = ctx.sendJoin({ memberId: leaderId });
    expect(await ctx.state()).toBe('PreparingRebalance');
    const pending = await ctx.join({ sessionTimeoutMs: 100 });
    expect(pending.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    const followerJoin = ctx.sendJoin({ memberId: followerId });
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(leaderJoin.isSettled).toBe(false);
    return { pendingId: pending.memberId, joins: [leaderJoin, followerJoin] };
  }

  test('a pending member id holds up the join until the member comes back with it', async () => {
    const { pendingId, joins } = await groupWithPendingMember();
    const pendingJoin = ctx.sendJoin({ memberId: pendingId });
    expect((await pendingJoin.promise).errorCode).toBe(ErrorCode.NONE);
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(await ctx.memberIds()).toHaveLength(3);
    for (const join of joins) expect((await join.promise).errorCode).toBe(ErrorCode.NONE);
  });

  test('a pending member id that expires lets the join complete without it', async () => {
    const { joins } = await groupWithPendingMember();
    ctx.time.advance(99);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(joins[0].isSettled).toBe(false);
    ctx.time.advance(1);
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(await ctx.memberIds()).toHaveLength(2);
    for (const join of joins) expect((await join.promise).errorCode).toBe(ErrorCode.NONE);
  });

  test('a pending member leaving lets the join complete without it', async () => {
    const { pendingId } = await groupWithPendingMember();
    const leave = await ctx.leave([{ memberId: pendingId }]);
    expect(leave).toEqual({
      errorCode: ErrorCode.NONE,
      members: [{ memberId: pendingId, groupInstanceId: '', errorCode: ErrorCode.NONE }],
    });
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(await ctx.memberIds()).toHaveLength(2);
  });

  test('a batch leave answers each member: an unknown instance and a pending member', async () => {
    const { pendingId } = await groupWithPendingMember();
    const leave = await ctx.leave([{ groupInstanceId: 'unknown-instance' }, { memberId: pendingId }]);
    expect(leave.members.map((m) => m.errorCode)).toEqual([ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.NONE]);
  });
});

describe("SyncGroup: the leader's assignment is the group's record, written by the shard's runtime", () => {
  /** Two dynamic members of generation 3, their generation 2 Stable with assignments [0] and [1]. */
  async function completingRebalanceOfTwo(): Promise<{
    leaderId: string;
    followerId: string;
    generationId: number;
  }> {
    const { leaderId, followerId } = await stableGroupOfTwo();
    const leaderJoin = ctx.sendJoin({ memberId: leaderId });
    const followerJoin = ctx.sendJoin({ memberId: followerId });
    const { generationId } = await leaderJoin.promise;
    expect((await followerJoin.promise).generationId).toBe(generationId);
    expect(await ctx.state()).toBe('CompletingRebalance');
    return { leaderId, followerId, generationId };
  }

  test("the leader's SyncGroup writes the group's record and is answered, with its followers, once it commits", async () => {
    const { leaderId, followerId, generationId } = await completingRebalanceOfTwo();
    const followerSync = ctx.sendSync({ generationId, memberId: followerId });
    expect(followerSync.records).toEqual([]);
    const leaderSync = ctx.sendSync({
      generationId,
      memberId: leaderId,
      assignments: [
        [leaderId, Buffer.from([2])],
        [followerId, Buffer.from([3])],
      ],
    });
    expect(leaderSync.records).toHaveLength(1);
    expect(leaderSync.records[0]).toMatchObject({
      key: { groupId: GROUP_ID },
      value: {
        generationId,
        protocolName: PROTOCOL_NAME,
        leaderId,
        members: [
          { memberId: leaderId, assignment: Buffer.from([2]) },
          { memberId: followerId, assignment: Buffer.from([3]) },
        ],
      },
    });
    // Written, not committed: nobody has an answer, and the group is not Stable yet.
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(leaderSync.answer.isSettled).toBe(false);
    expect(followerSync.answer.isSettled).toBe(false);
    ctx.commit();
    expect(await leaderSync.answer.promise).toMatchObject({
      errorCode: ErrorCode.NONE,
      assignment: Buffer.from([2]),
    });
    expect(await followerSync.answer.promise).toMatchObject({
      errorCode: ErrorCode.NONE,
      assignment: Buffer.from([3]),
    });
    expect(await ctx.state()).toBe('Stable');
  });

  test.each([
    [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE],
    [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR],
    [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REBALANCE_IN_PROGRESS],
    [ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR],
  ])(
    "an append of the group's record failing with %s answers every parked SyncGroup %s, resets the assignments, and the members rejoin",
    async (appendError, answered) => {
      const { leaderId, followerId, generationId } = await completingRebalanceOfTwo();
      const followerSync = ctx.sendSync({ generationId, memberId: followerId });
      const leaderSync = ctx.sendSync({
        generationId,
        memberId: leaderId,
        assignments: [
          [leaderId, Buffer.from([2])],
          [followerId, Buffer.from([3])],
        ],
      });
      ctx.failAppend(new CohortError(appendError, 'the append failed'));
      expect((await leaderSync.answer.promise).errorCode).toBe(answered);
      expect((await followerSync.answer.promise).errorCode).toBe(answered);
      expect(ctx.transitions.at(-1)).toMatchObject({ from: 'CompletingRebalance', to: 'PreparingRebalance' });
      // Neither generation 2's assignments nor the leader's new ones: the members have none until they rejoin.
      const described = await ctx.describe();
      expect(described.groupState).toBe('PreparingRebalance');
      expect(described.members.map((m) => m.memberAssignment)).toEqual([Buffer.alloc(0), Buffer.alloc(0)]);
      expect(await ctx.heartbeat(leaderId, generationId)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);

      const leaderJoin = ctx.sendJoin({ memberId: leaderId });
      const followerJoin = ctx.sendJoin({ memberId: followerId });
      const rejoined = await leaderJoin.promise;
      expect(rejoined).toMatchObject({ errorCode: ErrorCode.NONE, generationId: generationId + 1 });
      expect((await followerJoin.promise).generationId).toBe(generationId + 1);
      const synced = await ctx.sync({
        generationId: generationId + 1,
        memberId: leaderId,
        assignments: [[leaderId, Buffer.from([4])]],
      });
      expect(synced).toMatchObject({ errorCode: ErrorCode.NONE, assignment: Buffer.from([4]) });
      expect(await ctx.state()).toBe('Stable');
    },
  );

  test("a member joining while the record is written starts a rebalance; the record's late commit changes nothing", async () => {
    const { leaderId, followerId, generationId } = await completingRebalanceOfTwo();
    const leaderSync = ctx.sendSync({
      generationId,
      memberId: leaderId,
      assignments: [[leaderId, Buffer.from([2])]],
    });
    // The follower's JoinGroup with one more protocol ends the generation before it is stored.
    const followerJoin = ctx.sendJoin({ memberId: followerId, protocols: PROTOCOL_SUPERSET });
    expect((await leaderSync.answer.promise).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(await ctx.state()).toBe('PreparingRebalance');
    ctx.commit();
    expect(await ctx.heartbeat(leaderId, generationId)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(followerJoin.isSettled).toBe(false);
  });

  test('a resignation while the record is written answers the parked SyncGroups NOT_COORDINATOR; the late end does nothing', async () => {
    const { leaderId, followerId, generationId } = await completingRebalanceOfTwo();
    const followerSync = ctx.sendSync({ generationId, memberId: followerId });
    const leaderSync = ctx.sendSync({ generationId, memberId: leaderId, assignments: [] });
    expect(ctx.pendingAppends).toBe(1);
    ctx.writer.resign();
    ctx.router.onResignation(0, 0);
    expect((await leaderSync.answer.promise).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect((await followerSync.answer.promise).errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    ctx.commit(); // the append fails late (NOT_LEADER_OR_FOLLOWER), after the shard is gone
    expect(await ctx.heartbeat(leaderId, generationId)).toBe(ErrorCode.NOT_COORDINATOR);
    // The unload ended the write: no rebalance started on the groups the shard gave up.
    expect(ctx.transitions.at(-1)).toMatchObject({ to: 'CompletingRebalance', generationId });
  });
});
