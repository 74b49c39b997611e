import { applyHeapGrowingPercent, LARGE_HEAP_MIN_BYTES } from '../../src/heap-growth';

describe('applyHeapGrowingPercent', () => {
  const large = LARGE_HEAP_MIN_BYTES;

  function flagsSet(percent: number, heapSizeLimitBytes: number, execArgv: string[] = []): string[] {
    const flags: string[] = [];
    const applied = applyHeapGrowingPercent(percent, execArgv, {
      heapSizeLimitBytes,
      setFlags: (f) => flags.push(f),
    });
    expect(applied).toBe(flags.length === 1);
    return flags;
  }

  it("passes the percent to V8's --heap-growing-percent on a heap V8 would grow up to 4x", () => {
    expect(flagsSet(100, large)).toEqual(['--heap-growing-percent=100']);
    expect(flagsSet(300, 4 * large)).toEqual(['--heap-growing-percent=300']);
  });

  it("leaves V8's own choice for 0", () => {
    expect(flagsSet(0, large)).toEqual([]);
  });

  it('leaves a smaller heap alone: V8 grows it 1.3-2x at most already', () => {
    expect(flagsSet(100, large - 1)).toEqual([]);
    expect(flagsSet(50, 512 * 1024 ** 2)).toEqual([]);
  });

  it("does not override the operator's own V8 flag, in either spelling", () => {
    expect(flagsSet(100, large, ['--heap-growing-percent=50'])).toEqual([]);
    expect(flagsSet(100, large, ['--heap_growing_percent', '50'])).toEqual([]);
    expect(flagsSet(100, large, ['--heap-growing-percentage-is-not-a-flag'])).toEqual([
      '--heap-growing-percent=100',
    ]);
  });
});
