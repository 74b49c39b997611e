import { join } from 'node:path';
import { startServer, type EmbeddedServer } from '../../src/server/start-server';
import { ErrorCode } from '../../src/errors';
import { groupCoordinatorClient } from '../support/grpc-clients';
import { ensureKafkaClientPackages } from '../support/kafka-client-packages';
import { runPython } from '../support/run-python';

/**
 * confluent-kafka for Python (python3-confluent-kafka 1.7.0 on librdkafka 2.0.2), unmodified, against the
 * Kafka door: its AdminClient, producers with acks 0, 1 and -1 and a compression codec, a consumer group
 * that commits; the wire trace names the (API, version) pairs it chose. And the docs' confluent-kafka
 * example, run as a reader would run it.
 */

jest.setTimeout(60_000);

const REPO_ROOT = join(__dirname, '..', '..');
let server: EmbeddedServer;
let unique = 0;
const name = (prefix: string): string => `${prefix}-${process.pid}-${++unique}`;

beforeAll(() => ensureKafkaClientPackages('the confluent-kafka tests'), 600_000);

beforeEach(async () => {
  server = await startServer({
    groupInitialRebalanceDelayMs: 0,
    groupMinSessionTimeoutMs: 1_000,
    kafkaWireTrace: true,
  });
});

afterEach(async () => {
  await server.close();
});

/** The distinct (apiKey, apiVersion) pairs `clientId` used, as `key:version`, sorted by key. */
function pairsUsedBy(clientId: string): string[] {
  const pairs = new Set(
    server.kafkaWireTrace.filter((e) => e.clientId === clientId).map((e) => `${e.apiKey}:${e.apiVersion}`),
  );
  return [...pairs].sort((a, b) => Number(a.split(':')[0]) - Number(b.split(':')[0]) || a.localeCompare(b));
}

describe('confluent-kafka (librdkafka) against the Kafka door', () => {
  test('creates topics, produces with acks 0, 1 and -1 and gzip, reads in a group, commits, lists and describes groups', async () => {
    const topic = name('orders');
    const groupId = name('billing');
    const run = await runPython(join(__dirname, 'kafka', 'confluent-kafka-client.py'), [
      server.kafkaAddress!,
      topic,
      groupId,
    ]);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    const steps = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: string } & Record<string, unknown>);
    const step = (which: string) => steps.filter((s) => s.step === which).map(({ step: _, ...rest }) => rest);

    expect(step('create_topics')).toEqual([
      { topic, error: ErrorCode.NONE },
      { topic, error: ErrorCode.TOPIC_ALREADY_EXISTS },
    ]);
    expect(step('produce')).toEqual([
      { acks: '0', compression: 'none', unsent: 0, errors: [false, false, false] },
      { acks: '1', compression: 'none', unsent: 0, errors: [false, false, false] },
      { acks: 'all', compression: 'gzip', unsent: 0, errors: [false, false, false] },
    ]);
    expect(step('error')).toEqual([]);
    const records = step('record');
    const acks = ['0', '1', 'all'];
    expect(records).toEqual([
      ...acks.map((a, offset) => ({
        partition: 0,
        offset,
        key: `key-${a}`,
        value: `acks=${a}`,
        headers: [
          ['acks', a],
          ['empty', ''],
        ],
      })),
      ...acks.map((a, offset) => ({ partition: 1, offset, key: `null-${a}`, value: null, headers: [] })),
      ...acks.map((a, offset) => ({
        partition: 2,
        offset,
        key: null,
        value: `no key, acks=${a}`,
        headers: [],
      })),
    ]);

    expect(step('describe_group')).toEqual([
      {
        id: groupId,
        state: 'Stable',
        protocol_type: 'consumer',
        protocol: 'range',
        members: ['confluent-test'],
      },
    ]);
    expect(step('list_groups')).toEqual([{ groups: [groupId] }]);
    expect(step('committed')).toEqual([{ offsets: [3, 3, 3] }]);
    expect(step('after_close')).toEqual([{ states: ['Empty'] }]);

    // The commits, as the gRPC door sees them.
    const grpc = groupCoordinatorClient(server.address);
    try {
      const fetched = (await grpc.offsetFetch({
        groupId,
        topics: [{ name: topic, partitionIndexes: [0, 1, 2] }],
      })) as { topics: { partitions: { committedOffset: number | string }[] }[] };
      expect(fetched.topics[0]!.partitions.map((p) => Number(p.committedOffset))).toEqual([3, 3, 3]);
    } finally {
      grpc.close();
    }

    // librdkafka negotiates each API: the highest version both sides have (ApiVersions v3 is flexible),
    // except for the legacy list_groups, which sends ListGroups and DescribeGroups v0. Heartbeat v3 too
    // when the group lasts longer than its heartbeat interval.
    expect(pairsUsedBy('confluent-test').filter((pair) => pair !== '12:3')).toEqual([
      '0:7',
      '1:6',
      '2:2',
      '3:4',
      '8:5',
      '9:5',
      '10:2',
      '11:5',
      '13:1',
      '14:3',
      '15:0',
      '16:0',
      '18:3',
      '19:4',
    ]);
  });

  test("the docs' confluent-kafka example runs as shown, and a second run is told the topic exists", async () => {
    const example = join(REPO_ROOT, 'examples', 'python', 'confluent_kafka_client.py');
    const first = await runPython(example, [server.kafkaAddress!]);
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });
    expect(first.stdout.split('\n').sort()).toEqual(
      ['', "0 0 order-1 b'paid'", '0 1 order-1 None', "1 0 order-2 b'paid'"].sort(),
    );
    const second = await runPython(example, [server.kafkaAddress!]);
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain('TOPIC_ALREADY_EXISTS');
  });
});
