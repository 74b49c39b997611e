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

describe('RuntimeMetrics: event-loop delay', () => {
  /** Holds the event loop for `ms` of wall time, as a long synchronous task would. */
  function blockLoop(ms: number): void {
    const until = performance.now() + ms;
    while (performance.now() < until) {
      // busy
    }
  }

  /** Lets the monitor's timers run after the block (they fire on the first turn after it). */
  async function afterTicks(registry: Registry, seen: (samples: Sample[]) => boolean): Promise<Sample[]> {
    for (let i = 0; i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      const samples = await samplesOf(registry);
      if (seen(samples)) return samples;
    }
    return samplesOf(registry);
  }

  const slowTicks = (samples: Sample[]): number =>
    valueOf(samples, 'cohort_event_loop_delay_seconds_count') -
    valueOf(samples, 'cohort_event_loop_delay_seconds_bucket', { le: 0.25 });

  it('shows a blocked loop in every scrape after it, however many scrapers read it', async () => {
    const registry = new Registry();
    const runtime = new RuntimeMetrics(registry);
    runtime.start();
    try {
      await afterTicks(registry, (s) => valueOf(s, 'cohort_event_loop_delay_seconds_count') > 0);
      blockLoop(300);
      const first = await afterTicks(registry, (s) => slowTicks(s) > 0);
      // A second scraper, then the first one again: the same freeze, in the gauge and in the histogram.
      const second = await samplesOf(registry);
      const third = await samplesOf(registry);
      for (const samples of [first, second, third]) {
        expect(valueOf(samples, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0.29);
        expect(slowTicks(samples)).toBeGreaterThanOrEqual(1);
      }
      expect(slowTicks(third)).toBe(slowTicks(first));
    } finally {
      runtime.stop();
    }
  });
});
