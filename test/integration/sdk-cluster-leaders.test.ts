import { CohortClient, type RecordMetadata } from '../../src';
import { startEtcd, type EtcdProcess } from '../support/etcd';
import { eventually, LogCluster, type ClusterNode } from './log-cluster';

/**
 * The SDK against three cohort servers in cluster mode on a real etcd: a client given every node sends
 * each partition's records to its leader, and when a leader's server stops, acks=-1 records go on to the
 * elected survivor without the client being told anything; every acknowledged record is read back at its
 * offset.
 */
jest.setTimeout(120_000);

let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

let cluster: LogCluster;
const clients: CohortClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await cluster.cleanup();
});

it('follows partition leaders from a bootstrap list, through a leader failover, losing no acknowledged record', async () => {
  cluster = new LogCluster();
  const clusterId = `sdk-leaders-${process.pid}`;
  const nodes: ClusterNode[] = [];
  for (const nodeId of [1, 2, 3]) {
    nodes.push(
      await cluster.start(`n${nodeId}`, {
        etcdEndpoints: etcd.endpoints,
        clusterId,
        nodeId,
        nodeSessionTimeoutMs: 4_000,
        replicaLagTimeMaxMs: 2_000,
        // The reading group is the first, after a node has stopped: __consumer_offsets is created on the
        // two survivors, which it may only be with a factor of 2 (Kafka waits for as many live brokers).
        offsetsTopicReplicationFactor: 2,
      }),
    );
  }
  const client = new CohortClient({ bootstrap: nodes.map((n) => n.target), clientId: 'sdk-leaders' });
  clients.push(client);
  const admin = client.admin({ requestTimeoutMs: 10_000 });
  await eventually(
    async () => ((await admin.metadata()).brokers.length === 3 ? true : undefined),
    'three live nodes',
  );
  const [created] = await admin.createTopics([{ name: 'orders', numPartitions: 2, replicationFactor: 3 }]);
  expect(created.error).toBeNull();
  const led = () =>
    eventually(async () => {
      const [topic] = await admin.describeTopics(['orders']);
      return topic?.partitions.length === 2 &&
        topic.partitions.every((p) => p.leaderId >= 0 && p.isr.length === 3)
        ? topic.partitions
        : undefined;
    }, 'orders led with three in sync');
  await led();

  const producer = client.producer({ acks: -1, lingerMs: 0 });
  const acked: RecordMetadata[] = [];
  const send = async (partition: number, value: string) =>
    acked.push(await producer.send({ topic: 'orders', partition, value }));
  await send(0, 'a');
  await send(1, 'b');

  // The leader of a partition whose replicas are all in sync stops (a partition whose ISR holds only its
  // leader is rightly offline once that leader goes); the producer is not told, it follows the election.
  const target = await eventually(async () => {
    const [topic] = await admin.describeTopics(['orders']);
    return topic?.partitions.find((p) => p.leaderId >= 0 && p.isr.length === 3);
  }, 'a partition of orders with three in sync');
  const other = 1 - target.partition;
  const leaderName = `n${target.leaderId}`;
  await cluster.stop(leaderName);
  await send(target.partition, 'c');
  await send(other, 'd');
  // A survivor leads it now (as every node's view will say, once it has caught up with etcd).
  await eventually(async () => {
    const [topic] = await admin.describeTopics(['orders']);
    const leaderId = topic?.partitions[target.partition]?.leaderId;
    return leaderId !== undefined && leaderId >= 0 && `n${leaderId}` !== leaderName ? true : undefined;
  }, 'a survivor to lead the partition');

  const seen = new Map<string, string>();
  const consumer = client.consumer({
    groupId: 'sdk-leaders-readers',
    topics: ['orders'],
    autoOffsetReset: 'earliest',
    heartbeatIntervalMs: 200,
    maxWaitMs: 200,
  });
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ partition, message }) => {
        seen.set(`${partition}@${message.offset}`, String(message.value));
        if (acked.every((m) => seen.has(`${m.partition}@${m.offset}`))) resolve();
      },
    });
  });
  expect(acked.map((m) => seen.get(`${m.partition}@${m.offset}`))).toEqual(['a', 'b', 'c', 'd']);
  expect(acked.map((m) => m.partition)).toEqual([0, 1, target.partition, other]);
});
