import { CohortClient, type RecordMetadata } from '../../src';
import { CohortCluster, waitFor } from '../support/cohort-cluster';

/**
 * A cluster of real cohort processes on an etcd locked down as docs/operations.md says: TLS only, client
 * certificates required, authentication on, the nodes' user allowed the cluster's prefix and nothing
 * else. A topic is created, records produced with acks=-1 and read back by a consumer group (whose
 * offsets live in __consumer_offsets, created through etcd too).
 *
 * etcd drops a token unused for a second (`--auth-token-ttl 1`), and a node's renewals and watches do not
 * use its token: after a quiet spell every node's token has expired. A second topic is then created and
 * used the same way: its writes to etcd meet the expired tokens, and the nodes authenticate again.
 */
jest.setTimeout(180_000);

/** etcd's TTL of 1 s, checked once a second: no token survives this long unused. */
const TOKEN_EXPIRY_MS = 2_500;

let cluster: CohortCluster | undefined;
const clients: CohortClient[] = [];

beforeAll(async () => {
  cluster = await CohortCluster.start({
    nodeCount: 2,
    lockedDownEtcd: { tokenTtlSeconds: 1 },
    minInsyncReplicas: 2,
    extraArgs: [
      '--offsets-topic-num-partitions',
      '2',
      '--offsets-topic-replication-factor',
      '2',
      '--group-initial-rebalance-delay-ms',
      '0',
    ],
  });
}, 300_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await cluster?.stop();
});

/** What each node logged, by message. */
function messagesOf(c: CohortCluster, nodeId: number): string[] {
  return (c.node(nodeId).process?.lines ?? []).map((line) =>
    typeof line === 'string' ? line : String(line.msg),
  );
}

it('creates topics, produces and consumes on etcd with TLS and authentication, through expired tokens', async () => {
  const c = cluster!;
  try {
    const client = new CohortClient({
      bootstrap: c.nodeIds().map((id) => c.node(id).target),
      clientId: 'locked-down-etcd',
    });
    clients.push(client);
    const admin = client.admin({ requestTimeoutMs: 10_000 });
    await waitFor('both nodes to be live', 30_000, async () =>
      (await admin.metadata()).brokers.length === 2 ? true : undefined,
    );

    /** Creates `topic` (2 partitions, both nodes), produces four records and reads them with a new group. */
    const roundTrip = async (topic: string): Promise<void> => {
      await c.createTopic(topic, 2, 2);
      await waitFor(`${topic} to be led with both replicas in sync`, 30_000, async () => {
        const [described] = await admin.describeTopics([topic]);
        return described?.partitions.length === 2 &&
          described.partitions.every((p) => p.leaderId >= 0 && p.isr.length === 2)
          ? true
          : undefined;
      });
      const producer = client.producer({ acks: -1, lingerMs: 0 });
      const acked: RecordMetadata[] = [];
      for (const [partition, value] of [
        [0, 'a'],
        [1, 'b'],
        [0, 'c'],
        [1, 'd'],
      ] as const) {
        acked.push(await producer.send({ topic, partition, value: `${topic}-${value}` }));
      }
      const seen = new Map<string, string>();
      const consumer = client.consumer({
        groupId: `${topic}-readers`,
        topics: [topic],
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
      await consumer.close();
      expect(acked.map((m) => seen.get(`${m.partition}@${m.offset}`))).toEqual(
        ['a', 'b', 'c', 'd'].map((value) => `${topic}-${value}`),
      );
    };

    await roundTrip('orders');
    for (const nodeId of c.nodeIds()) {
      const lines = c.node(nodeId).process?.lines ?? [];
      const listening = lines.find((line) => typeof line !== 'string' && line.msg === 'cohort listening');
      expect(listening).toMatchObject({ etcdTls: true, etcdUser: 'cohort' });
      expect([nodeId, messagesOf(c, nodeId).includes('authenticated to etcd')]).toEqual([nodeId, true]);
    }

    await new Promise((resolve) => setTimeout(resolve, TOKEN_EXPIRY_MS));
    await roundTrip('refunds');
    // The writes that topic took found expired tokens, and the nodes that made them authenticated again.
    const renewed = c
      .nodeIds()
      .filter((nodeId) => messagesOf(c, nodeId).includes('etcd refused the last token: authenticated again'));
    expect(renewed.length).toBeGreaterThan(0);
  } catch (error) {
    process.stderr.write(`${c.describeNodes(60)}\n`);
    throw error;
  }
});
