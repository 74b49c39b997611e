import { ManualTime, SystemTime } from '../../../src/time';

describe('ManualTime', () => {
  it('moves only when advanced, and moves both clocks', () => {
    const time = new ManualTime(10, 1_000);
    expect([time.monotonicMs(), time.nowMs()]).toEqual([10, 1_000]);
    expect(time.advance(5)).toBe(15);
    expect([time.monotonicMs(), time.nowMs()]).toEqual([15, 1_005]);
  });

  it('tells subscribers after moving, and stops telling them once unsubscribed', () => {
    const time = new ManualTime();
    const seen: number[] = [];
    const unsubscribe = time.onAdvance((ms) => seen.push(ms));
    time.advance(3);
    unsubscribe();
    time.advance(3);
    expect(seen).toEqual([3]);
  });

  it('rejects negative, fractional and non-finite steps with a clear message', () => {
    const time = new ManualTime();
    for (const bad of [-1, 0.5, NaN, Infinity])
      expect(() => time.advance(bad)).toThrow(/non-negative integer/);
    expect(() => new ManualTime(-1)).toThrow(RangeError);
  });
});

describe('SystemTime', () => {
  it('gives whole, non-decreasing monotonic milliseconds', () => {
    const time = new SystemTime();
    const a = time.monotonicMs();
    const b = time.monotonicMs();
    expect(Number.isInteger(a)).toBe(true);
    expect(b).toBeGreaterThanOrEqual(a);
    expect(Math.abs(time.nowMs() - Date.now())).toBeLessThan(1_000);
  });
});

describe('ManualTime with a throwing subscriber', () => {
  it('still tells every other subscriber, then rethrows', () => {
    const time = new ManualTime();
    const seen: number[] = [];
    time.onAdvance(() => {
      throw new Error('boom');
    });
    time.onAdvance((ms) => seen.push(ms));
    expect(() => time.advance(2)).toThrow('boom');
    expect(seen).toEqual([2]);
  });
});
