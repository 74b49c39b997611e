import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..');

/**
 * A fresh Node process with a 4 GiB heap (where V8 would grow it up to 4×, whatever the machine or
 * NODE_OPTIONS) applies `percent` through applyHeapGrowingPercent, then keeps a sliding window of ~20 MB
 * of objects alive while allocating 160 MB more, so objects grow old and die old: the shape of parked
 * calls. Returns whether the setting was applied and how many full collections the work took, from V8's
 * own --trace-gc lines, which it prints as each collection ends (perf_hooks' `gc` entries arrive turns
 * later).
 */
async function fullCollections(percent: number): Promise<{ isApplied: boolean; count: number }> {
  const script = `
    const isApplied = require(${JSON.stringify(join(ROOT, 'src', 'heap-growth.ts'))}).applyHeapGrowingPercent(${percent}, process.execArgv);
    console.log('applied=' + isApplied);
    const window = new Array(20).fill(null);
    for (let round = 0; round < 400; round++) {
      window[round % 20] = Array.from({ length: 20000 }, (_, i) => ({ i, text: 'member-' + i }));
    }
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--max-old-space-size=4096',
      '--trace-gc',
      '-r',
      join(ROOT, 'scripts', 'register-typescript.js'),
      '-e',
      script,
    ],
    { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NODE_OPTIONS: '' } },
  );
  const lines = stdout.split('\n');
  return {
    isApplied: lines.includes('applied=true'),
    count: lines.filter((line) => line.includes('Mark-Compact')).length,
  };
}

describe('applyHeapGrowingPercent in a real process', () => {
  // Guards against a Node upgrade that ignores or freezes V8 flags set at run time: the setting would then
  // be silently lost, and with it the shorter pauses docs/performance.md (G11) measured.
  it("changes how often V8 collects the old generation (0 = V8's own choice)", async () => {
    const [own, small] = await Promise.all([fullCollections(0), fullCollections(25)]);
    expect([own.isApplied, small.isApplied]).toEqual([false, true]);
    expect(own.count).toBeGreaterThanOrEqual(1);
    expect(small.count).toBeGreaterThan(own.count);
  }, 60_000);
});
