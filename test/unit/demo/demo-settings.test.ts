import { DEMO_DEFAULTS, demoHelp, demoSettingsOf } from '../../../src/demo/demo-settings';

describe('the demo’s settings', () => {
  it('plays the default timeline without flags', () => {
    expect(demoSettingsOf([])).toEqual({ settings: DEMO_DEFAULTS });
    expect(DEMO_DEFAULTS.timeoutMs).toBeGreaterThan(DEMO_DEFAULTS.sessionTimeoutMs + DEMO_DEFAULTS.steadyMs);
  });

  it('takes a shorter timeline from flags', () => {
    expect(demoSettingsOf(['--session-timeout-ms', '2000', '--steady-ms=500'])).toEqual({
      settings: { ...DEMO_DEFAULTS, sessionTimeoutMs: 2_000, steadyMs: 500 },
    });
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
    ]) {
      expect(demoHelp()).toContain(flag);
    }
    expect(demoHelp()).toContain(`(default ${DEMO_DEFAULTS.sessionTimeoutMs})`);
  });
});
