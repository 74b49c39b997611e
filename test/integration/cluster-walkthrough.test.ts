import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { isRunning, liveChildProcesses } from '../support/child-processes';
import { REPO_ROOT, shellBlocks, type ShellBlock } from '../support/doc-examples';
import {
  cleanEnv,
  docShellEnv,
  runBash,
  startJob,
  withoutBuild,
  type ShellOutcome,
  type TerminalJob,
} from '../support/doc-shell';
import { findEtcd, freePorts } from '../support/etcd';
import { monotonicMs } from '../support/cluster-clients';
import { demoPids, expectDemoStory } from '../support/demo-story';
import { CLUSTER_SESSION_TIMEOUT_MS } from '../../src/demo/demo-settings';

/**
 * docs/cluster.md's walk-through ("Run a cluster"), run as a newcomer runs it: every ```sh block marked
 * `<!-- run by test/integration/cluster-walkthrough.test.ts: STEP -->` is read from the doc and run as
 * written, each in the terminal the doc puts it in. etcd, each node and the consumer are jobs that run
 * until stopped (a bash of their own, in a process group of their own, as a terminal's foreground job);
 * the other blocks run to their end and must exit 0. The group's coordinator is killed with SIGKILL at
 * the pid of its `cohort listening` line, as the doc says, and then every record an exited-0
 * `cohort produce` acknowledged must be printed by the consumer, in order, once.
 *
 * The one change to the text: the machine is shared, so the doc's fixed addresses are rewritten to free
 * ports — every `127.0.0.1:PORT` of the doc (etcd's 2379 and 2380, each node's gRPC and admin port) to a
 * port of its own, and `/tmp/cohort-cluster` to a temporary directory. A `127.0.0.1:PORT` the test does
 * not know fails the test rather than reaching a port someone else may own. Nothing else changes: the
 * nodes run with the doc's flags and the defaults (a 10 s node session), `npm link` links into a
 * throwaway prefix and `npm run build` is skipped (test/support/doc-shell.ts).
 */
const DOC = 'docs/cluster.md';
const THIS_TEST = 'test/integration/cluster-walkthrough.test.ts';
const STEPS = ['etcd', 'nodes', 'topic', 'consumer', 'coordinator', 'after-kill', 'demo'] as const;
type Step = (typeof STEPS)[number];
/** The doc's fixed ports, each rewritten to a free one. */
const DOC_PORTS = [2379, 2380, 7070, 7071, 7080, 7081, 7090, 7091];
const DOC_ROOT = '/tmp/cohort-cluster';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a value; throws saying what did not happen, with `context()`. */
async function until<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined> | T | undefined,
  context: () => string = () => '',
): Promise<T> {
  const deadline = monotonicMs() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (monotonicMs() > deadline)
      throw new Error(
        `${what} did not happen within ${timeoutMs} ms${last === undefined ? '' : ` (${String(last)})`}\n${context()}`,
      );
    await sleep(200);
  }
}

/** The rows of the first table in `output` whose header has `column`, as header → cell maps. */
function table(output: string, column: string): Record<string, string>[] {
  const lines = output.split('\n');
  const start = lines.findIndex((line) => line.split(/ {2,}/).includes(column));
  if (start < 0) return [];
  const headers = lines[start].split(/ {2,}/);
  const rows: Record<string, string>[] = [];
  for (const line of lines.slice(start + 1)) {
    const cells = line.split(/ {2,}/);
    if (line.trim() === '' || cells.length !== headers.length) break;
    rows.push(Object.fromEntries(headers.map((h, i) => [h, cells[i]])));
  }
  return rows;
}

/** The node id in a `COORDINATOR (ID)` cell (`127.0.0.1:7080 (2)`). */
const coordinatorId = (output: string): number | undefined => {
  const cell = table(output, 'COORDINATOR (ID)')[0]?.['COORDINATOR (ID)'];
  const match = cell === undefined ? null : /\((\d+)\)$/.exec(cell);
  return match === null ? undefined : Number(match[1]);
};

function httpOk(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const request = get(url, { timeout: 2_000 }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
  });
}

/** A node's pino log lines. */
const logLines = (job: TerminalJob): { msg?: string; pid?: number }[] =>
  job.lines.flatMap((line) => {
    try {
      return [JSON.parse(line) as { msg?: string; pid?: number }];
    } catch {
      return []; // npm's banner
    }
  });
const logged = (job: TerminalJob, msg: string) => logLines(job).find((line) => line.msg === msg);

/** `payment N` lines the consumer printed, as numbers, in order. */
const printed = (job: TerminalJob): number[] =>
  job.lines.flatMap((line) => {
    const match = /^payment (\d+)$/.exec(line);
    return match === null ? [] : [Number(match[1])];
  });

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('docs/cluster.md, "Run a cluster"', () => {
  const steps = new Map<string, ShellBlock>();
  for (const block of shellBlocks(DOC))
    if (block.runBy?.test === THIS_TEST) steps.set(block.runBy.step, block);
  const jobs: TerminalJob[] = [];
  let root: string;
  let prefix: string;
  let rewrite: (code: string) => string;
  let ports: Map<number, number>;
  let baseEnv: Record<string, string>;
  /** The fifth terminal's variables, from its `export` lines. */
  const terminal: Record<string, string> = {};

  const code = (step: Step): string => rewrite(withoutBuild(steps.get(step)!.code));
  const job = (script: string): TerminalJob => {
    const started = startJob(script, baseEnv);
    jobs.push(started);
    return started;
  };
  const run = (script: string, timeoutMs = 60_000): Promise<ShellOutcome> =>
    runBash(script, terminal, timeoutMs, baseEnv);
  const describeJobs = (): string =>
    jobs
      .map(
        (j, i) =>
          `job ${i} (${j.isRunning() ? 'running' : 'exited'}):\n${j.lines.slice(-15).join('\n')}\n${j.stderr().slice(-1_500)}`,
      )
      .join('\n');

  /** Waits until a node's job logs `cluster view applied` (registered in etcd, its first view applied). */
  const viewApplied = (node: TerminalJob) =>
    until(
      'a node to log "cluster view applied"',
      90_000,
      () => {
        if (!node.isRunning()) throw new Error('a node exited');
        return logged(node, 'cluster view applied');
      },
      describeJobs,
    );

  beforeAll(async () => {
    if (!existsSync(join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js')))
      throw new Error('dist/ is not built: run `npm ci` (its prepare script builds it) or `npm run build`');
    const etcd = await findEtcd();
    root = mkdtempSync(join(tmpdir(), 'cohort-walkthrough-'));
    prefix = mkdtempSync(join(tmpdir(), 'cohort-npm-prefix-'));
    const free = await freePorts(DOC_PORTS.length);
    ports = new Map(DOC_PORTS.map((port, i) => [port, free[i]]));
    rewrite = (text) =>
      text.replaceAll(DOC_ROOT, root).replace(/127\.0\.0\.1:(\d+)/g, (_, port: string) => {
        const to = ports.get(Number(port));
        if (to === undefined)
          throw new Error(`${DOC} names 127.0.0.1:${port}, which this test does not move`);
        return `127.0.0.1:${to}`;
      });
    const env = docShellEnv(prefix);
    baseEnv = { ...cleanEnv(), ...env, PATH: `${dirname(etcd)}:${env.PATH}` };
  }, 300_000);

  afterAll(async () => {
    await Promise.all(jobs.map((j) => j.stop()));
    for (const dir of [root, prefix]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    expect(liveChildProcesses()).toEqual([]);
  }, 60_000);

  it('has the steps this test runs, each once', () => {
    expect([...steps.keys()]).toEqual([...STEPS]);
  });

  it('starts etcd and three nodes, loses the group coordinator to kill -9, loses no record, and runs the demo on it', async () => {
    // First terminal: the secret and etcd.
    const etcd = job(code('etcd'));
    await until(
      'etcd to answer /health',
      30_000,
      async () => ((await httpOk(`http://127.0.0.1:${ports.get(2379)}/health`)) ? true : undefined),
      describeJobs,
    );

    // One terminal per node.
    const nodeCommands = code('nodes')
      .split('\n')
      .filter((line) => line.trim() !== '');
    expect(nodeCommands).toHaveLength(3);
    const nodes = nodeCommands.map((command) => job(command));
    for (const node of nodes) await viewApplied(node);
    for (const node of nodes) {
      expect(logged(node, 'cohort listening')).toBeDefined();
      expect(logged(node, 'cluster session registered')).toBeDefined();
    }
    await until(
      'one node to log "became the cluster controller"',
      30_000,
      () => (nodes.some((node) => logged(node, 'became the cluster controller')) ? true : undefined),
      describeJobs,
    );

    // The fifth terminal: the topic and twenty records. Its `export` lines stay for its later blocks.
    const topic = code('topic');
    for (const [, name, value] of topic.matchAll(/^export (\w+)=(\S+)$/gm)) terminal[name] = value;
    expect(Object.keys(terminal)).toEqual(['COHORT_ADDRESS']);
    const created = await run(topic, 120_000);
    expect({ code: created.code, output: created.output }).toEqual({ code: 0, output: expect.any(String) });
    const partition = table(created.output, 'LEADER')[0];
    expect(partition?.ISR.split(',').sort()).toEqual(['1', '2', '3']);

    // The sixth terminal: the consumer prints the twenty records.
    const consumer = job(code('consumer'));
    await until(
      'the consumer to print payment 1 ... 20',
      60_000,
      () => (printed(consumer).length >= 20 ? true : undefined),
      describeJobs,
    );

    // Back in the fifth: the group's coordinator, once the consumer has committed what it printed.
    const found = await until(
      'groups describe billing to show CURRENT-OFFSET 20',
      30_000,
      async () => {
        const described = await run(code('coordinator'));
        const offsets = table(described.output, 'CURRENT-OFFSET').map((row) => row['CURRENT-OFFSET']);
        return described.code === 0 && offsets.join() === '20' ? described.output : undefined;
      },
      describeJobs,
    );
    const coordinator = coordinatorId(found)!;
    expect([1, 2, 3]).toContain(coordinator);
    const billingRows = table(found, '#GROUPS').filter((row) => row['#GROUPS'] === '1');
    expect(billingRows.map((row) => row.LEADER)).toEqual([String(coordinator)]);
    const epochBefore = Number(billingRows[0].PARTITION === undefined ? NaN : billingRows[0]['LEADER-EPOCH']);
    const billingPartition = billingRows[0].PARTITION;

    // kill -9 of the coordinator's process, whose pid is in its node's `cohort listening` line.
    const victim = nodes[coordinator - 1];
    expect(nodeCommands[coordinator - 1]).toContain(`--node-id ${coordinator} `);
    process.kill(logged(victim, 'cohort listening')!.pid!, 'SIGKILL');
    await victim.exited;

    // Until the killed node's session has expired the describes can fail to reach it: ask again.
    const [describes, produce] = ((): [string, string] => {
      const lines = code('after-kill').split('\n');
      const at = lines.findIndex((line) => line.includes('cohort produce'));
      expect(at).toBe(lines.length - 1);
      return [lines.slice(0, at).join('\n'), lines[at]];
    })();
    // `cluster describe` runs first: asked just before the move, it still names the killed node as the
    // leader of billing's partition while `groups describe`, just after, names the new coordinator.
    const after = await until(
      'a new coordinator with CURRENT-OFFSET 20',
      90_000,
      async () => {
        const described = await run(describes);
        const newCoordinator = coordinatorId(described.output);
        const offsets = table(described.output, 'CURRENT-OFFSET').map((row) => row['CURRENT-OFFSET']);
        const billingRow = table(described.output, '#GROUPS').find(
          (row) => row.PARTITION === billingPartition,
        );
        return described.code === 0 &&
          newCoordinator !== undefined &&
          newCoordinator !== coordinator &&
          billingRow?.LEADER !== String(coordinator) &&
          offsets.join() === '20'
          ? described.output
          : undefined;
      },
      describeJobs,
    );
    const moved = table(after, '#GROUPS').find((row) => row.PARTITION === billingPartition)!;
    expect(Number(moved.LEADER)).toBe(coordinatorId(after));
    expect(Number(moved['LEADER-EPOCH'])).toBeGreaterThan(epochBefore);

    const more = await run(produce);
    expect({ code: more.code, output: more.output }).toEqual({ code: 0, output: expect.any(String) });
    await until(
      'the consumer to print payment 21 ... 40',
      60_000,
      () => (printed(consumer).length >= 40 ? true : undefined),
      describeJobs,
    );

    // Ctrl-C: the consumer commits and leaves. Every acknowledged record was printed, in order, once.
    consumer.signal('SIGINT');
    expect(await consumer.exited).toEqual({ code: 0, signal: null });
    expect(printed(consumer)).toEqual(range(1, 40));

    // The killed node, started again with its own command, comes back into the ISR of payments.
    const restarted = job(nodeCommands[coordinator - 1]);
    await viewApplied(restarted);

    // The demo on the cluster, from any terminal, as the doc gives it (its own timeline: about 40 s).
    const demo = await run(code('demo'), 180_000);
    expect({ code: demo.code }).toEqual({ code: 0 });
    expect(demo.output).toMatch(/\] cluster +3 live nodes: 1 at 127\.0\.0\.1:\d+, 2 at .*, 3 at /);
    expect(demo.output).toMatch(/\] cluster +created topic demo-orders: 6 partitions, 3 replicas each/);
    expect(demo.output).toMatch(/\] group +demo-group is coordinated by node [123]\n/);
    // The demo's session on a cluster, waited out from the dead member's last heartbeat (every fifth of it).
    expectDemoStory(demo.output, ((CLUSTER_SESSION_TIMEOUT_MS / 5) * 4) / 1_000);
    expect(demoPids(demo.output).filter(isRunning)).toEqual([]);

    const describe = topic.split('\n').find((line) => line.includes('topics describe'))!;
    await until(
      'the restarted node back in the ISR of payments',
      60_000,
      async () => {
        const described = await run(describe);
        const isr = table(described.output, 'LEADER')[0]?.ISR.split(',').sort();
        return isr?.join() === '1,2,3' ? true : undefined;
      },
      describeJobs,
    );
    expect(etcd.isRunning()).toBe(true);
  }, 300_000);
});
