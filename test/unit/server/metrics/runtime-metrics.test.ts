import { constants } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Registry } from 'prom-client';
import { RuntimeMetrics } from '../../../../src/server/metrics/runtime-metrics';
import { samplesOf, valueOf, type Sample } from './metrics-reader';

/** A full collection on demand, without starting jest with --expose-gc. */
function fullCollection(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Lets perf_hooks deliver what it queued (observers are called from a later turn, not during the pause). */
async function untilSeen(registry: Registry, seen: (samples: Sample[]) => boolean): Promise<Sample[]> {
  for (let turn = 0; turn < 200; turn++) {
    const samples = await samplesOf(registry);
    if (seen(samples)) return samples;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return samplesOf(registry);
}

const majorCount = (samples: Sample[]): number =>
  samples
    .filter((s) => s.name === 'nodejs_gc_duration_seconds_count' && s.labels.kind === 'major')
    .reduce((sum, s) => sum + s.value, 0);

describe('RuntimeMetrics: garbage-collection pauses', () => {
  it("records each pause under prom-client's kind label, in seconds", async () => {
    const registry = new Registry();
    const runtime = new RuntimeMetrics(registry);
    runtime.recordGc(constants.NODE_PERFORMANCE_GC_MAJOR, 40);
    runtime.recordGc(constants.NODE_PERFORMANCE_GC_MAJOR, 60);
    runtime.recordGc(constants.NODE_PERFORMANCE_GC_MINOR, 2);
    runtime.recordGc(constants.NODE_PERFORMANCE_GC_INCREMENTAL, 1);
    runtime.recordGc(constants.NODE_PERFORMANCE_GC_WEAKCB, 1);
    const samples = await samplesOf(registry);
    const name = 'nodejs_gc_duration_seconds';
    expect(valueOf(samples, `${name}_count`, { kind: 'major' })).toBe(2);
    expect(valueOf(samples, `${name}_sum`, { kind: 'major' })).toBeCloseTo(0.1, 9);
    // The 50 ms bucket holds the 40 ms pause, not the 60 ms one.
    expect(valueOf(samples, `${name}_bucket`, { kind: 'major', le: 0.05 })).toBe(1);
    expect(valueOf(samples, `${name}_bucket`, { kind: 'major', le: 0.1 })).toBe(2);
    expect(valueOf(samples, `${name}_count`, { kind: 'minor' })).toBe(1);
    expect(valueOf(samples, `${name}_count`, { kind: 'incremental' })).toBe(1);
    expect(valueOf(samples, `${name}_count`, { kind: 'weakcb' })).toBe(1);
  });

  it('observes real collections between start() and stop(), and none after', async () => {
    const gc = fullCollection();
    const registry = new Registry();
    const runtime = new RuntimeMetrics(registry);
    runtime.start();
    try {
      gc();
      const samples = await untilSeen(registry, (s) => majorCount(s) >= 1);
      expect(majorCount(samples)).toBeGreaterThanOrEqual(1);
    } finally {
      runtime.stop();
    }
    const before = majorCount(await samplesOf(registry));
    gc();
    // Give a late delivery every chance to (wrongly) arrive.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(majorCount(await samplesOf(registry))).toBe(before);
  });
});
