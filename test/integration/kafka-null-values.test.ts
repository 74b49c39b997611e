import { Kafka, logLevel } from 'kafkajs';
import { startServer, type EmbeddedServer } from '../../src/server/start-server';
import { brokerClient } from '../support/grpc-clients';
import { ensureKafkaClientPackages } from '../support/kafka-client-packages';
import { KafkaMemberProcess, killKafkaMembers, type KafkaClientKind } from '../support/kafka-member-process';

/**
 * A null value (a Kafka producer's tombstone) stays null end to end: from KafkaJS to librdkafka and
 * kafka-python consumers, to a gRPC consumer (`value_null`), and from a gRPC producer to Kafka consumers;
 * an empty value stays empty on every side.
 */

jest.setTimeout(60_000);

let server: EmbeddedServer;
let kafka: Kafka;
let unique = 0;
const name = (prefix: string): string => `${prefix}-${process.pid}-${++unique}`;

beforeAll(() => ensureKafkaClientPackages('the null-value tests'), 600_000);

beforeEach(async () => {
  server = await startServer({ groupInitialRebalanceDelayMs: 0, groupMinSessionTimeoutMs: 1_000 });
  kafka = new Kafka({ clientId: 'nulls-test', brokers: [server.kafkaAddress!], logLevel: logLevel.NOTHING });
});

afterEach(async () => {
  await killKafkaMembers();
  await server.close();
});

interface GrpcRecord {
  key: Buffer;
  value: Buffer;
  valueNull: boolean;
}

describe('null values across clients and doors', () => {
  test('a null value from KafkaJS is null to librdkafka, kafka-python and gRPC consumers; an empty one is empty', async () => {
    const topic = name('tombstones');
    const producer = kafka.producer();
    await producer.connect();
    try {
      await producer.send({
        topic,
        acks: -1,
        messages: [
          { key: 'deleted', value: null },
          { key: 'empty', value: '' },
          { key: 'kept', value: 'v' },
        ],
      });
    } finally {
      await producer.disconnect();
    }
    const read = async (kind: KafkaClientKind) => {
      const consumer = new KafkaMemberProcess({
        kind,
        bootstrap: server.kafkaAddress!,
        topic,
        groupId: name(kind),
        clientId: `${kind}-reader`,
        sessionTimeoutMs: 30_000,
      });
      return (await consumer.read(3)).map((r) => [r.key, r.value]);
    };
    const expected = [
      ['deleted', null],
      ['empty', ''],
      ['kept', 'v'],
    ];
    const [librdkafka, kafkaPython] = await Promise.all([read('confluent-kafka'), read('kafka-python')]);
    expect(librdkafka).toEqual(expected);
    expect(kafkaPython).toEqual(expected);

    const broker = brokerClient(server.address);
    try {
      const fetched = (await broker.fetch({
        maxWaitMs: 0,
        topics: [{ name: topic, partitions: [{ partitionIndex: 0, fetchOffset: '0' }] }],
      })) as { responses: { partitions: { records: GrpcRecord[] }[] }[] };
      expect(
        fetched.responses[0]!.partitions[0]!.records.map((r) => [
          r.key.toString(),
          r.value.length,
          r.valueNull,
        ]),
      ).toEqual([
        ['deleted', 0, true],
        ['empty', 0, false],
        ['kept', 1, false],
      ]);
    } finally {
      broker.close();
    }
  });

  test('a null value produced over gRPC is null to KafkaJS and kafka-python consumers', async () => {
    const topic = name('from-grpc');
    const broker = brokerClient(server.address);
    try {
      await broker.createTopics({ topics: [{ name: topic, numPartitions: 1, replicationFactor: 1 }] });
      await broker.produce({
        acks: -1,
        timeoutMs: 5_000,
        topics: [
          {
            name: topic,
            partitions: [
              {
                partitionIndex: 0,
                records: [
                  { key: Buffer.from('deleted'), valueNull: true },
                  // A writer that knows nothing of value_null: its empty value stays empty.
                  { key: Buffer.from('empty'), value: Buffer.alloc(0) },
                ],
              },
            ],
          },
        ],
      });
    } finally {
      broker.close();
    }
    const consumers = (['kafkajs', 'kafka-python'] as const).map(
      (kind) =>
        new KafkaMemberProcess({
          kind,
          bootstrap: server.kafkaAddress!,
          topic,
          groupId: name(kind),
          clientId: `${kind}-reader`,
          sessionTimeoutMs: 30_000,
        }),
    );
    for (const consumer of consumers)
      expect((await consumer.read(2)).map((r) => [r.key, r.value])).toEqual([
        ['deleted', null],
        ['empty', ''],
      ]);
  });
});
