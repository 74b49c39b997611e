import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { connect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors';
import { LARGE_HEAP_MIN_BYTES } from '../../src/heap-growth';
import { brokerClient, groupCoordinatorClient, healthClient, testClockClient } from '../support/grpc-clients';
import type { CohortProcess } from '../support/spawn-cohort';
import { openUnfinishedCall } from '../support/raw-http2';
import { spawnCohort } from '../support/spawn-cohort';
import { startEtcd } from '../support/etcd';

describe('the cohort process (src/main.ts)', () => {
  let cohort: CohortProcess | undefined;

  afterEach(async () => {
    await cohort?.kill();
    cohort = undefined;
  });

  it('logs one JSON line with the real address for port 0, serves, and exits 0 on SIGTERM', async () => {
    cohort = spawnCohort(['--listen', '127.0.0.1:0']);
    const listening = await cohort.waitForLog('cohort listening');
    expect(listening.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(listening.port).toBeGreaterThan(0);
    expect(listening.address).toBe(`127.0.0.1:${String(listening.port)}`);
    // The heap policy comes with readiness, after the start-up replay of group state.
    const ready = await cohort.waitForLog('cohort ready');
    expect(ready.heapGrowingPercent).toBe(100);
    expect(ready.heapGrowingPercentApplied).toBe(
      (ready.heapSizeLimitBytes as number) >= LARGE_HEAP_MIN_BYTES,
    );
    expect(cohort.lines.filter((l) => typeof l !== 'string' && l.msg === 'cohort listening')).toHaveLength(1);

    const client = groupCoordinatorClient(listening.address as string);
    try {
      expect(await client.listGroups({})).toEqual({ errorCode: ErrorCode.NONE, groups: [] });
    } finally {
      client.close();
    }

    cohort.child.kill('SIGTERM');
    expect(await cohort.exited).toEqual({ code: 0, signal: null });
    expect(cohort.lines.map((l) => (typeof l === 'string' ? l : l.msg))).toEqual([
      'cohort listening',
      'cohort ready',
      'cohort stopping',
      'cohort stopped',
    ]);
  });

  it('exits 0 on SIGINT as well', async () => {
    cohort = spawnCohort(['--listen=127.0.0.1:0']);
    await cohort.waitForLog('cohort listening');
    cohort.child.kill('SIGINT');
    expect(await cohort.exited).toEqual({ code: 0, signal: null });
  });

  it('reads its settings from COHORT_ environment variables, serving TestClock with COHORT_MANUAL_CLOCK', async () => {
    cohort = spawnCohort([], {
      COHORT_LISTEN: '127.0.0.1:0',
      COHORT_MANUAL_CLOCK: 'true',
      COHORT_HEAP_GROWING_PERCENT: '50',
      // A heap V8 grows 2x at most by itself: the setting is left alone, and the log says so.
      NODE_OPTIONS: '--max-old-space-size=512',
    });
    const listening = await cohort.waitForLog('cohort listening');
    expect(listening.manualClock).toBe(true);
    const ready = await cohort.waitForLog('cohort ready');
    expect(ready.heapGrowingPercent).toBe(50);
    expect(ready.heapGrowingPercentApplied).toBe(false);
    expect(ready.heapSizeLimitBytes).toBeLessThan(LARGE_HEAP_MIN_BYTES);
    const clock = testClockClient(listening.address as string);
    try {
      const { nowMs } = await clock.now({});
      expect(await clock.advance({ ms: 250 })).toEqual({ nowMs: nowMs + 250 });
    } finally {
      clock.close();
    }
  });

  it('exits 2 listing every configuration problem, without starting', async () => {
    cohort = spawnCohort(
      [
        '--listen',
        '127.0.0.1:0',
        '--group-min-session-timeout-ms',
        '7000',
        '--group-max-session-timeout-ms',
        '6000',
      ],
      { COHORT_GROUP_MAX_SIZE: '0' },
    );
    expect(await cohort.exited).toEqual({ code: 2, signal: null });
    expect(cohort.stderr()).toContain(
      '--group-min-session-timeout-ms (7000) must be <= --group-max-session-timeout-ms (6000)',
    );
    expect(cohort.stderr()).toContain('COHORT_GROUP_MAX_SIZE (0) must be >= 1');
    expect(cohort.lines).toEqual([]);
  });

  it('prints the help text and exits 0 for --help', async () => {
    cohort = spawnCohort(['--help']);
    expect(await cohort.exited).toEqual({ code: 0, signal: null });
    expect(cohort.lines).toContain('  --group-max-size N');
  });

  it('exits 1 when it cannot bind its address', async () => {
    const first = spawnCohort(['--listen', '127.0.0.1:0']);
    try {
      const { address } = await first.waitForLog('cohort listening');
      cohort = spawnCohort(['--listen', address as string]);
      expect(await cohort.exited).toEqual({ code: 1, signal: null });
      expect(cohort.lines).toContainEqual(expect.objectContaining({ msg: 'cohort could not start' }));
    } finally {
      await first.kill();
    }
  });

  it('exits at once on a second signal while the first is still waiting for open calls', async () => {
    cohort = spawnCohort(['--listen', '127.0.0.1:0']);
    const { address } = await cohort.waitForLog('cohort listening');
    await cohort.waitForLog('cohort ready');
    // A call whose request never finishes arriving stays in flight, so the graceful close waits on it.
    const call = openUnfinishedCall(address as string, '/cohort.v1.GroupCoordinator/ListGroups');
    const health = healthClient(address as string);
    try {
      await call.ready;
      const watch = health.watch('');
      expect(await watch.next()).toBe('SERVING');
      cohort.child.kill('SIGTERM');
      await cohort.waitForLog('cohort stopping');
      expect(await watch.next()).toBe('NOT_SERVING');
      cohort.child.kill('SIGTERM');
      expect(await cohort.exited).toEqual({ code: 1, signal: null });
      expect(cohort.lines).toContainEqual(
        expect.objectContaining({ msg: 'second signal; exiting without waiting for open calls' }),
      );
    } finally {
      health.close();
      call.close();
    }
  });

  it('cuts calls still open after --shutdown-timeout-ms and still exits 0', async () => {
    cohort = spawnCohort(['--listen', '127.0.0.1:0', '--shutdown-timeout-ms', '300']);
    const { address } = await cohort.waitForLog('cohort listening');
    await cohort.waitForLog('cohort ready');
    // A call whose request never finishes arriving: only the timeout ends it.
    const call = openUnfinishedCall(address as string, '/cohort.v1.GroupCoordinator/ListGroups');
    const client = groupCoordinatorClient(address as string);
    try {
      await call.ready;
      expect((await client.listGroups({})).errorCode).toBe(ErrorCode.NONE);
      cohort.child.kill('SIGTERM');
      expect(await cohort.exited).toEqual({ code: 0, signal: null });
      expect(cohort.lines).toContainEqual(
        expect.objectContaining({
          msg: 'calls still open after the grace period; closing their connections',
          shutdownGraceMs: 300,
        }),
      );
    } finally {
      client.close();
      call.close();
    }
  });

  it('on SIGTERM ends a health Watch stream and closes an idle connection and one that never spoke HTTP/2, well before --shutdown-timeout-ms', async () => {
    cohort = spawnCohort(['--listen', '127.0.0.1:0', '--shutdown-timeout-ms', '600000']);
    const { address, port } = await cohort.waitForLog('cohort listening');
    await cohort.waitForLog('cohort ready');
    const health = healthClient(address as string);
    const idle = groupCoordinatorClient(address as string);
    // Connected, then silent: it neither reads nor closes its side, as a stalled or hostile client.
    const silent = connect(port as number, '127.0.0.1');
    silent.on('error', () => undefined);
    try {
      await new Promise((resolve) => silent.once('connect', resolve));
      silent.pause();
      expect((await idle.listGroups({})).errorCode).toBe(ErrorCode.NONE);
      const watch = health.watch('');
      expect(await watch.next()).toBe('SERVING');
      cohort.child.kill('SIGTERM');
      // The timeout is ten minutes, far beyond this test's own: the exit can only come from the drain.
      expect(await cohort.exited).toEqual({ code: 0, signal: null });
      expect(watch.statuses).toEqual(['SERVING', 'NOT_SERVING']);
      expect(cohort.lines.map((l) => (typeof l === 'string' ? l : l.msg))).not.toContain(
        'calls still open after the grace period; closing their connections',
      );
    } finally {
      health.close();
      idle.close();
      silent.destroy();
    }
  });

  it('refuses, with exit status 2 and a message saying how to fix it, a reachable address without TLS or a token', async () => {
    cohort = spawnCohort(['--listen', '0.0.0.0:0']);
    expect(await cohort.exited).toEqual({ code: 2, signal: null });
    expect(cohort.stderr()).toContain("--listen ('0.0.0.0:0') can be reached from other machines");
    expect(cohort.stderr()).toContain('--insecure');
    expect(cohort.lines).toEqual([]);
  });

  it('refuses, with exit status 2, --manual-clock on a reachable address even with a token, and starts with --insecure', async () => {
    const token = { COHORT_TOKEN: 'Zq3v9Xw0bT7nKd2LpR8sYf4HcJ6mAe1U' };
    cohort = spawnCohort(['--listen', '0.0.0.0:0', '--manual-clock'], token);
    expect(await cohort.exited).toEqual({ code: 2, signal: null });
    expect(cohort.stderr()).toContain(
      '--manual-clock (true) lets any client that reaches the server advance',
    );
    expect(cohort.stderr()).toContain('or accept the risk with --insecure');
    expect(cohort.lines).toEqual([]);
    cohort = spawnCohort(['--listen', '0.0.0.0:0', '--manual-clock', '--insecure'], token);
    expect((await cohort.waitForLog('cohort listening')).manualClock).toBe(true);
  });

  it('starts on a reachable address with --insecure', async () => {
    cohort = spawnCohort(['--listen', '0.0.0.0:0', '--insecure']);
    const listening = await cohort.waitForLog('cohort listening');
    expect(listening.host).toBe('0.0.0.0');
  });

  it('exits 2 listing every unreadable token or TLS file, before binding anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-files-'));
    try {
      cohort = spawnCohort([
        '--listen',
        '127.0.0.1:0',
        '--token-file',
        join(dir, 'no-token'),
        '--tls-cert',
        join(dir, 'no-cert.pem'),
        '--tls-key',
        join(dir, 'no-key.pem'),
      ]);
      expect(await cohort.exited).toEqual({ code: 2, signal: null });
      for (const name of ['no-token', 'no-cert.pem', 'no-key.pem']) {
        expect(cohort.stderr()).toContain(`(${join(dir, name)}) cannot be read (ENOENT)`);
      }
      expect(cohort.lines).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serves on a Unix socket and removes it when it stops', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-socket-'));
    const socket = join(dir, 'cohort.sock');
    try {
      cohort = spawnCohort(['--listen', `unix:${socket}`]);
      const listening = await cohort.waitForLog('cohort listening');
      expect(listening.address).toBe(`unix:${socket}`);
      const client = groupCoordinatorClient(`unix:${socket}`);
      try {
        expect(await client.listGroups({})).toEqual({ errorCode: ErrorCode.NONE, groups: [] });
      } finally {
        client.close();
      }
      cohort.child.kill('SIGTERM');
      expect(await cohort.exited).toEqual({ code: 0, signal: null });
      expect(existsSync(socket)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serves /metrics on the admin address it logs', async () => {
    cohort = spawnCohort(['--listen', '127.0.0.1:0', '--admin-listen', '127.0.0.1:0']);
    const listening = await cohort.waitForLog('cohort listening');
    await cohort.waitForLog('cohort ready');
    expect(listening.adminAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    const response = await fetch(`http://${String(listening.adminAddress)}/metrics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('cohort_purgatory_size{purgatory="Heartbeat"} 0');
  });

  it('on SIGTERM answers every parked call (a JoinGroup waiting for its rebalance, a long-poll Fetch) and exits 0', async () => {
    // The manual clock never reaches the initial rebalance delay, so the JoinGroup stays parked.
    cohort = spawnCohort(['--listen', '127.0.0.1:0', '--manual-clock']);
    const { address } = await cohort.waitForLog('cohort listening');
    await cohort.waitForLog('cohort ready');
    const target = address as string;
    const member = groupCoordinatorClient(target);
    const broker = brokerClient(target);
    try {
      const created = await broker.createTopics({
        topics: [{ name: 'drained', numPartitions: 1, replicationFactor: 1 }],
      });
      expect(created.topics[0].errorCode).toBe(ErrorCode.NONE);
      const join = {
        groupId: 'drained-group',
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 60_000,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: Buffer.from('m') }],
      };
      const first = await member.joinGroup(join);
      expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
      const parkedJoin = member.joinGroup({ ...join, memberId: first.memberId });
      const parkedFetch = broker.fetch({
        replicaId: -1,
        maxWaitMs: 600_000,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [
          {
            name: 'drained',
            partitions: [{ partitionIndex: 0, fetchOffset: '0', partitionMaxBytes: 1 << 20 }],
          },
        ],
      });
      // Calls on one channel are handled in order: once these answer, the join and the fetch are parked.
      await member.listGroups({});
      await broker.createTopics({ topics: [] });

      cohort.child.kill('SIGTERM');
      const [joinAnswer, fetchAnswer] = await Promise.all([parkedJoin, parkedFetch]);
      expect(joinAnswer.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
      expect(fetchAnswer).toMatchObject({ errorCode: ErrorCode.NONE });
      expect(await cohort.exited).toEqual({ code: 0, signal: null });
      expect(cohort.lines.map((l) => (typeof l === 'string' ? l : l.msg))).toContain('cohort stopped');
    } finally {
      member.close();
      broker.close();
    }
  });

  it('says which setting moves the gRPC listener when its port is taken, and exits 1', async () => {
    const taken = createNetServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      cohort = spawnCohort(['--listen', `127.0.0.1:${port}`]);
      expect((await cohort.exited).code).toBe(1);
      const fatal = cohort.lines.find((l) => typeof l !== 'string' && l.msg === 'cohort could not start');
      expect(JSON.stringify(fatal)).toContain(`the gRPC listener cannot listen on 127.0.0.1:${port}`);
      expect(JSON.stringify(fatal)).toContain('--listen (COHORT_LISTEN)');
    } finally {
      taken.close();
    }
  });

  it('says ready only once a cluster node is registered, and why it is not until then', async () => {
    const etcd = await startEtcd();
    try {
      await etcd.kill();
      cohort = spawnCohort(
        ['--listen', '127.0.0.1:0', '--node-id', '1', '--etcd-endpoints', etcd.endpoints.join(',')],
        { COHORT_CLUSTER_SECRET: randomBytes(32).toString('hex') },
      );
      const notYet = await cohort.waitForLog('cohort not ready yet');
      expect(notYet.reason).toMatch(/^not yet registered in the cluster/);
      // Two seconds of retries against an etcd that is not there: still not ready, and said once.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const said = (msg: string): number =>
        cohort!.lines.filter((l) => typeof l !== 'string' && l.msg === msg).length;
      expect(said('cohort ready')).toBe(0);
      expect(said('cohort not ready yet')).toBe(1);
      await etcd.restart();
      await cohort.waitForLog('cohort ready');
    } finally {
      await cohort?.kill();
      await etcd.stop();
    }
  });
});
