import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { startServer, type ManualClockServer } from 'cohort';

const SESSION_TIMEOUT_MS = 30_000;
let server: ManualClockServer;
let kafka: Kafka;
const consumers: Consumer[] = [];
let releaseStuckHandler = (): void => undefined;

beforeEach(async () => {
  // 'running': the clock follows wall time, so KafkaJS's long polls end; advanceClock jumps it ahead.
  server = await startServer({ manualClock: 'running', groupInitialRebalanceDelayMs: 0 });
  kafka = new Kafka({
    clientId: 'billing-test',
    brokers: [server.kafkaAddress!],
    logLevel: logLevel.NOTHING,
  });
});

afterEach(async () => {
  releaseStuckHandler();
  for (const consumer of consumers.splice(0)) await consumer.disconnect();
  await server.close();
});

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}

it("hands a stuck consumer's partitions to the other once its session is over", async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 2 }] });
  await admin.disconnect();

  const held = new Map<string, number[]>();
  let heartbeats = 0;
  const member = async (name: string, eachMessage: () => Promise<void>): Promise<Consumer> => {
    const consumer = kafka.consumer({
      groupId: 'billing',
      sessionTimeout: SESSION_TIMEOUT_MS,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
    });
    consumers.push(consumer);
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      held.set(name, payload.memberAssignment['orders'] ?? []);
    });
    if (name === 'healthy') consumer.on(consumer.events.HEARTBEAT, () => void heartbeats++);
    await consumer.connect();
    await consumer.subscribe({ topic: 'orders', fromBeginning: true });
    await consumer.run({ eachMessage });
    return consumer;
  };
  // A handler that never returns: KafkaJS stops heartbeating for that consumer.
  const stuck = new Promise<void>((resolve) => (releaseStuckHandler = resolve));
  await member('stuck', () => stuck);
  await member('healthy', async () => undefined);
  await until(() => held.get('stuck')?.length === 1 && held.get('healthy')?.length === 1);

  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic: 'orders',
    messages: [{ partition: held.get('stuck')![0], value: 'order-1' }],
  });
  await producer.disconnect();

  // Two jumps, each shorter than the session, with a heartbeat of the healthy consumer in between: only
  // the stuck one, silent since its message, is past its session after the second.
  await server.advanceClock(SESSION_TIMEOUT_MS - 10_000);
  const seen = heartbeats;
  await until(() => heartbeats > seen);
  await server.advanceClock(SESSION_TIMEOUT_MS - 10_000);
  await until(() => held.get('healthy')?.length === 2); // within a second, not after 30 s
}, 30_000);
