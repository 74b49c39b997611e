import fc from 'fast-check';
import { ExponentialBackoff } from '../../../src/client/exponential-backoff';

describe('ExponentialBackoff', () => {
  it('doubles from the initial wait up to the maximum, without jitter at the midpoint', () => {
    const backoff = new ExponentialBackoff({ initialMs: 100, maxMs: 1_000, random: () => 0.5 });
    expect([0, 1, 2, 3, 4, 10].map((n) => backoff.backoffMs(n))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it('keeps every wait within the jitter band around its term', () => {
    fc.assert(
      fc.property(
        fc.nat(30),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempts, r) => {
          const backoff = new ExponentialBackoff({
            initialMs: 100,
            maxMs: 1_000,
            jitter: 0.2,
            random: () => r,
          });
          const term = Math.min(100 * 2 ** attempts, 1_000);
          const wait = backoff.backoffMs(attempts);
          expect(wait).toBeGreaterThanOrEqual(Math.floor(term * 0.8));
          expect(wait).toBeLessThanOrEqual(Math.ceil(term * 1.2));
        },
      ),
    );
  });

  it('rejects settings that make no sense', () => {
    expect(() => new ExponentialBackoff({ initialMs: 10, maxMs: 5 })).toThrow(/initialMs <= maxMs/);
    expect(() => new ExponentialBackoff({ initialMs: 1, maxMs: 5, jitter: 1 })).toThrow(/jitter/);
    expect(() => new ExponentialBackoff({ initialMs: 1, maxMs: 5, multiplier: 0.5 })).toThrow(/multiplier/);
  });
});
