import { ErrorCode } from '../../../src/errors';
import { GroupCoordinatorRouter } from '../../../src/group/group-coordinator-router';
import type { ReplicaManager } from '../../../src/log';
import type { ConsumerOffsetsWriter } from '../../../src/log/consumer-offsets';
import {
  CONTEXT,
  GROUP_INITIAL_REBALANCE_DELAY_MS,
  TEST_GROUP_CONFIG,
  Tracked,
  joinRequest,
  offsetCommitRequest,
  syncRequest,
} from '../../support/group-harness';
import { BrokerHarness, fetched, until } from '../log/broker-harness';

const TOPIC = '__consumer_offsets';
const KEY = `${TOPIC}-0`;
const GROUP = 'group';
/** A group with offsets only (commits outside any generation). */
const OFFSETS_GROUP = 'offsets-group';
const INSTANCE = 'instance';

/**
 * Coordinators on replicated `__consumer_offsets` (ReplicaManagers on a fake cluster, one partition, the
 * manual clock), wired as the server wires them: each election's writer is replayed into the router's shard.
 * A new leader holds records of the old leader's above the HW (a group's generation and a commit no
 * follower has yet): its groups answer COORDINATOR_LOAD_IN_PROGRESS until the HW covers them, so nothing
 * a failover could still take back is ever served.
 */
describe('a coordinator that takes over records not yet committed', () => {
  let h: BrokerHarness;
  const routers = new Map<number, GroupCoordinatorRouter>();
  const writers = new Map<number, ConsumerOffsetsWriter>();

  beforeEach(() => {
    h = new BrokerHarness();
  });

  afterEach(async () => {
    for (const router of routers.values()) router.shutdown();
    routers.clear();
    writers.clear();
    await h.cleanup();
  });

  /** Node `nodeId` and its coordinator, as the server wires them. */
  function node(nodeId: number): ReplicaManager {
    const router = new GroupCoordinatorRouter(TEST_GROUP_CONFIG, h.time, { numPartitions: 1 });
    routers.set(nodeId, router);
    return h.clusterNode(
      nodeId,
      { requireAuthenticatedReplicas: false },
      {
        offsetsTopic: {
          listener: {
            onElection: (partitionIndex, leaderEpoch, writer) => {
              writers.set(nodeId, writer);
              void router.onElection(partitionIndex, leaderEpoch, writer).catch(() => undefined);
            },
            onResignation: (partitionIndex, leaderEpoch) => router.onResignation(partitionIndex, leaderEpoch),
          },
        },
      },
    );
  }

  function join(
    router: GroupCoordinatorRouter,
    memberId = '',
  ): Tracked<{ errorCode: ErrorCode; memberId: string; generationId: number }> {
    return new Tracked(
      router.joinGroup(joinRequest({ groupId: GROUP, memberId, groupInstanceId: INSTANCE }), CONTEXT),
    );
  }

  /** A commit of OFFSETS_GROUP outside any generation; the code of its one partition. */
  async function commit(router: GroupCoordinatorRouter, offset: number): Promise<ErrorCode> {
    const response = await router.offsetCommit(offsetCommitRequest(OFFSETS_GROUP, offset), CONTEXT);
    return response.topics[0]!.partitions[0]!.errorCode;
  }

  async function fetchOffset(router: GroupCoordinatorRouter): Promise<[ErrorCode, number | undefined]> {
    const response = await router.offsetFetch(
      { groupId: OFFSETS_GROUP, topics: [{ name: 'topic', partitionIndexes: [0] }], requireStable: true },
      CONTEXT,
    );
    return [response.errorCode, response.topics[0]?.partitions[0]?.committedOffset];
  }

  async function describe(router: GroupCoordinatorRouter): Promise<[ErrorCode, string, number, number]> {
    const [group] = (await router.describeGroups({ groups: [GROUP] }, CONTEXT)).groups;
    return [group!.errorCode, group!.groupState, group!.generationId, group!.members.length];
  }

  /**
   * Node 0 coordinates the groups: GROUP's member joins (generation 1) and syncs, OFFSETS_GROUP commits 5;
   * node 0 appends the group record and the commit, node 1 fetches both, and node 0 is gone before anyone fetched past
   * them (nothing acknowledged: the member never got its SyncGroup answer). Node 1 leads at epoch 1 with
   * node 2 (which has nothing) still in sync: its HW is 0, its LEO 2. Returns node 1 and the member.
   */
  async function takeOver(): Promise<{ one: ReplicaManager; memberId: string }> {
    const zero = node(0);
    const one = node(1);
    node(2);
    h.cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 0, isr: [0, 1, 2], replicas: [0, 1, 2] });
    await until(() => writers.get(0)?.isLoaded === true, "node 0's load");
    const coordinator = routers.get(0)!;
    const joined = join(coordinator);
    h.time.advance(GROUP_INITIAL_REBALANCE_DELAY_MS);
    const { memberId, generationId, errorCode } = await joined.promise;
    expect([errorCode, generationId]).toEqual([ErrorCode.NONE, 1]);
    const synced = new Tracked(
      coordinator.syncGroup(
        syncRequest({
          groupId: GROUP,
          memberId,
          generationId,
          groupInstanceId: INSTANCE,
          assignments: [[memberId, Buffer.from('assignment')]],
        }),
        CONTEXT,
      ),
    );
    const committed = new Tracked(commit(coordinator, 5));
    const partition = zero.getPartition(KEY)!;
    await until(() => partition.logEndOffset === 2, 'the group record and the commit in the log');
    expect([synced.isSettled, committed.isSettled]).toEqual([false, false]);
    const data = fetched(
      await zero.fetch({
        replicaId: 1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        topics: [
          { name: TOPIC, partitions: [{ partitionIndex: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }] },
        ],
      }),
    );
    expect(one.applyFetchedPartition(KEY, data, 0)).toBe('appended');
    h.cluster.liveNodes = h.cluster.liveNodes.filter((n) => n.nodeId !== 0);
    h.cluster.elect(TOPIC, 0, 1, [1, 2]);
    const leader = one.getPartition(KEY)!;
    expect([leader.isLeader, leader.highWatermark, leader.logEndOffset]).toEqual([true, 0, 2]);
    return { one, memberId };
  }

  /** Follower 2 fetches from node 1 at `fetchOffset` (so it has everything below it). */
  function followerFetch(one: ReplicaManager, fetchOffset: number) {
    return one.fetch({
      replicaId: 2,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, fetchOffset, partitionMaxBytes: 1 << 20 }] }],
    });
  }

  test('its group and offset requests get COORDINATOR_LOAD_IN_PROGRESS until the HW covers the load; then they are served', async () => {
    const { one, memberId } = await takeOver();
    const coordinator = routers.get(1)!;
    await until(() => coordinator.isLeading(0), "node 1's election");
    const inProgress = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    // The log is replayed, the generation and the commit are in the store's view, but not committed.
    expect(await fetchOffset(coordinator)).toEqual([inProgress, undefined]);
    expect((await describe(coordinator))[0]).toBe(inProgress);
    expect((await join(coordinator, memberId).promise).errorCode).toBe(inProgress);
    expect(await commit(coordinator, 6)).toBe(inProgress);
    expect(coordinator.isLeading(0)).toBe(true);
    // Follower 2 gets the records, then asks for what follows: the HW reaches 2, the load ends.
    await followerFetch(one, 0);
    expect((await describe(coordinator))[0]).toBe(inProgress);
    await followerFetch(one, 2);
    await coordinator.whenLoaded();
    expect(await describe(coordinator)).toEqual([ErrorCode.NONE, 'Stable', 1, 1]);
    expect(await fetchOffset(coordinator)).toEqual([ErrorCode.NONE, 5]);
    expect(one.numDelayedProduce).toBe(0);
  });

  test('a resignation during the wait: NOT_COORDINATOR from then on, nothing left parked or loaded', async () => {
    const { one } = await takeOver();
    const coordinator = routers.get(1)!;
    // The load waits for the high watermark to cover what it replayed.
    await until(() => one.numDelayedProduce === 1, "node 1's load waiting for the high watermark");
    expect((await describe(coordinator))[0]).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    h.cluster.elect(TOPIC, 0, 2, [2]);
    await until(() => !coordinator.isLeading(0), "node 1's resignation");
    expect(one.numDelayedProduce).toBe(0);
    expect(await fetchOffset(coordinator)).toEqual([ErrorCode.NOT_COORDINATOR, undefined]);
    expect((await describe(coordinator))[0]).toBe(ErrorCode.NOT_COORDINATOR);
    expect(coordinator.numGroups).toBe(0);
    expect(writers.get(1)!.isLoaded).toBe(false);
  });
});
