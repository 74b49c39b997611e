import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { startServer, type ManualClockServer } from '../../src/server/start-server';
import { ErrorCode } from '../../src/errors';
import { ensureKafkaClientPackages } from '../support/kafka-client-packages';
import {
  killKafkaMembers,
  KafkaMemberProcess,
  type KafkaClientKind,
  type KafkaMemberOptions,
} from '../support/kafka-member-process';

/**
 * Consumer groups of each real Kafka client (KafkaJS, librdkafka through confluent-kafka, kafka-python),
 * each member a child process, on a server whose manual clock runs ('running'): members heartbeat on wall
 * time, and `advanceClock` expires a killed member's session on demand. Sessions are long (tens of
 * seconds, longer than any wait here), so a rebalance can come only from what the test did: a join, a
 * LeaveGroup, or a jump of the clock past one member's session.
 */

jest.setTimeout(60_000);

/** Longer than every wait of these tests: no session ends on wall time while they run. */
const SESSION_TIMEOUT_MS = 90_000;
/** The session of the member a test kills: the one a jump of the clock ends, and no other. */
const DOOMED_SESSION_TIMEOUT_MS = 40_000;
const KINDS: readonly KafkaClientKind[] = ['kafkajs', 'confluent-kafka', 'kafka-python'];

let server: ManualClockServer;
let kafka: Kafka;
let admin: Admin;
let producer: Producer;
let unique = 0;
const name = (prefix: string): string => `${prefix}-${process.pid}-${++unique}`;

beforeAll(() => ensureKafkaClientPackages('the Kafka client group tests'), 600_000);

beforeEach(async () => {
  server = await startServer({
    manualClock: 'running',
    groupInitialRebalanceDelayMs: 0,
    groupMinSessionTimeoutMs: 1_000,
    kafkaWireTrace: true,
  });
  kafka = new Kafka({ clientId: 'groups-test', brokers: [server.kafkaAddress!], logLevel: logLevel.NOTHING });
  admin = kafka.admin();
  await admin.connect();
  producer = kafka.producer();
  await producer.connect();
});

afterEach(async () => {
  await killKafkaMembers();
  await producer.disconnect();
  await admin.disconnect();
  await server.close();
});

function member(options: Omit<KafkaMemberOptions, 'bootstrap'>): KafkaMemberProcess {
  return new KafkaMemberProcess({ bootstrap: server.kafkaAddress!, ...options });
}

/** The partitions of these members' latest assignments, sorted: [0, 1, ...] once each is held once. */
function held(members: readonly KafkaMemberProcess[]): number[] {
  return members.flatMap((m) => m.assignment ?? []).sort((a, b) => a - b);
}

/** The API keys a client id sent, from the wire trace. */
function apiKeysSentBy(clientId: string): Set<number> {
  return new Set(server.kafkaWireTrace.filter((e) => e.clientId === clientId).map((e) => e.apiKey));
}

describe.each(KINDS)('a %s consumer group', (kind) => {
  test('three members hold every partition once; one that leaves and one killed hand theirs over', async () => {
    const topic = name('jobs');
    const groupId = name('group');
    await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] });
    const stays = member({
      kind,
      topic,
      groupId,
      clientId: `${kind}-stays`,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
    const doomed = member({
      kind,
      topic,
      groupId,
      clientId: `${kind}-doomed`,
      sessionTimeoutMs: DOOMED_SESSION_TIMEOUT_MS,
    });
    const leaves = member({
      kind,
      topic,
      groupId,
      clientId: `${kind}-leaves`,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
    const all = [stays, doomed, leaves];

    await stays.until(
      () => all.every((m) => m.assignment?.length === 2) && held(all).join() === '0,1,2,3,4,5',
      'three members to hold two partitions each, every partition once',
    );

    // A LeaveGroup rebalances the group at once: no session is anywhere near its end.
    await leaves.leave();
    expect(apiKeysSentBy(`${kind}-leaves`).has(13)).toBe(true);
    const two = [stays, doomed];
    await stays.until(
      () => two.every((m) => m.assignment?.length === 3) && held(two).join() === '0,1,2,3,4,5',
      'the two left to hold three partitions each',
    );

    // A killed member sends nothing more. Past its session (but not the others') on the server's clock, it
    // is expired, and the member left takes every partition.
    await doomed.kill();
    await server.advanceClock(DOOMED_SESSION_TIMEOUT_MS + 1_000);
    const all6 = await stays.assigned(6, 'the member left to take every partition');
    expect(all6).toEqual([0, 1, 2, 3, 4, 5]);
  });

  test('a restarted consumer resumes at its committed offset', async () => {
    const topic = name('resume');
    const groupId = name('group');
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const send = (from: number, to: number) =>
      producer.send({
        topic,
        acks: -1,
        messages: [0, 1].flatMap((partition) =>
          Array.from({ length: to - from }, (_, i) => ({
            partition,
            key: `p${partition}`,
            value: `${from + i}`,
          })),
        ),
      });
    await send(0, 3);
    const first = member({
      kind,
      topic,
      groupId,
      clientId: `${kind}-first`,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
    await first.read(6);
    await first.commit();
    await first.leave();

    await send(3, 5);
    const second = member({
      kind,
      topic,
      groupId,
      clientId: `${kind}-second`,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
    await second.read(4);
    // Only what came after the commit: from the earliest offset it would have read ten.
    expect(second.records.map((r) => `${r.partition}@${r.offset}=${r.value}`).sort()).toEqual([
      '0@3=3',
      '0@4=4',
      '1@3=3',
      '1@4=4',
    ]);
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    expect(offsets!.partitions.map((p) => p.offset).sort()).toEqual(['3', '3']);
  });
});

describe('a group mixing clients', () => {
  test("a librdkafka member whose assignor KafkaJS's member does not offer is refused INCONSISTENT_GROUP_PROTOCOL", async () => {
    const topic = name('mixed');
    const groupId = name('group');
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const kafkajs = member({
      kind: 'kafkajs',
      topic,
      groupId,
      clientId: 'mixed-kafkajs',
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
    await kafkajs.assigned(2);
    const librdkafka = member({
      kind: 'confluent-kafka',
      topic,
      groupId,
      clientId: 'mixed-librdkafka',
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      assignor: 'range',
    });
    await librdkafka.until(
      () => librdkafka.errors.includes(ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
      'librdkafka to report INCONSISTENT_GROUP_PROTOCOL',
    );
    expect(librdkafka.assignment).toBeUndefined();
    // The group is untouched: its one member keeps both partitions.
    const described = await admin.describeGroups([groupId]);
    expect(described.groups[0]).toMatchObject({ state: 'Stable', protocol: 'RoundRobinAssigner' });
    expect(described.groups[0]!.members.map((m) => m.clientId)).toEqual(['mixed-kafkajs']);
    expect(kafkajs.assignment).toEqual([0, 1]);
  });
});
