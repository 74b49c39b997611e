import { CohortError, ErrorCode } from '../../../src/errors';
import { NEW_MEMBER_JOIN_TIMEOUT_MS } from '../../../src/group/group-coordinator';
import {
  DEFAULT_REBALANCE_TIMEOUT_MS,
  DEFAULT_SESSION_TIMEOUT_MS,
  GROUP_ID,
  GROUP_INITIAL_REBALANCE_DELAY_MS,
  GROUP_MAX_SESSION_TIMEOUT_MS,
  GROUP_MAX_SIZE,
  GROUP_MIN_SESSION_TIMEOUT_MS,
  GroupHarness,
  PROTOCOL_TYPE,
  protocol,
  settle,
  type Tracked,
} from '../../support/group-harness';
import type { JoinGroupResponse } from '../../../src/group/group-protocol';
import { cancelOn } from '../../support/cancel-on';

let h: GroupHarness;
beforeEach(() => {
  h = new GroupHarness();
});
afterEach(() => h.shutdown());

describe('JoinGroup validation', () => {
  test('an empty group id is rejected with INVALID_GROUP_ID', async () => {
    expect((await h.join({ groupId: '' })).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
  });

  test('a session timeout below the minimum is rejected with INVALID_SESSION_TIMEOUT', async () => {
    const response = await h.join({ sessionTimeoutMs: GROUP_MIN_SESSION_TIMEOUT_MS - 1 });
    expect(response.errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
  });

  test('a session timeout above the maximum is rejected with INVALID_SESSION_TIMEOUT', async () => {
    const response = await h.join({ sessionTimeoutMs: GROUP_MAX_SESSION_TIMEOUT_MS + 1 });
    expect(response.errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
  });

  test('a member id unknown to a group that does not exist gets UNKNOWN_MEMBER_ID, dynamic or static', async () => {
    expect((await h.join({ memberId: 'memberId' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect((await h.join({ memberId: 'memberId', groupInstanceId: 'instance' })).errorCode).toBe(
      ErrorCode.UNKNOWN_MEMBER_ID,
    );
    expect((await h.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('an empty protocol type is INCONSISTENT_GROUP_PROTOCOL, dynamic or static, and leaves no group', async () => {
    expect((await h.join({ protocolType: '' })).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect((await h.join({ protocolType: '', groupInstanceId: 'instance' })).errorCode).toBe(
      ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    );
    expect((await h.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('an empty protocol list is INCONSISTENT_GROUP_PROTOCOL', async () => {
    expect((await h.join({ protocols: [] })).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  });

  test('a request offering one protocol twice is rejected as unreadable', async () => {
    const call = h.coordinator.joinGroup(
      h.joinRequest({ protocols: [protocol('range'), protocol('range')] }),
      {
        clientHost: 'h',
      },
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
      const first = await h.dynamicJoin({ rebalanceTimeoutMs: timeoutMs, sessionTimeoutMs: SESSION_MS });
      expect(first.errorCode).toBe(ErrorCode.NONE);
      // The clock has moved past the join's completion: a zero sync timeout would have removed the member.
      expect((await h.sync({ generationId: first.generationId, memberId: first.memberId })).errorCode).toBe(
        ErrorCode.NONE,
      );
      expect(await h.state()).toBe('Stable');

      // A second member, with a short rebalance timeout of its own, starts a rebalance. The first keeps
      // heartbeating but does not rejoin: the join waits the group's largest rebalance timeout, which is
      // the first member's session timeout.
      const second = await h.sendDynamicJoin({ rebalanceTimeoutMs: 100 });
      for (let waited = 0; waited < SESSION_MS - 500; waited += 500) {
        h.advance(500);
        await settle();
        expect(await h.heartbeat(first.memberId, first.generationId)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
      }
      h.advance(499);
      await settle();
      expect(second.isSettled).toBe(false);
      h.advance(1);
      await settle();
      expect(second.result.errorCode).toBe(ErrorCode.NONE);
      expect(second.result.generationId).toBe(first.generationId + 1);
      expect(await h.memberIds()).toEqual([second.result.memberId]);
    },
  );
});

describe('JoinGroup of dynamic members (KIP-394)', () => {
  test('a new dynamic member first gets MEMBER_ID_REQUIRED with its member id, prefixed by its client id', async () => {
    const response = await h.join({ clientId: 'my-client' });
    expect(response.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect(response.memberId).toMatch(/^my-client-/);
    expect(response.generationId).toBe(-1);
    expect(await h.state()).toBe('Empty');
  });

  test('rejoining with the given id forms generation 1 with the member as leader after the initial delay', async () => {
    const response = await h.dynamicJoin();
    expect(response.errorCode).toBe(ErrorCode.NONE);
    expect(response.generationId).toBe(1);
    expect(response.leaderId).toBe(response.memberId);
    expect(response.protocolType).toBe(PROTOCOL_TYPE);
    expect(response.protocolName).toBe('range');
    expect(response.members.map((m) => m.memberId)).toEqual([response.memberId]);
    expect(await h.state()).toBe('CompletingRebalance');
  });

  test('a second member offering another protocol type is INCONSISTENT_GROUP_PROTOCOL', async () => {
    await h.dynamicJoin();
    expect((await h.join({ protocolType: 'connect' })).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  });

  test('a second member with no protocol in common is INCONSISTENT_GROUP_PROTOCOL while the first joins', async () => {
    const first = await h.sendDynamicJoin({ protocols: [protocol('range')] });
    const other = await h.join({ protocols: [protocol('roundrobin')] });
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    await settle();
    expect(first.result.errorCode).toBe(ErrorCode.NONE);
    expect(other.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
  });

  test('an unknown member id in an existing group gets UNKNOWN_MEMBER_ID', async () => {
    await h.dynamicJoin();
    expect((await h.join({ memberId: 'memberId' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a pending member that rejoins with no protocols is refused, then accepted with consistent ones', async () => {
    const first = await h.join();
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect((await h.join({ memberId: first.memberId, protocols: [] })).errorCode).toBe(
      ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    );
    const accepted = await h.join({ memberId: first.memberId }, GROUP_INITIAL_REBALANCE_DELAY_MS);
    expect(accepted.errorCode).toBe(ErrorCode.NONE);
  });

  test('a pending member id claimed together with a group instance id is rejected as unreadable', async () => {
    const first = await h.join();
    const call = h.coordinator.joinGroup(
      h.joinRequest({ memberId: first.memberId, groupInstanceId: 'instance' }),
      { clientHost: 'h' },
    );
    await expect(call).rejects.toMatchObject({ code: ErrorCode.INVALID_REQUEST });
  });
});

describe('the initial rebalance delay (KIP-134)', () => {
  test('the first join of an empty group completes only once the initial delay has passed', async () => {
    const join = await h.sendDynamicJoin();
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    await settle();
    expect(join.isSettled).toBe(false);
    h.advance(1);
    await settle();
    expect(join.result.errorCode).toBe(ErrorCode.NONE);
  });

  test('a member joining during the delay extends it', async () => {
    const rebalanceTimeoutMs = GROUP_INITIAL_REBALANCE_DELAY_MS * 3;
    const first = await h.sendDynamicJoin({ rebalanceTimeoutMs });
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    const second = await h.sendDynamicJoin({ rebalanceTimeoutMs });
    h.advance(1); // t = 50: the delay would have ended; it is extended to t = 100
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    await settle();
    expect(first.isSettled).toBe(false);
    expect(second.isSettled).toBe(false);
    h.advance(1);
    await settle();
    expect(first.result.errorCode).toBe(ErrorCode.NONE);
    expect(second.result.errorCode).toBe(ErrorCode.NONE);
    expect(first.result.generationId).toBe(1);
  });

  test('the delay is extended at most up to the rebalance timeout', async () => {
    const rebalanceTimeoutMs = GROUP_INITIAL_REBALANCE_DELAY_MS * 2;
    const first = await h.sendDynamicJoin({ rebalanceTimeoutMs });
    const second = await h.sendDynamicJoin({ rebalanceTimeoutMs });
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS); // extended once, to t = 100, with nothing left after
    const third = await h.sendDynamicJoin({ rebalanceTimeoutMs });
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    await settle();
    expect([first.isSettled, second.isSettled, third.isSettled]).toEqual([false, false, false]);
    h.advance(1);
    await settle();
    expect([first, second, third].map((c) => c.result.errorCode)).toEqual([
      ErrorCode.NONE,
      ErrorCode.NONE,
      ErrorCode.NONE,
    ]);
  });

  test('a group that became empty again uses the initial delay on its next rebalance', async () => {
    const memberId = await h.stableSingleMemberGroup();
    await h.leave([{ memberId }]);
    expect(await h.state()).toBe('Empty');
    const join = await h.sendDynamicJoin();
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS - 1);
    await settle();
    expect(join.isSettled).toBe(false);
    h.advance(1);
    await settle();
    expect(join.result.generationId).toBe(3);
  });
});

describe('group.max.size (KIP-389)', () => {
  test('once the group is full, a new member gets GROUP_MAX_SIZE_REACHED', async () => {
    const rebalanceTimeoutMs = GROUP_INITIAL_REBALANCE_DELAY_MS * 2;
    const joins: Tracked<JoinGroupResponse>[] = [];
    for (let i = 0; i < GROUP_MAX_SIZE; i++) joins.push(await h.sendDynamicJoin({ rebalanceTimeoutMs }));
    // Two steps: the clock moves before due tasks run, so the extended delay is measured from t = 100 if
    // the clock jumps there at once (as with Kafka's MockTimer).
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    await settle();
    for (const join of joins) expect(join.result.errorCode).toBe(ErrorCode.NONE);
    const extra = await h.join({ rebalanceTimeoutMs });
    expect(extra.errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect(extra.memberId).toBe('');
  });

  test('dynamic members beyond the maximum are refused when they rejoin with their id, again when they retry', async () => {
    const ids: string[] = [];
    for (let i = 0; i < GROUP_MAX_SIZE + 1; i++) ids.push((await h.join()).memberId);
    const joins = ids.map((memberId) => h.sendJoin({ memberId }));
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    await settle();
    const errors = joins.map((j) => j.result.errorCode);
    expect(errors.filter((e) => e === ErrorCode.NONE)).toHaveLength(GROUP_MAX_SIZE);
    expect(errors.filter((e) => e === ErrorCode.GROUP_MAX_SIZE_REACHED)).toHaveLength(1);
    // While CompletingRebalance, accepted members rejoin (answered at once), the refused one is refused again.
    const rejoins = ids.map((memberId) => h.sendJoin({ memberId }));
    await settle();
    expect(rejoins.map((j) => j.result.errorCode)).toEqual(errors);
  });

  test('static members beyond the maximum are refused, and refused again when they rejoin', async () => {
    const instanceIds = Array.from({ length: GROUP_MAX_SIZE + 1 }, (_, i) => `instance-${i}`);
    const joins = instanceIds.map((groupInstanceId) => h.sendJoin({ groupInstanceId }));
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    await settle();
    const results = joins.map((j) => j.result);
    const errors = results.map((r) => r.errorCode);
    expect(errors.filter((e) => e === ErrorCode.NONE)).toHaveLength(GROUP_MAX_SIZE);
    expect(errors.filter((e) => e === ErrorCode.GROUP_MAX_SIZE_REACHED)).toHaveLength(1);
    const rejoins = instanceIds.map((groupInstanceId, i) =>
      h.sendJoin({ groupInstanceId, memberId: results[i].memberId }),
    );
    await settle();
    // The refused instance has no member id, so it counts as a new member: still too many.
    expect(rejoins.map((j) => j.result.errorCode)).toEqual(errors);
  });

  test('a restarted static instance of a full group takes back its own place', async () => {
    // Four static members fill the group. An instance that restarts (no member id) replaces its old
    // member, so the group does not grow: it is not refused, in Stable or while CompletingRebalance, and
    // its old member id is fenced at once instead of expiring later.
    const instanceIds = Array.from({ length: GROUP_MAX_SIZE }, (_, i) => `instance-${i}`);
    const joins = instanceIds.map((groupInstanceId) => h.sendJoin({ groupInstanceId }));
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    await settle();
    const first = joins.map((j) => j.result);
    expect(first.map((r) => r.errorCode)).toEqual(first.map(() => ErrorCode.NONE));
    const syncs = first.map((r, i) =>
      h.sendSync({
        memberId: r.memberId,
        groupInstanceId: instanceIds[i],
        generationId: r.generationId,
        assignments: r.members.map((m) => [m.memberId, Buffer.from('a')]),
      }),
    );
    await settle();
    expect(syncs.map((s) => s.result.errorCode)).toEqual(syncs.map(() => ErrorCode.NONE));
    expect(await h.state()).toBe('Stable');

    const restarted = await h.join({ groupInstanceId: instanceIds[1] });
    expect(restarted.errorCode).toBe(ErrorCode.NONE);
    expect(restarted.generationId).toBe(first[1].generationId);
    expect(await h.heartbeat(first[1].memberId, first[1].generationId, instanceIds[1])).toBe(
      ErrorCode.FENCED_INSTANCE_ID,
    );
    expect(await h.state()).toBe('Stable');

    // A leader's rejoin starts a round; once it completes (everyone static, so the round waits for the
    // rebalance timeout at most), the group is CompletingRebalance and full again.
    const rejoins = first.map((r, i) =>
      h.sendJoin({ memberId: i === 1 ? restarted.memberId : r.memberId, groupInstanceId: instanceIds[i] }),
    );
    await settle();
    expect(rejoins.map((j) => j.isSettled && j.result.errorCode)).toEqual(rejoins.map(() => ErrorCode.NONE));
    expect(await h.state()).toBe('CompletingRebalance');
    const again = h.sendJoin({ groupInstanceId: instanceIds[2] });
    await settle();
    expect(again.isSettled && again.result.errorCode).not.toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect(await h.heartbeat(first[2].memberId, rejoins[2].result.generationId, instanceIds[2])).toBe(
      ErrorCode.FENCED_INSTANCE_ID,
    );
    expect((await h.describe()).members).toHaveLength(GROUP_MAX_SIZE);
  });

  test('a pending member id refused for size stops holding up the rebalance', async () => {
    // A stable group of one; GROUP_MAX_SIZE newcomers get pending ids. The member rejoins (a rebalance
    // starts), all but one newcomer rejoin with their ids and fill the group, the last is refused: the
    // join then has every member and no pending id left, and completes at once (Kafka's remove() drops
    // a pending id too), not when the refused id's session would have expired.
    const leaderId = await h.stableSingleMemberGroup();
    const pending: string[] = [];
    for (let i = 0; i < GROUP_MAX_SIZE; i++) {
      const first = await h.join();
      expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
      pending.push(first.memberId);
    }
    const joins = [leaderId, ...pending.slice(0, -1)].map((memberId) => h.sendJoin({ memberId }));
    const refused = await h.join({ memberId: pending[GROUP_MAX_SIZE - 1] });
    expect(refused.errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    await settle();
    expect(joins.map((j) => j.isSettled && j.result.errorCode)).toEqual(joins.map(() => ErrorCode.NONE));
    expect(new Set(joins.map((j) => j.result.generationId)).size).toBe(1);
  });

  test('members may rejoin while the group rebalances; only the surplus is refused', async () => {
    const ids: string[] = [];
    for (let i = 0; i < GROUP_MAX_SIZE + 1; i++) ids.push((await h.join()).memberId);
    const firstJoins = ids.map((memberId) => h.sendJoin({ memberId }));
    const secondJoins = ids.map((memberId) => h.sendJoin({ memberId }));
    await settle();
    // The second JoinGroup of an accepted member supersedes its first, which is answered.
    const superseded = firstJoins.filter((j) => j.isSettled).map((j) => j.result.errorCode);
    expect(superseded.filter((e) => e === ErrorCode.REBALANCE_IN_PROGRESS)).toHaveLength(GROUP_MAX_SIZE);
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    await settle();
    const errors = secondJoins.map((j) => j.result.errorCode);
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
    const leaderId = await h.stableSingleMemberGroup({
      sessionTimeoutMs,
      rebalanceTimeoutMs: 2 * NEW_MEMBER_JOIN_TIMEOUT_MS,
    });
    const { memberId } = await h.join();
    const controller = new AbortController();
    const parked = h.sendJoin({
      memberId,
      sessionTimeoutMs,
      context: { clientHost: 'h', ...cancelOn(controller.signal) },
    });
    await settle();
    controller.abort();
    await settle();
    expect(parked.result.errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    const stepMs = 1_000;
    for (let elapsed = stepMs; elapsed < NEW_MEMBER_JOIN_TIMEOUT_MS; elapsed += stepMs) {
      h.advance(stepMs);
      expect(await h.heartbeat(leaderId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
      expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    }
    expect((await h.memberIds()).sort()).toEqual([leaderId, memberId].sort());
    h.advance(stepMs);
    expect(await h.memberIds()).toEqual([leaderId]);
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('after its first join completes, a new member lives on its session timeout, not the new-member timeout', async () => {
    const sessionTimeoutMs = NEW_MEMBER_JOIN_TIMEOUT_MS + 5000;
    const memberId = await h.stableSingleMemberGroup({ sessionTimeoutMs });
    h.advance(NEW_MEMBER_JOIN_TIMEOUT_MS + 100);
    expect(await h.memberIds()).toEqual([memberId]);
    h.advance(sessionTimeoutMs - NEW_MEMBER_JOIN_TIMEOUT_MS - 100);
    expect(await h.memberIds()).toEqual([]);
    expect(await h.state()).toBe('Empty');
  });

  test('a new member whose join outlasts the new-member timeout is removed and told UNKNOWN_MEMBER_ID', async () => {
    const sessionTimeoutMs = NEW_MEMBER_JOIN_TIMEOUT_MS + 5000;
    const rebalanceTimeoutMs = NEW_MEMBER_JOIN_TIMEOUT_MS * 2;
    const first = await h.dynamicJoin({ sessionTimeoutMs, rebalanceTimeoutMs });
    expect(first.leaderId).toBe(first.memberId);
    // The group is CompletingRebalance; a new member triggers a rebalance that waits for the first one.
    const second = await h.sendDynamicJoin({ sessionTimeoutMs, rebalanceTimeoutMs });
    await settle();
    expect(second.isSettled).toBe(false);
    expect(await h.memberIds()).toHaveLength(2);
    h.advance(NEW_MEMBER_JOIN_TIMEOUT_MS - 1);
    await settle();
    expect(second.isSettled).toBe(false);
    h.advance(1);
    await settle();
    expect(second.result.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await h.memberIds()).toEqual([first.memberId]);
  });

  test('a new member follows the normal session expiry once its join completed', async () => {
    const first = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = h.sendJoin({ memberId: first });
    await settle();
    expect(rejoin.result.errorCode).toBe(ErrorCode.NONE);
    expect(other.result.errorCode).toBe(ErrorCode.NONE);
    h.advance(DEFAULT_SESSION_TIMEOUT_MS);
    expect(await h.state()).toBe('Empty');
    expect(await h.memberIds()).toEqual([]);
  });

  test('a new member follows the normal session expiry once its sync completed', async () => {
    const first = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = h.sendJoin({ memberId: first });
    await settle();
    const generationId = rejoin.result.generationId;
    const followerSync = h.sendSync({ generationId, memberId: other.result.memberId });
    const leaderSync = await h.sync({ generationId, memberId: first });
    await settle();
    expect(leaderSync.errorCode).toBe(ErrorCode.NONE);
    expect(followerSync.result.errorCode).toBe(ErrorCode.NONE);
    h.advance(DEFAULT_SESSION_TIMEOUT_MS);
    expect(await h.state()).toBe('Empty');
  });
});

describe('rejoining a formed group', () => {
  test('an unchanged follower gets the current generation without a rebalance', async () => {
    const first = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = h.sendJoin({ memberId: first });
    await settle();
    const generationId = rejoin.result.generationId;
    expect(other.result.leaderId).toBe(first);
    expect(rejoin.result.leaderId).toBe(first);
    await h.sync({ generationId, memberId: first });
    const followerRejoin = await h.join({ memberId: other.result.memberId });
    expect(followerRejoin.errorCode).toBe(ErrorCode.NONE);
    expect(followerRejoin.generationId).toBe(generationId);
    expect(followerRejoin.members).toEqual([]);
    expect(await h.state()).toBe('Stable');
  });

  test('an unchanged leader rebalances the group, and the generation advances', async () => {
    const memberId = await h.stableSingleMemberGroup();
    const rejoin = await h.join({ memberId });
    expect(rejoin.errorCode).toBe(ErrorCode.NONE);
    expect(rejoin.generationId).toBe(2);
  });

  test('a follower with changed metadata rebalances the group', async () => {
    const first = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = h.sendJoin({ memberId: first });
    await settle();
    await h.sync({ generationId: rejoin.result.generationId, memberId: first });
    const changed = h.sendJoin({
      memberId: other.result.memberId,
      protocols: [protocol('range', Buffer.from('x'))],
    });
    await settle();
    expect(changed.isSettled).toBe(false);
    expect(await h.state()).toBe('PreparingRebalance');
  });

  test('a member rejoining unchanged during CompletingRebalance gets the same generation again', async () => {
    const first = await h.dynamicJoin();
    const again = await h.join({ memberId: first.memberId });
    expect(again).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: first.generationId,
      leaderId: first.memberId,
    });
    expect(again.members.map((m) => m.memberId)).toEqual([first.memberId]);
    expect(await h.state()).toBe('CompletingRebalance');
  });

  test('a second JoinGroup while the first is parked answers the first with REBALANCE_IN_PROGRESS', async () => {
    const leaderId = await h.stableSingleMemberGroup();
    const { memberId } = await h.join();
    const firstCall = h.sendJoin({ memberId });
    const secondCall = h.sendJoin({ memberId });
    await settle();
    expect(firstCall.result).toMatchObject({
      errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
      memberId,
      generationId: -1,
    });
    expect(secondCall.isSettled).toBe(false);
    const leader = await h.join({ memberId: leaderId });
    expect(leader.errorCode).toBe(ErrorCode.NONE);
    expect(secondCall.result).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: leader.generationId,
      memberId,
    });
  });

  test('the rebalance timeout removes dynamic members that did not rejoin', async () => {
    const first = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    await settle();
    h.advance(DEFAULT_REBALANCE_TIMEOUT_MS - 1);
    await settle();
    expect(other.isSettled).toBe(false);
    // The first member heartbeats through the rebalance but never rejoins.
    expect(await h.heartbeat(first, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    h.advance(1);
    await settle();
    expect(other.result).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(other.result.leaderId).toBe(other.result.memberId);
    expect(await h.memberIds()).toEqual([other.result.memberId]);
    expect(await h.heartbeat(first, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('every transition the group makes is a legal one', async () => {
    await h.staticMembersJoinAndRebalance();
    expect(h.transitions.map((t) => `${t.from}->${t.to}`)).toEqual([
      'Empty->PreparingRebalance',
      'PreparingRebalance->CompletingRebalance',
      'CompletingRebalance->Stable',
    ]);
    expect(h.transitions.map((t) => t.groupId)).toEqual([GROUP_ID, GROUP_ID, GROUP_ID]);
  });
});
