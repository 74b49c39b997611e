import { ErrorCode } from '../../../src/errors';
import type { RebalanceReason } from '../../../src/group/rebalance-reason';
import {
  DEFAULT_SESSION_TIMEOUT_MS,
  GROUP_ID,
  GroupHarness,
  LEADER_INSTANCE_ID,
  protocol,
  settle,
} from '../../support/group-harness';

interface Event {
  readonly hook: string;
  readonly groupId: string;
  readonly detail: readonly unknown[];
}

/** A harness whose coordinator reports every listener hook into `events`. */
function observedHarness(config: ConstructorParameters<typeof GroupHarness>[0] = {}): {
  h: GroupHarness;
  events: Event[];
  of(hook: string): Event[];
} {
  const events: Event[] = [];
  const h = new GroupHarness(config, {
    listener: {
      onPrepareRebalance: (groupId, generationId, reason: RebalanceReason, memberId) =>
        events.push({ hook: 'prepareRebalance', groupId, detail: [generationId, reason, memberId] }),
      onMemberExpired: (groupId, memberId, groupInstanceId) =>
        events.push({ hook: 'memberExpired', groupId, detail: [memberId, groupInstanceId] }),
      onFenced: (groupId, memberId, groupInstanceId, errorCode) =>
        events.push({ hook: 'fenced', groupId, detail: [memberId, groupInstanceId, errorCode] }),
    },
  });
  return { h, events, of: (hook) => events.filter((e) => e.hook === hook) };
}

let h: GroupHarness;
afterEach(() => h.shutdown());

describe('the coordinator listener', () => {
  test('names the member and the reason of each rebalance: a join, a leave, then a session expiry', async () => {
    const observed = observedHarness();
    h = observed.h;
    const first = await h.stableSingleMemberGroup();
    expect(observed.of('prepareRebalance')).toEqual([
      { hook: 'prepareRebalance', groupId: GROUP_ID, detail: [0, 'member-joined', first] },
    ]);

    const second = await h.sendDynamicJoin();
    const rejoin = await h.join({ memberId: first });
    expect(rejoin.generationId).toBe(2);
    await h.sync({ generationId: 2, memberId: first, assignments: [] });
    await h.sync({ generationId: 2, memberId: second.result.memberId });
    expect((await h.leave([{ memberId: second.result.memberId }])).members[0].errorCode).toBe(ErrorCode.NONE);
    expect(observed.of('prepareRebalance').map((e) => e.detail)).toEqual([
      [0, 'member-joined', first],
      [1, 'member-joined', second.result.memberId],
      [2, 'member-left', second.result.memberId],
    ]);

    // The leader rejoins alone and syncs (generation 3); then it stops heartbeating and its session runs out.
    expect((await h.join({ memberId: first })).generationId).toBe(3);
    expect((await h.sync({ generationId: 3, memberId: first, assignments: [] })).errorCode).toBe(
      ErrorCode.NONE,
    );
    expect(observed.of('memberExpired')).toEqual([]);
    h.advance(DEFAULT_SESSION_TIMEOUT_MS);
    await settle();
    expect(observed.of('memberExpired')).toEqual([
      { hook: 'memberExpired', groupId: GROUP_ID, detail: [first, ''] },
    ]);
    expect(observed.of('prepareRebalance').at(-1)?.detail).toEqual([3, 'session-expired', first]);
    expect(await h.state()).toBe('Empty');
  });

  test('reports a rebalance the leader starts by rejoining a Stable group as leader-rejoined', async () => {
    const observed = observedHarness();
    h = observed.h;
    const leader = await h.stableSingleMemberGroup();
    void h.sendJoin({ memberId: leader });
    await settle();
    expect(observed.of('prepareRebalance').at(-1)?.detail).toEqual([1, 'leader-rejoined', leader]);
  });

  test('reports a request naming an old generation as fenced with ILLEGAL_GENERATION, and a heartbeat that succeeds not at all', async () => {
    const observed = observedHarness();
    h = observed.h;
    const memberId = await h.stableSingleMemberGroup();
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
    expect(observed.of('fenced')).toEqual([]);
    expect(await h.heartbeat(memberId, 0)).toBe(ErrorCode.ILLEGAL_GENERATION);
    const commit = await h.commit({ memberId, generationId: 7 }, [{ topic: 't', partition: 0, offset: 1 }]);
    expect(commit.get('t-0')).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(observed.of('fenced').map((e) => e.detail)).toEqual([
      [memberId, '', ErrorCode.ILLEGAL_GENERATION],
      [memberId, '', ErrorCode.ILLEGAL_GENERATION],
    ]);
  });

  test('reports a static member fenced by its replacement with FENCED_INSTANCE_ID', async () => {
    const observed = observedHarness();
    h = observed.h;
    const { leaderId } = await h.staticMembersJoinAndRebalance();
    // The instance restarts and rejoins without a member id: it continues under a new one.
    const replaced = await h.staticJoin(
      LEADER_INSTANCE_ID,
      { protocols: [protocol('range'), protocol('roundrobin')] },
      0,
    );
    expect(replaced.errorCode).toBe(ErrorCode.NONE);
    expect(await h.heartbeat(leaderId, 1, LEADER_INSTANCE_ID)).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(observed.of('fenced').at(-1)?.detail).toEqual([
      leaderId,
      LEADER_INSTANCE_ID,
      ErrorCode.FENCED_INSTANCE_ID,
    ]);
  });
});

describe('coordinator statistics', () => {
  test('counts groups and members by state, every state present even at zero', async () => {
    h = new GroupHarness();
    expect(h.coordinator.groupStats()).toEqual({
      Empty: { groups: 0, members: 0 },
      PreparingRebalance: { groups: 0, members: 0 },
      CompletingRebalance: { groups: 0, members: 0 },
      Stable: { groups: 0, members: 0 },
      Dead: { groups: 0, members: 0 },
    });
    await h.stableSingleMemberGroup({ groupId: 'stable' });
    await h.commit({ groupId: 'offsets-only', memberId: '', generationId: -1 }, [
      { topic: 't', partition: 0, offset: 5 },
    ]);
    const joining = await h.sendDynamicJoin({ groupId: 'joining' });
    const stats = h.coordinator.groupStats();
    expect(stats.Stable).toEqual({ groups: 1, members: 1 });
    expect(stats.Empty).toEqual({ groups: 1, members: 0 });
    expect(stats.PreparingRebalance).toEqual({ groups: 1, members: 1 });
    expect(joining.isSettled).toBe(false);
  });

  test("reports Kafka's purgatory gauges: a parked join in Rebalance, one session task per member in Heartbeat", async () => {
    h = new GroupHarness();
    await h.stableSingleMemberGroup({ groupId: 'a' });
    const before = h.coordinator.purgatoryStats();
    expect(before).toEqual([
      { name: 'Rebalance', watched: expect.any(Number), numDelayed: 0 },
      { name: 'Heartbeat', watched: 1, numDelayed: 1 },
    ]);
    // A second group waits in its initial delay: one DelayedJoin, watched under its join key.
    await h.sendDynamicJoin({ groupId: 'b' });
    const [rebalance, heartbeat] = h.coordinator.purgatoryStats();
    expect(rebalance.numDelayed).toBe(1);
    expect(rebalance.watched).toBeGreaterThanOrEqual(1);
    expect(heartbeat.numDelayed).toBe(2);
  });
});

describe('request limits', () => {
  test('refuses a JoinGroup that would create a group beyond maxGroups with GROUP_MAX_SIZE_REACHED, and serves existing groups', async () => {
    h = new GroupHarness({ maxGroups: 1 });
    const memberId = await h.stableSingleMemberGroup({ groupId: 'only' });
    const refused = await h.join({ groupId: 'another' });
    expect(refused).toMatchObject({ errorCode: ErrorCode.GROUP_MAX_SIZE_REACHED, memberId: '' });
    expect(h.coordinator.numGroups).toBe(1);
    expect(await h.heartbeat(memberId, 1, '', 'only')).toBe(ErrorCode.NONE);
    const commit = await h.commit({ groupId: 'standalone', memberId: '', generationId: -1 }, [
      { topic: 't', partition: 3, offset: 1 },
    ]);
    expect(commit.get('t-3')).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    // A group that goes away makes room.
    await h.leave([{ memberId }], 'only');
    await h.coordinator.deleteGroups({ groupsNames: ['only'] }, { clientHost: 'h' });
    expect((await h.join({ groupId: 'another' })).errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  });

  test('refuses a JoinGroup whose protocol metadata exceeds memberMetadataMaxBytes with MESSAGE_TOO_LARGE, changing nothing', async () => {
    const observed = observedHarness({ memberMetadataMaxBytes: 8 });
    h = observed.h;
    const memberId = await h.stableSingleMemberGroup({ protocols: [protocol('range', Buffer.alloc(8))] });
    const tooLarge = [protocol('range', Buffer.alloc(5)), protocol('roundrobin', Buffer.alloc(4))];
    expect(await h.join({ memberId, protocols: tooLarge })).toMatchObject({
      errorCode: ErrorCode.MESSAGE_TOO_LARGE,
      memberId,
    });
    expect(await h.join({ groupId: 'new', protocols: tooLarge })).toMatchObject({
      errorCode: ErrorCode.MESSAGE_TOO_LARGE,
      memberId: '',
    });
    expect(await h.state()).toBe('Stable');
    expect(h.coordinator.numGroups).toBe(1);
    expect(observed.of('prepareRebalance')).toHaveLength(1);
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
  });
});
