import { CohortClient } from '../../src';
import { ErrorCode } from '../../src/errors';
import type { CohortConfig } from '../../src/config';
import { startEtcd, type EtcdProcess } from '../support/etcd';
import { eventually, LogCluster } from './log-cluster';

/**
 * A cohort server in cluster mode that starts while etcd is down cannot register, so it is not yet a
 * member of the cluster: its Metadata names no broker and answers an existing topic LEADER_NOT_AVAILABLE
 * (retriable), not UNKNOWN_TOPIC_OR_PARTITION; once etcd is back it answers the cluster's metadata. An SDK
 * client bootstrapped from it alone waits for that rather than take the topic for missing.
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

it('answers Metadata as a node not yet in the cluster while etcd is down, and the cluster once it is back', async () => {
  cluster = new LogCluster();
  const settings = (nodeId: number): Partial<CohortConfig> => ({
    etcdEndpoints: etcd.endpoints,
    clusterId: `not-yet-member-${process.pid}`,
    nodeId,
    nodeSessionTimeoutMs: 4_000,
    replicaLagTimeMaxMs: 2_000,
  });
  const first = await cluster.start('n1', settings(1));
  await eventually(async () => {
    const { topics } = await first.client.createTopics({
      topics: [{ name: 'orders', numPartitions: 1, replicationFactor: 1 }],
    });
    return topics[0]!.errorCode === ErrorCode.NONE ? true : undefined;
  }, 'orders to be created on n1');
  await eventually(async () => {
    const { topics } = await first.client.metadata({ topics: ['orders'] });
    return topics[0]?.partitions[0]?.leaderId === 1 ? true : undefined;
  }, 'n1 to lead orders-0');

  await etcd.kill();
  const second = await cluster.start('n2', settings(2));
  expect(await second.client.metadata({ topics: ['orders'] })).toEqual({
    brokers: [],
    controllerId: -1,
    topics: [
      {
        name: 'orders',
        errorCode: ErrorCode.LEADER_NOT_AVAILABLE,
        partitions: [],
        errorMessage: expect.stringMatching(/^this node is not yet a member of the cluster/),
      },
    ],
  });
  expect(await second.client.metadata({ topics: [] })).toEqual({ brokers: [], topics: [], controllerId: -1 });

  // A client that knows only n2: its describe and its send keep asking, and conclude nothing yet.
  const client = new CohortClient({ bootstrap: [second.target], clientId: 'not-yet-member' });
  clients.push(client);
  const admin = client.admin({ requestTimeoutMs: 60_000 });
  let isSettled = false;
  const described = admin.describeTopics(['orders']);
  described.then(
    () => (isSettled = true),
    () => (isSettled = true),
  );
  const sent = client.producer({ acks: -1, lingerMs: 0 }).send({ topic: 'orders', value: 'after etcd' });
  sent.catch(() => undefined);
  await second.client.metadata({ topics: ['orders'] });
  await second.client.metadata({ topics: ['orders'] });
  expect(isSettled).toBe(false);

  await etcd.restart();
  await eventually(
    async () => {
      const { brokers, topics } = await second.client.metadata({ topics: ['orders'] });
      return brokers.length === 2 && topics[0]!.errorCode === ErrorCode.NONE ? true : undefined;
    },
    'n2 to answer the cluster metadata',
    { attempts: 1_500 },
  );
  // A member names the controller its view names: one of the two nodes, the same on both.
  const controllers = await eventually(async () => {
    const ids = [
      (await first.client.metadata({ topics: [] })).controllerId,
      (await second.client.metadata({ topics: [] })).controllerId,
    ];
    return ids[0] === ids[1] && [1, 2].includes(ids[0]!) ? ids : undefined;
  }, 'both nodes to name the same controller');
  expect(controllers).toHaveLength(2);
  const [topic] = await described;
  expect(topic).toMatchObject({ name: 'orders', error: null });
  expect(topic!.partitions.map((p) => p.partition)).toEqual([0]);
  expect((await sent).offset).toBe(0n);
});
