import { ErrorCode } from '../../../src/errors';
import type { GroupConfig } from '../../../src/group/group-config';
import type { RebalanceReason } from '../../../src/group/rebalance-reason';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import {
  DEFAULT_SESSION_TIMEOUT_MS,
  GROUP_ID,
  LEADER_INSTANCE_ID,
  protocol,
} from '../../support/group-harness';

interface Event {
  readonly hook: string;
  readonly groupId: string;
  readonly detail: readonly unknown[];
}

/** A coordinator test context whose coordinator reports every listener hook into `events`. */
async function observedContext(config: Partial<GroupConfig> = {}): Promise<{
  ctx: CoordinatorTestContext;
  events: Event[];
  of(hook: string): Event[];
}> {
  const events: Event[] = [];
  const ctx = await CoordinatorTestContext.create(config, {
    listener: {
      onPrepareRebalance: (groupId, generationId, reason: RebalanceReason, memberId) =>
        events.push({ hook: 'prepareRebalance', groupId, detail: [generationId, reason, memberId] }),
      onMemberExpired: (groupId, memberId, groupInstanceId) =>
        events.push({ hook: 'memberExpired', groupId, detail: [memberId, groupInstanceId] }),
      onFenced: (groupId, memberId, groupInstanceId, errorCode) =>
        events.push({ hook: 'fenced', groupId, detail: [memberId, groupInstanceId, errorCode] }),
    },
  });
  return { ctx, events, of: (hook) => events.filter((e) => e.hook === hook) };
}

let ctx: CoordinatorTestContext;
afterEach(() => ctx.shutdown());

describe('the coordinator listener', () => {
  test('names the member and the reason of each rebalance: a join, a leave, then a session expiry', async () => {
    const observed = await observedContext();
    ctx = observed.ctx;
    const first = await ctx.stableSingleMemberGroup();
    expect(observed.of('prepareRebalance')).toEqual([
      { hook: 'prepareRebalance', groupId: GROUP_ID, detail: [0, 'member-joined', first] },
    ]);

    const second = await ctx.sendDynamicJoin();
    const rejoin = await ctx.join({ memberId: first });
    expect(rejoin.generationId).toBe(2);
    const secondId = (await second.promise).memberId;
    await ctx.sync({ generationId: 2, memberId: first, assignments: [] });
    await ctx.sync({ generationId: 2, memberId: secondId });
    expect((await ctx.leave([{ memberId: secondId }])).members[0].errorCode).toBe(ErrorCode.NONE);
    expect(observed.of('prepareRebalance').map((e) => e.detail)).toEqual([
      [0, 'member-joined', first],
      [1, 'member-joined', secondId],
      [2, 'member-left', secondId],
    ]);

    // The leader rejoins alone and syncs (generation 3); then it stops heartbeating and its session runs out.
    expect((await ctx.join({ memberId: first })).generationId).toBe(3);
    expect((await ctx.sync({ generationId: 3, memberId: first, assignments: [] })).errorCode).toBe(
      ErrorCode.NONE,
    );
    expect(observed.of('memberExpired')).toEqual([]);
    // The listener hears of it as the clock passes the session's end.
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS);
    expect(observed.of('memberExpired')).toEqual([
      { hook: 'memberExpired', groupId: GROUP_ID, detail: [first, ''] },
    ]);
    expect(observed.of('prepareRebalance').at(-1)?.detail).toEqual([3, 'session-expired', first]);
    expect(await ctx.state()).toBe('Empty');
  });

  test('reports a rebalance the leader starts by rejoining a Stable group as leader-rejoined', async () => {
    const observed = await observedContext();
    ctx = observed.ctx;
    const leader = await ctx.stableSingleMemberGroup();
    // The listener hears of it while the JoinGroup is handled.
    ctx.sendJoin({ memberId: leader });
    expect(observed.of('prepareRebalance').at(-1)?.detail).toEqual([1, 'leader-rejoined', leader]);
  });

  test('reports a request naming an old generation as fenced with ILLEGAL_GENERATION, and a heartbeat that succeeds not at all', async () => {
    const observed = await observedContext();
    ctx = observed.ctx;
    const memberId = await ctx.stableSingleMemberGroup();
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
    expect(observed.of('fenced')).toEqual([]);
    expect(await ctx.heartbeat(memberId, 0)).toBe(ErrorCode.ILLEGAL_GENERATION);
    const commit = await ctx.commitOffsetsAndAnswer({ memberId, generationId: 7 }, [
      { topic: 't', partition: 0, offset: 1 },
    ]);
    expect(commit.get('t-0')).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(observed.of('fenced').map((e) => e.detail)).toEqual([
      [memberId, '', ErrorCode.ILLEGAL_GENERATION],
      [memberId, '', ErrorCode.ILLEGAL_GENERATION],
    ]);
  });

  test('reports a static member fenced by its replacement with FENCED_INSTANCE_ID', async () => {
    const observed = await observedContext();
    ctx = observed.ctx;
    const { leaderId } = await ctx.staticMembersJoinAndRebalance();
    // The instance restarts and rejoins without a member id: it continues under a new one.
    const replaced = await ctx.staticJoin(
      LEADER_INSTANCE_ID,
      { protocols: [protocol('range'), protocol('roundrobin')] },
      0,
    );
    expect(replaced.errorCode).toBe(ErrorCode.NONE);
    expect(await ctx.heartbeat(leaderId, 1, LEADER_INSTANCE_ID)).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(observed.of('fenced').at(-1)?.detail).toEqual([
      leaderId,
      LEADER_INSTANCE_ID,
      ErrorCode.FENCED_INSTANCE_ID,
    ]);
  });
});

describe('coordinator statistics', () => {
  test('counts groups and members by state, every state present even at zero', async () => {
    ctx = await CoordinatorTestContext.create();
    expect(ctx.router.groupStats()).toEqual({
      Empty: { groups: 0, members: 0 },
      PreparingRebalance: { groups: 0, members: 0 },
      CompletingRebalance: { groups: 0, members: 0 },
      Stable: { groups: 0, members: 0 },
      Dead: { groups: 0, members: 0 },
    });
    await ctx.stableSingleMemberGroup({ groupId: 'stable' });
    await ctx.commitOffsetsAndAnswer({ groupId: 'offsets-only', memberId: '', generationId: -1 }, [
      { topic: 't', partition: 0, offset: 5 },
    ]);
    const joining = await ctx.sendDynamicJoin({ groupId: 'joining' });
    const stats = ctx.router.groupStats();
    expect(stats.Stable).toEqual({ groups: 1, members: 1 });
    expect(stats.Empty).toEqual({ groups: 1, members: 0 });
    expect(stats.PreparingRebalance).toEqual({ groups: 1, members: 1 });
    expect(joining.isSettled).toBe(false);
  });

  test("reports Kafka's purgatory gauges: a parked join in Rebalance, one session task per member in Heartbeat", async () => {
    ctx = await CoordinatorTestContext.create();
    await ctx.stableSingleMemberGroup({ groupId: 'a' });
    const before = ctx.router.purgatoryStats();
    expect(before).toEqual([
      { name: 'Rebalance', watched: expect.any(Number), numDelayed: 0 },
      { name: 'Heartbeat', watched: 1, numDelayed: 1 },
    ]);
    // A second group waits in its initial delay: one DelayedJoin, watched under its join key.
    await ctx.sendDynamicJoin({ groupId: 'b' });
    const [rebalance, heartbeat] = ctx.router.purgatoryStats();
    expect(rebalance.numDelayed).toBe(1);
    expect(rebalance.watched).toBeGreaterThanOrEqual(1);
    expect(heartbeat.numDelayed).toBe(2);
  });
});

describe('request limits', () => {
  test('refuses a JoinGroup that would create a group beyond maxGroups with GROUP_MAX_SIZE_REACHED, and serves existing groups', async () => {
    ctx = await CoordinatorTestContext.create({ maxGroups: 1 });
    const memberId = await ctx.stableSingleMemberGroup({ groupId: 'only' });
    const refused = await ctx.join({ groupId: 'another' });
    expect(refused).toMatchObject({ errorCode: ErrorCode.GROUP_MAX_SIZE_REACHED, memberId: '' });
    expect(ctx.router.numGroups).toBe(1);
    expect(await ctx.heartbeat(memberId, 1, '', 'only')).toBe(ErrorCode.NONE);
    const commit = await ctx.commitOffsetsAndAnswer(
      { groupId: 'standalone', memberId: '', generationId: -1 },
      [{ topic: 't', partition: 3, offset: 1 }],
    );
    expect(commit.get('t-3')).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    // A group that goes away makes room.
    await ctx.leaveAndCommit([{ memberId }], 'only');
    await ctx.deleteGroups(['only']);
    expect((await ctx.join({ groupId: 'another' })).errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  });

  test('refuses a JoinGroup whose protocol metadata exceeds memberMetadataMaxBytes with MESSAGE_TOO_LARGE, changing nothing', async () => {
    const observed = await observedContext({ memberMetadataMaxBytes: 8 });
    ctx = observed.ctx;
    const memberId = await ctx.stableSingleMemberGroup({ protocols: [protocol('range', Buffer.alloc(8))] });
    const tooLarge = [protocol('range', Buffer.alloc(5)), protocol('roundrobin', Buffer.alloc(4))];
    expect(await ctx.join({ memberId, protocols: tooLarge })).toMatchObject({
      errorCode: ErrorCode.MESSAGE_TOO_LARGE,
      memberId,
    });
    expect(await ctx.join({ groupId: 'new', protocols: tooLarge })).toMatchObject({
      errorCode: ErrorCode.MESSAGE_TOO_LARGE,
      memberId: '',
    });
    expect(await ctx.state()).toBe('Stable');
    expect(ctx.router.numGroups).toBe(1);
    expect(observed.of('prepareRebalance')).toHaveLength(1);
    expect(await ctx.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
  });
});
