import { join } from 'node:path';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { startServer, type EmbeddedServer } from '../../src/server/start-server';
import { ErrorCode } from '../../src/errors';
import { groupCoordinatorClient } from '../support/grpc-clients';
import { ensureKafkaClientPackages } from '../support/kafka-client-packages';
import { runPython } from '../support/run-python';
import { KafkaMemberProcess, killKafkaMembers, type KafkaClientKind } from '../support/kafka-member-process';

/**
 * The admin calls of KafkaJS and kafka-python through the Kafka door: create topics, list, describe and
 * delete groups, fetch a group's offsets. Each test has a live group (one member, a child process of the
 * same client) and an empty one (offsets committed outside any membership), so that listing, describing
 * and deleting show both states: deleting the live group is refused NON_EMPTY_GROUP. confluent-kafka's
 * admin calls are in kafka-confluent.test.ts (its 1.7.0 AdminClient has no delete or offsets call).
 */

jest.setTimeout(60_000);

let server: EmbeddedServer;
let kafka: Kafka;
let admin: Admin;
let unique = 0;
const name = (prefix: string): string => `${prefix}-${process.pid}-${++unique}`;

beforeAll(() => ensureKafkaClientPackages('the Kafka admin client tests'), 600_000);

beforeEach(async () => {
  server = await startServer({ groupInitialRebalanceDelayMs: 0, groupMinSessionTimeoutMs: 1_000 });
  kafka = new Kafka({ clientId: 'admin-test', brokers: [server.kafkaAddress!], logLevel: logLevel.NOTHING });
  admin = kafka.admin();
  await admin.connect();
});

afterEach(async () => {
  await killKafkaMembers();
  await admin.disconnect();
  await server.close();
});

/** A group with one member of `kind` on `topic`, and a group with offsets committed for it and no member. */
async function liveAndEmptyGroups(kind: KafkaClientKind, topic: string): Promise<[string, string]> {
  const live = name('live');
  const empty = name('empty');
  // Committed over gRPC, outside any membership: the group has no protocol type (KafkaJS's setOffsets would
  // join it first).
  const grpc = groupCoordinatorClient(server.address);
  try {
    await grpc.offsetCommit({
      groupId: empty,
      generationId: -1,
      memberId: '',
      topics: [
        {
          name: topic,
          partitions: [
            { partitionIndex: 1, committedOffset: 42, committedLeaderEpoch: -1, committedMetadata: '' },
          ],
        },
      ],
    });
  } finally {
    grpc.close();
  }
  const member = new KafkaMemberProcess({
    kind,
    bootstrap: server.kafkaAddress!,
    topic,
    groupId: live,
    clientId: `${kind}-member`,
    sessionTimeoutMs: 30_000,
  });
  await member.assigned(2);
  return [live, empty];
}

describe('admin calls of real Kafka clients', () => {
  test('KafkaJS creates topics, lists, describes and deletes groups, and fetches offsets', async () => {
    const topic = name('admin');
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] })).toBe(true);
    const [live, empty] = await liveAndEmptyGroups('kafkajs', topic);

    const { groups } = await admin.listGroups();
    expect(groups.map((g) => [g.groupId, g.protocolType]).sort()).toEqual(
      [
        [empty, ''],
        [live, 'consumer'],
      ].sort(),
    );
    const described = await admin.describeGroups([live, empty]);
    expect(
      described.groups.map((g) => [g.groupId, g.state, g.protocol, g.members.map((m) => m.clientId)]),
    ).toEqual([
      [live, 'Stable', 'RoundRobinAssigner', ['kafkajs-member']],
      [empty, 'Empty', '', []],
    ]);
    const [offsets] = await admin.fetchOffsets({ groupId: empty, topics: [topic] });
    expect(offsets!.partitions.sort((a, b) => a.partition - b.partition)).toEqual([
      expect.objectContaining({ partition: 0, offset: '-1' }),
      expect.objectContaining({ partition: 1, offset: '42' }),
    ]);

    const refused = await admin
      .deleteGroups([live, empty])
      .catch((error: { groups: unknown }) => error.groups);
    // KafkaJS's error names the groups that were refused; the empty one was deleted.
    expect(refused).toEqual([
      expect.objectContaining({ groupId: live, errorCode: ErrorCode.NON_EMPTY_GROUP }),
    ]);
    expect((await admin.listGroups()).groups.map((g) => g.groupId)).toEqual([live]);
  });

  test("kafka-python's KafkaAdminClient creates topics, lists, describes and deletes groups, and fetches offsets", async () => {
    const topic = name('kpy-admin');
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const [live, empty] = await liveAndEmptyGroups('kafka-python', topic);
    const created = name('kpy-created');
    const run = await runPython(join(__dirname, 'kafka', 'kafka-python-admin.py'), [
      server.kafkaAddress!,
      created,
      live,
      empty,
    ]);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    const steps = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: string } & Record<string, unknown>);
    const step = (which: string) => steps.filter((s) => s.step === which).map(({ step: _, ...rest }) => rest);

    expect(step('create_topics')).toEqual([
      { error: ErrorCode.NONE },
      { error: ErrorCode.TOPIC_ALREADY_EXISTS },
    ]);
    expect(step('list_consumer_groups')).toEqual([
      {
        groups: [
          [empty, ''],
          [live, 'consumer'],
        ].sort(),
      },
      { groups: [live] },
    ]);
    expect(step('describe_consumer_groups')).toEqual([
      {
        group: live,
        error: 0,
        state: 'Stable',
        protocol_type: 'consumer',
        protocol: 'range',
        members: ['kafka-python-member'],
      },
      { group: empty, error: 0, state: 'Empty', protocol_type: '', protocol: '', members: [] },
    ]);
    expect(step('list_consumer_group_offsets')).toEqual([{ offsets: [[topic, 1, 42]] }]);
    expect(step('delete_consumer_groups')).toEqual([
      {
        results: [
          [empty, ErrorCode.NONE],
          [live, ErrorCode.NON_EMPTY_GROUP],
        ].sort(),
      },
    ]);
    expect((await admin.fetchTopicMetadata({ topics: [created] })).topics[0]!.partitions).toHaveLength(2);
  });
});
