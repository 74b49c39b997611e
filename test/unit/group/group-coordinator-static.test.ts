import { CohortError, ErrorCode } from '../../../src/errors';
import type { StoredMember } from '../../../src/group/stored-group';
import type { GroupMetadataValue } from '../../../src/group/records/consumer-offsets-record';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import {
  DEFAULT_REBALANCE_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  CONTEXT,
  FOLLOWER_INSTANCE_ID,
  GROUP_ID,
  joinRequest,
  LEADER_INSTANCE_ID,
  PROTOCOL_SUPERSET,
  PROTOCOLS,
  protocol,
} from '../../support/group-harness';

let ctx: CoordinatorTestContext;
beforeEach(async () => {
  ctx = await CoordinatorTestContext.create();
});
afterEach(() => ctx.shutdown());

const instanceIdsOf = (members: { groupInstanceId: string }[]): string[] =>
  members.map((m) => m.groupInstanceId).sort();

describe('static members joining (KIP-345)', () => {
  test('a static member joins as first member without MEMBER_ID_REQUIRED', async () => {
    const response = await ctx.staticJoin('instance');
    expect(response.errorCode).toBe(ErrorCode.NONE);
    expect(response.memberId).toMatch(/^instance-/);
    expect(response.members.map((m) => m.groupInstanceId)).toEqual(['instance']);
  });

  test('a static member replaced in Stable takes the session timeout of its new JoinGroup', async () => {
    // Kafka's testStaticMemberRejoinWithUpdatedSessionAndRebalanceTimeouts, observed through expiry.
    const result = await ctx.staticMembersJoinAndRebalance();
    const longerSessionMs = 4 * DEFAULT_SESSION_TIMEOUT_MS;
    const rejoin = await ctx.staticJoin(
      FOLLOWER_INSTANCE_ID,
      { protocols: PROTOCOL_SUPERSET, sessionTimeoutMs: longerSessionMs },
      0,
    );
    expect(rejoin.errorCode).toBe(ErrorCode.NONE);
    expect(rejoin.generationId).toBe(result.generation);
    // Past the old session timeout, with only the leader heartbeating: the follower is still there.
    for (
      let elapsed = 0;
      elapsed < 2 * DEFAULT_SESSION_TIMEOUT_MS;
      elapsed += DEFAULT_SESSION_TIMEOUT_MS / 2
    ) {
      ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS / 2);
      expect(await ctx.heartbeat(result.leaderId, result.generation, LEADER_INSTANCE_ID)).toBe(
        ErrorCode.NONE,
      );
    }
    expect(await ctx.state()).toBe('Stable');
    expect((await ctx.memberIds()).sort()).toEqual([result.leaderId, rejoin.memberId].sort());
    // And it does end, at the new timeout.
    for (
      let elapsed = 0;
      elapsed < 2 * DEFAULT_SESSION_TIMEOUT_MS + 1;
      elapsed += DEFAULT_SESSION_TIMEOUT_MS / 2
    ) {
      ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS / 2);
      await ctx.heartbeat(result.leaderId, result.generation, LEADER_INSTANCE_ID);
    }
    expect(await ctx.memberIds()).toEqual([result.leaderId]);
  });

  test('a known instance rejoining with a member id that is not its own is fenced', async () => {
    await ctx.staticJoin('instance');
    const response = await ctx.staticJoin('instance', { memberId: 'unknown_member' });
    expect(response.errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
  });

  test('a known member id with an unknown instance id gets UNKNOWN_MEMBER_ID', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const response = await ctx.staticJoin(
      'unknown_instance',
      { memberId: result.leaderId, protocols: PROTOCOL_SUPERSET },
      1,
    );
    expect(response.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('leader and follower member ids swapped between instances are fenced', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const asFollower = await ctx.staticJoin(
      LEADER_INSTANCE_ID,
      { memberId: result.followerId, protocols: PROTOCOL_SUPERSET },
      1,
    );
    expect(asFollower.errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
    const asLeader = await ctx.staticJoin(
      FOLLOWER_INSTANCE_ID,
      { memberId: result.leaderId, protocols: PROTOCOL_SUPERSET },
      1,
    );
    expect(asLeader.errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
  });

  test('a static member rejoining with its member id during CompletingRebalance gets the generation at once', async () => {
    const first = await ctx.staticJoin('instance');
    const again = await ctx.staticJoin('instance', { memberId: first.memberId }, 1);
    expect(again.errorCode).toBe(ErrorCode.NONE);
    expect(await ctx.state()).toBe('CompletingRebalance');
    const sync = await ctx.sync({
      generationId: again.generationId,
      memberId: first.memberId,
      groupInstanceId: 'instance',
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: [[first.memberId, Buffer.alloc(0)]],
    });
    expect(sync.errorCode).toBe(ErrorCode.NONE);
    expect(await ctx.state()).toBe('Stable');
  });

  test('each rejoin without a member id gives a new member id, prefixed by the instance id', async () => {
    const initial = await ctx.staticMembersJoinAndRebalance();
    let last = initial.leaderId;
    for (let i = 0; i < 5; i++) {
      const response = await ctx.staticJoin(LEADER_INSTANCE_ID, {}, 1);
      expect(response.memberId.startsWith(LEADER_INSTANCE_ID)).toBe(true);
      expect(response.memberId).not.toBe(last);
      last = response.memberId;
    }
  });
});

describe('a static member restarting in a Stable group', () => {
  test('a follower rejoining without member id and with the same protocols does not rebalance', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const response = await ctx.staticJoin(FOLLOWER_INSTANCE_ID, { protocols: PROTOCOL_SUPERSET }, 1);
    expect(response).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: result.generation,
      leaderId: result.leaderId,
      skipAssignment: false,
      members: [],
    });
    expect(response.memberId).not.toBe(result.followerId);
    expect(await ctx.state()).toBe('Stable');
    const sync = await ctx.sync({ generationId: result.generation, memberId: response.memberId });
    expect(sync.errorCode).toBe(ErrorCode.NONE);
    expect(sync.assignment).toEqual(result.followerAssignment);
  });

  test('the leader rejoining without member id keeps leading but is told to skip assignment (KIP-814)', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const response = await ctx.staticJoin(LEADER_INSTANCE_ID, { protocols: PROTOCOL_SUPERSET }, 1);
    expect(response.errorCode).toBe(ErrorCode.NONE);
    expect(response.generationId).toBe(result.generation);
    expect(response.skipAssignment).toBe(true);
    expect(response.leaderId).toBe(response.memberId);
    expect(instanceIdsOf(response.members)).toEqual([FOLLOWER_INSTANCE_ID, LEADER_INSTANCE_ID]);
    expect(await ctx.state()).toBe('Stable');
    expect(ctx.transitions.filter((t) => t.to === 'PreparingRebalance')).toHaveLength(1);

    // The old leader id is fenced for JoinGroup and SyncGroup alike.
    const oldJoin = await ctx.staticJoin(
      LEADER_INSTANCE_ID,
      { memberId: result.leaderId, protocols: PROTOCOL_SUPERSET },
      1,
    );
    expect(oldJoin.errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
    const oldSync = await ctx.sync({
      generationId: 1,
      memberId: result.leaderId,
      groupInstanceId: LEADER_INSTANCE_ID,
    });
    expect(oldSync.errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
    // The new id syncs in Stable and gets the assignment the group already has.
    const newSync = await ctx.sync({
      generationId: 1,
      memberId: response.memberId,
      groupInstanceId: LEADER_INSTANCE_ID,
    });
    expect(newSync.errorCode).toBe(ErrorCode.NONE);
    expect(newSync.assignment).toEqual(result.leaderAssignment);
  });

  test('a follower rejoining with its member id and no protocol change does not rebalance', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const response = await ctx.staticJoin(
      FOLLOWER_INSTANCE_ID,
      { memberId: result.followerId, protocols: PROTOCOL_SUPERSET },
      1,
    );
    expect(response).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: result.generation,
      leaderId: result.leaderId,
      memberId: result.followerId,
      members: [],
    });
    expect(await ctx.state()).toBe('Stable');
  });

  test('a follower rejoining without member id with protocols that keep the chosen one does not rebalance', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const response = await ctx.staticJoin(FOLLOWER_INSTANCE_ID, { protocols: [protocol('range')] }, 1);
    expect(response).toMatchObject({ errorCode: ErrorCode.NONE, generationId: result.generation });
    expect(await ctx.state()).toBe('Stable');
    expect(
      (await ctx.staticJoin(FOLLOWER_INSTANCE_ID, { memberId: result.followerId, protocols: PROTOCOLS }, 1))
        .errorCode,
    ).toBe(ErrorCode.FENCED_INSTANCE_ID);
    const oldSync = await ctx.sync({
      generationId: 1,
      memberId: result.followerId,
      groupInstanceId: FOLLOWER_INSTANCE_ID,
    });
    expect(oldSync.errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
    const newSync = await ctx.sync({
      generationId: 1,
      memberId: response.memberId,
      groupInstanceId: FOLLOWER_INSTANCE_ID,
    });
    expect(newSync.errorCode).toBe(ErrorCode.NONE);
    expect(newSync.assignment).toEqual(result.followerAssignment);
  });

  test('a follower rejoining without member id with protocols that change the chosen one rebalances', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    ctx.time.advance(1);
    const join = ctx.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID, protocols: [protocol('roundrobin')] });
    expect(await ctx.state()).toBe('PreparingRebalance');
    // The leader never rejoins; its session ends first and the follower forms the next generation alone.
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS);
    const response = await join.promise;
    expect(response).toMatchObject({ errorCode: ErrorCode.NONE, generationId: result.generation + 1 });
    expect(response.protocolName).toBe('roundrobin');
    expect(response.leaderId).toBe(response.memberId);
    expect(response.memberId).not.toBe(result.followerId);
    expect(instanceIdsOf(response.members)).toEqual([FOLLOWER_INSTANCE_ID]);
  });

  test('a follower rejoining with its member id and changed protocols rebalances and takes over leadership', async () => {
    const result = await ctx.staticMembersJoinAndRebalance(
      LEADER_INSTANCE_ID,
      FOLLOWER_INSTANCE_ID,
      DEFAULT_SESSION_TIMEOUT_MS * 2,
    );
    const join = ctx.sendJoin({
      memberId: result.followerId,
      groupInstanceId: FOLLOWER_INSTANCE_ID,
      protocols: [protocol('roundrobin')],
      sessionTimeoutMs: DEFAULT_SESSION_TIMEOUT_MS * 2,
    });
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS);
    // The leader did not rejoin within the rebalance timeout; as a static member it stays, but the
    // rejoined follower leads the new generation.
    const joined = await join.promise;
    expect(joined).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: result.generation + 1,
      leaderId: result.followerId,
      memberId: result.followerId,
    });
    expect(instanceIdsOf(joined.members)).toEqual([FOLLOWER_INSTANCE_ID, LEADER_INSTANCE_ID]);
  });

  test('the leader rejoining with its member id rebalances; a follower that does not rejoin in time drops out', async () => {
    const result = await ctx.staticMembersJoinAndRebalance(
      LEADER_INSTANCE_ID,
      FOLLOWER_INSTANCE_ID,
      DEFAULT_REBALANCE_TIMEOUT_MS / 2,
    );
    const join = ctx.sendJoin({
      memberId: result.leaderId,
      groupInstanceId: LEADER_INSTANCE_ID,
      protocols: PROTOCOL_SUPERSET,
      sessionTimeoutMs: DEFAULT_REBALANCE_TIMEOUT_MS / 2,
    });
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS);
    const joined = await join.promise;
    expect(joined).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: result.generation + 1,
      leaderId: result.leaderId,
      memberId: result.leaderId,
    });
    expect(instanceIdsOf(joined.members)).toEqual([LEADER_INSTANCE_ID]);
  });

  test('leader and follower rejoining with their ids rebalance; a later protocol change by the follower rebalances again', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const leaderJoin = ctx.sendJoin({
      memberId: result.leaderId,
      groupInstanceId: LEADER_INSTANCE_ID,
      protocols: PROTOCOL_SUPERSET,
    });
    const followerJoin = ctx.sendJoin({
      memberId: result.followerId,
      groupInstanceId: FOLLOWER_INSTANCE_ID,
      protocols: PROTOCOL_SUPERSET,
    });
    const leaderJoined = await leaderJoin.promise;
    expect(leaderJoined).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: 2,
      leaderId: result.leaderId,
    });
    expect(instanceIdsOf(leaderJoined.members)).toEqual([FOLLOWER_INSTANCE_ID, LEADER_INSTANCE_ID]);
    expect(await followerJoin.promise).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: 2,
      members: [],
    });
    ctx.time.advance(1);
    const change = ctx.sendJoin({
      memberId: result.followerId,
      groupInstanceId: FOLLOWER_INSTANCE_ID,
      protocols: PROTOCOLS,
    });
    expect(await ctx.state()).toBe('PreparingRebalance');
    // The leader neither rejoins nor syncs: its session ends and the follower leads generation 3 alone.
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS);
    const changed = await change.promise;
    expect(changed).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: 3,
      leaderId: result.followerId,
    });
    expect(instanceIdsOf(changed.members)).toEqual([FOLLOWER_INSTANCE_ID]);
  });

  test('a static leader rejoining with its id in an Empty group is told UNKNOWN_MEMBER_ID', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    await ctx.leaveAndCommit([
      { groupInstanceId: LEADER_INSTANCE_ID },
      { groupInstanceId: FOLLOWER_INSTANCE_ID },
    ]);
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS);
    expect(await ctx.state()).toBe('Empty');
    const response = await ctx.staticJoin(LEADER_INSTANCE_ID, { memberId: result.leaderId }, 1);
    expect(response.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });
});

describe('fencing duplicate static members', () => {
  test('a duplicate follower joining during PreparingRebalance fences the parked JoinGroup of the old one', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const third = await ctx.sendDynamicJoin(); // a third member triggers a rebalance
    expect(await ctx.state()).toBe('PreparingRebalance');
    const oldFollower = ctx.sendJoin({ memberId: result.followerId, groupInstanceId: FOLLOWER_INSTANCE_ID });
    ctx.time.advance(1);
    const duplicate = ctx.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID });
    expect(await oldFollower.promise).toMatchObject({
      errorCode: ErrorCode.FENCED_INSTANCE_ID,
      generationId: -1,
      memberId: result.followerId,
    });
    expect(duplicate.isSettled).toBe(false);
    expect(third.isSettled).toBe(false);
    expect(await ctx.state()).toBe('PreparingRebalance');
  });

  test('a duplicate follower joining during CompletingRebalance fences the old one parked in SyncGroup and rebalances', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const leaderJoin = ctx.sendJoin({
      memberId: result.leaderId,
      groupInstanceId: LEADER_INSTANCE_ID,
      protocols: PROTOCOL_SUPERSET,
    });
    const oldFollowerJoin = ctx.sendJoin({
      memberId: result.followerId,
      groupInstanceId: FOLLOWER_INSTANCE_ID,
      protocols: PROTOCOL_SUPERSET,
    });
    expect(await leaderJoin.promise).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(await oldFollowerJoin.promise).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: 2,
      leaderId: result.leaderId,
    });
    expect(await ctx.state()).toBe('CompletingRebalance');

    const oldFollowerSync = ctx.sendSync({
      generationId: 2,
      memberId: result.followerId,
      groupInstanceId: FOLLOWER_INSTANCE_ID,
      protocolType: 'consumer',
      protocolName: 'range',
    });
    ctx.time.advance(1);
    const duplicate = ctx.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID, protocols: PROTOCOL_SUPERSET });
    expect((await oldFollowerSync.answer.promise).errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(await ctx.state()).toBe('PreparingRebalance');

    // The leader neither syncs nor rejoins: its session ends and the duplicate leads generation 3 alone.
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS);
    const duplicated = await duplicate.promise;
    expect(duplicated).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 3 });
    expect(duplicated.leaderId).toBe(duplicated.memberId);
    expect(instanceIdsOf(duplicated.members)).toEqual([FOLLOWER_INSTANCE_ID]);
    expect(await ctx.state()).toBe('CompletingRebalance');
  });

  test('after a duplicate follower replaced the member id, the old follower rejoining is fenced', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const leaderJoin = ctx.sendJoin({
      memberId: result.leaderId,
      groupInstanceId: LEADER_INSTANCE_ID,
      protocols: PROTOCOL_SUPERSET,
    });
    expect(await ctx.state()).toBe('PreparingRebalance');
    const duplicate = ctx.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID, protocols: PROTOCOL_SUPERSET });
    ctx.time.advance(1);
    const oldFollower = ctx.sendJoin({
      memberId: result.followerId,
      groupInstanceId: FOLLOWER_INSTANCE_ID,
      protocols: PROTOCOL_SUPERSET,
    });
    const leaderJoined = await leaderJoin.promise;
    expect(leaderJoined).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(instanceIdsOf(leaderJoined.members)).toEqual([FOLLOWER_INSTANCE_ID, LEADER_INSTANCE_ID]);
    const duplicated = await duplicate.promise;
    expect(duplicated).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2, members: [] });
    expect(duplicated.memberId).not.toBe(result.followerId);
    expect(await oldFollower.promise).toMatchObject({
      errorCode: ErrorCode.FENCED_INSTANCE_ID,
      generationId: -1,
    });
  });

  test('SyncGroup, Heartbeat and OffsetCommit with a wrong member id for a static instance are fenced', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const sync = await ctx.sync({
      generationId: 1,
      memberId: 'invalid',
      groupInstanceId: LEADER_INSTANCE_ID,
    });
    expect(sync.errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(await ctx.heartbeat(result.leaderId, 1)).toBe(ErrorCode.NONE);
    expect(await ctx.heartbeat('invalidMember', 1, LEADER_INSTANCE_ID)).toBe(ErrorCode.FENCED_INSTANCE_ID);
    const valid = await ctx.commitOffsetsAndAnswer({ memberId: result.leaderId, generationId: 1 }, [
      { topic: 'topic', partition: 0, offset: 0 },
    ]);
    expect(valid.get('topic-0')).toBe(ErrorCode.NONE);
    const fenced = await ctx.commitOffsetsAndAnswer(
      { memberId: 'invalidMember', generationId: 1, groupInstanceId: LEADER_INSTANCE_ID },
      [{ topic: 'topic', partition: 0, offset: 0 }],
    );
    expect(fenced.get('topic-0')).toBe(ErrorCode.FENCED_INSTANCE_ID);
  });
});

describe('static members that do not rejoin', () => {
  /**
   * Kafka's groupStuckInRebalanceTimeoutDueToNonjoinedStaticMember: a dynamic member joins two static ones
   * with long sessions; after the static follower leaves, only the static leader is left and it does not
   * rejoin, so the group stays in PreparingRebalance.
   */
  async function groupStuckWithNonJoinedStaticLeader(): Promise<{ leaderId: string }> {
    const longSessionTimeoutMs = DEFAULT_SESSION_TIMEOUT_MS * 2;
    const result = await ctx.staticMembersJoinAndRebalance(
      LEADER_INSTANCE_ID,
      FOLLOWER_INSTANCE_ID,
      longSessionTimeoutMs,
    );
    const dynamic = await ctx.sendDynamicJoin({
      protocols: PROTOCOL_SUPERSET,
      sessionTimeoutMs: longSessionTimeoutMs,
    });
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS);
    const joined = await dynamic.promise;
    expect(joined).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(joined.leaderId).toBe(joined.memberId);
    expect(joined.members).toHaveLength(3);
    expect(await ctx.state()).toBe('CompletingRebalance');

    expect((await ctx.leave([{ memberId: result.followerId }])).members[0].errorCode).toBe(ErrorCode.NONE);
    expect(await ctx.state()).toBe('PreparingRebalance');
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS);
    // The dynamic member did not rejoin and is gone; the static leader stays, and nothing can complete.
    expect(await ctx.memberIds()).toEqual([result.leaderId]);
    expect(await ctx.state()).toBe('PreparingRebalance');
    return { leaderId: result.leaderId };
  }

  test('a static leader that never rejoins is removed when its session ends, leaving the group Empty', async () => {
    await groupStuckWithNonJoinedStaticLeader();
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS);
    expect(await ctx.memberIds()).toEqual([]);
    expect(await ctx.state()).toBe('Empty');
    expect(ctx.transitions.at(-1)).toMatchObject({ to: 'Empty', generationId: 3 });
  });

  test('a static leader that comes back before its session ends completes the stuck rebalance', async () => {
    await groupStuckWithNonJoinedStaticLeader();
    const response = await ctx.staticJoin(LEADER_INSTANCE_ID, {}, 0);
    expect(response).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 3 });
    expect(instanceIdsOf(response.members)).toEqual([LEADER_INSTANCE_ID]);
    expect(await ctx.memberIds()).toEqual([response.memberId]);
    expect(await ctx.state()).toBe('CompletingRebalance');
  });

  test('a static follower that does not rejoin before the rebalance timeout stays in the new generation', async () => {
    const initial = await ctx.staticMembersJoinAndRebalance(
      LEADER_INSTANCE_ID,
      FOLLOWER_INSTANCE_ID,
      DEFAULT_REBALANCE_TIMEOUT_MS * 2,
    );
    const newMember = ctx.sendJoin({ groupInstanceId: 'newMember', protocols: PROTOCOL_SUPERSET });
    expect(await ctx.state()).toBe('PreparingRebalance');
    const leader = await ctx.staticJoin(
      LEADER_INSTANCE_ID,
      { memberId: initial.leaderId, protocols: PROTOCOL_SUPERSET },
      DEFAULT_REBALANCE_TIMEOUT_MS,
    );
    expect(leader).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2, leaderId: initial.leaderId });
    expect(instanceIdsOf(leader.members)).toEqual([FOLLOWER_INSTANCE_ID, LEADER_INSTANCE_ID, 'newMember']);
    expect(await newMember.promise).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: 2,
      leaderId: initial.leaderId,
    });
  });

  test('a static leader that does not rejoin before the rebalance timeout loses leadership to a rejoined member', async () => {
    const initial = await ctx.staticMembersJoinAndRebalance(
      LEADER_INSTANCE_ID,
      FOLLOWER_INSTANCE_ID,
      DEFAULT_REBALANCE_TIMEOUT_MS * 2,
    );
    const newMember = ctx.sendJoin({ groupInstanceId: 'newMember', protocols: PROTOCOL_SUPERSET });
    ctx.time.advance(1);
    const follower = await ctx.staticJoin(
      FOLLOWER_INSTANCE_ID,
      { memberId: initial.followerId, protocols: PROTOCOL_SUPERSET },
      DEFAULT_REBALANCE_TIMEOUT_MS,
    );
    const results = [follower, await newMember.promise];
    const leaderResult = results.find((r) => r.leaderId === r.memberId);
    expect(leaderResult).toBeDefined();
    expect(leaderResult?.memberId).not.toBe(initial.leaderId);
    expect(instanceIdsOf(leaderResult?.members ?? [])).toEqual([
      FOLLOWER_INSTANCE_ID,
      LEADER_INSTANCE_ID,
      'newMember',
    ]);
    for (const r of results) expect(r).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
  });

  test('an unjoined static member stays until its session ends while the new generation goes on', async () => {
    const first = await ctx.staticJoin(LEADER_INSTANCE_ID, {
      rebalanceTimeoutMs: 1200,
      sessionTimeoutMs: 1000,
    });
    await ctx.sync({
      generationId: 1,
      memberId: first.memberId,
      assignments: [[first.memberId, Buffer.alloc(0)]],
    });
    const other = await ctx.sendDynamicJoin(); // t = 50: the rebalance waits up to 1200 ms for the first member
    for (let i = 0; i < 2; i++) {
      ctx.time.advance(400);
      expect(await ctx.heartbeat(first.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    }
    ctx.time.advance(400); // t = 1250: the rebalance times out without the first member
    const otherJoin = await other.promise;
    expect(otherJoin).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(otherJoin.leaderId).toBe(otherJoin.memberId);
    const sync = await ctx.sync({ generationId: 2, memberId: otherJoin.memberId, assignments: [] });
    expect(sync.errorCode).toBe(ErrorCode.NONE);
    // The static member that did not rejoin is kept, with an old generation, until its session ends.
    expect(await ctx.heartbeat(first.memberId, 1)).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(await ctx.memberIds()).toContain(first.memberId);
    const seen: ErrorCode[] = [];
    for (let i = 0; i < 3; i++) {
      ctx.time.advance(400);
      seen.push(await ctx.heartbeat(otherJoin.memberId, 2));
    }
    expect(seen).toEqual([ErrorCode.NONE, ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS]);
    expect(await ctx.memberIds()).toEqual([otherJoin.memberId]);
    const rejoin = await ctx.join({ memberId: otherJoin.memberId });
    expect(rejoin).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 3 });
    await ctx.sync({ generationId: 3, memberId: otherJoin.memberId, assignments: [] });
    for (let i = 0; i < 20; i++) {
      ctx.time.advance(400);
      expect(await ctx.heartbeat(otherJoin.memberId, 3)).toBe(ErrorCode.NONE);
    }
  });
});

describe("a static member replaced in a Stable group: the group's record names its new member id", () => {
  const followerOf = (stored: GroupMetadataValue | undefined): StoredMember | undefined =>
    stored?.members.find((m) => m.groupInstanceId === FOLLOWER_INSTANCE_ID);

  test('the rejoin writes the record with the new member id and is answered once it commits', async () => {
    const result = await ctx.staticMembersJoinAndRebalance();
    const rejoin = ctx.call(() =>
      ctx.router.joinGroup(
        joinRequest({ groupInstanceId: FOLLOWER_INSTANCE_ID, protocols: PROTOCOL_SUPERSET }),
        CONTEXT,
      ),
    );
    expect(rejoin.records).toHaveLength(1);
    const stored = ctx.storedGroup(GROUP_ID);
    expect(stored?.generationId).toBe(result.generation);
    const newMemberId = followerOf(stored)?.memberId;
    expect(newMemberId).not.toBe(result.followerId);
    expect(followerOf(stored)?.assignment).toEqual(result.followerAssignment);
    expect(await ctx.state()).toBe('Stable');
    expect(rejoin.answer.isSettled).toBe(false);
    ctx.commit();
    expect(await rejoin.answer.promise).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: result.generation,
      memberId: newMemberId,
      leaderId: result.leaderId,
      skipAssignment: false,
    });
  });

  test.each([
    [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE],
    [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR],
    [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REBALANCE_IN_PROGRESS],
  ])(
    'a failed append (%s) answers the rejoin %s; the group keeps the new id, and the instance replaces it again',
    async (appendError, answered) => {
      const result = await ctx.staticMembersJoinAndRebalance();
      const rejoin = ctx.sendJoin({ groupInstanceId: FOLLOWER_INSTANCE_ID, protocols: PROTOCOL_SUPERSET });
      const newMemberId = followerOf(ctx.storedGroup(GROUP_ID))?.memberId as string;
      ctx.failAppend(new CohortError(appendError, 'the append failed'));
      expect(await rejoin.promise).toMatchObject({ errorCode: answered, memberId: '' });
      expect(await ctx.state()).toBe('Stable');
      expect((await ctx.memberIds()).sort()).toEqual([result.leaderId, newMemberId].sort());
      const again = await ctx.staticJoin(FOLLOWER_INSTANCE_ID, { protocols: PROTOCOL_SUPERSET }, 0);
      expect(again).toMatchObject({ errorCode: ErrorCode.NONE, generationId: result.generation });
      expect(again.memberId).not.toBe(newMemberId);
      expect(followerOf(ctx.storedGroup(GROUP_ID))?.memberId).toBe(again.memberId);
    },
  );
});
