import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { isRunning, liveChildProcesses } from '../support/child-processes';
import { CohortCluster, waitFor } from '../support/cohort-cluster';
import { demoPids } from '../support/demo-story';

/**
 * The cluster demo rides through a node failover (issue 33, item 6). `npm run demo -- --address ...` runs
 * on three nodes started with docs/cluster.md's settings (a 10 s node session, the default ISR settings),
 * with the demo's own cluster defaults (its member session); once every partition has an owner, the node
 * that coordinates the demo's group is killed with SIGKILL, as the doc tells a reader to. Then:
 *
 * - the demo narrates it: the coordinator not answering, the node leaving the cluster, the group at its
 *   new coordinator, the producer's stall and its resumption;
 * - the members keep their partitions: no consumer loses, gives up or is handed partitions after the
 *   kill, no rebalance is printed, and the group is Stable at its new coordinator in the same generation
 *   with the same members;
 * - the producer goes on: records are acknowledged after the move, more than before the kill.
 *
 * The demo's steady phase is long (`--steady-ms`), so the failover happens in it whatever the machine's
 * speed; once the story is told the demo is interrupted (SIGINT), and must stop its processes.
 */
const REPO_ROOT = join(__dirname, '..', '..');
const GROUP_ID = 'demo-group';
/** docs/cluster.md's nodes: the defaults. */
const NODE_SESSION_TIMEOUT_MS = 10_000;
/** Start-up of the demo and its three consumers, and a failover, on a loaded 2-core machine. */
const STORY_BOUND_MS = 120_000;

let cluster: CohortCluster | undefined;
let demo: ChildProcess | undefined;

beforeAll(async () => {
  cluster = await CohortCluster.start({
    nodeCount: 3,
    sessionTimeoutMs: NODE_SESSION_TIMEOUT_MS,
    minInsyncReplicas: 1,
    replicaLagTimeMaxMs: 30_000,
  });
}, 180_000);

afterAll(async () => {
  if (demo !== undefined && demo.exitCode === null && demo.signalCode === null) {
    const exited = new Promise((resolve) => demo!.once('close', resolve));
    demo.kill('SIGINT');
    await exited;
  }
  await cluster?.stop();
  expect(liveChildProcesses()).toEqual([]);
}, 60_000);

/** The demo's output lines so far, and its exit. */
function startDemo(bootstrap: readonly string[]): {
  lines: () => string[];
  stderr: () => string;
  exited: Promise<number | null>;
} {
  const child = spawn(
    process.execPath,
    [
      '-r',
      './scripts/register-typescript.js',
      'src/demo/main.ts',
      '--address',
      bootstrap.join(','),
      '--steady-ms',
      '600000',
      '--timeout-ms',
      '600000',
    ],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  demo = child;
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return {
    lines: () => stdout.split('\n'),
    stderr: () => stderr,
    exited: new Promise((resolve) => child.once('close', resolve)),
  };
}

/** Acknowledged totals the demo printed for its producer, with their line numbers. */
const acknowledged = (lines: readonly string[]): { at: number; total: number }[] =>
  lines.flatMap((line, at) => {
    const match = /\] producer +(\d+) records acknowledged/.exec(line);
    return match === null ? [] : [{ at, total: Number(match[1]) }];
  });

it('keeps every member and its partitions through the loss of the group coordinator, narrating the failover', async () => {
  const c = cluster!;
  const running = startDemo(c.nodeIds().map((id) => c.node(id).target));
  const output = (): string =>
    `demo stdout:\n${running.lines().join('\n')}\ndemo stderr:\n${running.stderr()}`;
  const lineAfter = (from: number, pattern: RegExp): number | undefined => {
    const i = running.lines().findIndex((line, at) => at >= from && pattern.test(line));
    return i < 0 ? undefined : i;
  };
  const wait = async (what: string, from: number, pattern: RegExp): Promise<number> => {
    try {
      return await waitFor(what, STORY_BOUND_MS, () => lineAfter(from, pattern), 100);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${output()}\n${c.describeNodes(20)}`);
    }
  };

  await wait('the group to give every partition an owner', 0, /\] demo +every partition has an owner/);
  // The index first, then the lines: `lines()[await ...]` would index the lines read before the wait.
  const namedAt = await wait('the coordinator named', 0, /\] group +demo-group is coordinated by node \d/);
  const told = running.lines()[namedAt];
  const named = /by node (\d+)/.exec(told ?? '');
  if (named === null) throw new Error(`no coordinator in ${JSON.stringify(told)}\n${output()}`);
  const coordinator = Number(named[1]);
  // The node that answers FindCoordinator for the group is the one the demo named.
  expect(await c.coordinatorOf(GROUP_ID)).toBe(coordinator);
  // A producer line with records acknowledged before the kill, so that "more after" means something.
  await wait('records acknowledged', 0, /\] producer +[1-9]\d* records acknowledged/);

  const killedAt = running.lines().length - 1;
  const before = Math.max(...acknowledged(running.lines()).map((a) => a.total));
  await c.kill(coordinator);

  const silent = await wait(
    'the coordinator not answering',
    killedAt,
    new RegExp(`\\] group +demo-group's coordinator, node ${coordinator}, does not answer`),
  );
  const left = await wait(
    'the node leaving the cluster',
    killedAt,
    new RegExp(`\\] cluster +node ${coordinator} left the cluster \\(its session in etcd expired\\)`),
  );
  const moved = await wait(
    'the group at a new coordinator',
    killedAt,
    /\] group +demo-group moved to node \d/,
  );
  const stalled = await wait('the producer stalling', killedAt, /\] producer +no record acknowledged for/);
  const resumed = await wait('the producer resuming', stalled, /\] producer +acknowledgements resumed after/);
  // Two progress lines after the move (they come every 2 s): the producer goes on, it did not just flush.
  await waitFor('two producer lines after the move', STORY_BOUND_MS, () =>
    acknowledged(running.lines()).filter((a) => a.at > moved).length >= 2 ? true : undefined,
  );

  const lines = running.lines();
  expect(silent).toBeLessThan(moved);
  expect(left).toBeGreaterThan(killedAt);
  expect(resumed).toBeGreaterThan(stalled);
  const newCoordinator = Number(/moved to node (\d+)/.exec(lines[moved])![1]);
  expect(newCoordinator).not.toBe(coordinator);
  expect(await c.coordinatorOf(GROUP_ID)).toBe(newCoordinator);
  // The same members, generation and partitions: nothing expired, nothing rebalanced.
  // On a mismatch, the whole story: what the narrator saw before the kill decides this line.
  expect({
    line: lines[moved],
    story: /: Stable, generation \d+ and the same 3 members as before$/.test(lines[moved]) ? '' : output(),
  }).toEqual({
    line: expect.stringMatching(
      /moved to node \d+: Stable, generation \d+ and the same 3 members as before$/,
    ),
    story: '',
  });
  const afterKill = lines.slice(killedAt + 1);
  expect(afterKill.filter((line) => /\] consumer-\d +(lost|gives up|assigned in|joined)/.test(line))).toEqual(
    [],
  );
  expect(
    afterKill.filter((line) => /\] group +(PreparingRebalance|CompletingRebalance|Empty)/.test(line)),
  ).toEqual([]);
  const after = acknowledged(lines).filter((a) => a.at > moved);
  expect(after[after.length - 1].total).toBeGreaterThan(before);

  // Ctrl-C: the demo stops its producer and consumers whatever it was doing.
  demo!.kill('SIGINT');
  expect({ code: await running.exited, stderr: running.stderr() }).toEqual({
    code: 1,
    stderr: 'demo: interrupted\n',
  });
  expect(demoPids(running.lines().join('\n')).filter(isRunning)).toEqual([]);
}, 300_000);
