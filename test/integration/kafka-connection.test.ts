import { createConnection, type Socket } from 'node:net';
import { startServer, type EmbeddedServer } from '../../src/server/start-server';
import { RawKafka as RawKafkaConnection } from '../support/raw-kafka';
import {
  ADVERTISED_API_VERSIONS,
  API_VERSIONS,
  CREATE_TOPICS,
  FETCH,
  JOIN_GROUP,
  OFFSET_COMMIT,
  OFFSET_FETCH,
  SYNC_GROUP,
  LIST_OFFSETS,
  METADATA,
  PRODUCE,
} from '../../src/kafka/protocol/kafka-apis';
import { encodeRequest } from '../../src/kafka/protocol/kafka-request';
import type { Struct } from '../../src/kafka/protocol/message-codec';
import { KafkaWriter } from '../../src/kafka/protocol/kafka-writer';
import { decodeKafkaRecordBatches, encodeKafkaRecordBatch } from '../../src/kafka/records/kafka-record-batch';
import { ErrorCode } from '../../src/errors';

/**
 * The Kafka door's framing and ordering, over a raw socket: what a client may send (pipelined requests,
 * any request first, acks=0) and what ends a connection (an unknown key, a frame too large or cut short),
 * with ApiVersions' fallback, Metadata's null-vs-empty lists and Fetch's waiting and ranges.
 */

jest.setTimeout(30_000);

let server: EmbeddedServer;
const sockets: Socket[] = [];

beforeEach(async () => {
  server = await startServer({ groupInitialRebalanceDelayMs: 0, adminListen: '127.0.0.1:0' });
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await server.close();
});

/** A raw Kafka connection to this test's server, ended in afterEach. */
class RawKafka extends RawKafkaConnection {
  constructor() {
    super(server.kafkaAddress!);
    sockets.push(this.socket);
  }
}

/** One series of the admin listener's /metrics, e.g. `cohort_kafka_refused_connections_total{reason="x"}`. */
async function metric(series: string): Promise<number> {
  const text = await (await fetch(`${server.adminUrl!}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

const refusedConnections = (reason: string): Promise<number> =>
  metric(`cohort_kafka_refused_connections_total{reason="${reason}"}`);

const parkedFetches = (): Promise<number> => metric('cohort_purgatory_delayed_operations{purgatory="Fetch"}');

async function eventually(read: () => Promise<number>, expected: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await read()) !== expected) {
    if (Date.now() > deadline) throw new Error(`still ${await read()}, not ${expected}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function createTopic(client: RawKafka, name: string): Promise<void> {
  client.send(CREATE_TOPICS, 3, 900, {
    topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 5_000,
  });
  const { body } = await client.response(CREATE_TOPICS, 3);
  expect(body.topics).toEqual([expect.objectContaining({ name, errorCode: ErrorCode.NONE })]);
}

function produceBody(topic: string, acks: number, values: string[]): Struct {
  return {
    acks,
    timeoutMs: 5_000,
    topicData: [
      {
        name: topic,
        partitionData: [
          {
            index: 0,
            records: encodeKafkaRecordBatch(
              values.map((value, i) => ({
                offset: i,
                key: null,
                value: Buffer.from(value),
                headers: [],
                timestampMs: Date.now(),
              })),
              { baseOffset: 0, partitionLeaderEpoch: -1 },
            ),
          },
        ],
      },
    ],
  };
}

describe('the Kafka door, over a raw connection', () => {
  test('pipelined requests are answered in order, and any request may come first', async () => {
    const client = new RawKafka();
    client.send(METADATA, 1, 1, { topics: [] });
    client.send(API_VERSIONS, 0, 2, {});
    client.send(METADATA, 0, 3, { topics: [] });
    client.send(METADATA, 4, 4, { topics: null, allowAutoTopicCreation: false });
    const first = await client.response(METADATA, 1);
    const second = await client.response(API_VERSIONS, 0);
    const third = await client.response(METADATA, 0);
    const fourth = await client.response(METADATA, 4);
    expect([first, second, third, fourth].map((r) => r.correlationId)).toEqual([1, 2, 3, 4]);
    expect(second.body.apiKeys).toEqual(ADVERTISED_API_VERSIONS);
    // v1 with an empty list: brokers only; every response names this node at its Kafka address.
    const [host, port] = server.kafkaAddress!.split(':');
    expect(first.body).toMatchObject({
      brokers: [{ nodeId: 0, host, port: Number(port) }],
      controllerId: 0,
      topics: [],
    });
  });

  test('frames split across writes, and several in one write, are read whole', async () => {
    const client = new RawKafka();
    const frames = Buffer.concat([
      encodeRequest(API_VERSIONS, 1, 1, 'split', {}),
      encodeRequest(API_VERSIONS, 2, 2, 'split', {}),
      encodeRequest(API_VERSIONS, 0, 3, 'split', {}),
    ]);
    for (let at = 0; at < frames.length; at += 3) {
      client.socket.write(frames.subarray(at, at + 3));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await client.response(API_VERSIONS, 1)).correlationId).toBe(1);
    expect((await client.response(API_VERSIONS, 2)).correlationId).toBe(2);
    expect((await client.response(API_VERSIONS, 0)).correlationId).toBe(3);
  });

  test('each request is timed in cohort_rpc_duration_seconds as service "kafka", by API and error code', async () => {
    const client = new RawKafka();
    client.send(METADATA, 1, 1, { topics: [] });
    await client.response(METADATA, 1);
    client.send(JOIN_GROUP, 4, 2, {
      groupId: 'timed',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: '',
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
    });
    await client.response(JOIN_GROUP, 4);
    const text = await (await fetch(`${server.adminUrl!}/metrics`)).text();
    const count = (method: string, code: string): number =>
      Number(
        text
          .split('\n')
          .find(
            (l) =>
              l.startsWith('cohort_rpc_duration_seconds_count{') &&
              l.includes('service="kafka"') &&
              l.includes(`method="${method}"`) &&
              l.includes(`code="${code}"`),
          )
          ?.split(' ')[1] ?? NaN,
      );
    expect(count('Metadata', 'NONE')).toBe(1);
    expect(count('JoinGroup', 'MEMBER_ID_REQUIRED')).toBe(1);
  });

  test('Metadata v1 auto-creates a named topic; v4 with allowAutoTopicCreation false does not', async () => {
    const client = new RawKafka();
    client.send(METADATA, 4, 1, { topics: [{ name: 'not-created' }], allowAutoTopicCreation: false });
    expect((await client.response(METADATA, 4)).body.topics).toEqual([
      expect.objectContaining({ name: 'not-created', errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }),
    ]);
    client.send(METADATA, 1, 2, { topics: [{ name: 'auto' }] });
    const { body } = await client.response(METADATA, 1);
    expect(body.topics).toEqual([
      expect.objectContaining({
        name: 'auto',
        errorCode: ErrorCode.NONE,
        partitions: [expect.objectContaining({ leaderId: 0 })],
      }),
    ]);
    // v0's empty list is every topic.
    client.send(METADATA, 0, 3, { topics: [] });
    expect(((await client.response(METADATA, 0)).body.topics as Struct[]).map((t) => t.name)).toEqual([
      'auto',
    ]);
  });

  test('an ApiVersions version not served is answered in v0 with UNSUPPORTED_VERSION and the list', async () => {
    const client = new RawKafka();
    client.socket.write(
      new KafkaWriter().int32(12).int16(18).int16(9).int32(77).int16(-1).int16(0).toBuffer(),
    );
    const { correlationId, body } = await client.response(API_VERSIONS, 0);
    expect(correlationId).toBe(77);
    expect(body).toEqual({
      errorCode: ErrorCode.UNSUPPORTED_VERSION,
      apiKeys: ADVERTISED_API_VERSIONS,
      throttleTimeMs: 0,
    });
    client.send(API_VERSIONS, 3, 78, { clientSoftwareName: 'raw', clientSoftwareVersion: '1' });
    expect((await client.response(API_VERSIONS, 3)).body).toMatchObject({
      errorCode: 0,
      apiKeys: ADVERTISED_API_VERSIONS,
    });
  });

  test.each([
    [
      'unsupported',
      'an unknown key',
      new KafkaWriter().int32(10).int16(22).int16(0).int32(1).int16(-1).toBuffer(),
    ],
    [
      'unsupported',
      'an unserved version',
      new KafkaWriter().int32(10).int16(3).int16(9).int32(1).int16(-1).toBuffer(),
    ],
    [
      'oversized',
      'a frame larger than kafkaMaxRequestBytes',
      new KafkaWriter().int32(100 * 1024 * 1024 + 1).toBuffer(),
    ],
    ['oversized', 'a negative size', new KafkaWriter().int32(-5).toBuffer()],
    [
      'malformed',
      'garbage in a served request',
      new KafkaWriter().int32(12).int16(3).int16(1).int32(1).int16(-1).int16(7).toBuffer(),
    ],
  ])('%s: %s ends that connection only', async (reason, _what, bytes) => {
    const bystander = new RawKafka();
    const client = new RawKafka();
    const before = await refusedConnections(reason);
    client.socket.write(bytes);
    await client.closed;
    expect(await refusedConnections(reason)).toBe(before + 1);
    bystander.send(API_VERSIONS, 2, 5, {});
    expect((await bystander.response(API_VERSIONS, 2)).correlationId).toBe(5);
  });

  test('1,000 idle connections are counted, do not keep others from being served, and end at shutdown', async () => {
    const [host, port] = server.kafkaAddress!.split(':');
    const idle = Array.from({ length: 1_000 }, () => {
      const socket = createConnection({ host, port: Number(port) });
      sockets.push(socket);
      socket.on('error', () => undefined);
      return { socket, closed: new Promise<void>((resolve) => socket.once('close', () => resolve())) };
    });
    const client = new RawKafka();
    await eventually(() => metric('cohort_kafka_connections'), 1_001);
    client.send(METADATA, 1, 1, { topics: [] });
    expect((await client.response(METADATA, 1)).correlationId).toBe(1);
    client.socket.destroy();
    await eventually(() => metric('cohort_kafka_connections'), 1_000);
    await server.close();
    await Promise.all(idle.map((i) => i.closed));
  });

  test('a frame cut short by the end of the stream ends the connection, counted as truncated', async () => {
    const client = new RawKafka();
    const before = await refusedConnections('truncated');
    client.socket.end(new KafkaWriter().int32(40).int16(18).toBuffer());
    await client.closed;
    expect(await refusedConnections('truncated')).toBe(before + 1);
  });

  test('a 600 KiB Produce arriving in small writes is read whole', async () => {
    const client = new RawKafka();
    await createTopic(client, 'large');
    const frame = encodeRequest(PRODUCE, 7, 3, 'raw', produceBody('large', 1, ['x'.repeat(600 * 1024)]));
    for (let at = 0; at < frame.length; at += 16 * 1024)
      client.socket.write(frame.subarray(at, at + 16 * 1024));
    const { correlationId, body } = await client.response(PRODUCE, 7);
    expect(correlationId).toBe(3);
    expect(body.responses).toEqual([
      { name: 'large', partitionResponses: [expect.objectContaining({ errorCode: 0, baseOffset: 0 })] },
    ]);
  });

  test('record sets answered by reference reach the client whole, in order, across partitions', async () => {
    const client = new RawKafka();
    client.send(CREATE_TOPICS, 3, 1, {
      topics: [{ name: 'views', numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 5_000,
    });
    await client.response(CREATE_TOPICS, 3);
    // Above the 16 KiB from which the door writes a record set as the log read it, and one below.
    const values = [['a'.repeat(300 * 1024), 'b'.repeat(40 * 1024)], ['c'.repeat(100)]];
    for (const [partition, partitionValues] of values.entries()) {
      const body = produceBody('views', 1, partitionValues!);
      ((body.topicData as Struct[])[0]!.partitionData as Struct[])[0]!.index = partition;
      client.send(PRODUCE, 7, 2 + partition, body);
      const produced = await client.response(PRODUCE, 7);
      expect(produced.correlationId).toBe(2 + partition);
    }
    const fetchAll = {
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 4 << 20,
      isolationLevel: 0,
      topics: [
        {
          topic: 'views',
          partitions: [0, 1].map((partition) => ({
            partition,
            fetchOffset: 0,
            logStartOffset: -1,
            partitionMaxBytes: 1 << 20,
          })),
        },
      ],
    };
    // Pipelined: the second Fetch and the ApiVersions after it wait for the first answer's chunks.
    client.send(FETCH, 6, 10, fetchAll);
    client.send(FETCH, 4, 11, fetchAll);
    client.send(API_VERSIONS, 2, 12, {});
    for (const [version, correlationId] of [
      [6, 10],
      [4, 11],
    ] as const) {
      const answer = await client.response(FETCH, version);
      expect(answer.correlationId).toBe(correlationId);
      const partitions = (answer.body.responses as Struct[])[0]!.partitions as Struct[];
      const fetched = partitions.map((p) =>
        decodeKafkaRecordBatches(p.records as Buffer).flatMap((b) =>
          b.records.map((r) => r.value!.toString()),
        ),
      );
      expect(fetched).toEqual(values);
    }
    expect((await client.response(API_VERSIONS, 2)).correlationId).toBe(12);
  });

  test('a Produce with acks=0 is not answered; the next request is', async () => {
    const client = new RawKafka();
    await createTopic(client, 'quiet');
    client.send(PRODUCE, 7, 10, produceBody('quiet', 0, ['a']));
    client.send(PRODUCE, 7, 11, produceBody('quiet', 1, ['b']));
    const { correlationId, body } = await client.response(PRODUCE, 7);
    expect(correlationId).toBe(11);
    expect(body.responses).toEqual([
      {
        name: 'quiet',
        partitionResponses: [expect.objectContaining({ index: 0, errorCode: 0, baseOffset: 1 })],
      },
    ]);
  });

  test('a parked Fetch holds later answers until a produce wakes it, and never reads past the high watermark', async () => {
    const client = new RawKafka();
    await createTopic(client, 'waiting');
    const fetchBody = (offset: number, maxWaitMs: number): Struct => ({
      replicaId: -1,
      maxWaitMs,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      topics: [
        {
          topic: 'waiting',
          partitions: [{ partition: 0, fetchOffset: offset, logStartOffset: -1, partitionMaxBytes: 1 << 20 }],
        },
      ],
    });
    client.send(FETCH, 6, 20, fetchBody(0, 20_000));
    client.send(API_VERSIONS, 2, 21, {});
    const producer = new RawKafka();
    await new Promise((resolve) => setTimeout(resolve, 200));
    producer.send(PRODUCE, 7, 1, produceBody('waiting', -1, ['wake']));
    await producer.response(PRODUCE, 7);
    const woken = await client.response(FETCH, 6);
    expect(woken.correlationId).toBe(20);
    const [partition] = (woken.body.responses as Struct[])[0]!.partitions as Struct[];
    expect(partition).toMatchObject({ errorCode: 0, highWatermark: 1, lastStableOffset: 1 });
    expect((partition!.records as Buffer).length).toBeGreaterThan(61);
    expect((await client.response(API_VERSIONS, 2)).correlationId).toBe(21);

    // At the high watermark: nothing after max_wait; past it: OFFSET_OUT_OF_RANGE.
    client.send(FETCH, 6, 22, fetchBody(1, 50));
    const empty = ((await client.response(FETCH, 6)).body.responses as Struct[])[0]!.partitions as Struct[];
    expect(empty[0]).toMatchObject({ errorCode: 0, highWatermark: 1 });
    expect((empty[0]!.records as Buffer | null)?.length ?? 0).toBe(0);
    client.send(FETCH, 6, 23, fetchBody(5, 50));
    const outOfRange = ((await client.response(FETCH, 6)).body.responses as Struct[])[0]!
      .partitions as Struct[];
    expect(outOfRange[0]).toMatchObject({ errorCode: ErrorCode.OFFSET_OUT_OF_RANGE });

    client.send(LIST_OFFSETS, 1, 24, {
      replicaId: -1,
      topics: [
        {
          name: 'waiting',
          partitions: [
            { partitionIndex: 0, timestamp: -1 },
            { partitionIndex: 0, timestamp: -2 },
          ],
        },
      ],
    });
    const listed = ((await client.response(LIST_OFFSETS, 1)).body.topics as Struct[])[0]!
      .partitions as Struct[];
    expect(listed.map((p) => p.offset)).toEqual([1, 0]);
  });

  test('a Fetch parked on a connection that goes away is released', async () => {
    const client = new RawKafka();
    await createTopic(client, 'abandoned');
    client.send(FETCH, 6, 30, {
      replicaId: -1,
      maxWaitMs: 60_000,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      topics: [
        {
          topic: 'abandoned',
          partitions: [{ partition: 0, fetchOffset: 0, logStartOffset: -1, partitionMaxBytes: 1024 }],
        },
      ],
    });
    await eventually(parkedFetches, 1);
    client.socket.destroy();
    await client.closed;
    await eventually(parkedFetches, 0);
  });
});

describe('the Kafka door and its group coordinator, over a raw connection', () => {
  test('JoinGroup v2 (before MEMBER_ID_REQUIRED) joins in one round, with a member id', async () => {
    const client = new RawKafka();
    client.send(JOIN_GROUP, 2, 1, {
      groupId: 'old-client',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: '',
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.from([0, 0]) }],
    });
    const { body } = await client.response(JOIN_GROUP, 2);
    expect(body).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1, protocolName: 'range' });
    expect(body.memberId).not.toBe('');
    expect(body.leader).toBe(body.memberId);
  });

  test('JoinGroup v4 is told MEMBER_ID_REQUIRED first, as Kafka tells it', async () => {
    const client = new RawKafka();
    client.send(JOIN_GROUP, 4, 1, {
      groupId: 'new-client',
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: '',
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.from([0, 0]) }],
    });
    const { body } = await client.response(JOIN_GROUP, 4);
    expect(body.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    expect(body.memberId).not.toBe('');
  });

  test('OffsetFetch tells null topics (every committed partition) from an empty list (none)', async () => {
    const client = new RawKafka();
    await createTopic(client, 'committed');
    client.send(OFFSET_COMMIT, 2, 1, {
      groupId: 'offsets-only',
      generationId: -1,
      memberId: '',
      retentionTimeMs: -1,
      topics: [
        {
          name: 'committed',
          partitions: [{ partitionIndex: 0, committedOffset: 5, committedMetadata: null }],
        },
      ],
    });
    expect((await client.response(OFFSET_COMMIT, 2)).body.topics).toEqual([
      { name: 'committed', partitions: [{ partitionIndex: 0, errorCode: ErrorCode.NONE }] },
    ]);
    client.send(OFFSET_FETCH, 5, 2, { groupId: 'offsets-only', topics: null });
    expect((await client.response(OFFSET_FETCH, 5)).body.topics).toEqual([
      {
        name: 'committed',
        partitions: [expect.objectContaining({ partitionIndex: 0, committedOffset: 5, errorCode: 0 })],
      },
    ]);
    client.send(OFFSET_FETCH, 5, 3, { groupId: 'offsets-only', topics: [] });
    expect((await client.response(OFFSET_FETCH, 5)).body).toMatchObject({ errorCode: 0, topics: [] });
    client.send(OFFSET_FETCH, 1, 4, {
      groupId: 'unknown-group',
      topics: [{ name: 'committed', partitionIndexes: [0] }],
    });
    expect((await client.response(OFFSET_FETCH, 1)).body.topics).toEqual([
      { name: 'committed', partitions: [expect.objectContaining({ committedOffset: -1, errorCode: 0 })] },
    ]);
  });

  test('a JoinGroup parked on a connection that goes away is released at once', async () => {
    const join = async (client: RawKafka, memberId: string, correlationId: number): Promise<Struct> => {
      client.send(JOIN_GROUP, 5, correlationId, {
        groupId: 'parked-join',
        sessionTimeoutMs: 30_000,
        rebalanceTimeoutMs: 30_000,
        memberId,
        groupInstanceId: null,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
      });
      return (await client.response(JOIN_GROUP, 5)).body;
    };
    const leader = new RawKafka();
    const leaderId = (await join(leader, '', 1)).memberId as string;
    expect(await join(leader, leaderId, 2)).toMatchObject({
      errorCode: 0,
      generationId: 1,
      leader: leaderId,
    });
    leader.send(SYNC_GROUP, 3, 3, {
      groupId: 'parked-join',
      generationId: 1,
      memberId: leaderId,
      groupInstanceId: null,
      assignments: [{ memberId: leaderId, assignment: Buffer.alloc(0) }],
    });
    expect((await leader.response(SYNC_GROUP, 3)).body.errorCode).toBe(0);

    // A second member's join waits for the leader to rejoin (up to its 30 s rebalance timeout).
    const second = new RawKafka();
    const secondId = (await join(second, '', 1)).memberId as string;
    second.send(JOIN_GROUP, 5, 2, {
      groupId: 'parked-join',
      sessionTimeoutMs: 30_000,
      rebalanceTimeoutMs: 30_000,
      memberId: secondId,
      groupInstanceId: null,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
    });
    const cancelledJoins = (): Promise<number> =>
      metric('cohort_rpc_duration_seconds_count{service="kafka",method="JoinGroup",code="CANCELLED"}');
    await new Promise((resolve) => setTimeout(resolve, 200));
    second.socket.destroy();
    await eventually(async () => (await cancelledJoins()) || 0, 1);
  });

  test('a Produce with two batches for one partition is refused as INVALID_RECORD', async () => {
    const client = new RawKafka();
    await createTopic(client, 'two-batches');
    const body = produceBody('two-batches', 1, ['a']);
    const partition = ((body.topicData as Struct[])[0]!.partitionData as Struct[])[0]!;
    partition.records = Buffer.concat([partition.records as Buffer, partition.records as Buffer]);
    client.send(PRODUCE, 7, 2, body);
    const { body: answer } = await client.response(PRODUCE, 7);
    expect(answer.responses).toEqual([
      {
        name: 'two-batches',
        partitionResponses: [expect.objectContaining({ errorCode: ErrorCode.INVALID_RECORD })],
      },
    ]);
  });
});

describe('the Kafka listener at start-up', () => {
  test('a Kafka port already taken fails the start, naming the flag that moves it', async () => {
    await expect(startServer({ kafkaListen: server.kafkaAddress! })).rejects.toThrow(
      /the Kafka listener cannot listen on 127\.0\.0\.1:\d+ \(EADDRINUSE\): set --kafka-listen \(COHORT_KAFKA_LISTEN\)/,
    );
  });

  test("'off' starts no Kafka listener", async () => {
    const quiet = await startServer({ kafkaListen: 'off' });
    try {
      expect(quiet.kafkaAddress).toBeUndefined();
    } finally {
      await quiet.close();
    }
  });
});

describe('idle Kafka connections', () => {
  test('one stalled halfway through a frame, or silent, is closed past the idle limit on the server clock; one with a parked Fetch is not', async () => {
    const clocked = await startServer({
      manualClock: true,
      adminListen: '127.0.0.1:0',
      kafkaConnectionsMaxIdleMs: 1_000,
    });
    const [host, port] = clocked.kafkaAddress!.split(':');
    const connect = (): { socket: Socket; closed: Promise<void> } => {
      const socket = createConnection({ host, port: Number(port) });
      sockets.push(socket);
      socket.on('error', () => undefined);
      return { socket, closed: new Promise((resolve) => socket.once('close', () => resolve())) };
    };
    const idleRefusals = async (): Promise<number> => {
      const text = await (await fetch(`${clocked.adminUrl!}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('cohort_kafka_refused_connections_total{reason="idle"} '));
      return Number(line?.split(' ')[1] ?? 0);
    };
    try {
      // A client that sends half a request and stalls, and one that never sends anything.
      const stalled = connect();
      stalled.socket.write(encodeRequest(API_VERSIONS, 2, 1, 'stalls', {}).subarray(0, 6));
      const silent = connect();
      // One with a Fetch parked for 5 s of the server's clock on an empty topic.
      const parked = connect();
      const answers: Buffer[] = [];
      parked.socket.on('data', (chunk: Buffer) => answers.push(chunk));
      parked.socket.write(
        encodeRequest(CREATE_TOPICS, 3, 1, 'parks', {
          topics: [
            { name: 'idle-topic', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
          ],
          timeoutMs: 5_000,
        }),
      );
      await waitFor(() => answers.length === 1, 'the topic to be created');
      parked.socket.write(
        encodeRequest(FETCH, 4, 2, 'parks', {
          replicaId: -1,
          maxWaitMs: 5_000,
          minBytes: 1,
          maxBytes: 1 << 20,
          isolationLevel: 0,
          topics: [
            {
              topic: 'idle-topic',
              partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }],
            },
          ],
        }),
      );
      await waitFor(async () => (await clockedParkedFetches(clocked.adminUrl!)) === 1, 'the Fetch to park');

      await clocked.advanceClock(1_500);
      await Promise.all([stalled.closed, silent.closed]);
      expect(await idleRefusals()).toBe(2);
      expect(parked.socket.destroyed).toBe(false);

      // The long poll ends on the server's clock and is answered on its connection, which lives on.
      await clocked.advanceClock(4_000);
      await waitFor(() => answers.length === 2, 'the parked Fetch to be answered');
      expect(parked.socket.destroyed).toBe(false);
    } finally {
      await clocked.close();
    }
  });
});

async function clockedParkedFetches(adminUrl: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('cohort_purgatory_delayed_operations{purgatory="Fetch"} '));
  return Number(line?.split(' ')[1] ?? NaN);
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
