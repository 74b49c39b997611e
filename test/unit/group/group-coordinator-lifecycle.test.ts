import { ErrorCode } from '../../../src/errors';
import { DEFAULT_REPLY_SLICE_SIZE } from '../../../src/group/group-coordinator';
import type { JoinGroupResponse } from '../../../src/group/group-protocol';
import { cancelOn } from '../../support/cancel-on';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import {
  CONTEXT,
  DEFAULT_REBALANCE_TIMEOUT_MS,
  GROUP_ID,
  offsetCommitRequest,
  type Tracked,
} from '../../support/group-harness';

let ctx: CoordinatorTestContext;
afterEach(() => ctx.shutdown());

/**
 * How the answers of `calls` are delivered, once all of them have come: `order`, the index of each call in
 * the order answered; `runs`, how many answers each event-loop task delivered, in order. A run opens with
 * the first answer of a task and closes once the microtasks queued with it have run, which are those of
 * every answer the same task delivered: the next answer delivered comes in a later task.
 */
async function deliveries(calls: readonly Tracked<unknown>[]): Promise<{ order: number[]; runs: number[] }> {
  const order: number[] = [];
  const runs: number[] = [];
  let isRunOpen = false;
  const answered = calls.map((call, i) =>
    call.promise.then(() => {
      order.push(i);
      if (!isRunOpen) {
        isRunOpen = true;
        runs.push(0);
        queueMicrotask(() => (isRunOpen = false));
      }
      runs[runs.length - 1]++;
    }),
  );
  await Promise.all(answered);
  return { order, runs };
}

describe('a caller that goes away (RequestContext.onCancel)', () => {
  beforeEach(async () => {
    ctx = await CoordinatorTestContext.create();
  });

  test('an aborted parked JoinGroup settles at once with REQUEST_TIMED_OUT and the rebalance goes on', async () => {
    const leaderId = await ctx.stableSingleMemberGroup();
    const { memberId } = await ctx.join();
    const controller = new AbortController();
    const abandoned = ctx.sendJoin({
      memberId,
      context: { clientHost: 'h', ...cancelOn(controller.signal) },
    });
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(abandoned.isSettled).toBe(false);
    controller.abort();
    // Nothing else happened meanwhile: the abort alone answered it.
    expect(await ctx.state()).toBe('PreparingRebalance');
    expect(abandoned.result).toMatchObject({ errorCode: ErrorCode.REQUEST_TIMED_OUT, memberId });
    // As in Kafka, the member still counts as rejoined: the join completes as soon as the leader rejoins.
    const leader = await ctx.join({ memberId: leaderId });
    expect(leader).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(leader.members).toHaveLength(2);
    // The client retries its JoinGroup and is given the generation it missed.
    const retry = await ctx.join({ memberId });
    expect(retry).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2, leaderId });
  });

  test('an aborted parked SyncGroup settles at once and the leader assignment still completes the group', async () => {
    const leaderId = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = await ctx.join({ memberId: leaderId });
    const controller = new AbortController();
    const sync = ctx.sendSync({
      generationId: rejoin.generationId,
      memberId: (await other.promise).memberId,
      context: { clientHost: 'h', ...cancelOn(controller.signal) },
    });
    controller.abort();
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect(sync.answer.result.errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    const leaderSync = await ctx.sync({
      generationId: rejoin.generationId,
      memberId: leaderId,
      assignments: [],
    });
    expect(leaderSync.errorCode).toBe(ErrorCode.NONE);
    expect(await ctx.state()).toBe('Stable');
  });

  test('a call whose caller has already gone is handled but its reply dropped', async () => {
    await ctx.stableSingleMemberGroup();
    const { memberId } = await ctx.join();
    const controller = new AbortController();
    controller.abort();
    const call = ctx.sendJoin({ memberId, context: { clientHost: 'h', ...cancelOn(controller.signal) } });
    const memberIds = await ctx.memberIds();
    expect(call.result.errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    expect(memberIds).toContain(memberId);
  });

  test('an aborted member that never comes back is removed by its timers, not left in the group', async () => {
    const leaderId = await ctx.stableSingleMemberGroup();
    const { memberId } = await ctx.join();
    const controller = new AbortController();
    ctx.sendJoin({ memberId, context: { clientHost: 'h', ...cancelOn(controller.signal) } });
    controller.abort();
    await ctx.join({ memberId: leaderId });
    // It never syncs: DelayedSync removes it at the rebalance timeout.
    for (let t = 0; t < DEFAULT_REBALANCE_TIMEOUT_MS; t += 250) {
      ctx.time.advance(250);
      await ctx.heartbeat(leaderId, 2);
    }
    expect(await ctx.memberIds()).toEqual([leaderId]);
  });
});

describe('shutdown', () => {
  test('every parked call is answered COORDINATOR_NOT_AVAILABLE and later calls get it too', async () => {
    ctx = await CoordinatorTestContext.create();
    const leaderId = await ctx.stableSingleMemberGroup();
    const other = await ctx.sendDynamicJoin();
    const rejoin = await ctx.join({ memberId: leaderId });
    const parkedSync = ctx.sendSync({
      generationId: rejoin.generationId,
      memberId: (await other.promise).memberId,
    });
    const newcomer = await ctx.sendDynamicJoin({ groupId: 'other-group' });
    // Written, and never committed: the commit waits for the partition until the shutdown.
    const commit = ctx.offsetCommit(offsetCommitRequest('third', 1, 't'));
    expect(commit.records).toHaveLength(1);
    expect(await ctx.state()).toBe('CompletingRebalance');
    expect([parkedSync.answer.isSettled, newcomer.isSettled, commit.answer.isSettled]).toEqual([
      false,
      false,
      false,
    ]);

    ctx.shutdown();
    // Answered by the shutdown itself, not by anything after it.
    expect((await ctx.describe()).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(parkedSync.answer.result.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(newcomer.result.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(commit.answer.result).toEqual({
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }] },
      ],
    });

    expect((await ctx.join()).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await ctx.sync({ generationId: 2, memberId: leaderId })).errorCode).toBe(
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
    );
    expect(await ctx.heartbeat(leaderId, 2)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await ctx.leave([{ memberId: leaderId }])).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await ctx.fetch(GROUP_ID)).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await ctx.describe()).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await ctx.router.listGroups({ statesFilter: [] }, CONTEXT)).errorCode).toBe(
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
    );
    const deleted = await ctx.router.deleteGroups({ groupsNames: [GROUP_ID] }, CONTEXT);
    expect(deleted.results[0].errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  test('shutdown is idempotent and stops the timers', async () => {
    const transitions: string[] = [];
    ctx = await CoordinatorTestContext.create(
      {},
      { listener: { onStateChange: (_g, from, to) => transitions.push(`${from}->${to}`) } },
    );
    await ctx.stableSingleMemberGroup();
    const before = transitions.length;
    ctx.shutdown();
    ctx.shutdown();
    // The member's session would end here; with the timers stopped nothing happens.
    ctx.time.advance(60_000);
    expect(transitions).toHaveLength(before);
  });
});

describe('large groups', () => {
  test(`a rebalance of 5,000 members answers its JoinGroups in slices of ${DEFAULT_REPLY_SLICE_SIZE} per event-loop turn`, async () => {
    ctx = await CoordinatorTestContext.create({ groupMaxSize: 1_000_000 });
    const members = 5_000;
    const joins: Tracked<JoinGroupResponse>[] = [];
    for (let i = 0; i < members; i++) joins.push(ctx.sendJoin({ groupInstanceId: `instance-${i}` }));
    ctx.time.advance(50); // the initial delay passes with members added: it is extended once
    ctx.time.advance(50); // and now the join completes: every member is answered
    const { runs } = await deliveries(joins);
    // The task that completed the join answered the first slice; each later task, the next one.
    expect(runs).toEqual(
      Array.from({ length: members / DEFAULT_REPLY_SLICE_SIZE }, () => DEFAULT_REPLY_SLICE_SIZE),
    );
    const leader = joins.map((j) => j.result).find((r) => r.leaderId === r.memberId);
    expect(leader?.members).toHaveLength(members);
  });

  test('replies of a large rebalance keep the order in which members were answered', async () => {
    ctx = await CoordinatorTestContext.create({ groupMaxSize: 1_000_000 }, { replySliceSize: 7 });
    const joins = Array.from({ length: 30 }, (_, i) => ctx.sendJoin({ groupInstanceId: `instance-${i}` }));
    ctx.time.advance(50);
    ctx.time.advance(50);
    const { order, runs } = await deliveries(joins);
    expect(runs).toEqual([7, 7, 7, 7, 2]);
    expect(order).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });
});
