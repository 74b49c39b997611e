import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { CohortClient, RANGE_ASSIGNOR, type AssignedEvent } from '../../src';
import { ErrorCode } from '../../src/errors';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';
import { shellBlocks } from '../support/doc-examples';
import { ensureSystemPackages } from '../support/system-packages';

const REPO_ROOT = join(__dirname, '..', '..');
/** Debian's python3: python3-grpcio and python3-grpc-tools install for it, not for a python3 of pyenv. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const MEMBER = join(REPO_ROOT, 'examples', 'python', 'cohort_member.py');
const PARTITIONS = ['jobs-0', 'jobs-1', 'jobs-2', 'jobs-3', 'jobs-4', 'jobs-5'];
/** Where docs/clients.md generates the stubs, and where the example finds them without PYTHONPATH. */
const GENERATED = join(REPO_ROOT, 'examples', 'python', 'generated');
/** apt-get may have to download and install the packages first. */
const SETUP_TIMEOUT_MS = 600_000;

/** A running examples/python/cohort_member.py and what it printed. */
class PythonMember {
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; stderr: string }>;
  private readonly child: ChildProcess;
  private readonly waiters: (() => void)[] = [];

  constructor(name: string, address: string, group: string) {
    // As docs/clients.md runs it: no PYTHONPATH, no partition count (Metadata gives it).
    const args = ['--address', address, '--group', group, '--topic', 'jobs'];
    const timing = ['--session-timeout-ms', '6000', '--heartbeat-interval-ms', '200'];
    this.child = spawn(PYTHON, [MEMBER, ...args, ...timing, '--name', name, '--verbose'], {
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let partial = '';
    let stderr = '';
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      this.lines.push(...parts);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    this.exited = new Promise((resolve) => this.child.once('close', (code) => resolve({ code, stderr })));
    void this.exited.then(() => {
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** The first line from index `from` on that matches, once printed; rejects if the member exits first. */
  async waitFor(pattern: RegExp, from = 0): Promise<RegExpExecArray> {
    // Not a speed claim: a bound so that a line that never comes fails with what was printed instead.
    const giveUp = setTimeout(() => {
      this.stuck = `no line matched ${pattern} within 60 s:\n${this.lines.slice(-30).join('\n')}`;
      for (const wake of this.waiters.splice(0)) wake();
    }, 60_000);
    try {
      return await this.waitForLine(pattern, from);
    } finally {
      clearTimeout(giveUp);
      this.stuck = undefined;
    }
  }

  private stuck: string | undefined;

  private async waitForLine(pattern: RegExp, from: number): Promise<RegExpExecArray> {
    for (;;) {
      if (this.stuck !== undefined) throw new Error(this.stuck);
      for (let i = from; i < this.lines.length; i++) {
        const match = pattern.exec(this.lines[i]);
        if (match !== null) return match;
      }
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        const { stderr } = await this.exited;
        throw new Error(`the member exited before printing ${pattern}:\n${this.lines.join('\n')}\n${stderr}`);
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }
}

/**
 * examples/python/cohort_member.py, the call sequence of docs/clients.md in Python, against a real server on
 * a manual clock: two members share a topic's partitions (MEMBER_ID_REQUIRED, JoinGroup, SyncGroup with the
 * leader's range assignment), commit and fetch offsets, heartbeat; one is killed and expires when the server's
 * clock passes its session timeout, the other takes over from its commits and leaves with LeaveGroup.
 */
describe('the Python group member (examples/python)', () => {
  let t: TestServer | undefined;
  let client: CohortClient | undefined;
  const members: PythonMember[] = [];

  beforeAll(() => {
    ensureSystemPackages('examples/python/cohort_member.py', [
      { debianPackage: 'python3-grpcio', probe: [PYTHON, '-c', 'import grpc'] },
      { debianPackage: 'python3-grpc-tools', probe: [PYTHON, '-c', 'import grpc_tools.protoc'] },
    ]);
    // The stubs, generated as docs/clients.md says.
    mkdirSync(GENERATED, { recursive: true });
    const protoc = spawnSync(
      PYTHON,
      [
        '-m',
        'grpc_tools.protoc',
        '-I',
        'proto',
        '--python_out=examples/python/generated',
        '--grpc_python_out=examples/python/generated',
        // proto/cohort/v1/*.proto, as the shell expands it
        ...readdirSync(join(REPO_ROOT, 'proto', 'cohort', 'v1'))
          .filter((name) => name.endsWith('.proto'))
          .sort()
          .map((name) => `proto/cohort/v1/${name}`),
      ],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    if (protoc.status !== 0) throw new Error(`grpc_tools.protoc failed:\n${protoc.stdout}${protoc.stderr}`);
  }, SETUP_TIMEOUT_MS);

  afterEach(async () => {
    for (const member of members.splice(0)) {
      member.kill('SIGKILL');
      await member.exited;
    }
    await client?.close();
    client = undefined;
    await t?.close();
    t = undefined;
  });

  const start = (name: string, group = 'jobs'): PythonMember => {
    const member = new PythonMember(name, (t as TestServer).target, group);
    members.push(member);
    return member;
  };

  /** Sends `perPartition` records to each partition of jobs, valued `<tag>-<partition>-<i>`. */
  const produce = async (tag: string, perPartition: number): Promise<void> => {
    client ??= new CohortClient({ address: (t as TestServer).target, clientId: 'test-producer' });
    const producer = client.producer({ acks: -1 });
    await Promise.all(
      PARTITIONS.flatMap((_, partition) =>
        Array.from({ length: perPartition }, (_, i) =>
          producer.send({ topic: 'jobs', partition, value: `${tag}-${partition}-${i}` }),
        ),
      ),
    );
    await producer.close();
  };
  const offsets = (partitions: string[], offset: number): string =>
    partitions.map((p) => `${p}=${offset}`).join(' ');
  /**
   * Waits until `member`'s commit lines of `generation`, from line `from` on, have committed `offset` on each
   * of `partitions` (a commit names the partitions whose position moved since the last one).
   */
  const committed = async (
    member: PythonMember,
    generation: number,
    partitions: string[],
    offset: number,
    from = 0,
  ): Promise<void> => {
    const latest = new Map<string, number>();
    const pattern = new RegExp(`^\\w+: committed in generation ${generation}: (.*)$`);
    for (let at = from; ; at++) {
      const line = await member.waitFor(/^/, at).then(() => member.lines[at]);
      const match = pattern.exec(line);
      if (match === null) continue;
      for (const entry of match[1].split(' ')) {
        const [partition, value] = entry.split('=');
        latest.set(partition, Number(value));
      }
      if (partitions.every((p) => latest.get(p) === offset)) return;
    }
  };

  it('creates its topic, reads it from the start, shares it, commits, outlives a member that died, and leaves', async () => {
    // A running manual clock: Fetch long polls end on their own; Advance expires a session on demand.
    t = await startTestServer({ manualClock: 'running', groupInitialRebalanceDelayMs: 0 });
    const clock = t.testClock();
    const coordinator = t.groupCoordinator();

    // Alone, a creates the topic (six partitions, Metadata says how many), finds its coordinator, gets
    // everything; nothing is committed, so ListOffsets puts it at the start.
    const a = start('a');
    await a.waitFor(/^a: created topic jobs: 6 partitions$/);
    await a.waitFor(new RegExp(`^a: coordinator: ${t.target.replace(/\./g, '\\.')}$`));
    await a.waitFor(/^a: joined generation 1 as leader$/);
    await a.waitFor(new RegExp(`^a: starting at ${offsets(PARTITIONS, 0)}$`));
    await produce('first', 2);
    for (const [partition] of PARTITIONS.entries())
      await a.waitFor(new RegExp(`^a: jobs-${partition}@1: first-${partition}-1$`));
    await committed(a, 1, PARTITIONS, 2);

    // b joins: a hears of the rebalance from its heartbeat, commits and rejoins; the leader splits the six.
    const b = start('b');
    await a.waitFor(/^a: rebalance: rejoining$/);
    const [, ofA] = await a.waitFor(/^a: assigned in generation 2: (.*)$/);
    const [, ofB] = await b.waitFor(/^b: assigned in generation 2: (.*)$/);
    expect([...ofA.split(' '), ...ofB.split(' ')].sort()).toEqual(PARTITIONS);
    expect(ofB.split(' ')).toHaveLength(3);
    // b starts where a committed, and reads what is produced to its partitions.
    await b.waitFor(new RegExp(`^b: starting at ${offsets(ofB.split(' '), 2)}$`));
    await produce('second', 1);
    await committed(b, 2, ofB.split(' '), 3);
    for (const p of ofB.split(' ')) expect(a.lines).not.toContain(`a: ${p}@2: second-${p.slice(5)}-0`);

    // b dies without a LeaveGroup. The server's clock moves past its session timeout in steps, each after a
    // heartbeat of a's, so a stays.
    b.kill('SIGKILL');
    await b.exited;
    const afterDeath = a.lines.length;
    for (let step = 0; ; step++) {
      const [, code] = await a.waitFor(/^a: heartbeat: (\w+)$/, a.lines.length);
      if (code === 'REBALANCE_IN_PROGRESS') break; // b expired: the group rebalances without it
      expect(step).toBeLessThan(4);
      await clock.advance({ ms: 3_000 });
    }
    await a.waitFor(new RegExp(`^a: assigned in generation 3: ${PARTITIONS.join(' ')}$`), afterDeath);
    // a carries on from b's commits on b's partitions, and from its own on the rest: nothing read twice.
    await a.waitFor(new RegExp(`^a: starting at ${offsets(PARTITIONS, 3)}$`), afterDeath);
    await produce('third', 1);
    await committed(a, 3, PARTITIONS, 4, afterDeath);

    // SIGTERM: a sends LeaveGroup and exits; the group is Empty, its offsets stay.
    a.kill('SIGTERM');
    expect((await a.exited).code).toBe(0);
    expect(a.lines).toContain(`a: left the group: NONE`);
    const described = await coordinator.describeGroups({ groups: ['jobs'] });
    expect(described.groups[0]).toMatchObject({
      errorCode: ErrorCode.NONE,
      groupState: 'Empty',
      members: [],
    });
    const fetched = await coordinator.offsetFetch({
      groupId: 'jobs',
      topics: [{ name: 'jobs', partitionIndexes: [0, 1, 2, 3, 4, 5] }],
    });
    expect(fetched.topics[0].partitions.map((p) => p.committedOffset)).toEqual([4, 4, 4, 4, 4, 4]);
    // Every record printed once, by one member or the other.
    const printed = [...a.lines, ...b.lines].filter((line) => /^[ab]: jobs-\d@\d+: /.test(line));
    expect(printed).toHaveLength(6 * 4);
  }, 120_000);

  it('shares a group with an SDK member: each decodes what the other encodes', async () => {
    t = await startTestServer({ groupInitialRebalanceDelayMs: 0 });
    const sdkClient = new CohortClient({ address: t.target, clientId: 'sdk-member' });
    await sdkClient.admin().createTopics([{ name: 'jobs', numPartitions: 6 }]);
    try {
      // The SDK member leads: its range assignor reads the Python member's subscription and encodes the
      // Python member's assignment.
      const sdk = sdkClient.join({
        groupId: 'mixed',
        topics: ['jobs'],
        partitionsPerTopic: new Map([['jobs', 6]]),
        protocols: [RANGE_ASSIGNOR],
        sessionTimeoutMs: 6_000,
        heartbeatIntervalMs: 200,
      });
      await once(sdk, 'assigned');
      const inGeneration2 = new Promise<AssignedEvent>((resolve) =>
        sdk.on('assigned', (event: AssignedEvent) => event.generationId === 2 && resolve(event)),
      );
      const python = start('p', 'mixed');
      const [, ofPython] = await python.waitFor(/^p: assigned in generation 2: (.*)$/);
      const ofSdk = (await inGeneration2).partitions.map((p) => `${p.topic}-${p.partition}`);
      expect(python.lines).toContain('p: joined generation 2 as follower');
      expect([...ofPython.split(' '), ...ofSdk].sort()).toEqual(PARTITIONS);
      expect(ofSdk).toHaveLength(3);
    } finally {
      await sdkClient.close();
    }
  });

  it('outlives its server: calls without an answer are retried, and SIGTERM still ends it', async () => {
    t = await startTestServer({ groupInitialRebalanceDelayMs: 0 });
    const member = start('m');
    await member.waitFor(/^m: starting at /);
    await t.close();
    t = undefined;
    await member.waitFor(/^m: heartbeat: no answer$/, member.lines.length);
    await member.waitFor(/^m: heartbeat: no answer$/, member.lines.length); // and it carries on
    member.kill('SIGTERM');
    expect((await member.exited).code).toBe(0);
    expect(member.lines.at(-1)).toBe('m: left the group: no answer');
  });

  it("docs/clients.md's two install routes run the same steps, and the pip route's script parses", () => {
    // The apt route's steps are what beforeAll and start() run. The pip route needs PyPI, which the tests
    // cannot reach: what can be checked is that it is valid bash and differs only in the interpreter.
    const [apt, pip] = shellBlocks('docs/clients.md')
      .filter((block) => block.code.includes('grpc_tools.protoc'))
      .map((block) => block.code);
    expect(pip).toBeDefined();
    const steps = (code: string, python: string): string[] =>
      code
        .replace(/\\\n\s*/g, '')
        .split('\n')
        .filter((line) => line.includes(python))
        .map((line) => line.replaceAll(python, 'PYTHON').replace(/\s+#.*$/, ''));
    expect(steps(pip, '.venv-cohort/bin/python ')).toEqual(steps(apt, '/usr/bin/python3 '));
    expect(pip).toMatch(/^python3 -m venv \.venv-cohort$/m);
    expect(pip).toMatch(/^\.venv-cohort\/bin\/pip install grpcio grpcio-tools$/m);
    const syntax = spawnSync('bash', ['-n'], { input: pip, encoding: 'utf8' });
    expect({ status: syntax.status, stderr: syntax.stderr }).toEqual({ status: 0, stderr: '' });
  });
});
