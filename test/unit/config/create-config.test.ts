import { createConfig, InvalidConfigError } from '../../../src/config';

describe('createConfig', () => {
  it('applies overrides to the defaults and freezes the result', () => {
    const config = createConfig({ manualClock: true, listen: '127.0.0.1:0' });
    expect(config.manualClock).toBe(true);
    expect(config.listen).toBe('127.0.0.1:0');
    expect(config.groupMinSessionTimeoutMs).toBe(6000);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('ignores overrides that are explicitly undefined', () => {
    expect(createConfig({ listen: undefined }).listen).toBe('127.0.0.1:7070');
  });

  it('throws every problem at once, naming settings by key', () => {
    let thrown: unknown;
    try {
      createConfig({
        groupMinSessionTimeoutMs: 10,
        groupMaxSessionTimeoutMs: 5,
        groupMaxSize: 1.5,
        ...({ colour: 'blue' } as object),
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidConfigError);
    expect((thrown as InvalidConfigError).problems).toEqual([
      'unknown setting colour',
      'groupMaxSize must be a whole number, got 1.5',
      'groupMinSessionTimeoutMs (10) must be <= groupMaxSessionTimeoutMs (5)',
    ]);
    expect((thrown as Error).message).toContain('  - groupMaxSize must be a whole number, got 1.5');
  });
});
