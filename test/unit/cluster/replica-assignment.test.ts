import { controllerKey } from '../../../src/cluster/controller-election';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import { ETCD_MAX_TXN_OPS } from '../../../src/cluster/metadata-store';
import { partitionKey, readPartitionState, topicKey } from '../../../src/cluster/partition-state';
import {
  assignReplicas,
  createPartitionStates,
  createTopicAssignment,
  decodeReplicaAssignment,
  encodeReplicaAssignment,
  MAX_REPLICA_ASSIGNMENT_BYTES,
  PARTITION_STATES_PER_TXN,
  planTopic,
  writeTopicAssignment,
  type ReplicaAssignment,
} from '../../../src/cluster/replica-assignment';
import { MAX_PARTITIONS_PER_TOPIC } from '../../../src/log';
import { ManualTime } from '../../../src/time';

describe('replica assignment codec', () => {
  it('round-trips the replicas of each partition in preference order', () => {
    const value = encodeReplicaAssignment({
      partitions: [
        [1, 2],
        [2, 3],
        [3, 1],
      ],
    });
    expect(value).toBe('{"partitions":[[1,2],[2,3],[3,1]]}');
    expect(decodeReplicaAssignment('/k', value)).toEqual({
      partitions: [
        [1, 2],
        [2, 3],
        [3, 1],
      ],
    });
  });

  it.each([
    ['not JSON', 'x', /not JSON/],
    ['no partitions', '{"partitions":[]}', /non-empty/],
    ['a repeated replica', '{"partitions":[[1,1]]}', /distinct/],
    ['uneven replication', '{"partitions":[[1,2],[3]]}', /has 1 replicas, partition 0 has 2/],
    ['a negative node id', '{"partitions":[[-1]]}', /distinct node ids/],
  ])('refuses %s', (_what, value, message) => {
    expect(() => decodeReplicaAssignment('/c/topics/t', value)).toThrow(message);
  });
});

describe('topic creation writes (in-memory etcd)', () => {
  let etcd: InMemoryEtcd;
  let store: InMemoryMetadataStore;
  let epoch: number;
  const state = (leader: number, isr: number[]) => ({ leader, leaderEpoch: 0, isr, controllerEpoch: epoch });
  const everyPartitionOn = (count: number, replicas: number[]): ReplicaAssignment => ({
    partitions: Array.from({ length: count }, () => replicas),
  });

  beforeEach(async () => {
    etcd = new InMemoryEtcd({ time: new ManualTime() });
    store = etcd.connect();
    epoch = (await store.put(controllerKey('c1'), '{"nodeId":1}')).revision;
  });
  afterEach(() => etcd.shutdown());

  it('creates the assignment of 10,000 partitions in one write, once, and no state with it', async () => {
    const assignment = everyPartitionOn(MAX_PARTITIONS_PER_TOPIC, [1, 2, 3]);
    expect(await createTopicAssignment(store, 'c1', epoch, 't', assignment)).toEqual({
      outcome: 'created',
      revision: epoch + 1,
    });
    const { kv } = await store.get(topicKey('c1', 't'));
    expect(decodeReplicaAssignment(kv!.key, kv!.value).partitions).toHaveLength(MAX_PARTITIONS_PER_TOPIC);
    expect((await store.range('/c1/partitions/')).kvs).toEqual([]);
    expect(await createTopicAssignment(store, 'c1', epoch, 't', { partitions: [[3]] })).toEqual({
      outcome: 'exists',
    });
  });

  it('creates no assignment over a partition state the topic already has, nor over another topic', async () => {
    await store.put(partitionKey('c1', 't', 7), JSON.stringify(state(1, [1])));
    expect(await createTopicAssignment(store, 'c1', epoch, 't', { partitions: [[1]] })).toEqual({
      outcome: 'exists',
    });
    expect(await writeTopicAssignment(store, 'c1', 't', { partitions: [[1]] })).toEqual({
      outcome: 'exists',
    });
    // t2's partitions share no key with t's: partitions/t/ is not a prefix of partitions/t2/.
    expect(await writeTopicAssignment(store, 'c1', 't2', { partitions: [[1]] })).toMatchObject({
      outcome: 'created',
    });
    expect((await store.get(topicKey('c1', 't'))).kv).toBeUndefined();
  });

  it('lets any node write the assignment of 10,000 partitions, once', async () => {
    const assignment = everyPartitionOn(MAX_PARTITIONS_PER_TOPIC, [2, 3]);
    expect(await writeTopicAssignment(store, 'c1', 't', assignment)).toEqual({
      outcome: 'created',
      assignment,
    });
    expect(await writeTopicAssignment(store, 'c1', 't', assignment)).toEqual({ outcome: 'exists' });
  });

  it('refuses a deposed controller and writes nothing', async () => {
    await store.delete(controllerKey('c1'));
    const newEpoch = (await store.put(controllerKey('c1'), '{"nodeId":2}')).revision;
    expect(await createTopicAssignment(store, 'c1', epoch, 't', { partitions: [[1]] })).toEqual({
      outcome: 'notController',
      currentEpoch: newEpoch,
    });
    expect(
      await createPartitionStates(store, 'c1', epoch, 't', [{ partition: 0, state: state(1, [1]) }]),
    ).toEqual({ outcome: 'notController', currentEpoch: newEpoch });
    expect((await store.range('/c1/topics/')).kvs).toEqual([]);
    expect((await store.range('/c1/partitions/')).kvs).toEqual([]);
  });

  it('creates a slice of 127 initial states in one revision, within the 128 compares etcd takes', async () => {
    expect(PARTITION_STATES_PER_TXN + 1).toBe(ETCD_MAX_TXN_OPS);
    const slice = Array.from({ length: PARTITION_STATES_PER_TXN }, (_, i) => ({
      partition: 200 + i,
      state: state(2, [2, 3]),
    }));
    expect(await createPartitionStates(store, 'c1', epoch, 't', slice)).toEqual({
      outcome: 'created',
      revision: epoch + 1,
    });
    expect(await readPartitionState(store, 'c1', 't', 200 + PARTITION_STATES_PER_TXN - 1)).toEqual({
      state: state(2, [2, 3]),
      modRevision: epoch + 1,
    });
    await expect(
      createPartitionStates(store, 'c1', epoch, 'u', [...slice, { partition: 0, state: state(2, [2]) }]),
    ).rejects.toThrow(RangeError);
  });

  it('creates no state of a slice when one of them exists', async () => {
    await createPartitionStates(store, 'c1', epoch, 't', [{ partition: 1, state: state(1, [1]) }]);
    const slice = [0, 1, 2].map((partition) => ({ partition, state: state(2, [2]) }));
    expect(await createPartitionStates(store, 'c1', epoch, 't', slice)).toEqual({ outcome: 'exists' });
    expect((await store.range('/c1/partitions/t/')).kvs.map((kv) => kv.key)).toEqual([
      partitionKey('c1', 't', 1),
    ]);
  });
});

describe('planTopic', () => {
  it('plans 10,000 partitions of 3 replicas, an assignment well under the limit', () => {
    const plan = planTopic('t', MAX_PARTITIONS_PER_TOPIC, 3, [1, 2, 3]);
    expect(plan.outcome).toBe('planned');
    const { assignment } = plan as { assignment: ReplicaAssignment };
    expect(Buffer.byteLength(encodeReplicaAssignment(assignment))).toBeLessThan(
      MAX_REPLICA_ASSIGNMENT_BYTES / 10,
    );
  });

  it('refuses, saying why, an assignment too large for one etcd request', () => {
    // Ten-digit node ids (INT32_MAX is the largest) and 10 replicas: 1,120,016 bytes for 10,000 partitions.
    const nodeIds = Array.from({ length: 10 }, (_, i) => 2_147_483_600 + i);
    expect(planTopic('t', MAX_PARTITIONS_PER_TOPIC, 10, nodeIds)).toEqual({
      outcome: 'invalidPartitions',
      reason:
        '10000 partitions of 10 replicas need a replica assignment of 1120016 bytes, above the 1048576 a ' +
        'topic may take: ask for fewer partitions or replicas',
    });
    expect(planTopic('t', 9_000, 10, nodeIds).outcome).toBe('planned');
  });
});

describe("assignReplicas (Kafka's round-robin, no racks)", () => {
  it("matches Kafka's assignment for 5 nodes, 10 partitions, factor 3, start 0", () => {
    // AdminZkClientTest.testReplicaAssignment's expected table.
    const { partitions } = assignReplicas([4, 2, 0, 3, 1], 10, 3, { startIndex: 0, replicaShift: 0 });
    expect(partitions).toEqual([
      [0, 1, 2],
      [1, 2, 3],
      [2, 3, 4],
      [3, 4, 0],
      [4, 0, 1],
      [0, 2, 3],
      [1, 3, 4],
      [2, 4, 0],
      [3, 0, 1],
      [4, 1, 2],
    ]);
  });

  it('spreads preferred leaders evenly from a random start, over the sorted node ids', () => {
    const { partitions } = assignReplicas([30, 10, 20], 6, 2, { random: () => 0.5 });
    // start = floor(0.5 × 3) = 1: node 20 first; shift 1.
    expect(partitions.map((replicas) => replicas[0])).toEqual([20, 30, 10, 20, 30, 10]);
    for (const replicas of partitions) expect(new Set(replicas).size).toBe(2);
  });

  it('refuses a replication factor above the live nodes, and a non-positive partition count', () => {
    expect(() => assignReplicas([1, 2], 3, 3)).toThrow(
      'replication factor 3 must be between 1 and the 2 live nodes',
    );
    expect(() => assignReplicas([1, 2], 3, 0)).toThrow('replication factor 0');
    expect(() => assignReplicas([1, 2], 0, 1)).toThrow('partition count must be positive');
  });

  it('with a factor of 1 on one node, puts every partition there', () => {
    expect(assignReplicas([7], 3, 1).partitions).toEqual([[7], [7], [7]]);
  });
});
