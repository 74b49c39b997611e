import { ErrorCode } from '../../../src/errors';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import { DEFAULT_SESSION_TIMEOUT_MS } from '../../support/group-harness';

/**
 * DescribeGroups' lastHeartbeatMs is derived from each member's session task (its deadline minus the session
 * timeout it was armed with), so these tests move the manual clock and read the description, never a field.
 */
let ctx: CoordinatorTestContext;
beforeEach(async () => {
  ctx = await CoordinatorTestContext.create();
});
afterEach(() => ctx.shutdown());

async function lastHeartbeatMs(): Promise<number> {
  const [member] = (await ctx.describe()).members;
  return member.lastHeartbeatMs;
}

describe('a member’s last heartbeat in DescribeGroups', () => {
  test('is the time of the SyncGroup that restarted its session, and stays while no heartbeat comes', async () => {
    await ctx.stableSingleMemberGroup();
    const syncedAtMs = ctx.time.nowMs();
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS / 5);
    expect(await lastHeartbeatMs()).toBe(syncedAtMs);
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS / 5);
    expect(await lastHeartbeatMs()).toBe(syncedAtMs);
  });

  test('moves to the time of each heartbeat, on the wall clock', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS / 2);
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
    const heartbeatAtMs = ctx.time.nowMs();
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS / 4);
    expect(await lastHeartbeatMs()).toBe(heartbeatAtMs);
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS / 4);
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
    expect(await lastHeartbeatMs()).toBe(ctx.time.nowMs());
  });

  test('is unknown (0) for a member still on its first join', async () => {
    const first = await ctx.join();
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    const join = ctx.sendJoin({ memberId: first.memberId }); // parked: the initial rebalance delay has not passed
    const group = await ctx.describe();
    expect(group.groupState).toBe('PreparingRebalance');
    expect(join.isSettled).toBe(false);
    expect(group.members.map((m) => m.lastHeartbeatMs)).toEqual([0]);
  });
});
