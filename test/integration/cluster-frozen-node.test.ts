import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ControllerElection } from '../../src/cluster/controller-election';
import { EtcdMetadataStore } from '../../src/cluster/etcd-metadata-store';
import { NodeSession } from '../../src/cluster/node-session';
import { SystemTimer } from '../../src/timer';
import { SYSTEM_TIME } from '../../src/time';
import { startEtcd, type EtcdProcess } from '../support/etcd';
import { stopProcess } from '../support/stopped-process';

/**
 * The case, with real processes: the controller node is stopped with SIGSTOP for longer than its
 * session TTL, another node takes over, and when the first is resumed it must come back as a follower —
 * not for one tick may it believe it is still the controller.
 */
const REPO_ROOT = join(__dirname, '..', '..');

interface Line {
  readonly wallMs: number;
  readonly event: string;
  readonly [field: string]: unknown;
}

let etcd: EtcdProcess;
let child: ChildProcess | undefined;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
// Also after a timeout, when the test body is still waiting: a stopped child would keep jest alive.
afterEach(async () => {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
});
afterAll(() => etcd?.stop());

it('comes back as a follower after a SIGSTOP longer than its session TTL', async () => {
  const clusterId = `frozen-${process.pid}`;
  child = spawn(
    process.execPath,
    ['-r', './scripts/register-typescript.js', 'test/support/cluster-node-process.ts'],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ETCD_ENDPOINTS: etcd.endpoints.join(','), CLUSTER_ID: clusterId, NODE_ID: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lines: Line[] = [];
  const waiters: { check: (line: Line) => boolean; resolve: () => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (text) => {
    const line = JSON.parse(text) as Line;
    lines.push(line);
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i].check(line)) waiters.splice(i, 1)[0].resolve();
    }
  });
  const childLine = (check: (line: Line) => boolean): Promise<void> =>
    lines.some(check) ? Promise.resolve() : new Promise((resolve) => waiters.push({ check, resolve }));

  const store = new EtcdMetadataStore({ endpoints: etcd.endpoints });
  const timer = new SystemTimer({ time: SYSTEM_TIME });
  const session = new NodeSession({
    store,
    time: SYSTEM_TIME,
    timer,
    clusterId,
    nodeId: 2,
    advertisedAddress: '127.0.0.1:7072',
    sessionTimeoutMs: 2_000,
  });
  const election = new ControllerElection({ store, session, timer, clusterId, nodeId: 2 });
  try {
    // It leads, and says so in a tick: the test would prove nothing otherwise.
    await childLine((l) => l.event === 'tick' && l.isController === true);
    const [firstEpoch] = lines.filter((l) => l.event === 'elected').map((l) => l.controllerEpoch as number);
    session.start();
    election.start();

    const takeover = once(election, 'elected') as Promise<[{ controllerEpoch: number }]>;
    await stopProcess(child);
    const [{ controllerEpoch: secondEpoch }] = await takeover;
    expect(secondEpoch).toBeGreaterThan(firstEpoch);
    const resumedAtMs = Date.now();
    child.kill('SIGCONT');

    // Resumed, the old controller hears of its expiry, comes back on a new lease, and learns of node 2.
    await childLine((l) => l.event === 'controllerChanged' && l.controllerId === 2);
    const learnedAtMs = Date.now();
    await childLine((l) => l.event === 'tick' && l.wallMs > learnedAtMs);
    const after = lines.filter((l) => l.wallMs >= resumedAtMs);
    expect(after.filter((l) => l.event === 'tick').length).toBeGreaterThan(0);
    expect(after.filter((l) => l.event === 'tick' && l.isController === true)).toEqual([]);
    expect(after.filter((l) => l.event === 'elected')).toEqual([]);
    expect(after).toContainEqual(expect.objectContaining({ event: 'resigned', controllerEpoch: firstEpoch }));
    expect(after).toContainEqual(expect.objectContaining({ event: 'active', incarnation: 2 }));
    expect(election.isController()).toBe(true);
  } finally {
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    await election.close();
    await session.close();
    store.close();
    timer.shutdown();
  }
}, 60_000);
