import { applyHeapGrowingPercent } from '../../../src/server/heap-growth';

describe('applyHeapGrowingPercent', () => {
  it("passes the percent to V8's --heap-growing-percent", () => {
    const flags: string[] = [];
    applyHeapGrowingPercent(100, (f) => flags.push(f));
    applyHeapGrowingPercent(300, (f) => flags.push(f));
    expect(flags).toEqual(['--heap-growing-percent=100', '--heap-growing-percent=300']);
  });

  it("leaves V8's own heuristic alone for 0", () => {
    const flags: string[] = [];
    applyHeapGrowingPercent(0, (f) => flags.push(f));
    expect(flags).toEqual([]);
  });
});
