import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CompressionTypes, Kafka, logLevel, type Consumer, type EachMessagePayload } from 'kafkajs';
import { startServer, type EmbeddedServer } from '../../src/server/start-server';
import { brokerClient, groupCoordinatorClient } from '../support/grpc-clients';
import { ensureSystemPackages } from '../support/system-packages';

/**
 * Unmodified Kafka clients against cohort's Kafka door: KafkaJS (admin, producer, a consumer group) and
 * kcat (librdkafka), on an embedded server whose Kafka listener is on a free loopback port. The wire trace
 * records which (API, version) each client chose; the same groups and records are seen through gRPC.
 */

jest.setTimeout(60_000);

const KAFKAJS = 'kafkajs-test';
/** Debian's own Python, which has Debian's python3-kafka (kafka-python 2.0.2). */
const PYTHON = '/usr/bin/python3';
let server: EmbeddedServer;
let kafka: Kafka;
const closers: (() => Promise<unknown>)[] = [];
let unique = 0;
const name = (prefix: string): string => `${prefix}-${process.pid}-${++unique}`;

beforeAll(() => {
  ensureSystemPackages('the Kafka door tests (kcat, kafka-python)', [
    { debianPackage: 'kcat', probe: ['kcat', '-V'] },
    { debianPackage: 'python3-kafka', probe: [PYTHON, '-c', 'import kafka'] },
  ]);
});

beforeEach(async () => {
  server = await startServer({
    groupInitialRebalanceDelayMs: 0,
    groupMinSessionTimeoutMs: 1_000,
    kafkaWireTrace: true,
  });
  kafka = new Kafka({ clientId: KAFKAJS, brokers: [server.kafkaAddress!], logLevel: logLevel.NOTHING });
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await server.close();
});

/** The distinct (apiKey, apiVersion) pairs `clientId` used, as `key:version`, sorted by key. */
function pairsUsedBy(clientId: string): string[] {
  const pairs = new Set(
    server.kafkaWireTrace.filter((e) => e.clientId === clientId).map((e) => `${e.apiKey}:${e.apiVersion}`),
  );
  return [...pairs].sort((a, b) => Number(a.split(':')[0]) - Number(b.split(':')[0]) || a.localeCompare(b));
}

async function connected<T extends { connect(): Promise<void>; disconnect(): Promise<void> }>(
  client: T,
): Promise<T> {
  await client.connect();
  closers.push(() => client.disconnect());
  return client;
}

function kcat(
  args: readonly string[],
  input = '',
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // Asynchronous: the server runs in this process and must keep answering while kcat runs.
    const child = execFile(
      'kcat',
      ['-b', server.kafkaAddress!, '-X', 'client.id=kcat-test', ...args],
      { timeout: 30_000, encoding: 'utf8' },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? 1), stdout, stderr }),
    );
    child.stdin!.end(input);
  });
}

interface Received {
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: Record<string, string>;
  readonly timestamp: string;
}

function receiveInto(into: Received[]): (payload: EachMessagePayload) => Promise<void> {
  return async ({ partition, message }) => {
    into.push({
      partition,
      offset: message.offset,
      key: message.key?.toString() ?? null,
      value: message.value?.toString() ?? null,
      headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])),
      timestamp: message.timestamp,
    });
  };
}

/**
 * The layout of each batch in a partition's first segment: 'kafka' for a client's batch kept as it came
 * (byte 12 is the top byte of Kafka's leader epoch, byte 16 its magic), 'cohort' for cohort's own.
 */
function storedLayouts(topic: string, partition: number): string[] {
  const dir = join(server.dataDir, `${topic}-${partition}`);
  const segment = readdirSync(dir).find((file) => file.endsWith('.log'))!;
  const bytes = readFileSync(join(dir, segment));
  const layouts: string[] = [];
  for (let at = 0; at + 12 <= bytes.length; at += 12 + bytes.readInt32BE(at + 8)) {
    const isKafka = (bytes[at + 12] === 0x00 || bytes[at + 12] === 0xff) && bytes[at + 16] === 2;
    layouts.push(isKafka ? 'kafka' : 'cohort');
  }
  return layouts;
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('KafkaJS against the Kafka door', () => {
  test('creates a topic, produces keys, null values and headers with acks 1 and -1, and consumes them all', async () => {
    const topic = name('orders');
    const admin = await connected(kafka.admin());
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] })).toBe(true);
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] })).toBe(false);

    const producer = await connected(kafka.producer({ allowAutoTopicCreation: false }));
    await producer.send({
      topic,
      acks: 1,
      messages: [
        { key: 'k1', value: 'v1', headers: { trace: 'abc' }, partition: 0 },
        { key: 'k2', value: 'v2', partition: 1 },
      ],
    });
    await producer.send({
      topic,
      acks: -1,
      messages: [
        { key: 'k3', value: null, partition: 2 },
        { key: null, value: 'no key', partition: 2, timestamp: '1700000000000' },
      ],
    });

    const consumer: Consumer = await connected(
      kafka.consumer({
        groupId: name('g'),
        sessionTimeout: 6_000,
        heartbeatInterval: 500,
        maxWaitTimeInMs: 200,
      }),
    );
    await consumer.subscribe({ topic, fromBeginning: true });
    const received: Received[] = [];
    await consumer.run({ eachMessage: receiveInto(received) });
    await waitFor(() => received.length === 4, 'four records');

    const byKey = Object.fromEntries(received.map((r) => [r.key ?? '(null)', r]));
    expect(byKey.k1).toMatchObject({ partition: 0, offset: '0', value: 'v1', headers: { trace: 'abc' } });
    expect(byKey.k2).toMatchObject({ partition: 1, offset: '0', value: 'v2', headers: {} });
    // A null value (a tombstone) is read back as null.
    expect(byKey.k3).toMatchObject({ partition: 2, offset: '0', value: null });
    expect(byKey['(null)']).toMatchObject({
      partition: 2,
      offset: '1',
      value: 'no key',
      timestamp: '1700000000000',
    });

    await consumer.stop();
    // KafkaJS's usual batches are kept as they came. Partition 2's is not: KafkaJS took its maxTimestamp
    // from the one record with a timestamp of its own (2023), below the other's (now), and such a batch
    // is decoded and stored in cohort's layout (a Kafka broker rewrites its maxTimestamp instead).
    expect([storedLayouts(topic, 0), storedLayouts(topic, 1), storedLayouts(topic, 2)]).toEqual([
      ['kafka'],
      ['kafka'],
      ['cohort'],
    ]);
    // The versions KafkaJS 2.2.4 picks from what cohort advertises (docs/kafka-clients.md).
    expect(pairsUsedBy(KAFKAJS)).toEqual(
      expect.arrayContaining([
        '0:7',
        '1:6',
        '2:3',
        '3:4',
        '8:5',
        '9:4',
        '10:2',
        '11:5',
        '14:3',
        '18:2',
        '19:3',
      ]),
    );
    expect(
      pairsUsedBy(KAFKAJS).every((pair) =>
        [
          '0:7',
          '1:6',
          '2:3',
          '3:4',
          '8:5',
          '9:4',
          '10:2',
          '11:5',
          '12:3',
          '13:1',
          '14:3',
          '18:2',
          '19:3',
        ].includes(pair),
      ),
    ).toBe(true);
  });

  test('a group of two members gets every partition once, and a member leaving hands its partitions over', async () => {
    const topic = name('events');
    const groupId = name('group');
    const admin = await connected(kafka.admin());
    await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] });

    const assignments = new Map<string, number[]>();
    const member = async (): Promise<Consumer> => {
      const consumer = await connected(
        kafka.consumer({
          groupId,
          sessionTimeout: 6_000,
          heartbeatInterval: 300,
          maxWaitTimeInMs: 200,
          rebalanceTimeout: 10_000,
        }),
      );
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        assignments.set(payload.memberId, payload.memberAssignment[topic] ?? []);
      });
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({ eachMessage: async () => undefined });
      return consumer;
    };
    const first = await member();
    await waitFor(() => assignments.size === 1, 'the first member to join');
    await member();
    const allPartitions = (): number[] => [...assignments.values()].flat().sort();
    await waitFor(
      () => assignments.size === 2 && [...assignments.values()].every((p) => p.length === 2),
      'both members to hold two partitions',
    );
    expect(allPartitions()).toEqual([0, 1, 2, 3]);

    // The same group, seen through the gRPC door.
    const grpc = groupCoordinatorClient(server.address);
    closers.push(async () => grpc.close());
    const described = (await grpc.describeGroups({ groups: [groupId] })) as {
      groups: {
        groupState: string;
        protocolType: string;
        protocolData: string;
        members: { clientId: string }[];
      }[];
    };
    expect(described.groups[0]).toMatchObject({
      groupState: 'Stable',
      protocolType: 'consumer',
      protocolData: 'RoundRobinAssigner',
    });
    expect(described.groups[0]!.members.map((m) => m.clientId)).toEqual([KAFKAJS, KAFKAJS]);

    const firstMemberIds = new Set(assignments.keys());
    await first.disconnect();
    await waitFor(
      () => [...assignments.entries()].some(([, p]) => p.length === 4),
      'the remaining member to take every partition',
    );
    expect(pairsUsedBy(KAFKAJS)).toEqual(expect.arrayContaining(['12:3', '13:1']));
    expect(firstMemberIds.size).toBe(2);
  });
});

describe('kcat (librdkafka) against the Kafka door', () => {
  test('-L lists this node, with a numeric host, as broker and controller', async () => {
    const listed = await kcat(['-L']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`broker 0 at ${server.kafkaAddress} (controller)`);
    // librdkafka opens every connection with ApiVersions v3 (flexible), then Metadata v4.
    expect(pairsUsedBy('kcat-test')).toEqual(['3:4', '18:3']);
  });

  test('produces and consumes keys and headers, and reads in a group', async () => {
    const topic = name('kc');
    const produced = await kcat(['-P', '-t', topic, '-K', ':', '-H', 'source=kcat'], 'a:1\nb:2\n');
    expect(produced).toMatchObject({ code: 0 });
    // librdkafka's batches (one or two here, as its linger falls) are the usual kind: kept as they came.
    expect([...new Set(storedLayouts(topic, 0))]).toEqual(['kafka']);
    const consumed = await kcat(['-C', '-t', topic, '-o', 'beginning', '-e', '-f', '%p %o %k=%s %h\\n']);
    expect(consumed.stdout).toBe('0 0 a=1 source=kcat\n0 1 b=2 source=kcat\n');
    const group = await kcat([
      '-G',
      name('kcg'),
      topic,
      '-e',
      '-X',
      'auto.offset.reset=earliest',
      '-f',
      '%k=%s\\n',
    ]);
    expect(group.stdout).toBe('a=1\nb=2\n');
    expect(pairsUsedBy('kcat-test')).toEqual(
      expect.arrayContaining(['0:7', '1:6', '2:2', '3:4', '8:5', '9:5', '10:2', '11:5', '14:3', '18:3']),
    );
  });
});

describe('compressed batches from real clients', () => {
  test('KafkaJS gzip and kcat snappy and lz4 batches are stored and read back', async () => {
    const topic = name('compressed');
    const producer = await connected(kafka.producer());
    await producer.send({
      topic,
      acks: -1,
      compression: CompressionTypes.GZIP,
      messages: [{ key: 'gzip', value: 'g'.repeat(500) }],
    });
    for (const codec of ['snappy', 'lz4']) {
      expect(
        await kcat(['-P', '-t', topic, '-K', ':', '-z', codec], `${codec}:${codec[0]!.repeat(500)}\n`),
      ).toMatchObject({
        code: 0,
      });
    }
    const consumed = await kcat(['-C', '-t', topic, '-o', 'beginning', '-e', '-f', '%k %S\n']);
    expect(consumed.stdout).toBe('gzip 500\nsnappy 500\nlz4 500\n');
  });
});

describe('kafka-python against the Kafka door', () => {
  test('produces, then reads in a group and commits, with the versions it infers for Kafka 0.11', async () => {
    const topic = name('kpy');
    const groupId = name('kpy-group');
    const output = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        PYTHON,
        [join(__dirname, 'kafka', 'kafka-python-client.py'), server.kafkaAddress!, topic, groupId],
        { timeout: 45_000, encoding: 'utf8' },
        (error, stdout, stderr) =>
          resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? 1), stdout, stderr }),
      );
    });
    expect(output).toMatchObject({ code: 0 });
    expect(output.stdout).toBe('0 0 k0 v0 h=x0\n0 1 k1 v1 h=x1\n0 2 k2 v2 h=x2\n');
    // kafka-python does not negotiate per API: from Metadata 0-4 advertised it infers 0.11 and sends these
    // (Heartbeat v1 too when the run lasts longer than its heartbeat interval).
    expect(pairsUsedBy('kpy-test').filter((pair) => pair !== '12:1')).toEqual([
      '0:3',
      '1:4',
      '2:1',
      '3:0',
      '3:1',
      '8:2',
      '9:1',
      '10:0',
      '11:2',
      '13:1',
      '14:1',
      '18:0',
    ]);
    const grpc = groupCoordinatorClient(server.address);
    closers.push(async () => grpc.close());
    const fetched = (await grpc.offsetFetch({
      groupId,
      topics: [{ name: topic, partitionIndexes: [0] }],
    })) as {
      topics: { partitions: { committedOffset: number | string }[] }[];
    };
    expect(Number(fetched.topics[0]!.partitions[0]!.committedOffset)).toBe(3);
  });
});

describe('across the two doors', () => {
  test('a record produced over gRPC is read by KafkaJS, and one produced by KafkaJS is fetched over gRPC', async () => {
    const topic = name('cross');
    const broker = brokerClient(server.address);
    closers.push(async () => broker.close());
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
                {
                  timestampMs: '1700000000123',
                  key: Buffer.from('from-grpc'),
                  value: Buffer.from('hello kafka'),
                  headers: [{ key: 'h', value: Buffer.from('1') }],
                },
              ],
            },
          ],
        },
      ],
    });
    const producer = await connected(kafka.producer());
    await producer.send({
      topic,
      acks: -1,
      messages: [{ key: 'from-kafkajs', value: 'hello grpc', headers: { h: '2' } }],
    });

    const consumer = await connected(kafka.consumer({ groupId: name('cross'), maxWaitTimeInMs: 200 }));
    await consumer.subscribe({ topic, fromBeginning: true });
    const received: Received[] = [];
    await consumer.run({ eachMessage: receiveInto(received) });
    await waitFor(() => received.length === 2, 'both records');
    expect(received[0]).toMatchObject({
      key: 'from-grpc',
      value: 'hello kafka',
      headers: { h: '1' },
      timestamp: '1700000000123',
    });

    const fetched = (await broker.fetch({
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1_000_000,
      topics: [
        { name: topic, partitions: [{ partitionIndex: 0, fetchOffset: '1', partitionMaxBytes: 1_000_000 }] },
      ],
    })) as {
      responses: {
        partitions: {
          records: { key: Buffer; value: Buffer; headers: { key: string; value: Buffer }[] }[];
        }[];
      }[];
    };
    const [record] = fetched.responses[0]!.partitions[0]!.records;
    expect(record!.key.toString()).toBe('from-kafkajs');
    expect(record!.value.toString()).toBe('hello grpc');
    expect(record!.headers.map((h) => [h.key, h.value.toString()])).toEqual([['h', '2']]);
  });

  test('offsets committed on one side are fetched on the other', async () => {
    const topic = name('offsets');
    const admin = await connected(kafka.admin());
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const kafkaGroup = name('kafka-commits');
    await admin.setOffsets({ groupId: kafkaGroup, topic, partitions: [{ partition: 1, offset: '42' }] });

    const grpc = groupCoordinatorClient(server.address);
    closers.push(async () => grpc.close());
    const fetched = (await grpc.offsetFetch({
      groupId: kafkaGroup,
      topics: [{ name: topic, partitionIndexes: [1] }],
    })) as {
      topics: { partitions: { partitionIndex: number; committedOffset: number | string }[] }[];
    };
    expect(Number(fetched.topics[0]!.partitions[0]!.committedOffset)).toBe(42);

    const grpcGroup = name('grpc-commits');
    await grpc.offsetCommit({
      groupId: grpcGroup,
      generationId: -1,
      memberId: '',
      topics: [
        {
          name: topic,
          partitions: [
            { partitionIndex: 0, committedOffset: 7, committedLeaderEpoch: -1, committedMetadata: '' },
          ],
        },
      ],
    });
    const [offsets] = await admin.fetchOffsets({ groupId: grpcGroup, topics: [topic] });
    expect(offsets!.partitions.find((p) => p.partition === 0)?.offset).toBe('7');
  });
});
