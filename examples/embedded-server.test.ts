import { once } from 'node:events';
import {
  CohortClient,
  startServer,
  type AssignedEvent,
  type LostEvent,
  type ManualClockServer,
} from 'cohort';

let server: ManualClockServer;
let client: CohortClient;

beforeEach(async () => {
  server = await startServer({ manualClock: true, groupInitialRebalanceDelayMs: 0 });
  client = new CohortClient({ address: server.address, clientId: 'billing-test' });
});

afterEach(async () => {
  await client.close();
  await server.close(); // jest then exits with no open handles
});

it('gets its partitions back after the coordinator expired its session', async () => {
  const member = client.join({
    groupId: 'billing',
    topics: ['orders'],
    partitionsPerTopic: new Map([['orders', 3]]),
    sessionTimeoutMs: 10_000,
    heartbeatIntervalMs: 100,
  });
  const [first] = (await once(member, 'assigned')) as [AssignedEvent];
  expect(first.partitions).toHaveLength(3);

  const lost = once(member, 'lost');
  const reassigned = once(member, 'assigned');
  await server.advanceClock(10_000); // the session ends on the server; the next heartbeat learns it
  const [event] = (await lost) as [LostEvent];
  expect(event.reason).toBe('unknown-member');
  const [second] = (await reassigned) as [AssignedEvent];
  expect(second.generationId).toBeGreaterThan(first.generationId);
});
