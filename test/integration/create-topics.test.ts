import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ErrorCode } from '../../src/errors';
import { brokerClient, type BrokerClient, type GroupCoordinatorClient } from '../support/grpc-clients';
import { spawnCohort, type CohortProcess } from '../support/spawn-cohort';
import { startTestServer, type TestServer } from '../support/start-test-server';

/** The partition directories of a data directory (not the registry, the lock or group state). */
function partitionDirs(dataDir: string): string[] {
  if (!fs.existsSync(dataDir)) return [];
  return fs
    .readdirSync(dataDir)
    .filter((name) => /-\d+$/.test(name) && !name.startsWith('__consumer_offsets'))
    .sort();
}

interface Member {
  readonly client: GroupCoordinatorClient;
  readonly groupId: string;
  memberId: string;
  generationId: number;
}

/** `size` members in one Stable group, through the real protocol (MEMBER_ID_REQUIRED, join, sync). */
async function formGroup(t: TestServer, groupId: string, size: number, sessionTimeoutMs: number) {
  const join = (client: GroupCoordinatorClient, memberId: string) =>
    client.joinGroup({
      groupId,
      memberId,
      sessionTimeoutMs,
      rebalanceTimeoutMs: 10_000,
      protocolType: 'consumer',
      protocols: [{ name: 'range', metadata: Buffer.from('subscription') }],
    });
  const clients = Array.from({ length: size }, () => t.groupCoordinator());
  const ids = await Promise.all(clients.map(async (client) => (await join(client, '')).memberId));
  const joined = await Promise.all(clients.map((client, i) => join(client, ids[i]!)));
  const members: Member[] = joined.map((answer, i) => {
    expect(answer.errorCode).toBe(ErrorCode.NONE);
    return { client: clients[i]!, groupId, memberId: answer.memberId, generationId: answer.generationId };
  });
  const synced = await Promise.all(
    members.map((m) =>
      m.client.syncGroup({ groupId, memberId: m.memberId, generationId: m.generationId, assignments: [] }),
    ),
  );
  for (const answer of synced) expect(answer.errorCode).toBe(ErrorCode.NONE);
  return members;
}

describe('CreateTopics: the event loop is never held hostage', () => {
  let t: TestServer | undefined;
  let broker: BrokerClient | undefined;

  afterEach(async () => {
    broker?.close();
    broker = undefined;
    await t?.close();
    t = undefined;
  });

  it('answers heartbeats while a 2,000-partition create runs, and no session expires', async () => {
    const sessionTimeoutMs = 1_500;
    t = await startTestServer({ groupMinSessionTimeoutMs: 1_000, groupInitialRebalanceDelayMs: 200 });
    broker = brokerClient(t.target);
    const members = [
      ...(await formGroup(t, 'create-topics-a', 5, sessionTimeoutMs)),
      ...(await formGroup(t, 'create-topics-b', 5, sessionTimeoutMs)),
    ];

    // Every member heartbeats every 200 ms, as a client with a 1.5 s session would (session / 3, less).
    const answers: { sentMs: number; answeredMs: number; errorCode: number }[] = [];
    let isRunning = true;
    const heartbeating = members.map(async (m) => {
      while (isRunning) {
        const sentMs = performance.now();
        const { errorCode } = await m.client.heartbeat({
          groupId: m.groupId,
          memberId: m.memberId,
          generationId: m.generationId,
        });
        answers.push({ sentMs, answeredMs: performance.now(), errorCode });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    });

    const createSentMs = performance.now();
    const created = await broker.createTopics({
      topics: [{ name: 'wide', numPartitions: 2_000, replicationFactor: 1 }],
    });
    const createAnsweredMs = performance.now();
    // One more round of heartbeats after the create, so a session it would have cost shows.
    await new Promise((resolve) => setTimeout(resolve, sessionTimeoutMs));
    isRunning = false;
    await Promise.all(heartbeating);

    expect(created.topics[0]).toEqual({ name: 'wide', errorCode: ErrorCode.NONE, errorMessage: '' });
    // The create ran in slices: heartbeats sent after it were answered before it was.
    const answeredDuring = answers.filter((a) => a.sentMs > createSentMs && a.answeredMs < createAnsweredMs);
    expect(answeredDuring.length).toBeGreaterThan(0);
    // No member expired or was told to rejoin.
    expect(answers.filter((a) => a.errorCode !== ErrorCode.NONE)).toEqual([]);
    const described = await members[0]!.client.describeGroups({
      groups: ['create-topics-a', 'create-topics-b'],
    });
    expect(described.groups.map((g) => [g.groupState, g.members.length])).toEqual([
      ['Stable', 5],
      ['Stable', 5],
    ]);
  }, 60_000);
});

describe('CreateTopics: the file-descriptor budget', () => {
  let cohort: CohortProcess | undefined;
  let broker: BrokerClient | undefined;
  let dataDir: string | undefined;

  afterEach(async () => {
    broker?.close();
    broker = undefined;
    await cohort?.kill();
    cohort = undefined;
    if (dataDir !== undefined) fs.rmSync(dataDir, { recursive: true, force: true });
    dataDir = undefined;
  });

  /** A server whose process may open 256 files (`ulimit -n 256`), with `args` added. */
  async function startLimited(args: string[] = []): Promise<BrokerClient> {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cohort-fd-'));
    cohort = spawnCohort(
      ['--listen', '127.0.0.1:0', '--data-dir', dataDir, ...args],
      {},
      { openFileLimit: 256 },
    );
    const { address } = await cohort.waitForLog('cohort listening');
    await cohort.waitForLog('cohort ready');
    broker = brokerClient(address as string);
    return broker;
  }

  it('refuses a create past the process limit with POLICY_VIOLATION, writing nothing', async () => {
    const client = await startLimited();
    const refused = await client.createTopics({
      topics: [{ name: 'too-wide', numPartitions: 300, replicationFactor: 1 }],
    });
    expect(refused.topics[0]!.errorCode).toBe(ErrorCode.POLICY_VIOLATION);
    expect(refused.topics[0]!.errorMessage).toMatch(
      /^300 partitions need 300 file descriptors and \d+ are free: the process may open 256/,
    );
    expect(partitionDirs(dataDir!)).toEqual([]);
    // What fits is created.
    const fits = await client.createTopics({
      topics: [{ name: 'fits', numPartitions: 20, replicationFactor: 1 }],
    });
    expect(fits.topics[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(partitionDirs(dataDir!)).toHaveLength(20);
  }, 30_000);

  it('removes what a create made when the process runs out of descriptors halfway', async () => {
    // A budget the process does not have: the create gets past the check and fails with EMFILE.
    const client = await startLimited(['--max-open-files', '100000']);
    const failed = await client.createTopics({
      topics: [{ name: 'too-wide', numPartitions: 1_000, replicationFactor: 1 }],
    });
    expect(failed.topics[0]!.errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    expect(partitionDirs(dataDir!)).toEqual([]);
    // Every descriptor it opened was closed again: a create that fits works.
    const fits = await client.createTopics({
      topics: [{ name: 'fits', numPartitions: 20, replicationFactor: 1 }],
    });
    expect(fits.topics[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(partitionDirs(dataDir!)).toHaveLength(20);
  }, 30_000);
});
