import { randomBytes } from 'node:crypto';
import { ErrorCode } from '../../src/errors';
import {
  API_VERSIONS,
  CREATE_TOPICS,
  DESCRIBE_GROUPS,
  FETCH,
  METADATA,
  OFFSET_COMMIT,
  OFFSET_FETCH,
  PRODUCE,
} from '../../src/kafka/protocol/kafka-apis';
import type { Struct } from '../../src/kafka/protocol/message-codec';
import { encodeRequest } from '../../src/kafka/protocol/kafka-request';
import { CompressionCodec } from '../../src/kafka/records/compression';
import { encodeKafkaRecordBatch } from '../../src/kafka/records/kafka-record-batch';
import { FakeGroupCoordinator } from '../support/fake-group-coordinator';
import { RawKafka } from '../support/raw-kafka';
import { startTestServer, type TestServer } from '../support/start-test-server';

/**
 * Where the Kafka door must answer as Apache Kafka's broker answers, over a raw connection: the error
 * answers clients act on (group-level errors of old versions, refused batches), and what keeps a
 * connection open or closes it.
 */

jest.setTimeout(30_000);

let t: TestServer | undefined;
const clients: RawKafka[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  await t?.close();
  t = undefined;
});

function connect(server: TestServer): RawKafka {
  const client = new RawKafka(server.kafkaAddress!);
  clients.push(client);
  return client;
}

async function createTopic(client: RawKafka, name: string, numPartitions = 1): Promise<void> {
  client.send(CREATE_TOPICS, 3, 900, {
    topics: [{ name, numPartitions, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 5_000,
  });
  const { body } = await client.response(CREATE_TOPICS, 3);
  expect(body.topics).toEqual([expect.objectContaining({ name, errorCode: ErrorCode.NONE })]);
}

/** One record batch of `values`, as a producer sends it. */
function batch(values: readonly Buffer[], compression: CompressionCodec = CompressionCodec.NONE): Buffer {
  return encodeKafkaRecordBatch(
    values.map((value, i) => ({ offset: i, key: null, value, headers: [], timestampMs: 1_700_000_000_000 })),
    { baseOffset: 0, partitionLeaderEpoch: -1, compression },
  );
}

/** A Produce of one topic, one batch per partition index. */
function produceBody(topic: string, acks: number, batches: readonly Buffer[]): Struct {
  return {
    acks,
    timeoutMs: 5_000,
    topicData: [{ name: topic, partitionData: batches.map((records, index) => ({ index, records })) }],
  };
}

const partitionErrors = (body: Struct): number[] =>
  ((body.responses as Struct[])[0]!.partitionResponses as Struct[]).map((p) => p.errorCode as number);

describe('OffsetFetch with a group-level error', () => {
  test.each([
    ['COORDINATOR_LOAD_IN_PROGRESS', ErrorCode.COORDINATOR_LOAD_IN_PROGRESS],
    ['NOT_COORDINATOR', ErrorCode.NOT_COORDINATOR],
    ['COORDINATOR_NOT_AVAILABLE', ErrorCode.COORDINATOR_NOT_AVAILABLE],
  ])('v1 puts %s on every requested partition, with offset -1', async (_name, code) => {
    // As the coordinator answers for a group whose shard is loading, moved or gone: no partitions.
    t = await startTestServer(
      {},
      {
        coordinatorFactory: () =>
          new FakeGroupCoordinator({ offsetFetch: async () => ({ errorCode: code, topics: [] }) }),
      },
    );
    const client = connect(t);
    const topics = [
      { name: 'orders', partitionIndexes: [0, 2] },
      { name: 'payments', partitionIndexes: [1] },
    ];
    client.send(OFFSET_FETCH, 1, 1, { groupId: 'restarted', topics });
    const partition = (partitionIndex: number): object => ({
      partitionIndex,
      committedOffset: -1,
      committedLeaderEpoch: -1, // not in v1: the decoder's default
      metadata: '',
      errorCode: code,
    });
    expect((await client.response(OFFSET_FETCH, 1)).body.topics).toEqual([
      { name: 'orders', partitions: [partition(0), partition(2)] },
      { name: 'payments', partitions: [partition(1)] },
    ]);
    // From v2 the code has a field of its own, and no partition is answered.
    client.send(OFFSET_FETCH, 2, 2, { groupId: 'restarted', topics });
    expect((await client.response(OFFSET_FETCH, 2)).body).toMatchObject({ errorCode: code, topics: [] });
  });
});

describe('request and batch sizes', () => {
  test('a request over the gRPC limit is read; its batch over the log limit is MESSAGE_TOO_LARGE, the connection stays', async () => {
    t = await startTestServer();
    const client = connect(t);
    await createTopic(client, 'sizes', 2);
    // 4.5 MiB: more than --max-message-bytes (the gRPC door's 4 MiB), within --kafka-max-request-bytes.
    const oversize = batch([randomBytes(4.5 * 1024 * 1024)]);
    client.send(PRODUCE, 7, 1, produceBody('sizes', 1, [oversize, batch([Buffer.from('small')])]));
    const { correlationId, body } = await client.response(PRODUCE, 7);
    expect(correlationId).toBe(1);
    expect(partitionErrors(body)).toEqual([ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.NONE]);
    client.send(API_VERSIONS, 2, 2, {});
    expect((await client.response(API_VERSIONS, 2)).correlationId).toBe(2);
  });

  test('a batch is measured as sent: compressed within the limit is taken, whatever it decompresses to', async () => {
    t = await startTestServer();
    const client = connect(t);
    await createTopic(client, 'compressed');
    // 3 MiB of zeros: a few KiB gzipped.
    const compressed = batch([Buffer.alloc(3 * 1024 * 1024)], CompressionCodec.GZIP);
    expect(compressed.length).toBeLessThan(1024 * 1024);
    client.send(PRODUCE, 7, 1, produceBody('compressed', 1, [compressed]));
    expect(partitionErrors((await client.response(PRODUCE, 7)).body)).toEqual([ErrorCode.NONE]);
  });
});

describe('Produce with acks=0', () => {
  test('a partition refused closes the connection, so that the producer refreshes its metadata', async () => {
    t = await startTestServer({ adminListen: '127.0.0.1:0' });
    const client = connect(t);
    const refusals = async (): Promise<number> => {
      const text = await (await fetch(`${t!.adminUrl!}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('cohort_kafka_refused_connections_total{reason="acks-zero-error"} '));
      return Number(line?.split(' ')[1] ?? NaN);
    };
    expect(await refusals()).toBe(0);
    // Kafka's Produce never creates a topic: this one is UNKNOWN_TOPIC_OR_PARTITION.
    client.send(PRODUCE, 7, 1, produceBody('no-such-topic', 0, [batch([Buffer.from('lost')])]));
    client.send(API_VERSIONS, 2, 2, {});
    expect(await client.next()).toBeUndefined();
    await client.closed;
    expect(await refusals()).toBe(1);
  });

  test('a batch that does not decode closes the connection too', async () => {
    t = await startTestServer();
    const client = connect(t);
    await createTopic(client, 'quiet');
    const broken = Buffer.from(batch([Buffer.from('x')]));
    broken.writeUInt32BE(0, 17); // the CRC
    client.send(PRODUCE, 7, 1, produceBody('quiet', 0, [broken]));
    client.send(API_VERSIONS, 2, 2, {});
    expect(await client.next()).toBeUndefined();
  });
});

describe('a client that does not read', () => {
  test('its pipelined Fetches wait for it, other connections are served, and every answer comes in order', async () => {
    t = await startTestServer();
    const producer = connect(t);
    await createTopic(producer, 'wide');
    producer.send(PRODUCE, 7, 1, produceBody('wide', 1, [batch([randomBytes(512 * 1024)])]));
    expect(partitionErrors((await producer.response(PRODUCE, 7)).body)).toEqual([ErrorCode.NONE]);

    // 32 answers of 512 KiB each: more than the sockets' buffers hold, so the server must wait for the
    // client rather than keep them all.
    const client = connect(t);
    client.socket.pause();
    const fetches = 32;
    for (let id = 1; id <= fetches; id++) {
      client.send(FETCH, 6, id, {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        isolationLevel: 0,
        topics: [
          {
            topic: 'wide',
            partitions: [{ partition: 0, fetchOffset: 0, logStartOffset: -1, partitionMaxBytes: 1 << 20 }],
          },
        ],
      });
    }
    producer.send(API_VERSIONS, 2, 2, {});
    expect((await producer.response(API_VERSIONS, 2)).correlationId).toBe(2);

    client.socket.resume();
    for (let id = 1; id <= fetches; id++) {
      const { correlationId, body } = await client.response(FETCH, 6);
      expect(correlationId).toBe(id);
      const [partition] = (body.responses as Struct[])[0]!.partitions as Struct[];
      expect((partition!.records as Buffer).length).toBeGreaterThan(512 * 1024);
    }
  });
});

describe('a request whose handler fails', () => {
  test('is answered on each requested partition or group, and the connection stays', async () => {
    t = await startTestServer(
      {},
      {
        coordinatorFactory: () =>
          new FakeGroupCoordinator({
            offsetCommit: async () => {
              throw new Error('offsets of group g-7 are corrupt');
            },
            describeGroups: async () => {
              throw new Error('members map of group g-7 is corrupt');
            },
          }),
      },
    );
    const client = connect(t);
    client.send(OFFSET_COMMIT, 2, 1, {
      groupId: 'g-7',
      generationId: -1,
      memberId: '',
      retentionTimeMs: -1,
      topics: [
        {
          name: 'orders',
          partitions: [
            { partitionIndex: 0, committedOffset: 5, committedMetadata: null },
            { partitionIndex: 1, committedOffset: 7, committedMetadata: null },
          ],
        },
      ],
    });
    expect((await client.response(OFFSET_COMMIT, 2)).body.topics).toEqual([
      {
        name: 'orders',
        partitions: [
          { partitionIndex: 0, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR },
          { partitionIndex: 1, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR },
        ],
      },
    ]);
    client.send(DESCRIBE_GROUPS, 1, 2, { groups: ['g-7'] });
    expect((await client.response(DESCRIBE_GROUPS, 1)).body.groups).toEqual([
      expect.objectContaining({ groupId: 'g-7', errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, members: [] }),
    ]);
  });
});

describe('Produce validation', () => {
  test('an empty records field and a batch whose offsets do not match its count are INVALID_RECORD', async () => {
    t = await startTestServer();
    const client = connect(t);
    await createTopic(client, 'checked', 3);
    // Offsets 0 and 2: lastOffsetDelta 2 for two records.
    const gapped = encodeKafkaRecordBatch(
      [0, 2].map((offset) => ({ offset, key: null, value: Buffer.from('v'), headers: [], timestampMs: 1 })),
      { baseOffset: 0, partitionLeaderEpoch: -1 },
    );
    client.send(
      PRODUCE,
      7,
      1,
      produceBody('checked', 1, [Buffer.alloc(0), gapped, batch([Buffer.from('ok')])]),
    );
    expect(partitionErrors((await client.response(PRODUCE, 7)).body)).toEqual([
      ErrorCode.INVALID_RECORD,
      ErrorCode.INVALID_RECORD,
      ErrorCode.NONE,
    ]);
  });

  test('zstd is UNSUPPORTED_COMPRESSION_TYPE before Produce v7, and taken from v7', async () => {
    t = await startTestServer();
    const client = connect(t);
    await createTopic(client, 'zstd');
    const zstd = batch([Buffer.from('compressed')], CompressionCodec.ZSTD);
    client.send(PRODUCE, 6, 1, produceBody('zstd', 1, [zstd]));
    expect(partitionErrors((await client.response(PRODUCE, 6)).body)).toEqual([
      ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    ]);
    client.send(PRODUCE, 7, 2, produceBody('zstd', 1, [zstd]));
    expect(partitionErrors((await client.response(PRODUCE, 7)).body)).toEqual([ErrorCode.NONE]);
  });
});

describe('Metadata', () => {
  test("flags only Kafka's internal topics internal, not every name starting with __", async () => {
    t = await startTestServer();
    const client = connect(t);
    await createTopic(client, '__audit');
    client.send(METADATA, 1, 1, { topics: [{ name: '__audit' }] });
    expect((await client.response(METADATA, 1)).body.topics).toEqual([
      expect.objectContaining({ name: '__audit', errorCode: ErrorCode.NONE, isInternal: false }),
    ]);
  });

  test("bytes after a request body are ignored, as Kafka's parser ignores them", async () => {
    t = await startTestServer();
    const client = connect(t);
    const request = encodeRequest(METADATA, 1, 7, 'padded', { topics: [] });
    const padded = Buffer.concat([request, Buffer.from([0, 0, 0])]);
    padded.writeInt32BE(padded.length - 4, 0);
    client.socket.write(padded);
    const { correlationId, body } = await client.response(METADATA, 1);
    expect(correlationId).toBe(7);
    expect(body.topics).toEqual([]);
  });
});
