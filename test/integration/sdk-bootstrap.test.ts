import { ClusterTransport } from '../../src/client';
import { CohortClient, startServer, type EmbeddedServer } from '../../src';

/**
 * The SDK's cluster routing against a real single-node server: a bootstrap list whose first node is down,
 * the group's coordinator found with FindCoordinator, and records produced to and fetched from the
 * partition leaders Metadata names. Waits for records, never for durations.
 */

let server: EmbeddedServer;
const clients: CohortClient[] = [];

beforeEach(async () => {
  server = await startServer({ groupInitialRebalanceDelayMs: 0 });
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await server.close();
});

/** An address nothing listens on: port 1 on loopback refuses at once. */
const DEAD = '127.0.0.1:1';

it('starts from a bootstrap list whose first node is down, and finds the group coordinator', async () => {
  const client = new CohortClient({ bootstrap: [DEAD, server.address], clientId: 'bootstrap' });
  clients.push(client);
  await client.waitForServer(5_000);
  const [created] = await client.admin().createTopics([{ name: 'boot', numPartitions: 2 }]);
  expect(created.error).toBeNull();
  const producer = client.producer({ acks: -1 });
  await producer.send({ topic: 'boot', partition: 0, value: 'a' });
  await producer.send({ topic: 'boot', partition: 1, value: 'b' });

  const seen: string[] = [];
  const consumer = client.consumer({
    groupId: 'boot-group',
    topics: ['boot'],
    autoOffsetReset: 'earliest',
    heartbeatIntervalMs: 100,
    maxWaitMs: 100,
  });
  const done = new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(String(message.value));
        if (seen.length === 2) resolve();
      },
    });
  });
  await done;
  expect(seen.sort()).toEqual(['a', 'b']);

  const transport = client.transport as ClusterTransport;
  // FindCoordinator answered with the node's id (an UNIMPLEMENTED fallback would be -1), and the one-node
  // Metadata is reached where the client reached it.
  expect(transport.cachedCoordinator('boot-group')).toEqual({ nodeId: 0, address: server.address });
  expect(transport.leaders.leaderOf('boot', 1)).toMatchObject({
    kind: 'leader',
    leader: { address: server.address },
  });
  const [group] = await client.admin().describeGroups(['boot-group']);
  expect(group.state).toBe('Stable');
});
