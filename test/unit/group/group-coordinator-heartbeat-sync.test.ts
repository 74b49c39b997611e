import { ErrorCode } from '../../../src/errors';
import type { JoinGroupResponse } from '../../../src/group/group-protocol';
import {
  DEFAULT_REBALANCE_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  FOLLOWER_INSTANCE_ID,
  GroupHarness,
  LEADER_INSTANCE_ID,
  PROTOCOL_NAME,
  PROTOCOL_TYPE,
  settle,
} from '../../support/group-harness';

let h: GroupHarness;
beforeEach(() => {
  h = new GroupHarness();
});
afterEach(() => h.shutdown());

/** A Stable group of two dynamic members at generation 2: the first leads. */
async function stableGroupOfTwo(): Promise<{ leaderId: string; followerId: string; generationId: number }> {
  const leaderId = await h.stableSingleMemberGroup();
  const other = await h.sendDynamicJoin();
  const rejoin = await h.join({ memberId: leaderId });
  await settle();
  const followerId = other.result.memberId;
  const generationId = rejoin.generationId;
  const followerSync = h.sendSync({ generationId, memberId: followerId });
  await h.sync({
    generationId,
    memberId: leaderId,
    assignments: [
      [leaderId, Buffer.from([0])],
      [followerId, Buffer.from([1])],
    ],
  });
  await settle();
  expect(followerSync.result.errorCode).toBe(ErrorCode.NONE);
  expect(await h.state()).toBe('Stable');
  return { leaderId, followerId, generationId };
}

describe('Heartbeat', () => {
  test('an empty group id gets INVALID_GROUP_ID', async () => {
    expect(await h.heartbeat('m', 1, '', '')).toBe(ErrorCode.INVALID_GROUP_ID);
  });

  test('a heartbeat to an unknown group gets UNKNOWN_MEMBER_ID', async () => {
    expect(await h.heartbeat('memberId', -1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a heartbeat from an unknown member of an existing group gets UNKNOWN_MEMBER_ID', async () => {
    await h.stableSingleMemberGroup();
    expect(await h.heartbeat('memberId', 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a heartbeat to an Empty group gets UNKNOWN_MEMBER_ID', async () => {
    const memberId = await h.stableSingleMemberGroup();
    await h.leave([{ memberId }]);
    expect(await h.state()).toBe('Empty');
    expect(await h.heartbeat(memberId, 2)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a heartbeat during CompletingRebalance is answered NONE (the newest behaviour)', async () => {
    const join = await h.dynamicJoin();
    expect(await h.state()).toBe('CompletingRebalance');
    expect(await h.heartbeat(join.memberId, join.generationId)).toBe(ErrorCode.NONE);
  });

  test('heartbeats during CompletingRebalance keep the session alive while the leader is slow to sync', async () => {
    // Session 500 ms, rebalance timeout 5 s: without the re-arm the member would expire at 500 ms.
    const join = await h.dynamicJoin({ rebalanceTimeoutMs: 10 * DEFAULT_SESSION_TIMEOUT_MS });
    expect(await h.state()).toBe('CompletingRebalance');
    for (
      let elapsed = 0;
      elapsed < 4 * DEFAULT_SESSION_TIMEOUT_MS;
      elapsed += DEFAULT_SESSION_TIMEOUT_MS / 2
    ) {
      h.advance(DEFAULT_SESSION_TIMEOUT_MS / 2);
      expect(await h.heartbeat(join.memberId, join.generationId)).toBe(ErrorCode.NONE);
    }
    expect(await h.memberIds()).toEqual([join.memberId]);
    expect(await h.state()).toBe('CompletingRebalance');
  });

  test('a heartbeat with the wrong generation gets ILLEGAL_GENERATION', async () => {
    const memberId = await h.stableSingleMemberGroup();
    expect(await h.heartbeat(memberId, 2)).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test('a heartbeat of a member of a Stable group gets NONE', async () => {
    const memberId = await h.stableSingleMemberGroup();
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
  });

  test('a heartbeat during PreparingRebalance gets REBALANCE_IN_PROGRESS', async () => {
    const memberId = await h.stableSingleMemberGroup();
    await h.sendDynamicJoin();
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a member that stops heartbeating is removed when its session ends, never before', async () => {
    const memberId = await h.stableSingleMemberGroup();
    h.advance(DEFAULT_SESSION_TIMEOUT_MS - 1);
    expect(await h.memberIds()).toEqual([memberId]);
    h.advance(1);
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await h.state()).toBe('Empty');
  });

  test('heartbeats keep a session alive', async () => {
    const sessionTimeoutMs = 1000;
    const memberId = await h.stableSingleMemberGroup({
      sessionTimeoutMs,
      rebalanceTimeoutMs: sessionTimeoutMs,
    });
    h.advance(sessionTimeoutMs / 2);
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
    h.advance(sessionTimeoutMs / 2 + 100);
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
  });

  test('an accepted offset commit keeps a session alive', async () => {
    const sessionTimeoutMs = 1000;
    const memberId = await h.stableSingleMemberGroup({
      sessionTimeoutMs,
      rebalanceTimeoutMs: sessionTimeoutMs,
    });
    h.advance(sessionTimeoutMs / 2);
    const codes = await h.commit({ memberId, generationId: 1 }, [
      { topic: 'topic', partition: 0, offset: 0 },
    ]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    h.advance(sessionTimeoutMs / 2 + 100);
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
  });

  test('a member whose session ends during a rebalance falls out, and the rebalance completes without it', async () => {
    const first = await h.dynamicJoin({ rebalanceTimeoutMs: 2000, sessionTimeoutMs: 1000 });
    await h.sync({ generationId: 1, memberId: first.memberId, assignments: [] });
    const other = await h.sendDynamicJoin();
    h.advance(500);
    expect(await h.heartbeat(first.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    h.advance(1000);
    await settle();
    expect(await h.heartbeat(first.memberId, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(other.result).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(other.result.members.map((m) => m.memberId)).toEqual([other.result.memberId]);
  });

  test('a member that keeps heartbeating through a rebalance longer than its session stays in the group', async () => {
    const first = await h.dynamicJoin({ rebalanceTimeoutMs: 3000, sessionTimeoutMs: 500 });
    await h.sync({ generationId: 1, memberId: first.memberId, assignments: [] });
    const other = await h.sendDynamicJoin();
    for (let t = 0; t < 2000; t += 400) {
      h.advance(400);
      expect(await h.heartbeat(first.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    }
    const rejoin = await h.join({
      memberId: first.memberId,
      rebalanceTimeoutMs: 3000,
      sessionTimeoutMs: 500,
    });
    expect(rejoin).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2, leaderId: first.memberId });
    expect(rejoin.members).toHaveLength(2);
    expect(other.result.generationId).toBe(2);
  });

  test('a heartbeat for a deleted group gets UNKNOWN_MEMBER_ID', async () => {
    const memberId = await h.stableSingleMemberGroup();
    await h.leave([{ memberId }]);
    await h.coordinator.deleteGroups({ groupsNames: ['groupId'] }, { clientHost: 'h' });
    expect(await h.heartbeat(memberId, 2)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });
});

describe('SyncGroup', () => {
  test('an empty group id gets INVALID_GROUP_ID', async () => {
    expect((await h.sync({ groupId: '', generationId: 1, memberId: 'm' })).errorCode).toBe(
      ErrorCode.INVALID_GROUP_ID,
    );
  });

  test('a sync to an unknown group gets UNKNOWN_MEMBER_ID', async () => {
    expect((await h.sync({ generationId: 1, memberId: 'memberId' })).errorCode).toBe(
      ErrorCode.UNKNOWN_MEMBER_ID,
    );
  });

  test('a sync from an unknown member gets UNKNOWN_MEMBER_ID', async () => {
    await h.stableSingleMemberGroup();
    expect((await h.sync({ generationId: 1, memberId: 'blah' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a sync with the wrong generation gets ILLEGAL_GENERATION', async () => {
    const join = await h.dynamicJoin();
    const response = await h.sync({
      generationId: join.generationId + 1,
      memberId: join.memberId,
      assignments: [],
    });
    expect(response.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test('a sync during PreparingRebalance gets REBALANCE_IN_PROGRESS', async () => {
    const memberId = await h.stableSingleMemberGroup();
    await h.sendDynamicJoin();
    expect((await h.sync({ generationId: 1, memberId })).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a leader assigning nothing gets an empty assignment, and the group is Stable', async () => {
    const join = await h.dynamicJoin();
    const sync = await h.sync({ generationId: join.generationId, memberId: join.memberId, assignments: [] });
    expect(sync).toMatchObject({
      errorCode: ErrorCode.NONE,
      protocolType: PROTOCOL_TYPE,
      protocolName: PROTOCOL_NAME,
    });
    expect(sync.assignment).toHaveLength(0);
    expect(await h.heartbeat(join.memberId, 1)).toBe(ErrorCode.NONE);
  });

  test.each([
    ['an inconsistent protocol type', 'whatever', '', ErrorCode.INCONSISTENT_GROUP_PROTOCOL],
    ['an inconsistent protocol name', '', 'whatever', ErrorCode.INCONSISTENT_GROUP_PROTOCOL],
    ['no protocol type or name', '', '', ErrorCode.NONE],
    ['the group protocol type and name', PROTOCOL_TYPE, PROTOCOL_NAME, ErrorCode.NONE],
  ])('a sync naming %s gets the matching answer', async (_what, protocolType, protocolName, expected) => {
    const leaderJoin = h.sendJoin({ groupInstanceId: LEADER_INSTANCE_ID });
    const followerJoin = h.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID });
    h.advance(50);
    h.advance(50);
    await settle();
    const { memberId: leaderId, generationId } = leaderJoin.result;
    const followerId = followerJoin.result.memberId;
    const leaderSync = await h.sync({
      generationId,
      memberId: leaderId,
      protocolType,
      protocolName,
      assignments: [],
    });
    const followerSync = await h.sync({ generationId, memberId: followerId, protocolType, protocolName });
    for (const sync of [leaderSync, followerSync]) {
      expect(sync.errorCode).toBe(expected);
      expect(sync.protocolType).toBe(expected === ErrorCode.NONE ? PROTOCOL_TYPE : '');
      expect(sync.protocolName).toBe(expected === ErrorCode.NONE ? PROTOCOL_NAME : '');
    }
  });

  test('a follower syncing after the leader gets its assignment at once', async () => {
    const { leaderId, followerId, generationId } = await stableGroupOfTwo();
    const follower = await h.sync({ generationId, memberId: followerId });
    expect(follower.assignment).toEqual(Buffer.from([1]));
    const leader = await h.sync({ generationId, memberId: leaderId });
    expect(leader.assignment).toEqual(Buffer.from([0]));
  });

  test('a follower syncing before the leader waits for the leader assignment', async () => {
    const leaderId = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = await h.join({ memberId: leaderId });
    await settle();
    const followerId = other.result.memberId;
    const followerSync = h.sendSync({ generationId: rejoin.generationId, memberId: followerId });
    await settle();
    expect(followerSync.isSettled).toBe(false);
    const leaderSync = await h.sync({
      generationId: rejoin.generationId,
      memberId: leaderId,
      assignments: [
        [leaderId, Buffer.from([0])],
        [followerId, Buffer.from([1])],
      ],
    });
    expect(leaderSync.assignment).toEqual(Buffer.from([0]));
    await settle();
    expect(followerSync.result).toMatchObject({ errorCode: ErrorCode.NONE, protocolName: PROTOCOL_NAME });
    expect(followerSync.result.assignment).toEqual(Buffer.from([1]));
  });

  test('a second SyncGroup while the first is parked answers the first with REBALANCE_IN_PROGRESS', async () => {
    const leaderId = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = await h.join({ memberId: leaderId });
    await settle();
    const followerId = other.result.memberId;
    const firstSync = h.sendSync({ generationId: rejoin.generationId, memberId: followerId });
    const secondSync = h.sendSync({ generationId: rejoin.generationId, memberId: followerId });
    await settle();
    expect(firstSync.result.errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(secondSync.isSettled).toBe(false);
    await h.sync({
      generationId: rejoin.generationId,
      memberId: leaderId,
      assignments: [[followerId, Buffer.from([7])]],
    });
    await settle();
    expect(secondSync.result.assignment).toEqual(Buffer.from([7]));
  });

  test('a follower waiting for a leader that never syncs is told REBALANCE_IN_PROGRESS at the rebalance timeout', async () => {
    const leaderId = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = await h.join({ memberId: leaderId });
    await settle();
    const followerSync = h.sendSync({ generationId: rejoin.generationId, memberId: other.result.memberId });
    h.advance(DEFAULT_REBALANCE_TIMEOUT_MS - 1);
    await settle();
    expect(followerSync.isSettled).toBe(false);
    h.advance(1);
    await settle();
    expect(followerSync.result.errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(await h.memberIds()).toEqual([other.result.memberId]);
    expect(await h.state()).toBe('PreparingRebalance');
  });

  test('a member that leaves while parked in SyncGroup is answered UNKNOWN_MEMBER_ID; the others must rejoin', async () => {
    const leaderId = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = await h.join({ memberId: leaderId });
    await settle();
    const followerSync = h.sendSync({ generationId: rejoin.generationId, memberId: other.result.memberId });
    await settle();
    await h.leave([{ memberId: other.result.memberId }]);
    await settle();
    expect(followerSync.result.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await h.state()).toBe('PreparingRebalance');
  });
});

describe('DelayedSync: members that never sync', () => {
  // Shorter than the session, so that it is the missing SyncGroup, not the session, that removes members.
  const rebalanceTimeoutMs = 300;

  async function threeMembersJoined(): Promise<JoinGroupResponse[]> {
    const joins = [];
    for (let i = 0; i < 3; i++) joins.push(await h.sendDynamicJoin({ rebalanceTimeoutMs }));
    h.advance(50);
    h.advance(50);
    await settle();
    const results = joins.map((j) => j.result);
    for (const r of results) expect(r).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1 });
    expect(await h.state()).toBe('CompletingRebalance');
    return results;
  }

  test('when nobody syncs, everyone is removed at the rebalance timeout and the group is Empty', async () => {
    await threeMembersJoined();
    h.advance(rebalanceTimeoutMs - 1);
    expect(await h.memberIds()).toHaveLength(3);
    h.advance(1);
    expect(await h.memberIds()).toEqual([]);
    expect(await h.state()).toBe('Empty');
    expect(h.transitions.at(-1)).toMatchObject({ from: 'PreparingRebalance', to: 'Empty', generationId: 2 });
  });

  test('followers that never sync are removed and the group rebalances', async () => {
    const results = await threeMembersJoined();
    const leader = results.find((r) => r.leaderId === r.memberId) as JoinGroupResponse;
    const sync = await h.sync({ generationId: 1, memberId: leader.memberId, assignments: [] });
    expect(sync.errorCode).toBe(ErrorCode.NONE);
    expect(await h.state()).toBe('Stable');
    h.advance(rebalanceTimeoutMs);
    expect(await h.memberIds()).toEqual([leader.memberId]);
    expect(await h.state()).toBe('PreparingRebalance');
    expect(await h.heartbeat(leader.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a leader that never syncs is removed, and the parked followers are told to rejoin', async () => {
    const results = await threeMembersJoined();
    const followers = results.filter((r) => r.leaderId !== r.memberId);
    const syncs = followers.map((f) => h.sendSync({ generationId: 1, memberId: f.memberId }));
    h.advance(rebalanceTimeoutMs);
    await settle();
    for (const sync of syncs) expect(sync.result.errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect((await h.memberIds()).sort()).toEqual(followers.map((f) => f.memberId).sort());
    expect(await h.state()).toBe('PreparingRebalance');
  });

  test('when everyone syncs, the rebalance timeout removes nobody', async () => {
    const results = await threeMembersJoined();
    const leader = results.find((r) => r.leaderId === r.memberId) as JoinGroupResponse;
    for (const r of results) if (r !== leader) h.sendSync({ generationId: 1, memberId: r.memberId });
    await h.sync({ generationId: 1, memberId: leader.memberId, assignments: [] });
    h.advance(rebalanceTimeoutMs - 1);
    for (const r of results) expect(await h.heartbeat(r.memberId, 1)).toBe(ErrorCode.NONE);
    h.advance(rebalanceTimeoutMs); // past the sync deadline, within every session
    expect(await h.memberIds()).toHaveLength(3);
    expect(await h.state()).toBe('Stable');
  });
});

describe('pending members (KIP-394)', () => {
  test('a member that never comes back with its member id expires and the group stays Stable', async () => {
    const first = await h.stableSingleMemberGroup();
    h.advance(100);
    const second = await h.join();
    expect(second.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect(await h.state()).toBe('Stable');
    h.advance(300);
    expect(await h.heartbeat(first, 1)).toBe(ErrorCode.NONE);
    h.advance(200); // the pending id expired at 500 ms after it was handed out
    expect(await h.state()).toBe('Stable');
    expect(await h.memberIds()).toEqual([first]);
    // The expired id is unknown now.
    expect((await h.join({ memberId: second.memberId })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  /** Kafka's setupGroupWithPendingMember: two members rejoining, a third id pending with a 100 ms session. */
  async function groupWithPendingMember(): Promise<{
    pendingId: string;
    joins: ReturnType<GroupHarness['sendJoin']>[];
  }> {
    const { leaderId, followerId } = await stableGroupOfTwo();
    const leaderJoin = h.sendJoin({ memberId: leaderId });
    await settle();
    expect(await h.state()).toBe('PreparingRebalance');
    const pending = await h.join({ sessionTimeoutMs: 100 });
    expect(pending.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    const followerJoin = h.sendJoin({ memberId: followerId });
    await settle();
    expect(await h.state()).toBe('PreparingRebalance');
    expect(leaderJoin.isSettled).toBe(false);
    return { pendingId: pending.memberId, joins: [leaderJoin, followerJoin] };
  }

  test('a pending member id holds up the join until the member comes back with it', async () => {
    const { pendingId, joins } = await groupWithPendingMember();
    const pendingJoin = h.sendJoin({ memberId: pendingId });
    await settle();
    expect(pendingJoin.result.errorCode).toBe(ErrorCode.NONE);
    expect(await h.state()).toBe('CompletingRebalance');
    expect(await h.memberIds()).toHaveLength(3);
    for (const join of joins) expect(join.result.errorCode).toBe(ErrorCode.NONE);
  });

  test('a pending member id that expires lets the join complete without it', async () => {
    const { joins } = await groupWithPendingMember();
    h.advance(99);
    await settle();
    expect(joins[0].isSettled).toBe(false);
    h.advance(1);
    await settle();
    expect(await h.state()).toBe('CompletingRebalance');
    expect(await h.memberIds()).toHaveLength(2);
    for (const join of joins) expect(join.result.errorCode).toBe(ErrorCode.NONE);
  });

  test('a pending member leaving lets the join complete without it', async () => {
    const { pendingId } = await groupWithPendingMember();
    const leave = await h.leave([{ memberId: pendingId }]);
    expect(leave).toEqual({
      errorCode: ErrorCode.NONE,
      members: [{ memberId: pendingId, groupInstanceId: '', errorCode: ErrorCode.NONE }],
    });
    expect(await h.state()).toBe('CompletingRebalance');
    expect(await h.memberIds()).toHaveLength(2);
  });

  test('a batch leave answers each member: an unknown instance and a pending member', async () => {
    const { pendingId } = await groupWithPendingMember();
    const leave = await h.leave([{ groupInstanceId: 'unknown-instance' }, { memberId: pendingId }]);
    expect(leave.members.map((m) => m.errorCode)).toEqual([ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.NONE]);
  });
});
