import { ErrorCode } from '../../src/errors';
import { startEtcd, type EtcdProcess } from '../support/etcd';
import { eventually, fetchRequest, LogCluster, produceRequest, type ClusterNode } from './log-cluster';

/**
 * Three cohort servers in cluster mode (`--etcd-endpoints`) on a real etcd: a topic created through
 * CreateTopics on any node, led and replicated as the controller decided, and, when its leader's server
 * stops, led by a survivor at the next leader epoch with every acknowledged record on it.
 */
let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

describe('cohort servers in cluster mode', () => {
  let cluster: LogCluster;
  let run = 0;
  let clusterId: string;

  beforeEach(() => {
    cluster = new LogCluster();
    clusterId = `servers-${process.pid}-${run++}`;
  });
  afterEach(() => cluster.cleanup());

  const startNode = (nodeId: number): Promise<ClusterNode> =>
    cluster.start(`n${nodeId}`, {
      etcdEndpoints: etcd.endpoints,
      clusterId,
      nodeId,
      nodeSessionTimeoutMs: 4_000,
      replicaLagTimeMaxMs: 2_000,
    });

  /** Partition 0 of `topic` as `node` reports it, once it has a leader and `isrSize` in sync. */
  const ledPartition = (node: ClusterNode, topic: string, isrSize: number) =>
    eventually(async () => {
      const { topics } = await node.client.metadata({ topics: [topic] });
      const partition = topics[0]?.partitions[0];
      return partition !== undefined && partition.leaderId >= 0 && partition.isrNodes.length === isrSize
        ? partition
        : undefined;
    }, `${topic}-0 led with ${isrSize} in sync, as ${node.name} reports it`);

  it('creates a topic on any node, replicates it, and fails over to an in-sync survivor', async () => {
    const nodes = [await startNode(1), await startNode(2), await startNode(3)];
    await eventually(async () => {
      const views = await Promise.all(nodes.map((node) => node.client.metadata({ topics: [] })));
      return views.every((view) => view.brokers.length === 3) ? true : undefined;
    }, 'every node to list three live nodes');

    const created = await nodes[1].client.createTopics({
      topics: [{ name: 'orders', numPartitions: 1, replicationFactor: 3 }],
    });
    expect(created.topics[0].errorCode).toBe(ErrorCode.NONE);
    const before = await ledPartition(nodes[0], 'orders', 3);
    const leader = nodes.find((node) => node.name === `n${before.leaderId}`)!;
    const produced = await leader.client.produce(produceRequest('orders', ['a', 'b'], -1));
    expect(produced.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);

    await cluster.stop(leader.name);
    const survivors = nodes.filter((node) => node !== leader);
    const after = await eventually(async () => {
      const partition = (await survivors[0].client.metadata({ topics: ['orders'] })).topics[0]?.partitions[0];
      return partition !== undefined && partition.leaderId >= 0 && partition.leaderId !== before.leaderId
        ? partition
        : undefined;
    }, 'a survivor to lead orders-0');
    expect(after.leaderEpoch).toBeGreaterThan(before.leaderEpoch);
    const newLeader = survivors.find((node) => node.name === `n${after.leaderId}`)!;
    const more = await eventually(async () => {
      const response = await newLeader.client.produce(produceRequest('orders', ['c'], -1));
      return response.topics[0].partitions[0].errorCode === ErrorCode.NONE ? response : undefined;
    }, 'an acks=-1 produce to succeed on the new leader');
    expect(more.topics[0].partitions[0].baseOffset).toBe(2);
    const fetched = await newLeader.client.fetch(fetchRequest('orders', 0));
    expect(fetched.responses[0].partitions[0].records.map((r) => r.value.toString())).toEqual([
      'a',
      'b',
      'c',
    ]);
  }, 90_000);
});
