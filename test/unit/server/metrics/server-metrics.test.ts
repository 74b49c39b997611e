import { ErrorCode } from '../../../../src/errors';
import { REBALANCE_REASONS } from '../../../../src/group';
import { unaryHandler } from '../../../../src/server';
import { ServerMetrics } from '../../../../src/server/metrics/server-metrics';
import { ManualTime, type Time } from '../../../../src/time';
import { captureLogger } from '../../../support/capture-logger';
import { CoordinatorTestContext } from '../../../support/coordinator-test-context';
import {
  DEFAULT_SESSION_TIMEOUT_MS,
  GROUP_ID,
  GROUP_INITIAL_REBALANCE_DELAY_MS,
} from '../../../support/group-harness';
import { FakeUnaryCall, settle as settleCall } from '../fake-unary-call';
import { samplesOf, valueOf } from './metrics-reader';

/**
 * A coordinator on the coordinator test context (its ManualTime, its partition committed by the test)
 * reporting to a ServerMetrics that reads the same clock.
 */
async function observedGroup(): Promise<{ ctx: CoordinatorTestContext; metrics: ServerMetrics }> {
  // The context makes its own clock; the metrics read it through this, once the context exists.
  const made: { context?: CoordinatorTestContext } = {};
  const time: Time = {
    monotonicMs: () => made.context!.time.monotonicMs(),
    nowMs: () => made.context!.time.nowMs(),
  };
  const metrics = new ServerMetrics({ time });
  const context = await CoordinatorTestContext.create({}, { listener: metrics.groupListener });
  made.context = context;
  metrics.setSources({ coordinator: context.router });
  return { ctx: context, metrics };
}

/**
 * The registry as a scrape sees it after coordinator events scripted on a ManualTime: every figure is
 * exact, durations included, because time moves only when the test says.
 */
describe('ServerMetrics', () => {
  let ctx: CoordinatorTestContext | undefined;
  let metrics: ServerMetrics | undefined;

  afterEach(() => {
    ctx?.shutdown();
    metrics?.stop();
    ctx = undefined;
    metrics = undefined;
  });

  it('counts rebalances by reason and times them on the server clock, from PreparingRebalance to Stable', async () => {
    const observed = await observedGroup();
    ctx = observed.ctx;
    metrics = observed.metrics;

    // A first member: the rebalance lasts exactly the initial delay.
    const first = await ctx.stableSingleMemberGroup();
    let samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_rebalances_total', { reason: 'member-joined' })).toBe(1);
    for (const reason of REBALANCE_REASONS.filter((r) => r !== 'member-joined')) {
      expect(valueOf(samples, 'cohort_rebalances_total', { reason })).toBe(0);
    }
    expect(valueOf(samples, 'cohort_rebalance_duration_seconds_count')).toBe(1);
    expect(valueOf(samples, 'cohort_rebalance_duration_seconds_sum')).toBeCloseTo(
      GROUP_INITIAL_REBALANCE_DELAY_MS / 1_000,
      9,
    );
    expect(valueOf(samples, 'cohort_rebalance_duration_seconds_bucket', { le: 0.05 })).toBe(1);
    expect(valueOf(samples, 'cohort_rebalance_duration_seconds_bucket', { le: 0.025 })).toBe(0);
    expect(valueOf(samples, 'cohort_groups', { state: 'Stable' })).toBe(1);
    expect(valueOf(samples, 'cohort_group_members', { state: 'Stable' })).toBe(1);

    // A second member arrives: while the group waits for the leader, the scrape shows the rebalance live.
    const second = await ctx.sendDynamicJoin();
    samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_groups', { state: 'PreparingRebalance' })).toBe(1);
    expect(valueOf(samples, 'cohort_groups', { state: 'Stable' })).toBe(0);
    expect(valueOf(samples, 'cohort_group_members', { state: 'PreparingRebalance' })).toBe(2);
    expect(valueOf(samples, 'cohort_purgatory_delayed_operations', { purgatory: 'Rebalance' })).toBe(1);
    expect(valueOf(samples, 'cohort_purgatory_size', { purgatory: 'Rebalance' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'cohort_purgatory_delayed_operations', { purgatory: 'Heartbeat' })).toBe(2);
    expect(valueOf(samples, 'cohort_purgatory_size', { purgatory: 'Heartbeat' })).toBe(2);

    // The leader rejoins 120 ms later, which completes the join; both sync, the leader's SyncGroup once the
    // group's record is committed: the second rebalance took 120 ms.
    ctx.time.advance(120);
    const rejoin = await ctx.join({ memberId: first });
    expect(rejoin.generationId).toBe(2);
    await ctx.sync({ generationId: 2, memberId: first, assignments: [] });
    await ctx.sync({ generationId: 2, memberId: second.result.memberId });
    samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_rebalances_total', { reason: 'member-joined' })).toBe(2);
    expect(valueOf(samples, 'cohort_rebalance_duration_seconds_count')).toBe(2);
    expect(valueOf(samples, 'cohort_rebalance_duration_seconds_sum')).toBeCloseTo(0.05 + 0.12, 9);
    expect(valueOf(samples, 'cohort_rebalance_duration_seconds_bucket', { le: 0.1 })).toBe(1);
    expect(valueOf(samples, 'cohort_rebalance_duration_seconds_bucket', { le: 0.25 })).toBe(2);
    expect(valueOf(samples, 'cohort_purgatory_delayed_operations', { purgatory: 'Rebalance' })).toBe(0);

    // A heartbeat from an old generation is fenced.
    expect(await ctx.heartbeat(first, 1)).toBe(ErrorCode.ILLEGAL_GENERATION);
    // Nobody heartbeats: both sessions run out inside the advance; the group rebalances to Empty.
    ctx.time.advance(DEFAULT_SESSION_TIMEOUT_MS);
    samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_session_expirations_total')).toBe(2);
    expect(valueOf(samples, 'cohort_fenced_requests_total', { code: 'ILLEGAL_GENERATION' })).toBe(1);
    expect(valueOf(samples, 'cohort_fenced_requests_total', { code: 'FENCED_INSTANCE_ID' })).toBe(0);
    expect(valueOf(samples, 'cohort_rebalances_total', { reason: 'session-expired' })).toBe(1);
    expect(valueOf(samples, 'cohort_groups', { state: 'Empty' })).toBe(1);
    expect(valueOf(samples, 'cohort_group_members', { state: 'Empty' })).toBe(0);
    expect(valueOf(samples, 'cohort_rebalance_duration_seconds_count')).toBe(3);
    expect(await ctx.state(GROUP_ID)).toBe('Empty');
  });

  it('counts expired offsets, and the groups removed with them', async () => {
    metrics = new ServerMetrics({ time: new ManualTime() });
    let samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_offsets_expired_total')).toBe(0);
    metrics.groupListener.onOffsetsExpired?.('old', 3, true);
    metrics.groupListener.onOffsetsExpired?.('standalone', 2, false);
    metrics.groupListener.onOffsetsExpired?.('never-committed', 0, true);
    samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_offsets_expired_total')).toBe(5);
    expect(valueOf(samples, 'cohort_groups_expired_total')).toBe(2);
  });

  it('counts OffsetCommit partitions refused one by one, by code', async () => {
    metrics = new ServerMetrics({ time: new ManualTime() });
    const name = 'cohort_offset_commits_refused_total';
    let samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, name, { code: 'INVALID_COMMIT_OFFSET_SIZE' })).toBe(0);
    metrics.groupListener.onOffsetCommitRefused?.('g', ErrorCode.INVALID_COMMIT_OFFSET_SIZE, 40);
    metrics.groupListener.onOffsetCommitRefused?.('g', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 1);
    samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, name, { code: 'INVALID_COMMIT_OFFSET_SIZE' })).toBe(40);
    expect(valueOf(samples, name, { code: 'UNKNOWN_TOPIC_OR_PARTITION' })).toBe(1);
    expect(valueOf(samples, name, { code: 'INVALID_TOPIC_EXCEPTION' })).toBe(0);
  });

  it('times calls by service, method and the ErrorCode they were answered with, on its stopwatch', async () => {
    let nowMs = 1_000;
    metrics = new ServerMetrics({ time: new ManualTime(), stopwatch: () => nowMs });
    const { logger } = captureLogger();
    const observer = metrics.callObservers('cohort.v1.GroupCoordinator', 'Heartbeat');
    let answer: ErrorCode = ErrorCode.NONE;
    const handler = unaryHandler(
      '/cohort.v1.GroupCoordinator/Heartbeat',
      logger,
      async () => {
        nowMs += 0.2; // the domain takes 200 µs
        return { errorCode: answer };
      },
      observer,
    );
    for (const code of [ErrorCode.NONE, ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS]) {
      answer = code;
      const call = new FakeUnaryCall<unknown>({});
      handler(call, call.callback);
      await settleCall();
    }
    const cancelled = new FakeUnaryCall<unknown>({});
    const parked = unaryHandler(
      '/cohort.v1.GroupCoordinator/JoinGroup',
      logger,
      () => new Promise(() => undefined),
      metrics.callObservers('cohort.v1.GroupCoordinator', 'JoinGroup'),
    );
    parked(cancelled, cancelled.callback);
    nowMs += 30_000;
    cancelled.cancel();

    const samples = await samplesOf(metrics.registry);
    const heartbeat = { service: 'cohort.v1.GroupCoordinator', method: 'Heartbeat' };
    expect(valueOf(samples, 'cohort_rpc_duration_seconds_count', { ...heartbeat, code: 'NONE' })).toBe(2);
    expect(valueOf(samples, 'cohort_rpc_duration_seconds_sum', { ...heartbeat, code: 'NONE' })).toBeCloseTo(
      0.0004,
      9,
    );
    expect(
      valueOf(samples, 'cohort_rpc_duration_seconds_bucket', { ...heartbeat, code: 'NONE', le: 0.0001 }),
    ).toBe(0);
    expect(
      valueOf(samples, 'cohort_rpc_duration_seconds_bucket', { ...heartbeat, code: 'NONE', le: 0.00025 }),
    ).toBe(2);
    expect(
      valueOf(samples, 'cohort_rpc_duration_seconds_bucket', { ...heartbeat, code: 'NONE', le: '+Inf' }),
    ).toBe(2);
    expect(
      valueOf(samples, 'cohort_rpc_duration_seconds_count', { ...heartbeat, code: 'REBALANCE_IN_PROGRESS' }),
    ).toBe(1);
    const join = { service: 'cohort.v1.GroupCoordinator', method: 'JoinGroup', code: 'CANCELLED' };
    expect(valueOf(samples, 'cohort_rpc_duration_seconds_count', join)).toBe(1);
    expect(valueOf(samples, 'cohort_rpc_duration_seconds_bucket', { ...join, le: 30 })).toBe(1);
    expect(valueOf(samples, 'cohort_rpc_duration_seconds_bucket', { ...join, le: 10 })).toBe(0);
  });
});
