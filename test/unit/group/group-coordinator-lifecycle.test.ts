import { ErrorCode } from '../../../src/errors';
import { DEFAULT_REPLY_SLICE_SIZE } from '../../../src/group/group-coordinator';
import type { OffsetStore } from '../../../src/group/offset-store';
import { InMemoryOffsetStore } from '../../../src/group/in-memory-offset-store';
import {
  DEFAULT_REBALANCE_TIMEOUT_MS,
  GROUP_ID,
  GroupHarness,
  settle,
  Tracked,
} from '../../support/group-harness';
import { cancelOn } from '../../support/cancel-on';

let h: GroupHarness;
afterEach(() => h.shutdown());

describe('a caller that goes away (RequestContext.onCancel)', () => {
  beforeEach(() => {
    h = new GroupHarness();
  });

  test('an aborted parked JoinGroup settles at once with REQUEST_TIMED_OUT and the rebalance goes on', async () => {
    const leaderId = await h.stableSingleMemberGroup();
    const { memberId } = await h.join();
    const controller = new AbortController();
    const abandoned = h.sendJoin({ memberId, context: { clientHost: 'h', ...cancelOn(controller.signal) } });
    await settle();
    expect(abandoned.isSettled).toBe(false);
    controller.abort();
    await settle();
    expect(abandoned.result).toMatchObject({ errorCode: ErrorCode.REQUEST_TIMED_OUT, memberId });
    // As in Kafka, the member still counts as rejoined: the join completes as soon as the leader rejoins.
    const leader = await h.join({ memberId: leaderId });
    expect(leader).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    expect(leader.members).toHaveLength(2);
    // The client retries its JoinGroup and is given the generation it missed.
    const retry = await h.join({ memberId });
    expect(retry).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2, leaderId });
  });

  test('an aborted parked SyncGroup settles at once and the leader assignment still completes the group', async () => {
    const leaderId = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = await h.join({ memberId: leaderId });
    await settle();
    const controller = new AbortController();
    const sync = h.sendSync({
      generationId: rejoin.generationId,
      memberId: other.result.memberId,
      context: { clientHost: 'h', ...cancelOn(controller.signal) },
    });
    controller.abort();
    await settle();
    expect(sync.result.errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    const leaderSync = await h.sync({
      generationId: rejoin.generationId,
      memberId: leaderId,
      assignments: [],
    });
    expect(leaderSync.errorCode).toBe(ErrorCode.NONE);
    expect(await h.state()).toBe('Stable');
  });

  test('a call whose caller has already gone is handled but its reply dropped', async () => {
    await h.stableSingleMemberGroup();
    const { memberId } = await h.join();
    const controller = new AbortController();
    controller.abort();
    const call = h.sendJoin({ memberId, context: { clientHost: 'h', ...cancelOn(controller.signal) } });
    await settle();
    expect(call.result.errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    expect(await h.memberIds()).toContain(memberId);
  });

  test('an aborted member that never comes back is removed by its timers, not left in the group', async () => {
    const leaderId = await h.stableSingleMemberGroup();
    const { memberId } = await h.join();
    const controller = new AbortController();
    h.sendJoin({ memberId, context: { clientHost: 'h', ...cancelOn(controller.signal) } });
    controller.abort();
    await h.join({ memberId: leaderId });
    // It never syncs: DelayedSync removes it at the rebalance timeout.
    for (let t = 0; t < DEFAULT_REBALANCE_TIMEOUT_MS; t += 250) {
      h.advance(250);
      await h.heartbeat(leaderId, 2);
    }
    expect(await h.memberIds()).toEqual([leaderId]);
  });
});

describe('shutdown', () => {
  test('every parked call is answered COORDINATOR_NOT_AVAILABLE and later calls get it too', async () => {
    const store: OffsetStore = Object.assign(new InMemoryOffsetStore(), {
      commit: () => new Promise<void>(() => undefined), // never completes
    });
    h = new GroupHarness({}, { offsetStore: store });
    const leaderId = await h.stableSingleMemberGroup();
    const other = await h.sendDynamicJoin();
    const rejoin = await h.join({ memberId: leaderId });
    await settle();
    const parkedSync = h.sendSync({ generationId: rejoin.generationId, memberId: other.result.memberId });
    const newcomer = await h.sendDynamicJoin({ groupId: 'other-group' });
    const commit = new Tracked(
      h.coordinator.offsetCommit(
        {
          groupId: 'third',
          generationId: -1,
          memberId: '',
          groupInstanceId: '',
          topics: [
            {
              name: 't',
              partitions: [
                { partitionIndex: 0, committedOffset: 1, committedLeaderEpoch: -1, committedMetadata: '' },
              ],
            },
          ],
        },
        { clientHost: 'h' },
      ),
    );
    await settle();
    expect([parkedSync.isSettled, newcomer.isSettled, commit.isSettled]).toEqual([false, false, false]);

    h.shutdown();
    await settle();
    expect(parkedSync.result.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(newcomer.result.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(commit.result).toEqual({
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }] },
      ],
    });

    expect((await h.join()).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await h.sync({ generationId: 2, memberId: leaderId })).errorCode).toBe(
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
    );
    expect(await h.heartbeat(leaderId, 2)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await h.leave([{ memberId: leaderId }])).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await h.fetch(GROUP_ID)).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await h.describe()).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await h.coordinator.listGroups({ statesFilter: [] }, { clientHost: 'h' })).errorCode).toBe(
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
    );
    const deleted = await h.coordinator.deleteGroups({ groupsNames: [GROUP_ID] }, { clientHost: 'h' });
    expect(deleted.results[0].errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  test('shutdown is idempotent and stops the timers', async () => {
    const transitions: string[] = [];
    h = new GroupHarness(
      {},
      { listener: { onStateChange: (_g, from, to) => transitions.push(`${from}->${to}`) } },
    );
    await h.stableSingleMemberGroup();
    const before = transitions.length;
    h.shutdown();
    h.shutdown();
    // The member's session would end here; with the timers stopped nothing happens.
    h.advance(60_000);
    expect(transitions).toHaveLength(before);
  });
});

describe('large groups', () => {
  test(`a rebalance of 5,000 members answers its JoinGroups in slices of ${DEFAULT_REPLY_SLICE_SIZE} per event-loop turn`, async () => {
    h = new GroupHarness({ groupMaxSize: 1_000_000 });
    const members = 5_000;
    const joins: Tracked<unknown>[] = [];
    for (let i = 0; i < members; i++) joins.push(h.sendJoin({ groupInstanceId: `instance-${i}` }));
    h.advance(50); // the initial delay passes with members added: it is extended once
    h.advance(50); // and now the join completes: every member is answered
    // Only the microtasks of the turn that completed the join have run so far.
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(joins.filter((j) => j.isSettled)).toHaveLength(DEFAULT_REPLY_SLICE_SIZE);
    await settle(members / DEFAULT_REPLY_SLICE_SIZE + 2);
    expect(joins.filter((j) => j.isSettled)).toHaveLength(members);
    const leader = joins
      .map((j) => j.result as { leaderId: string; memberId: string; members: unknown[] })
      .find((r) => r.leaderId === r.memberId);
    expect(leader?.members).toHaveLength(members);
  });

  test('replies of a large rebalance keep the order in which members were answered', async () => {
    h = new GroupHarness({ groupMaxSize: 1_000_000 }, { replySliceSize: 7 });
    const order: number[] = [];
    const joins = Array.from({ length: 30 }, (_, i) => {
      const call = h.sendJoin({ groupInstanceId: `instance-${i}` });
      void call.promise.then(() => order.push(i));
      return call;
    });
    h.advance(50);
    h.advance(50);
    await settle(10);
    expect(joins.every((j) => j.isSettled)).toBe(true);
    expect(order).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });
});
