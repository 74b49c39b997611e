import { CohortError, ErrorCode } from '../../../src/errors';
import { GroupCoordinator, type GroupCoordinatorOptions } from '../../../src/group/group-coordinator';
import type { GroupConfig } from '../../../src/group/group-config';
import type { StoredGroup } from '../../../src/group/group-metadata-store';
import type { Protocol, RequestContext } from '../../../src/group/group-protocol';
import {
  CLIENT_HOST,
  DEFAULT_SESSION_TIMEOUT_MS,
  GROUP_ID,
  GROUP_INITIAL_REBALANCE_DELAY_MS,
  GroupHarness,
  protocol,
  PROTOCOL_TYPE,
  settle,
  TEST_GROUP_CONFIG,
  Tracked,
  withoutLastHeartbeats,
} from '../../support/group-harness';
import { ManualTime } from '../../../src/time';
import { MemoryGroupStore } from './memory-group-store';

const CONTEXT: RequestContext = { clientHost: CLIENT_HOST };
const LEADER_ASSIGNMENT = Buffer.from('leader-assignment');
const FOLLOWER_ASSIGNMENT = Buffer.from('follower-assignment');

function subscriptions(name: string): Protocol[] {
  return [protocol('range', Buffer.from(`${name}-range`)), protocol('roundrobin', Buffer.from(`${name}-rr`))];
}

interface FormedGroup {
  readonly leaderId: string;
  readonly followerId: string;
  /** The name its subscriptions were made from. */
  readonly followerName: string;
  readonly generationId: number;
}

function deferred(): { promise: Promise<void>; resolve(): void; reject(error: unknown): void } {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const harnesses: GroupHarness[] = [];
afterEach(() => {
  for (const harness of harnesses.splice(0)) harness.shutdown();
});

/** The member ids of the group's stored record, sorted. */
function storedMemberIds(store: MemoryGroupStore): string[] | undefined {
  return store
    .storedGroup(GROUP_ID)
    ?.members.map((m) => m.memberId)
    .sort();
}

function coordinatorOn(
  store: MemoryGroupStore,
  config: Partial<GroupConfig> = {},
  options: GroupCoordinatorOptions = {},
): GroupHarness {
  const harness = new GroupHarness(config, { offsetStore: store, metadataStore: store, ...options });
  harnesses.push(harness);
  return harness;
}

/** Two dynamic members join, the leader assigns, both sync: Stable at generation 1. */
async function formGroup(h: GroupHarness, store?: MemoryGroupStore): Promise<FormedGroup> {
  const a = await h.sendDynamicJoin({ protocols: subscriptions('a'), clientId: 'client-a' });
  const b = await h.sendDynamicJoin({ protocols: subscriptions('b'), clientId: 'client-b' });
  h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
  h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
  await settle();
  const isLeaderA = a.result.leaderId === a.result.memberId;
  const [leader, follower] = isLeaderA ? [a, b] : [b, a];
  const { generationId } = leader.result;
  const leaderSync = h.sendSync({
    generationId,
    memberId: leader.result.memberId,
    assignments: [
      [leader.result.memberId, LEADER_ASSIGNMENT],
      [follower.result.memberId, FOLLOWER_ASSIGNMENT],
    ],
  });
  const followerSync = h.sendSync({ generationId, memberId: follower.result.memberId });
  await settle();
  store?.release();
  await settle();
  expect(leaderSync.result).toMatchObject({ errorCode: ErrorCode.NONE, assignment: LEADER_ASSIGNMENT });
  expect(followerSync.result).toMatchObject({ errorCode: ErrorCode.NONE, assignment: FOLLOWER_ASSIGNMENT });
  return {
    leaderId: leader.result.memberId,
    followerId: follower.result.memberId,
    followerName: isLeaderA ? 'b' : 'a',
    generationId,
  };
}

describe('group metadata is stored when a generation completes', () => {
  test('the leader SyncGroup is answered, and the group Stable, only once its record is durable', async () => {
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    store.isDeferred = true;
    const a = await h.sendDynamicJoin({ protocols: subscriptions('a') });
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    await settle();
    const { memberId, generationId } = a.result;
    const sync = h.sendSync({ generationId, memberId, assignments: [[memberId, LEADER_ASSIGNMENT]] });
    await settle();
    expect(sync.isSettled).toBe(false);
    expect(await h.state()).toBe('CompletingRebalance');
    expect(store.pending).toHaveLength(1);
    expect(store.groupWrites.at(-1)).toMatchObject({
      groupId: GROUP_ID,
      generationId,
      protocolType: PROTOCOL_TYPE,
      protocolName: 'range',
      leaderId: memberId,
      members: [{ memberId, assignment: LEADER_ASSIGNMENT, protocols: subscriptions('a') }],
    });

    store.release();
    await settle();
    expect(sync.result).toMatchObject({ errorCode: ErrorCode.NONE, assignment: LEADER_ASSIGNMENT });
    expect(await h.state()).toBe('Stable');
    expect(store.storedGroup(GROUP_ID)?.generationId).toBe(generationId);
  });

  test('a failed record fails every parked SyncGroup with Kafka’s code and starts another rebalance', async () => {
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    store.isDeferred = true;
    const a = await h.sendDynamicJoin();
    const b = await h.sendDynamicJoin();
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    h.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    await settle();
    const leader = a.result.leaderId === a.result.memberId ? a.result : b.result;
    const follower = leader === a.result ? b.result : a.result;
    const followerSync = h.sendSync({ generationId: 1, memberId: follower.memberId });
    const leaderSync = h.sendSync({ generationId: 1, memberId: leader.memberId, assignments: [] });
    await settle();
    const error = new CohortError(ErrorCode.NOT_LEADER_OR_FOLLOWER, 'lost the partition');
    store.fail(error);
    await settle();
    expect(leaderSync.result.errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(followerSync.result.errorCode).toBe(ErrorCode.NOT_COORDINATOR);
    expect(await h.state()).toBe('PreparingRebalance');
    expect(store.storedGroup(GROUP_ID)).toBeUndefined();
  });

  test('the listener hears of a group record that could not be stored', async () => {
    const store = new MemoryGroupStore();
    const time = new ManualTime();
    const failures: Array<[string, number, unknown]> = [];
    const coordinator = new GroupCoordinator(TEST_GROUP_CONFIG, time, {
      offsetStore: store,
      metadataStore: store,
      listener: {
        onGroupStoreFailed: (groupId, generation, error) => failures.push([groupId, generation, error]),
      },
    });
    try {
      const request = {
        groupId: GROUP_ID,
        memberId: '',
        groupInstanceId: '',
        sessionTimeoutMs: DEFAULT_SESSION_TIMEOUT_MS,
        rebalanceTimeoutMs: DEFAULT_SESSION_TIMEOUT_MS,
        protocolType: PROTOCOL_TYPE,
        protocols: subscriptions('a'),
        clientId: 'c',
        reason: '',
      };
      const { memberId } = await coordinator.joinGroup(request, CONTEXT);
      const join = new Tracked(coordinator.joinGroup({ ...request, memberId }, CONTEXT));
      time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
      await settle();
      expect(join.result.errorCode).toBe(ErrorCode.NONE);
      // The member leaves before syncing: the group empties, and its Empty record fails.
      store.isDeferred = true;
      await coordinator.leaveGroup(
        { groupId: GROUP_ID, members: [{ memberId, groupInstanceId: '', reason: '' }] },
        CONTEXT,
      );
      const error = new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, 'fsync failed');
      store.fail(error);
      await settle();
      expect(failures).toEqual([[GROUP_ID, 2, error]]);
    } finally {
      coordinator.shutdown();
    }
  });

  test('a group whose last member leaves is stored Empty with its new generation', async () => {
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    const memberId = await h.stableSingleMemberGroup();
    expect(store.storedGroup(GROUP_ID)).toMatchObject({ generationId: 1, members: [{ memberId }] });
    await h.leave([{ memberId }]);
    await settle();
    expect(await h.state()).toBe('Empty');
    expect(store.storedGroup(GROUP_ID)).toEqual({
      groupId: GROUP_ID,
      protocolType: PROTOCOL_TYPE,
      generationId: 2,
      protocolName: '',
      leaderId: '',
      currentStateTimestampMs: h.time.nowMs(),
      members: [],
    });
  });

  test('a member that leaves a Stable group is not written on its own: the rebalance it starts is', async () => {
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    const { leaderId, followerId } = await formGroup(h);
    const writes = store.groupWrites.length;
    await h.leave([{ memberId: followerId }]);
    expect(store.groupWrites).toHaveLength(writes);
    const rejoin = await h.join({ memberId: leaderId, protocols: subscriptions('a') });
    expect(rejoin.generationId).toBe(2);
    await h.sync({ generationId: 2, memberId: leaderId, assignments: [[leaderId, LEADER_ASSIGNMENT]] });
    expect(store.groupWrites).toHaveLength(writes + 1);
    expect(store.storedGroup(GROUP_ID)?.members.map((m) => m.memberId)).toEqual([leaderId]);
  });

  test('a static member replaced in Stable is answered only once the record with its new id is durable', async () => {
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    const { leaderId, followerId } = await h.staticMembersJoinAndRebalance();
    store.isDeferred = true;
    const rejoin = h.sendJoin({
      groupInstanceId: 'follower',
      protocols: [protocol('range'), protocol('roundrobin')],
    });
    await settle();
    expect(rejoin.isSettled).toBe(false);
    const record = store.groupWrites.at(-1)!;
    const newMemberId = record.members.find((m) => m.groupInstanceId === 'follower')!.memberId;
    expect(newMemberId).not.toBe(followerId);
    store.release();
    await settle();
    expect(rejoin.result).toMatchObject({
      errorCode: ErrorCode.NONE,
      memberId: newMemberId,
      generationId: 1,
      leaderId,
      skipAssignment: false,
    });
    expect(storedMemberIds(store)).toEqual([leaderId, newMemberId].sort());
  });

  test('a static replacement whose record fails keeps the new id in memory; the instance replaces it again', async () => {
    // docs/protocol.md, "Where cohort chose": Kafka undoes the replacement; cohort keeps it and lets the
    // instance, told to retry, replace itself once more.
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    const { leaderId, followerId } = await h.staticMembersJoinAndRebalance();
    store.isDeferred = true;
    const rejoin = h.sendJoin({ groupInstanceId: 'follower' });
    await settle();
    const firstNewId = store.groupWrites
      .at(-1)!
      .members.find((m) => m.groupInstanceId === 'follower')!.memberId;
    store.fail(new CohortError(ErrorCode.NOT_ENOUGH_REPLICAS, 'the log is short of replicas'));
    await settle();
    // Kafka's conversion of a failed group append: retriable, find the coordinator again.
    expect(rejoin.result).toMatchObject({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, memberId: '' });
    expect(await h.state()).toBe('Stable');
    expect((await h.memberIds()).sort()).toEqual([leaderId, firstNewId].sort());
    expect(await h.heartbeat(followerId, 1, 'follower')).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(storedMemberIds(store)).toEqual([leaderId, followerId].sort());

    // The instance retries: a second replacement, stored this time, without a rebalance.
    const retry = h.sendJoin({ groupInstanceId: 'follower' });
    await settle();
    store.release();
    await settle();
    const secondNewId = retry.result.memberId;
    expect(retry.result).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1, leaderId });
    expect(secondNewId).not.toBe(firstNewId);
    expect(await h.heartbeat(firstNewId, 1, 'follower')).toBe(ErrorCode.FENCED_INSTANCE_ID);
    expect(await h.heartbeat(secondNewId, 1, 'follower')).toBe(ErrorCode.NONE);
    expect(storedMemberIds(store)).toEqual([leaderId, secondNewId].sort());
    expect(h.transitions.filter((t) => t.to === 'PreparingRebalance')).toHaveLength(1); // the first rebalance only
  });

  test('DeleteGroups asks a store that holds both offsets and metadata once, and each of two stores once', async () => {
    const both = new MemoryGroupStore();
    const h = coordinatorOn(both);
    await h.commit({ memberId: '', generationId: -1 }, [{ topic: 't', partition: 0, offset: 1 }]);
    await h.coordinator.deleteGroups({ groupsNames: [GROUP_ID] }, CONTEXT);
    expect(both.deletions).toEqual([GROUP_ID]);

    const offsets = new MemoryGroupStore();
    const metadata = new MemoryGroupStore();
    const separate = new GroupHarness({}, { offsetStore: offsets, metadataStore: metadata });
    harnesses.push(separate);
    await separate.commit({ memberId: '', generationId: -1 }, [{ topic: 't', partition: 0, offset: 1 }]);
    const response = await separate.coordinator.deleteGroups({ groupsNames: [GROUP_ID] }, CONTEXT);
    expect(response.results).toEqual([{ groupId: GROUP_ID, errorCode: ErrorCode.NONE }]);
    expect(offsets.deletions).toEqual([GROUP_ID]);
    expect(metadata.deletions).toEqual([GROUP_ID]);
  });
});

describe('after a restart, groups come back from the store', () => {
  test('a Stable group keeps its generation, protocol, leader, members, metadata and assignments', async () => {
    const store = new MemoryGroupStore();
    const before = coordinatorOn(store);
    const { leaderId, followerId, followerName, generationId } = await formGroup(before);
    const described = await before.describe();
    before.shutdown();

    const after = coordinatorOn(store);
    // A loaded member's session starts over at the load (as Kafka's), and with it its last heartbeat.
    expect(withoutLastHeartbeats(await after.describe())).toEqual(withoutLastHeartbeats(described));
    expect(described).toMatchObject({ groupState: 'Stable', protocolData: 'range', generationId });
    expect(described.members.map((m) => [m.memberId, m.clientId, m.memberMetadata.toString()])).toEqual(
      expect.arrayContaining([
        [leaderId, expect.any(String), expect.stringMatching(/-range$/)],
        [followerId, expect.any(String), expect.stringMatching(/-range$/)],
      ]),
    );
    // Members carry on with their old ids and generation.
    expect(await after.heartbeat(leaderId, generationId)).toBe(ErrorCode.NONE);
    expect(await after.heartbeat(followerId, generationId)).toBe(ErrorCode.NONE);
    expect(await after.heartbeat(followerId, generationId + 1)).toBe(ErrorCode.ILLEGAL_GENERATION);
    const codes = await after.commit({ memberId: followerId, generationId }, [
      { topic: 't', partition: 0, offset: 5 },
    ]);
    expect(codes.get('t-0')).toBe(ErrorCode.NONE);
    expect(await after.sync({ generationId, memberId: followerId })).toMatchObject({
      errorCode: ErrorCode.NONE,
      protocolName: 'range',
      assignment: FOLLOWER_ASSIGNMENT,
    });
    // A follower rejoining unchanged is recognised as unchanged: the current generation, no rebalance.
    const rejoin = await after.join({ memberId: followerId, protocols: subscriptions(followerName) });
    expect(rejoin).toMatchObject({ errorCode: ErrorCode.NONE, generationId, leaderId });
    expect(await after.state()).toBe('Stable');
  });

  test('every restored member starts a fresh session at load: silent ones expire a session later, not earlier', async () => {
    const store = new MemoryGroupStore();
    const before = coordinatorOn(store);
    const { leaderId, followerId, generationId } = await formGroup(before);
    // The members go silent for most of a session before the restart: that time does not count against them.
    before.advance(DEFAULT_SESSION_TIMEOUT_MS - 1);
    before.shutdown();

    const after = coordinatorOn(store);
    after.advance(DEFAULT_SESSION_TIMEOUT_MS - 1);
    expect(await after.memberIds()).toHaveLength(2);
    expect(await after.heartbeat(leaderId, generationId)).toBe(ErrorCode.NONE);
    after.advance(1);
    expect(await after.memberIds()).toEqual([leaderId]);
    expect(await after.state()).toBe('PreparingRebalance');
    expect(await after.heartbeat(followerId, generationId)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('an Empty group comes back Empty with its generation and protocol type; a group with only offsets comes back too', async () => {
    const store = new MemoryGroupStore();
    const before = coordinatorOn(store);
    const memberId = await before.stableSingleMemberGroup();
    await before.leave([{ memberId }]);
    await before.commit({ groupId: 'offsets-only', memberId: '', generationId: -1 }, [
      { topic: 't', partition: 0, offset: 3 },
    ]);
    before.shutdown();

    const after = coordinatorOn(store);
    expect(await after.describe()).toMatchObject({
      groupState: 'Empty',
      protocolType: PROTOCOL_TYPE,
      members: [],
    });
    expect(await after.describe('offsets-only')).toMatchObject({ groupState: 'Empty', protocolType: '' });
    // The next generation follows on from the stored one.
    const join = await after.dynamicJoin();
    expect(join.generationId).toBe(3);
  });

  test('a restored group over group.max.size rebalances at once', async () => {
    const store = new MemoryGroupStore();
    const before = coordinatorOn(store);
    await formGroup(before);
    before.shutdown();
    const after = coordinatorOn(store, { groupMaxSize: 1 });
    expect(await after.state()).toBe('PreparingRebalance');
  });
});

describe('loading', () => {
  function storedGroup(overrides: Partial<StoredGroup> = {}): StoredGroup {
    return {
      groupId: GROUP_ID,
      protocolType: PROTOCOL_TYPE,
      generationId: 4,
      protocolName: 'range',
      leaderId: 'member-1',
      currentStateTimestampMs: 0,
      members: [
        {
          memberId: 'member-1',
          groupInstanceId: '',
          clientId: 'c',
          clientHost: 'h',
          rebalanceTimeoutMs: 500,
          sessionTimeoutMs: 500,
          protocols: subscriptions('m1'),
          assignment: Buffer.from('a1'),
        },
      ],
      ...overrides,
    };
  }

  test('every group request gets COORDINATOR_LOAD_IN_PROGRESS (Kafka: Heartbeat NONE, SyncGroup REBALANCE_IN_PROGRESS) until the load is done', async () => {
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    const loading = deferred();
    const loaded = new Tracked(h.coordinator.load(loading.promise));
    // The replay brings the group into the store while the coordinator waits.
    store.seed(storedGroup());
    const c = h.coordinator;
    const inProgress = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    expect((await h.join({ memberId: '' })).errorCode).toBe(inProgress);
    // Kafka's two exceptions: a SyncGroup is told to rejoin (the rebalance it belonged to may be lost with
    // the old coordinator), a Heartbeat is answered blindly (the loaded group decides at the next one).
    expect((await h.sync({ generationId: 4, memberId: 'member-1' })).errorCode).toBe(
      ErrorCode.REBALANCE_IN_PROGRESS,
    );
    expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.NONE);
    expect((await h.leave([{ memberId: 'member-1' }])).errorCode).toBe(inProgress);
    expect(
      (
        await h.commit({ memberId: 'member-1', generationId: 4 }, [{ topic: 't', partition: 0, offset: 1 }])
      ).get('t-0'),
    ).toBe(inProgress);
    expect((await h.fetch(GROUP_ID, [['t', [0]]])).errorCode).toBe(inProgress);
    expect((await h.describe()).errorCode).toBe(inProgress);
    expect((await c.listGroups({ statesFilter: [] }, CONTEXT)).errorCode).toBe(inProgress);
    expect((await c.deleteGroups({ groupsNames: [GROUP_ID] }, CONTEXT)).results[0].errorCode).toBe(
      inProgress,
    );
    // An empty group id is still a bad request first, as in Kafka.
    expect((await h.join({ groupId: '' })).errorCode).toBe(ErrorCode.INVALID_GROUP_ID);
    expect(store.groupWrites).toEqual([]);

    loading.resolve();
    await settle();
    expect(loaded.isSettled).toBe(true);
    expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.NONE);
    expect(await h.state()).toBe('Stable');
  });

  test('a member stored without a rebalance timeout comes back with its session timeout', async () => {
    // Stored before a 0 meant "the session timeout" (ab78416): restored as 0, a rebalance would complete
    // at the next tick and drop the member that is still heartbeating.
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    const sessionMs = 2_000;
    const member = { ...storedGroup().members[0], rebalanceTimeoutMs: 0, sessionTimeoutMs: sessionMs };
    store.seed(storedGroup({ members: [member] }));
    await h.coordinator.load(Promise.resolve());
    const joining = await h.sendDynamicJoin({ rebalanceTimeoutMs: 100 });
    for (let waited = 0; waited < sessionMs - 500; waited += 500) {
      h.advance(500);
      await settle();
      expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    }
    h.advance(499);
    await settle();
    expect(joining.isSettled).toBe(false);
    h.advance(1);
    await settle();
    expect(joining.result).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 5 });
  });

  test('a load that fails leaves the coordinator unavailable instead of serving partial state', async () => {
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    const loading = deferred();
    const loaded = new Tracked(h.coordinator.load(loading.promise));
    const failure = new Error('disk gone');
    loading.reject(failure);
    await settle();
    expect(loaded.error).toBe(failure);
    expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await h.describe()).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  test('an unusable stored group fails the load and restores no group at all', async () => {
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    const loading = deferred();
    const loaded = new Tracked(h.coordinator.load(loading.promise));
    store.seed(storedGroup({ groupId: 'fine' }));
    store.seed(storedGroup({ groupId: 'broken', leaderId: 'nobody' }));
    loading.resolve();
    await settle();
    expect(loaded.error).toBeInstanceOf(CohortError);
    expect(String(loaded.error)).toContain('led by nobody');
    expect(h.coordinator.numGroups).toBe(0);
    expect((await h.describe('fine')).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  });

  test('a shutdown during the load answers COORDINATOR_NOT_AVAILABLE and the late load restores nothing', async () => {
    const store = new MemoryGroupStore();
    const h = coordinatorOn(store);
    const loading = deferred();
    const loaded = new Tracked(h.coordinator.load(loading.promise));
    store.seed(storedGroup());
    h.shutdown();
    expect(await h.heartbeat('member-1', 4)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    loading.resolve();
    await settle();
    expect(loaded.isSettled).toBe(true);
    expect(h.coordinator.numGroups).toBe(0);
  });

  test('a second load while one is running is refused', async () => {
    const h = coordinatorOn(new MemoryGroupStore());
    void h.coordinator.load(deferred().promise);
    await expect(h.coordinator.load(Promise.resolve())).rejects.toThrow('already loading');
  });
});
