import { controllerKey } from '../../../src/cluster/controller-election';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import { readPartitionState, topicKey } from '../../../src/cluster/partition-state';
import {
  assignReplicas,
  createTopic,
  decodeReplicaAssignment,
  encodeReplicaAssignment,
} from '../../../src/cluster/replica-assignment';
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

describe('createTopic (in-memory etcd)', () => {
  let etcd: InMemoryEtcd;
  let store: InMemoryMetadataStore;
  let epoch: number;
  beforeEach(async () => {
    etcd = new InMemoryEtcd({ time: new ManualTime() });
    store = etcd.connect();
    epoch = (await store.put(controllerKey('c1'), '{"nodeId":1}')).revision;
  });
  afterEach(() => etcd.shutdown());

  it('writes the assignment and every partition’s initial state in one revision, once', async () => {
    const isAlive = (id: number) => id !== 1;
    const created = await createTopic(
      store,
      'c1',
      epoch,
      't',
      {
        partitions: [
          [1, 2],
          [2, 3],
        ],
      },
      isAlive,
    );
    expect(created).toEqual({
      outcome: 'created',
      revision: epoch + 1,
      states: [
        { leader: 2, leaderEpoch: 0, isr: [2], controllerEpoch: epoch },
        { leader: 2, leaderEpoch: 0, isr: [2, 3], controllerEpoch: epoch },
      ],
    });
    expect(await readPartitionState(store, 'c1', 't', 1)).toEqual({
      state: { leader: 2, leaderEpoch: 0, isr: [2, 3], controllerEpoch: epoch },
      modRevision: epoch + 1,
    });
    expect(
      decodeReplicaAssignment('k', (await store.get(topicKey('c1', 't'))).kv!.value).partitions,
    ).toHaveLength(2);
    expect(await createTopic(store, 'c1', epoch, 't', { partitions: [[3]] }, isAlive)).toEqual({
      outcome: 'exists',
    });
  });

  it('refuses a deposed controller and writes nothing', async () => {
    await store.delete(controllerKey('c1'));
    const newEpoch = (await store.put(controllerKey('c1'), '{"nodeId":2}')).revision;
    expect(await createTopic(store, 'c1', epoch, 't', { partitions: [[1]] }, () => true)).toEqual({
      outcome: 'notController',
      currentEpoch: newEpoch,
    });
    expect((await store.range('/c1/topics/')).kvs).toEqual([]);
    expect((await store.range('/c1/partitions/')).kvs).toEqual([]);
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
