import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { CohortClient, RANGE_ASSIGNOR, type AssignedEvent } from '../../src';
import { ErrorCode } from '../../src/errors';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';
import { ensureSystemPackages } from '../support/system-packages';

const REPO_ROOT = join(__dirname, '..', '..');
/** Debian's python3: python3-grpcio and python3-grpc-tools install for it, not for a python3 of pyenv. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const MEMBER = join(REPO_ROOT, 'examples', 'python', 'cohort_member.py');
const PARTITIONS = ['jobs-0', 'jobs-1', 'jobs-2', 'jobs-3', 'jobs-4', 'jobs-5'];
/** apt-get may have to download and install the packages first. */
const SETUP_TIMEOUT_MS = 600_000;

/** A running examples/python/cohort_member.py and what it printed. */
class PythonMember {
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; stderr: string }>;
  private readonly child: ChildProcess;
  private readonly waiters: (() => void)[] = [];

  constructor(name: string, address: string, generated: string, group: string) {
    const args = ['--address', address, '--group', group, '--topic', 'jobs', '--partitions', '6'];
    const timing = ['--session-timeout-ms', '6000', '--heartbeat-interval-ms', '200'];
    this.child = spawn(PYTHON, [MEMBER, ...args, ...timing, '--name', name, '--verbose'], {
      env: { PATH: process.env.PATH ?? '', PYTHONPATH: generated },
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
    for (;;) {
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
  let generated: string;
  let t: TestServer | undefined;
  const members: PythonMember[] = [];

  beforeAll(() => {
    ensureSystemPackages('examples/python/cohort_member.py', [
      { debianPackage: 'python3-grpcio', probe: [PYTHON, '-c', 'import grpc'] },
      { debianPackage: 'python3-grpc-tools', probe: [PYTHON, '-c', 'import grpc_tools.protoc'] },
    ]);
    // The stubs, generated as docs/clients.md says, into a directory of the test's own.
    generated = mkdtempSync(join(tmpdir(), 'cohort-python-'));
    const protoc = spawnSync(
      PYTHON,
      [
        '-m',
        'grpc_tools.protoc',
        '-I',
        'proto',
        `--python_out=${generated}`,
        `--grpc_python_out=${generated}`,
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
    await t?.close();
    t = undefined;
  });

  afterAll(() => rmSync(generated, { recursive: true, force: true }));

  const start = (name: string, group = 'jobs'): PythonMember => {
    const member = new PythonMember(name, (t as TestServer).target, generated, group);
    members.push(member);
    return member;
  };

  it('joins, shares the partitions, commits, outlives a member that died, and leaves', async () => {
    t = await startTestServer({ manualClock: true, groupInitialRebalanceDelayMs: 0 });
    const clock = t.testClock();
    const coordinator = t.groupCoordinator();

    // Alone, a gets everything: nothing was committed, so it processes offset 0 of each and commits 1.
    const a = start('a');
    await a.waitFor(/^a: joined generation 1 as leader$/);
    await a.waitFor(
      new RegExp(`^a: committed in generation 1: ${PARTITIONS.map((p) => `${p}=1`).join(' ')}$`),
    );

    // b joins: a hears of the rebalance from its heartbeat and rejoins; the leader splits the six.
    const b = start('b');
    await a.waitFor(/^a: rebalance: rejoining$/);
    const [, ofA] = await a.waitFor(/^a: assigned in generation 2: (.*)$/);
    const [, ofB] = await b.waitFor(/^b: assigned in generation 2: (.*)$/);
    expect([...ofA.split(' '), ...ofB.split(' ')].sort()).toEqual(PARTITIONS);
    expect(ofB.split(' ')).toHaveLength(3);
    // b starts where a committed.
    await b.waitFor(
      new RegExp(
        `^b: committed in generation 2: ${ofB
          .split(' ')
          .map((p) => `${p}=2`)
          .join(' ')}$`,
      ),
    );

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
    // a carries on from b's commits on b's partitions, and from its own on the rest.
    await a.waitFor(
      new RegExp(`^a: committed in generation 3: ${PARTITIONS.map((p) => `${p}=3`).join(' ')}$`),
      afterDeath,
    );

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
    expect(fetched.topics[0].partitions.map((p) => p.committedOffset)).toEqual([3, 3, 3, 3, 3, 3]);
  }, 120_000);

  it('shares a group with an SDK member: each decodes what the other encodes', async () => {
    t = await startTestServer({ groupInitialRebalanceDelayMs: 0 });
    const client = new CohortClient({ address: t.target, clientId: 'sdk-member' });
    try {
      // The SDK member leads: its range assignor reads the Python member's subscription and encodes the
      // Python member's assignment.
      const sdk = client.join({
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
      await client.close();
    }
  });

  it('outlives its server: calls without an answer are retried, and SIGTERM still ends it', async () => {
    t = await startTestServer({ groupInitialRebalanceDelayMs: 0 });
    const member = start('m');
    await member.waitFor(/^m: committed in generation 1: /);
    await t.close();
    t = undefined;
    await member.waitFor(/^m: heartbeat: no answer$/, member.lines.length);
    await member.waitFor(/^m: heartbeat: no answer$/, member.lines.length); // and it carries on
    member.kill('SIGTERM');
    expect((await member.exited).code).toBe(0);
    expect(member.lines.at(-1)).toBe('m: left the group: no answer');
  });
});
