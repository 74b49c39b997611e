import { spawn, type ChildProcess } from 'node:child_process';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { startServer, type ManualClockServer } from '../../src/server/start-server';

/**
 * `manualClock: 'running'` with a real Kafka client (KafkaJS): the server's clock follows wall time, so a
 * consumer's Fetch long polls end on their own, and `advanceClock` still expires, on demand, the session of
 * a member whose process was killed, so the other member takes its partitions at once instead of after the
 * session timeout. Timing bounds here are generous: they only tell "ended on wall time" from "never".
 */

jest.setTimeout(60_000);

const SESSION_TIMEOUT_MS = 30_000;
let server: ManualClockServer;
let kafka: Kafka;
const closers: (() => Promise<unknown>)[] = [];
const children: ChildProcess[] = [];
let unique = 0;
const name = (prefix: string): string => `${prefix}-${process.pid}-${++unique}`;

beforeEach(async () => {
  server = await startServer({
    manualClock: 'running',
    groupInitialRebalanceDelayMs: 0,
    groupMinSessionTimeoutMs: 1_000,
  });
  kafka = new Kafka({
    clientId: 'running-clock',
    brokers: [server.kafkaAddress!],
    logLevel: logLevel.NOTHING,
  });
});

afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const close of closers.splice(0).reverse()) await close();
  await server.close();
});

async function connected<T extends { connect(): Promise<void>; disconnect(): Promise<void> }>(
  client: T,
): Promise<T> {
  await client.connect();
  closers.push(() => client.disconnect());
  return client;
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A KafkaJS group member in a process of its own, so the test can kill it: it leaves no LeaveGroup and
 * sends no more heartbeats. Reports each assignment as a JSON line on stdout.
 */
function memberProcess(
  topic: string,
  groupId: string,
  onAssignment: (partitions: number[]) => void,
): ChildProcess {
  const script = `
    const { Kafka, logLevel } = require('kafkajs');
    const [broker, topic, groupId, sessionTimeout] = process.argv.slice(1);
    const kafka = new Kafka({ clientId: 'doomed', brokers: [broker], logLevel: logLevel.NOTHING });
    const consumer = kafka.consumer({
      groupId, sessionTimeout: Number(sessionTimeout), heartbeatInterval: 300, maxWaitTimeInMs: 200,
      rebalanceTimeout: 60000,
    });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      process.stdout.write(JSON.stringify(payload.memberAssignment[topic] || []) + '\\n');
    });
    (async () => {
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({ eachMessage: async () => undefined });
    })();
  `;
  const child = spawn(
    process.execPath,
    ['-e', script, server.kafkaAddress!, topic, groupId, String(SESSION_TIMEOUT_MS)],
    { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline = buffered.indexOf('\n');
    while (newline !== -1) {
      onAssignment(JSON.parse(buffered.slice(0, newline)) as number[]);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
  });
  return child;
}

describe('KafkaJS on a running manual clock', () => {
  test("a consumer's long polls on an empty topic end on wall time", async () => {
    const topic = name('quiet');
    const admin = await connected(kafka.admin());
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
    const consumer = await connected(
      kafka.consumer({ groupId: name('group'), maxWaitTimeInMs: 300, sessionTimeout: SESSION_TIMEOUT_MS }),
    );
    let fetches = 0;
    consumer.on(consumer.events.FETCH, () => {
      fetches++;
    });
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async () => undefined });
    // Nothing is ever produced: each Fetch ends only when its max wait passes on the server's clock. On a
    // clock that stands still the first one would never answer.
    await waitFor(() => fetches >= 3, 'three empty fetches to end on their max wait', 20_000);
  });

  test('a killed member is expired by advancing past its session, and the other takes its partitions at once', async () => {
    const topic = name('events');
    const groupId = name('group');
    const admin = await connected(kafka.admin());
    await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] });

    let doomedPartitions: number[] = [];
    const doomed = memberProcess(topic, groupId, (partitions) => {
      doomedPartitions = partitions;
    });
    let survivorPartitions: number[] = [];
    let heartbeats = 0;
    const survivor: Consumer = await connected(
      kafka.consumer({
        groupId,
        sessionTimeout: SESSION_TIMEOUT_MS,
        heartbeatInterval: 300,
        maxWaitTimeInMs: 200,
        rebalanceTimeout: 60_000,
      }),
    );
    survivor.on(survivor.events.GROUP_JOIN, ({ payload }) => {
      survivorPartitions = payload.memberAssignment[topic] ?? [];
    });
    survivor.on(survivor.events.HEARTBEAT, () => {
      heartbeats++;
    });
    await survivor.subscribe({ topic, fromBeginning: true });
    await survivor.run({ eachMessage: async () => undefined });
    await waitFor(
      () => doomedPartitions.length === 2 && survivorPartitions.length === 2,
      'both members to hold two partitions',
    );

    doomed.kill('SIGKILL');
    await new Promise((resolve) => doomed.once('exit', resolve));
    // Two jumps, each shorter than the session: the survivor heartbeats in between and stays, while the
    // killed member, silent since before the first, is past its session after the second.
    await server.advanceClock(SESSION_TIMEOUT_MS - 10_000);
    const heartbeatsBefore = heartbeats;
    await waitFor(() => heartbeats > heartbeatsBefore, 'the survivor to heartbeat after the first jump');
    const expiredAtMs = Date.now();
    await server.advanceClock(SESSION_TIMEOUT_MS - 10_000);
    await waitFor(() => survivorPartitions.length === 4, 'the survivor to take every partition');
    // About a second in practice (the survivor's next heartbeat, then a rejoin); far less than the session.
    expect(Date.now() - expiredAtMs).toBeLessThan(SESSION_TIMEOUT_MS / 2);
    expect([...survivorPartitions].sort()).toEqual([0, 1, 2, 3]);
  });
});
