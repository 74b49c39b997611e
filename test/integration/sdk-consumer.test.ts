import {
  CohortClient,
  COOPERATIVE_STICKY_ASSIGNOR,
  GrpcTransport,
  RANGE_ASSIGNOR,
  startServer,
  type ClientTransport,
  type Consumer,
  type ConsumerOptions,
  type EmbeddedServer,
  type PartitionAssignor,
  type ProduceRequest,
  type RecordMetadata,
} from '../../src';
import { Kafka, logLevel } from 'kafkajs';

/**
 * Consumers and producers of the SDK against a real server on 127.0.0.1 (real clock, no initial rebalance
 * delay). Tests wait for records and group states, never for durations.
 */

let server: EmbeddedServer;
const clients: CohortClient[] = [];
let counter = 0;

beforeEach(async () => {
  server = await startServer({ groupInitialRebalanceDelayMs: 0 });
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await server.close();
});

function newClient(clientId: string, transport?: ClientTransport): CohortClient {
  const client = new CohortClient({ address: server.address, clientId, ...(transport ? { transport } : {}) });
  clients.push(client);
  return client;
}

function unique(name: string): string {
  return `${name}-${process.pid}-${++counter}`;
}

/** Member settings for quick rebalances on a real clock. */
const QUICK: Partial<ConsumerOptions> = {
  sessionTimeoutMs: 10_000,
  heartbeatIntervalMs: 100,
  rebalanceTimeoutMs: 10_000,
  autoCommitIntervalMs: 200,
  maxWaitMs: 200,
  retryBackoffMs: 20,
  retryBackoffMaxMs: 100,
  autoOffsetReset: 'earliest',
};

/**
 * Resolves once `check` holds, checking every 10 ms. Rejects after 20 s, well inside the test timeout, so a
 * failing test stops polling and jest can exit.
 */
async function until(check: () => boolean | Promise<boolean>, what = 'the condition'): Promise<void> {
  const deadlineMs = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadlineMs) throw new Error(`${what} did not come about within 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function createTopic(name: string, numPartitions: number): Promise<void> {
  const [result] = await newClient('admin').admin().createTopics([{ name, numPartitions }]);
  expect(result.error).toBeNull();
}

describe('consumers and producers against a real server', () => {
  it.each<[string, PartitionAssignor]>([
    ['cooperative-sticky', COOPERATIVE_STICKY_ASSIGNOR],
    ['range (eager)', RANGE_ASSIGNOR],
  ])(
    'a group of three consumes every record exactly once across rebalances with commits (%s)',
    async (_name, assignor) => {
      const topic = unique('ledger');
      const groupId = unique('billing');
      await createTopic(topic, 6);
      const producer = newClient('producer').producer({ acks: -1, lingerMs: 2 });
      const produced = new Set<string>();
      const produce = async (from: number, count: number): Promise<void> => {
        const sends: Promise<RecordMetadata>[] = [];
        for (let i = from; i < from + count; i++)
          sends.push(producer.send({ topic, key: `k${i}`, value: `v${i}` }));
        for (const m of await Promise.all(sends)) produced.add(`${m.partition}:${m.offset}`);
      };

      const consumed = new Map<string, number>();
      const byConsumer = new Map<string, number>();
      const start = (name: string): Consumer => {
        const consumer = newClient(name).consumer({
          groupId,
          topics: [topic],
          protocols: [assignor],
          ...QUICK,
        });
        void consumer.run({
          eachMessage: async ({ partition, message }) => {
            const key = `${partition}:${message.offset}`;
            consumed.set(key, (consumed.get(key) ?? 0) + 1);
            byConsumer.set(name, (byConsumer.get(name) ?? 0) + 1);
          },
        });
        return consumer;
      };

      const a = start('a');
      await produce(0, 100);
      await until(() => consumed.size >= 50, 'A consuming');
      // Two more members: A gives partitions up (committing first) while records keep arriving.
      const b = start('b');
      const c = start('c');
      await produce(100, 100);
      await until(() => [a, b, c].every((x) => x.assignment().length === 2), 'two partitions each');
      await produce(200, 100);
      await until(
        () => (byConsumer.get('b') ?? 0) > 0 && (byConsumer.get('c') ?? 0) > 0,
        'B and C consuming',
      );
      // B leaves in the middle of the stream: its partitions move to A and C from B's last commit.
      await Promise.all([b.close(), produce(300, 150)]);
      await until(() => consumed.size === produced.size, 'every record consumed');

      expect(produced.size).toBe(450);
      const duplicates = [...consumed].filter(([, n]) => n !== 1);
      expect(duplicates).toEqual([]);
      expect([...consumed.keys()].sort()).toEqual([...produced].sort());

      // Every partition's commit reaches its high watermark: nothing is left to consume.
      const admin = newClient('admin').admin();
      await until(async () => {
        const group = await admin.describeConsumerGroup(groupId);
        return group.partitions.length === 6 && group.partitions.every((p) => p.lag === 0n);
      }, 'lag 0 on every partition');
      const group = await admin.describeConsumerGroup(groupId);
      expect(group.members).toHaveLength(2);
      expect(group.state).toBe('Stable');
    },
  );

  it('pause holds a partition back while the others flow; resume hands over what waited', async () => {
    const topic = unique('paused');
    await createTopic(topic, 2);
    const producer = newClient('producer').producer({ acks: -1, lingerMs: 0 });
    const consumer = newClient('consumer').consumer({
      groupId: unique('pausing'),
      topics: [topic],
      ...QUICK,
    });
    const seen: string[] = [];
    void consumer.run({
      eachMessage: async ({ partition, message }) => void seen.push(`${partition}:${message.value}`),
    });
    await until(
      () => [0, 1].every((partition) => consumer.position({ topic, partition }) !== null),
      'positions on both partitions',
    );

    consumer.pause([{ topic, partition: 0 }]);
    // Partition 0's record is committed to the log before partition 1's: a Fetch that saw the second
    // would have seen the first, had partition 0 been fetched.
    await producer.send({ topic, partition: 0, value: 'held' });
    await producer.send({ topic, partition: 1, value: 'flowing' });
    await until(() => seen.length > 0);
    expect(seen).toEqual(['1:flowing']);

    consumer.resume([{ topic, partition: 0 }]);
    await until(() => seen.length === 2);
    expect(seen).toEqual(['1:flowing', '0:held']);
  });

  it('a producer with acks=-1 on a single node gets every record acknowledged in order, in few requests', async () => {
    const topic = unique('acks-all');
    await createTopic(topic, 3);
    const grpc = new GrpcTransport({ address: server.address });
    const requests: ProduceRequest[] = [];
    const observed: ClientTransport = Object.assign(Object.create(grpc) as GrpcTransport, {
      produce: (request: ProduceRequest, options: Parameters<GrpcTransport['produce']>[1]) => {
        requests.push(request);
        return grpc.produce(request, options);
      },
      close: () => grpc.close(),
    });
    const client = newClient('producer', observed);
    const producer = client.producer({ acks: -1, lingerMs: 20 });
    const sends = Array.from({ length: 60 }, (_, i) =>
      producer.send({ topic, key: `customer-${i % 7}`, value: `order-${i}` }),
    );
    const metadata = await Promise.all(sends);

    expect(requests.every((r) => r.acks === -1)).toBe(true);
    expect(requests.length).toBeLessThan(10); // 60 records lingered into batches
    // Per partition, offsets 0..n-1 in the order the records were sent.
    for (let partition = 0; partition < 3; partition++) {
      const offsets = metadata.filter((m) => m.partition === partition).map((m) => m.offset);
      expect(offsets).toEqual(offsets.map((_, i) => BigInt(i)));
    }
    // Same key, same partition.
    const partitionOfKey = new Map<number, Set<number>>();
    metadata.forEach((m, i) =>
      partitionOfKey.set(i % 7, (partitionOfKey.get(i % 7) ?? new Set()).add(m.partition)),
    );
    expect([...partitionOfKey.values()].every((partitions) => partitions.size === 1)).toBe(true);

    const latest = await client.admin().listOffsets(
      [0, 1, 2].map((partition) => ({ topic, partition })),
      'latest',
    );
    expect(latest.map((o) => o.offset)).toEqual(
      [0, 1, 2].map((p) => BigInt(metadata.filter((m) => m.partition === p).length)),
    );
  });
  it('a null value stays null: the SDK consumer says valueIsNull, a KafkaJS consumer reads null; empty stays empty', async () => {
    const topic = unique('tombstones');
    await createTopic(topic, 1);
    const producer = newClient('producer').producer({ acks: -1 });
    await producer.send({ topic, key: 'deleted', value: null, partition: 0 });
    await producer.send({ topic, key: 'empty', value: '', partition: 0 });
    await producer.send({ topic, key: 'kept', value: 'v', partition: 0 });

    const seen: [string, string, boolean][] = [];
    const consumer = newClient('reader').consumer({ groupId: unique('nulls'), topics: [topic], ...QUICK });
    void consumer.run({
      eachMessage: async ({ message }) => {
        seen.push([String(message.key), message.value.toString(), message.valueIsNull]);
      },
    });
    await until(() => seen.length >= 3, 'three records');
    expect(seen).toEqual([
      ['deleted', '', true],
      ['empty', '', false],
      ['kept', 'v', false],
    ]);

    const kafka = new Kafka({
      clientId: 'nulls',
      brokers: [server.kafkaAddress!],
      logLevel: logLevel.NOTHING,
    });
    const kafkaConsumer = kafka.consumer({ groupId: unique('kafkajs-nulls') });
    const read: [string, string | null][] = [];
    await kafkaConsumer.connect();
    try {
      await kafkaConsumer.subscribe({ topic, fromBeginning: true });
      await kafkaConsumer.run({
        eachMessage: async ({ message }) => {
          read.push([String(message.key), message.value === null ? null : message.value.toString()]);
        },
      });
      await until(() => read.length >= 3, 'KafkaJS reading three records');
    } finally {
      await kafkaConsumer.disconnect();
    }
    expect(read).toEqual([
      ['deleted', null],
      ['empty', ''],
      ['kept', 'v'],
    ]);
  });
});
