import { ErrorCode } from '../../src/errors';
import { groupCoordinatorClient, healthClient, testClockClient } from '../support/grpc-clients';
import type { CohortProcess } from '../support/spawn-cohort';
import { spawnCohort } from '../support/spawn-cohort';

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
    cohort = spawnCohort([], { COHORT_LISTEN: '127.0.0.1:0', COHORT_MANUAL_CLOCK: 'true' });
    const listening = await cohort.waitForLog('cohort listening');
    expect(listening.manualClock).toBe(true);
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
    // A Watch stream stays open until its client leaves, so the graceful close waits on it.
    const health = healthClient(address as string);
    try {
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
    }
  });
});
