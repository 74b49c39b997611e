import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..');

/**
 * A fresh Node process applies `percent` through applyHeapGrowingPercent, then keeps a sliding window of
 * ~20 MB of objects alive while allocating 160 MB more, so objects grow old and die old: the shape of
 * parked calls. Counts the full collections that took from V8's own --trace-gc lines, which it prints as
 * each collection ends (perf_hooks' `gc` entries arrive turns later).
 */
async function fullCollections(percent: number): Promise<number> {
  const script = `
    require(${JSON.stringify(join(ROOT, 'src', 'server', 'heap-growth.ts'))}).applyHeapGrowingPercent(${percent});
    const window = new Array(20).fill(null);
    for (let round = 0; round < 400; round++) {
      window[round % 20] = Array.from({ length: 20000 }, (_, i) => ({ i, text: 'member-' + i }));
    }
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--trace-gc', '-r', join(ROOT, 'scripts', 'register-typescript.js'), '-e', script],
    { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
  );
  return stdout.split('\n').filter((line) => line.includes('Mark-Compact')).length;
}

describe('applyHeapGrowingPercent in a real process', () => {
  // Guards against a Node upgrade that ignores or freezes V8 flags set at run time: the setting would then
  // be silently lost, and with it the shorter pauses docs/performance.md (G11) measured.
  it("changes how often V8 collects the old generation (0 = V8's own choice)", async () => {
    const [own, small] = await Promise.all([fullCollections(0), fullCollections(25)]);
    expect(own).toBeGreaterThanOrEqual(1);
    expect(small).toBeGreaterThan(own);
  }, 60_000);
});
