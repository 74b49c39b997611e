import { ErrorCode } from '../../../src/errors';
import { DEFAULT_SESSION_TIMEOUT_MS, GroupHarness, settle } from '../../support/group-harness';

/**
 * DescribeGroups' lastHeartbeatMs is derived from each member's session task (its deadline minus the session
 * timeout it was armed with), so these tests move the manual clock and read the description, never a field.
 */
let h: GroupHarness;
beforeEach(() => {
  h = new GroupHarness();
});
afterEach(() => h.shutdown());

async function lastHeartbeatMs(): Promise<number> {
  const [member] = (await h.describe()).members;
  return member.lastHeartbeatMs;
}

describe('a member’s last heartbeat in DescribeGroups', () => {
  test('is the time of the SyncGroup that restarted its session, and stays while no heartbeat comes', async () => {
    await h.stableSingleMemberGroup();
    const syncedAtMs = h.time.nowMs();
    h.advance(DEFAULT_SESSION_TIMEOUT_MS / 5);
    expect(await lastHeartbeatMs()).toBe(syncedAtMs);
    h.advance(DEFAULT_SESSION_TIMEOUT_MS / 5);
    expect(await lastHeartbeatMs()).toBe(syncedAtMs);
  });

  test('moves to the time of each heartbeat, on the wall clock', async () => {
    const memberId = await h.stableSingleMemberGroup();
    h.advance(DEFAULT_SESSION_TIMEOUT_MS / 2);
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
    const heartbeatAtMs = h.time.nowMs();
    h.advance(DEFAULT_SESSION_TIMEOUT_MS / 4);
    expect(await lastHeartbeatMs()).toBe(heartbeatAtMs);
    h.advance(DEFAULT_SESSION_TIMEOUT_MS / 4);
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
    expect(await lastHeartbeatMs()).toBe(h.time.nowMs());
  });

  test('is unknown (0) for a member still on its first join', async () => {
    const first = await h.join();
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    h.sendJoin({ memberId: first.memberId }); // parked: the initial rebalance delay has not passed
    await settle();
    const group = await h.describe();
    expect(group.groupState).toBe('PreparingRebalance');
    expect(group.members.map((m) => m.lastHeartbeatMs)).toEqual([0]);
  });
});
