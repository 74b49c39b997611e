import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_NODE_SESSION_TIMEOUT_MS } from '../../../src/config/defaults';
import {
  CLUSTER_SESSION_TIMEOUT_MS,
  DEMO_DEFAULTS,
  demoHelp,
  demoSettingsOf,
} from '../../../src/demo/demo-settings';

describe('the demo’s settings', () => {
  it('plays the default timeline without flags', () => {
    expect(demoSettingsOf([])).toEqual({
      settings: DEMO_DEFAULTS,
      cluster: null,
      switches: { isServingKept: false },
    });
    expect(DEMO_DEFAULTS.timeoutMs).toBeGreaterThan(DEMO_DEFAULTS.sessionTimeoutMs + DEMO_DEFAULTS.steadyMs);
  });

  it('takes a shorter timeline from flags', () => {
    expect(demoSettingsOf(['--session-timeout-ms', '2000', '--steady-ms=500'])).toEqual({
      settings: { ...DEMO_DEFAULTS, sessionTimeoutMs: 2_000, steadyMs: 500 },
      cluster: null,
      switches: { isServingKept: false },
    });
  });

  it('runs against the cluster of --address, with a session of its own', () => {
    expect(demoSettingsOf(['--address', '127.0.0.1:7070, 127.0.0.1:7080,node-3:7070'])).toEqual({
      settings: { ...DEMO_DEFAULTS, sessionTimeoutMs: CLUSTER_SESSION_TIMEOUT_MS },
      cluster: ['127.0.0.1:7070', '127.0.0.1:7080', 'node-3:7070'],
      switches: { isServingKept: false },
    });
    expect(demoSettingsOf(['--address=127.0.0.1:7070', '--session-timeout-ms', '8000'])).toEqual({
      settings: { ...DEMO_DEFAULTS, sessionTimeoutMs: 8_000 },
      cluster: ['127.0.0.1:7070'],
      switches: { isServingKept: false },
    });
    expect(demoSettingsOf(['--address', '127.0.0.1'])).toEqual({
      error: "--address must be HOST:PORT[,HOST:PORT...], got '127.0.0.1'",
    });
    expect(demoSettingsOf(['--address', '127.0.0.1:7070,'])).toEqual({
      error: expect.stringContaining('--address'),
    });
  });

  it('keeps the server serving once done with --keep-serving', () => {
    expect(demoSettingsOf(['--keep-serving'])).toMatchObject({ switches: { isServingKept: true } });
    expect(demoHelp()).toContain('--keep-serving');
  });

  it('gives the consumers on a cluster a session that outlasts a failover of a node with the default session', () => {
    // From a member's last good heartbeat (a fifth of its session before the kill at most): the dead node's
    // session, then the controller's moves, the group's load and the member's lookup (src/demo/demo-settings.ts).
    const lastHeartbeatMs = CLUSTER_SESSION_TIMEOUT_MS / 5;
    const moveAndLoadMs = 2_000;
    expect(CLUSTER_SESSION_TIMEOUT_MS).toBeGreaterThan(
      lastHeartbeatMs + DEFAULT_NODE_SESSION_TIMEOUT_MS + moveAndLoadMs,
    );
  });

  it('refuses an unknown flag and a value out of range, naming them', () => {
    expect(demoSettingsOf(['--fast'])).toEqual({ error: expect.stringContaining('--fast') });
    expect(demoSettingsOf(['--session-timeout-ms', '10'])).toEqual({
      error: "--session-timeout-ms must be a whole number between 1000 and 60000, got '10'",
    });
  });

  it('lists every setting with its default on --help', () => {
    expect(demoSettingsOf(['--help'])).toEqual({ help: demoHelp() });
    for (const flag of [
      '--session-timeout-ms',
      '--steady-ms',
      '--after-rebalance-ms',
      '--records-per-second',
      '--partitions',
      '--timeout-ms',
      '--address',
    ]) {
      expect(demoHelp()).toContain(flag);
    }
    expect(demoHelp()).toContain(
      `(default ${DEMO_DEFAULTS.sessionTimeoutMs}; ${CLUSTER_SESSION_TIMEOUT_MS} with --address)`,
    );
  });

  it('is the timeline the README’s demo sample shows: its session timeout, and a rebalance no sooner', () => {
    const readme = readFileSync(join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
    const sample = readme.slice(readme.indexOf('npm run demo'));
    const sessionSeconds = DEMO_DEFAULTS.sessionTimeoutMs / 1_000;
    const stop = /\[\s*([\d.]+)s\] demo\s+stopping consumer-\d .* its (\d+)s session times out/.exec(sample);
    const rebalance = /\[\s*([\d.]+)s\] group\s+PreparingRebalance, 2 members/.exec(sample);
    expect(stop?.[2]).toBe(String(sessionSeconds));
    // Tenths of seconds, compared as whole numbers: 16.4 - 11.4 is not 5 in floating point.
    expect(
      Math.round(Number(rebalance?.[1]) * 10) - Math.round(Number(stop?.[1]) * 10),
    ).toBeGreaterThanOrEqual(sessionSeconds * 10);
  });
});
