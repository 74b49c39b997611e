import { CohortClient, ManualTime, startServer, type ManualClockServer } from '../../src';
import { nextEvent } from './sdk-harness';

/**
 * A `CohortClient` whose members run on a ManualTime, talking gRPC to a real server: what users do to drive
 * heartbeats and session timers by hand in their own tests.
 */

const TOPIC = 'clicks';
const partitionsPerTopic = new Map([[TOPIC, 2]]);

let server: ManualClockServer;
let client: CohortClient | undefined;
let groupCounter = 0;

beforeEach(async () => {
  server = await startServer({ manualClock: true, groupInitialRebalanceDelayMs: 0 });
});

afterEach(async () => {
  await client?.close();
  client = undefined;
  await server.close();
});

describe('a client on a manual clock', () => {
  it('joins, commits and fetches over real gRPC while its clock stands still', async () => {
    // Regression: the client once turned call timeouts into gRPC deadlines on the ManualTime's wall clock,
    // which lies in the past, so every call expired before it was sent and the member never joined.
    client = new CohortClient({ address: server.address, clientId: 'manual', time: new ManualTime() });
    const member = client.join({
      groupId: `sdk-manual-${++groupCounter}`,
      topics: [TOPIC],
      partitionsPerTopic,
    });
    const assigned = await nextEvent(member, 'assigned');
    expect(assigned).toMatchObject({ generationId: 1, isLeader: true });
    expect(assigned.partitions).toHaveLength(2);
    await member.commitOffsets([{ topic: TOPIC, partition: 1, offset: 7n }]);
    expect(await member.fetchOffsets([{ topic: TOPIC, partition: 1 }])).toEqual([
      { topic: TOPIC, partition: 1, offset: 7n, metadata: '' },
    ]);
  });

  it('reports session-expired when its clock jumps past the session timeout, and rejoins under the same member id', async () => {
    const time = new ManualTime();
    client = new CohortClient({ address: server.address, clientId: 'manual', time });
    const member = client.join({
      groupId: `sdk-manual-${++groupCounter}`,
      topics: [TOPIC],
      partitionsPerTopic,
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 3_000,
    });
    const first = await nextEvent(member, 'assigned');

    // The jump runs the heartbeat due at 3 s and the session timer at 10 s before any answer can arrive.
    const lost = nextEvent(member, 'lost');
    const reassigned = nextEvent(member, 'assigned');
    time.advance(10_000);
    expect(await lost).toMatchObject({ reason: 'session-expired', generationId: first.generationId });
    expect(await reassigned).toMatchObject({
      memberId: first.memberId,
      generationId: first.generationId + 1,
      partitions: first.partitions,
    });
  });
});
