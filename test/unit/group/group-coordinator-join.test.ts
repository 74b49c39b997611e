import { CohortError, ErrorCode } from '../../../src/errors';
import { NEW_MEMBER_JOIN_TIMEOUT_MS } from '../../../src/group/group-coordinator';
import type { JoinGroupResponse } from '../../../src/group/group-protocol';
import { cancelOn } from '../../support/cancel-on';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import {
  CONTEXT,
  DEFAULT_REBALANCE_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  GROUP_ID,
  GROUP_INITIAL_REBALANCE_DELAY_MS,
  GROUP_MAX_SESSION_TIMEOUT_MS,
  GROUP_MAX_SIZE,
  GROUP_MIN_SESSION_TIMEOUT_MS,
  joinRequest,
  PROTOCOL_TYPE,
  protocol,
  type Tracked,
} from '../../support/group-harness';

let ctx: CoordinatorTestContext;
beforeEach(async () => {
  ctx = await CoordinatorTestContext.create();
});
afterEach(() => ctx.shutdown());

/** The answers of JoinGroups that are all due, in the order sent. */
const answersOf = (joins: readonly Tracked<JoinGroupResponse>[]): Promise<JoinGroupResponse[]> =>
  Promise.all(joins.map((join) => join.promise));

describe('JoinGroup validation', () => {
  test('an empty group id is rejected with INVALID_GROUP_ID', async () => {
    expect((await ctx.join({ groupId: '' })).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
  });

  test('a session timeout below the minimum is rejected with INVALID_SESSION_TIMEOUT', async () => {
    const response = await ctx.join({ sessionTimeoutMs: GROUP_MIN_SESSION_TIMEOUT_MS - 1 });
    expect(response.errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
  });

  test('a session timeout above the maximum is rejected with INVALID_SESSION_TIMEOUT', async () => {
    const response = await ctx.join({ sessionTimeoutMs: GROUP_MAX_SESSION_TIMEOUT_MS + 1 });
    expect(response.errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
  });

  test('a member id unknown to a group that does not exist gets UNKNOWN_MEMBER_ID, dynamic or static', async () => {
    expect((await ctx.join({ memberId: 'memberId' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await ctx.join({ memberId: 'memberId', groupInstanceId: 'instance' })).errorCode).toBe(
      ErrorCode.UNKNOWN_MEMBER_ID,
    );
    expect((await ctx.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('an empty protocol type is INCONSISTENT_GROUP_PROTOCOL, dynamic or static, and leaves no group', async () => {
    expect((await ctx.join({ protocolType: '' })).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await ctx.join({ protocolType: '', groupInstanceId: 'instance' })).errorCode).toBe(
      ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    );
    expect((await ctx.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('an empty protocol list is INCONSISTENT_GROUP_PROTOCOL', async () => {
    expect((await ctx.join({ protocols: [] })).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  });

  test('a request offering one protocol twice is rejected as unreadable', async () => {
    const call = ctx.router.joinGroup(
      joinRequest({ protocols: [protocol('range'), protocol('range')] }),
      CONTEXT,
    );
    await expect(call).rejects.toBeInstanceOf(CohortError);
    await expect(call).rejects.toMatchObject({ code: ErrorCode.INVALID_REQUEST });
  });
});

describe('a JoinGroup without a rebalance timeout', () => {
  // proto3 sends 0 when a client never sets rebalance_timeout_ms; JoinGroup v0 had no such field and
  // used the session timeout. Taken literally, 0 would expire the sync at once: no group could form.
  const SESSION_MS = 2_000;
  test.each([0, -1])(
    'rebalance_timeout_ms %i: the group forms, and rebalances within the session timeout',
    async (timeoutMs) => {
      const first = await ctx.dynamicJoin({ rebalanceTimeoutMs: timeoutMs, sessionTimeoutMs: SESSION_MS });
      expect(first.errorCode).toBe(ErrorCode.NONE);
      // The clock has moved past the join's completion: a zero sync timeout would have removed the member.
      expect((await ctx.sync({ generationId: first.generationId, memberId: first.memberId })).errorCode).toBe(
        ErrorCode.NONE,
      );
      expect(await ctx.state()).toBe('Stable');

      // A second member, with a short rebalance timeout of its own, starts a rebalance. The first keeps
      // heartbeating but does not rejoin: the join waits the group's largest rebalance timeout, which is
      // the first member's session timeout.
      const second = await ctx.sendDynamicJoin({ rebalanceTimeoutMs: 100 });
      for (let waited = 0; waited < SESSION_MS - 500; waited += 500) {
        ctx.time.advance(500);
        expect(await ctx.heartbeat(first.memberId, first.generationId)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
      }
      ctx.time.advance(499);
      expect(await ctx.state()).toBe('PreparingRebalance');
      expect(second.isSettled).toBe(false);
      ctx.time.advance(1);
      const joined = await second.promise;
      expect(joined.errorCode).toBe(ErrorCode.NONE);
      expect(joined.generationId).toBe(first.generationId + 1);
      expect(await ctx.memberIds()).toEqual([joined.memberId]);
    },
  );
});

describe('JoinGroup of dynamic members (KIP-394)', () => {
  test('a new dynamic member first gets MEMBER_ID_REQUIRED with its member id, prefixed by its client id', async () => {
    const response = await ctx.join({ clientId: 'my-client' });
    expect(response.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect(response.memberId).toMatch(/^my-client-/);
    expect(response.generationId).toBe(-1);
    expect(await ctx.state()).toBe('Empty');
  });

  test('rejoining with the given id forms generation 1 with the member as leader after the initial delay', async () => {
    const response = await ctx.dynamicJoin();
    expect(response.errorCode).toBe(ErrorCode.NONE);
    expect(response.generationId).toBe(1);
    expect(response.leaderId).toBe(response.memberId);
    expect(response.protocolType).toBe(PROTOCOL_TYPE);
    expect(response.protocolName).toBe('range');
    expect(response.members.map((m) => m.memberId)).toEqual([response.memberId]);
    expect(await ctx.state()).toBe('CompletingRebalance');
  });

  test('a second member offering another protocol type is INCONSISTENT_GROUP_PROTOCOL', async () => {
    await ctx.dynamicJoin();
    expect((await ctx.join({ protocolType: 'connect' })).errorCode).toBe(
      ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    );
  });

  test('a second member with no protocol in common is INCONSISTENT_GROUP_PROTOCOL while the first joins', async () => {
    const first = await ctx.sendDynamicJoin({ protocols: [protocol('range')] });
    const other = await ctx.join({ protocols: [protocol('roundrobin')] });
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    expect((await first.promise).errorCode).toBe(ErrorCode.NONE);
    expect(other.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  });

  test('an unknown member id in an existing group gets UNKNOWN_MEMBER_ID', async () => {
    await ctx.dynamicJoin();
    expect((await ctx.join({ memberId: 'memberId' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a pending member that rejoins with no protocols is refused, then accepted with consistent ones', async () => {
    const first = await ctx.join();
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect((await ctx.join({ memberId: first.memberId, protocols: [] })).errorCode).toBe(
      ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    );
    const accepted = await ctx.join({ memberId: first.memberId }, GROUP_INITIAL_REBALANCE_DELAY_MS);
    expect(accepted.errorCode).toBe(ErrorCode.NONE);
  });

  test('a pending member id claimed together with a group instance id is rejected as unreadable', async () => {
    const first = await ctx.join();
    const call = ctx.router.joinGroup(
      joinRequest({ memberId: first.memberId, groupInstanceId: 'instance' }),
      CONTEXT,
    );
    await expect(call).rejects.toMatchObject({ code: ErrorCode.INVALID_REQUEST });
  });
});

describe('the initial rebalance delay (KIP-134)', () => {
  test('the first join of an empty group completes only once the initial delay has passed', async () => {
    const join = await ctx.sendDynamicJoin();
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(join.isSettled).toBe(false);
    ctx.time.advance(1);
    expect((await join.promise).errorCode).toBe(ErrorCode.NONE);
  });

  test('a member joining during the delay extends it', async () => {
    const rebalanceTimeoutMs = GROUP_INITIAL_REBALANCE_DELAY_MS * 3;
    const first = await ctx.sendDynamicJoin({ rebalanceTimeoutMs });
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    const second = await ctx.sendDynamicJoin({ rebalanceTimeoutMs });
    ctx.time.advance(1); // t = 50: the delay would have ended; it is extended to t = 100
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(first.isSettled).toBe(false);
    expect(second.isSettled).toBe(false);
    ctx.time.advance(1);
    const [firstJoined, secondJoined] = await answersOf([first, second]);
    expect(firstJoined.errorCode).toBe(ErrorCode.NONE);
    expect(secondJoined.errorCode).toBe(ErrorCode.NONE);
    expect(firstJoined.generationId).toBe(1);
  });

  test('the delay is extended at most up to the rebalance timeout', async () => {
    const rebalanceTimeoutMs = GROUP_INITIAL_REBALANCE_DELAY_MS * 2;
    const first = await ctx.sendDynamicJoin({ rebalanceTimeoutMs });
    const second = await ctx.sendDynamicJoin({ rebalanceTimeoutMs });
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS); // extended once, to t = 100, with nothing left after
    const third = await ctx.sendDynamicJoin({ rebalanceTimeoutMs });
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect([first.isSettled, second.isSettled, third.isSettled]).toEqual([false, false, false]);
    ctx.time.advance(1);
    expect((await answersOf([first, second, third])).map((r) => r.errorCode)).toEqual([
      ErrorCode.NONE,
      ErrorCode.NONE,
      ErrorCode.NONE,
    ]);
  });

  test('a group that became empty again uses the initial delay on its next rebalance', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    await ctx.leaveAndCommit([{ memberId }]);
    expect(await ctx.state()).toBe('Empty');
    const join = await ctx.sendDynamicJoin();
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(join.isSettled).toBe(false);
    ctx.time.advance(1);
    expect((await join.promise).generationId).toBe(3);
  });
});

describe('group.max.size (KIP-389)', () => {
  test('once the group is full, a new member gets GROUP_MAX_SIZE_REACHED', async () => {
    const rebalanceTimeoutMs = GROUP_INITIAL_REBALANCE_DELAY_MS * 2;
    const joins: Tracked<JoinGroupResponse>[] = [];
    for (let i = 0; i < GROUP_MAX_SIZE; i++) joins.push(await ctx.sendDynamicJoin({ rebalanceTimeoutMs }));
    // Two steps: the clock moves before due tasks run, so the extended delay is measured from t = 100 if
    // the clock jumps there at once (as with Kafka's MockTimer).
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    for (const joined of await answersOf(joins)) expect(joined.errorCode).toBe(ErrorCode.NONE);
    const extra = await ctx.join({ rebalanceTimeoutMs });
    expect(extra.errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect(extra.memberId).toBe('');
  });

  test('dynamic members beyond the maximum are refused when they rejoin with their id, again when they retry', async () => {
    const ids: string[] = [];
    for (let i = 0; i < GROUP_MAX_SIZE + 1; i++) ids.push((await ctx.join()).memberId);
    const joins = ids.map((memberId) => ctx.sendJoin({ memberId }));
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    const errors = (await answersOf(joins)).map((r) => r.errorCode);
    expect(errors.filter((e) => e === ErrorCode.NONE)).toHaveLength(GROUP_MAX_SIZE);
    expect(errors.filter((e) => e === ErrorCode.GROUP_MAX_SIZE_REACHED)).toHaveLength(1);
    // While CompletingRebalance, accepted members rejoin (answered at once), the refused one is refused again.
    const rejoins = ids.map((memberId) => ctx.sendJoin({ memberId }));
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(rejoins.map((j) => j.result.errorCode)).toEqual(errors);
  });

  test('static members beyond the maximum are refused, and refused again when they rejoin', async () => {
    const instanceIds = Array.from({ length: GROUP_MAX_SIZE + 1 }, (_, i) => `instance-${i}`);
    const joins = instanceIds.map((groupInstanceId) => ctx.sendJoin({ groupInstanceId }));
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    const results = await answersOf(joins);
    const errors = results.map((r) => r.errorCode);
    expect(errors.filter((e) => e === ErrorCode.NONE)).toHaveLength(GROUP_MAX_SIZE);
    expect(errors.filter((e) => e === ErrorCode.GROUP_MAX_SIZE_REACHED)).toHaveLength(1);
    const rejoins = instanceIds.map((groupInstanceId, i) =>
      ctx.sendJoin({ groupInstanceId, memberId: results[i].memberId }),
    );
    expect(await ctx.state()).toBe('CompletingRebalance');
    // The refused instance has no member id, so it counts as a new member: still too many.
    expect(rejoins.map((j) => j.result.errorCode)).toEqual(errors);
  });

  test('a restarted static instance of a full group takes back its own place', async () => {
    // Four static members fill the group. An instance that restarts (no member id) replaces its old
    // member, so the group does not grow: it is not refused, in Stable or while CompletingRebalance, and
    // its old member id is fenced at once instead of expiring later.
    const instanceIds = Array.from({ length: GROUP_MAX_SIZE }, (_, i) => `instance-${i}`);
    const joins = instanceIds.map((groupInstanceId) => ctx.sendJoin({ groupInstanceId }));
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    const first = await answersOf(joins);
    expect(first.map((r) => r.errorCode)).toEqual(first.map(() => ErrorCode.NONE));
    const syncs = first.map((r, i) =>
      ctx.sendSync({
        memberId: r.memberId,
        groupInstanceId: instanceIds[i],
        generationId: r.generationId,
        assignments: r.members.map((m) => [m.memberId, Buffer.from('a')]),
      }),
    );
    // The leader's SyncGroup wrote the group's record: everyone is answered once it commits.
    ctx.commit();
    const synced = await Promise.all(syncs.map((s) => s.answer.promise));
    expect(synced.map((s) => s.errorCode)).toEqual(syncs.map(() => ErrorCode.NONE));
    expect(await ctx.state()).toBe('Stable');

    const restarted = await ctx.staticJoin(instanceIds[1], {}, 0);
    expect(restarted.errorCode).toBe(ErrorCode.NONE);
    expect(restarted.generationId).toBe(first[1].generationId);
    expect(await ctx.heartbeat(first[1].memberId, first[1].generationId, instanceIds[1])).toBe(
      ErrorCode.FENCED_INSTANCE_ID,
    );
    expect(await ctx.state()).toBe('Stable');

    // A leader's rejoin starts a round; once it completes (everyone static, so the round waits for the
    // rebalance timeout at most), the group is CompletingRebalance and full again.
    const rejoins = first.map((r, i) =>
      ctx.sendJoin({ memberId: i === 1 ? restarted.memberId : r.memberId, groupInstanceId: instanceIds[i] }),
    );
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(rejoins.map((j) => j.result.errorCode)).toEqual(rejoins.map(() => ErrorCode.NONE));
    const again = ctx.sendJoin({ groupInstanceId: instanceIds[2] });
    const described = await ctx.describe();
    expect(again.isSettled && again.result.errorCode).not.toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect(await ctx.heartbeat(first[2].memberId, rejoins[2].result.generationId, instanceIds[2])).toBe(
      ErrorCode.FENCED_INSTANCE_ID,
    );
    expect(described.members).toHaveLength(GROUP_MAX_SIZE);
  });

  test('a pending member id refused for size stops holding up the rebalance', async () => {
    // A stable group of one; GROUP_MAX_SIZE newcomers get pending ids. The member rejoins (a rebalance
    // starts), all but one newcomer rejoin with their ids and fill the group, the last is refused: the
    // join then has every member and no pending id left, and completes at once (Kafka's remove() drops
    // a pending id too), not when the refused id's session would have expired.
    const leaderId = await ctx.stableSingleMemberGroup();
    const pending: string[] = [];
    for (let i = 0; i < GROUP_MAX_SIZE; i++) {
      const first = await ctx.join();
      expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
      pending.push(first.memberId);
    }
    const joins = [leaderId, ...pending.slice(0, -1)].map((memberId) => ctx.sendJoin({ memberId }));
    const refused = await ctx.join({ memberId: pending[GROUP_MAX_SIZE - 1] });
    expect(refused.errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    // The clock has not moved: only the refusal can have completed the join.
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(joins.map((j) => j.result.errorCode)).toEqual(joins.map(() => ErrorCode.NONE));
    expect(new Set(joins.map((j) => j.result.generationId)).size).toBe(1);
  });

  test('members may rejoin while the group rebalances; only the surplus is refused', async () => {
    const ids: string[] = [];
    for (let i = 0; i < GROUP_MAX_SIZE + 1; i++) ids.push((await ctx.join()).memberId);
    const firstJoins = ids.map((memberId) => ctx.sendJoin({ memberId }));
    const secondJoins = ids.map((memberId) => ctx.sendJoin({ memberId }));
    expect(await ctx.state()).toBe('PreparingRebalance');
    // The second JoinGroup of an accepted member supersedes its first, which is answered.
    const superseded = firstJoins.filter((j) => j.isSettled).map((j) => j.result.errorCode);
    expect(superseded.filter((e) => e === ErrorCode.REBALANCE_IN_PROGRESS)).toHaveLength(GROUP_MAX_SIZE);
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    ctx.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    const errors = (await answersOf(secondJoins)).map((r) => r.errorCode);
    expect(errors.filter((e) => e === ErrorCode.NONE)).toHaveLength(GROUP_MAX_SIZE);
    expect(errors.filter((e) => e === ErrorCode.GROUP_MAX_SIZE_REACHED)).toHaveLength(1);
  });
});

describe('new members (KIP-394 expiry)', () => {
  test("a new member's heartbeats do not extend the new-member timeout (a cohort choice, docs/protocol.md)", async () => {
    // The leader of a Stable group takes its time to rejoin (its rebalance timeout outlasts the new-member
    // timeout) but keeps heartbeating. A newcomer joins, its client gives up on the parked call, and it
    // heartbeats on: it is removed when the new-member timeout ends, not kept alive by its heartbeats.
    const sessionTimeoutMs = 3_000;
    const leaderId = await ctx.stableSingleMemberGroup({
      sessionTimeoutMs,
      rebalanceTimeoutMs: 2 * NEW_MEMBER_JOIN_TIMEOUT_MS,
    });
    const { memberId } = await ctx.join();
    const controller = new AbortController();
    const parked = ctx.sendJoin({
      memberId,
      sessionTimeoutMs,
      context: { clientHost: 'h', ...cancelOn(controller.signal) },
    });
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(parked.isSettled).toBe(false);
    controller.abort();
    expect((await parked.promise).errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    const stepMs = 1_000;
    for (let elapsed = stepMs; elapsed < NEW_MEMBER_JOIN_TIMEOUT_MS; elapsed += stepMs) {
      ctx.time.advance(stepMs);
      expect(await ctx.heartbeat(leaderId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
      expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    }
    expect((await ctx.memberIds()).sort()).toEqual([leaderId, memberId].sort());
    ctx.time.advance(stepMs);
    expect(await ctx.memberIds()).toEqual([leaderId]);
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('after its first join completes, a new member lives on its session timeout, not the new-member timeout', async () => {
    const sessionTimeoutMs = NEW_MEMBER_JOIN_TIMEOUT_MS + 5000;
    const memberId = await ctx.stableSingleMemberGroup({ sessionTimeoutMs });
    ctx.time.advance(NEW_MEMBER_JOIN_TIMEOUT_MS + 100);
    expect(await ctx.memberIds()).toEqual([memberId]);
    ctx.time.advance(sessionTimeoutMs - NEW_MEMBER_JOIN_TIMEOUT_MS - 100);
    expect(await ctx.memberIds()).toEqual([]);
    expect(await ctx.state()).toBe('Empty');
  });

  test('a new member whose join outlasts the new-member timeout is removed and told UNKNOWN_MEMBER_ID', async () => {
    const sessionTimeoutMs = NEW_MEMBER_JOIN_TIMEOUT_MS + 5000;
    const rebalanceTimeoutMs = NEW_MEMBER_JOIN_TIMEOUT_MS * 2;
    const first = await ctx.dynamicJoin({ sessionTimeoutMs, rebalanceTimeoutMs });
    expect(first.leaderId).toBe(first.memberId);
    // The group is CompletingRebalance; a new member triggers a rebalance that waits for the first one.
    const second = await ctx.sendDynamicJoin({ sessionTimeoutMs, rebalanceTimeoutMs });
    expect(await ctx.memberIds()).toHaveLength(2);
    expect(second.isSettled).toBe(false);
    ctx.time.advance(NEW_MEMBER_JOIN_TIMEOUT_MS - 1);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(second.isSettled).toBe(false);
    ctx.time.advance(1);
    expect((await second.promise).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await ctx.memberIds()).toEqual([first.memberId]);
  });

  test('a new member follows the normal session expiry once its join completed', async () => {
    const first = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = ctx.sendJoin({ memberId: first });
    expect((await rejoin.promise).errorCode).toBe(ErrorCode.NONE);
    expect((await other.promise).errorCode).toBe(ErrorCode.NONE);
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS);
    expect(await ctx.state()).toBe('Empty');
    expect(await ctx.memberIds()).toEqual([]);
  });

  test('a new member follows the normal session expiry once its sync completed', async () => {
    const first = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = ctx.sendJoin({ memberId: first });
    const { generationId } = await rejoin.promise;
    const followerSync = ctx.sendSync({ generationId, memberId: (await other.promise).memberId });
    const leaderSync = await ctx.sync({ generationId, memberId: first });
    expect(leaderSync.errorCode).toBe(ErrorCode.NONE);
    expect((await followerSync.answer.promise).errorCode).toBe(ErrorCode.NONE);
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS);
    expect(await ctx.state()).toBe('Empty');
  });
});

describe('rejoining a formed group', () => {
  test('an unchanged follower gets the current generation without a rebalance', async () => {
    const first = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = ctx.sendJoin({ memberId: first });
    const { generationId, leaderId } = await rejoin.promise;
    const followerJoin = await other.promise;
    expect(followerJoin.leaderId).toBe(first);
    expect(leaderId).toBe(first);
    await ctx.sync({ generationId, memberId: first });
    const followerRejoin = await ctx.join({ memberId: followerJoin.memberId });
    expect(followerRejoin.errorCode).toBe(ErrorCode.NONE);
    expect(followerRejoin.generationId).toBe(generationId);
    expect(followerRejoin.members).toEqual([]);
    expect(await ctx.state()).toBe('Stable');
  });

  test('an unchanged leader rebalances the group, and the generation advances', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    const rejoin = await ctx.join({ memberId });
    expect(rejoin.errorCode).toBe(ErrorCode.NONE);
    expect(rejoin.generationId).toBe(2);
  });

  test('a follower with changed metadata rebalances the group', async () => {
    const first = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = ctx.sendJoin({ memberId: first });
    await ctx.sync({ generationId: (await rejoin.promise).generationId, memberId: first });
    const changed = ctx.sendJoin({
      memberId: (await other.promise).memberId,
      protocols: [protocol('range', Buffer.from('x'))],
    });
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(changed.isSettled).toBe(false);
  });

  test('a member rejoining unchanged during CompletingRebalance gets the same generation again', async () => {
    const first = await ctx.dynamicJoin();
    const again = await ctx.join({ memberId: first.memberId });
    expect(again).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: first.generationId,
      leaderId: first.memberId,
    });
    expect(again.members.map((m) => m.memberId)).toEqual([first.memberId]);
    expect(await ctx.state()).toBe('CompletingRebalance');
  });

  test('a second JoinGroup while the first is parked answers the first with REBALANCE_IN_PROGRESS', async () => {
    const leaderId = await ctx.stableSingleMemberGroup();
    const { memberId } = await ctx.join();
    const firstCall = ctx.sendJoin({ memberId });
    const secondCall = ctx.sendJoin({ memberId });
    expect(await firstCall.promise).toMatchObject({
      errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
      memberId,
      generationId: -1,
    });
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(secondCall.isSettled).toBe(false);
    const leader = await ctx.join({ memberId: leaderId });
    expect(leader.errorCode).toBe(ErrorCode.NONE);
    expect(await secondCall.promise).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: leader.generationId,
      memberId,
    });
  });

  test('the rebalance timeout removes dynamic members that did not rejoin', async () => {
    const first = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    ctx.time.advance(DEFAULT_REBALANCE_TIMEOUT_MS - 1);
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(other.isSettled).toBe(false);
    // The first member heartbeats through the rebalance but never rejoins.
    expect(await ctx.heartbeat(first, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    ctx.time.advance(1);
    const joined = await other.promise;
    expect(joined).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(joined.leaderId).toBe(joined.memberId);
    expect(await ctx.memberIds()).toEqual([joined.memberId]);
    expect(await ctx.heartbeat(first, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('every transition the group makes is a legal one', async () => {
    await ctx.staticMembersJoinAndRebalance();
    expect(ctx.transitions.map((t) => `${t.from}->${t.to}`)).toEqual([
      'Empty->PreparingRebalance',
      'PreparingRebalance->CompletingRebalance',
      'CompletingRebalance->Stable',
    ]);
    expect(ctx.transitions.map((t) => t.groupId)).toEqual([GROUP_ID, GROUP_ID, GROUP_ID]);
  });
});
