import {
  constants as perfConstants,
  monitorEventLoopDelay,
  performance,
  PerformanceObserver,
  type IntervalHistogram,
} from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** How often the event-loop monitor samples, in ms (prom-client's default precision). */
export const EVENT_LOOP_RESOLUTION_MS = 10;

/** The `kind` label of `nodejs_gc_duration_seconds`, by perf_hooks' GC kind (prom-client's values). */
const GC_KIND_LABELS: Readonly<Record<number, string>> = {
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/**
 * Bounds of the GC pause histogram, in seconds: scavenges take about a millisecond, and a full collection's
 * pause is the longest task a large rebalance has (docs/performance.md, G9–G11), so 25, 50 and 100 ms are
 * there to tell a pause that holds calls for a noticeable time from one that does not.
 */
const GC_DURATION_BUCKETS_SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5];

/**
 * Bounds of the event-loop delay histogram, in seconds: a healthy server stays in the first buckets; 50 ms
 * is the longest task the group benchmarks allow; from 1 s on, a turn that long costs heartbeats their
 * sessions (a 6 s session with heartbeats every 2 s survives at most ~4 s).
 */
const EVENT_LOOP_DELAY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Event-loop delay, garbage-collection pauses and the process's CPU, memory and start time, under the names
 * prom-client's default metrics use, so Node dashboards work unchanged. prom-client's
 * `collectDefaultMetrics` is not used: it starts a monitor and a GC observer that nothing can stop, which
 * would outlive every server of a test run; this one is started with the server and stopped by `stop()`.
 *
 * The event-loop figures (min, max, mean, stddev, p50, p90, p99 of the delay) cover the time since the
 * monitor started and are never reset, so any number of scrapers read the same values and a long freeze
 * stays visible in `nodejs_eventloop_lag_max_seconds`. (prom-client resets its histogram on every scrape:
 * with two scrapers, or one scraping just after another, a 5.8 s freeze showed as 0.158 s.) What happened
 * over a window is `cohort_event_loop_delay_seconds`, a Prometheus histogram (rate() over its buckets): one
 * sample per EVENT_LOOP_RESOLUTION_MS tick, the tick's lateness.
 */
export class RuntimeMetrics {
  private histogram: IntervalHistogram | undefined;
  private sampler: NodeJS.Timeout | undefined;
  private lastTickMs = 0;
  private readonly loopDelay: Histogram;
  private gcObserver: PerformanceObserver | undefined;
  private readonly gcDuration: Histogram<'kind'>;

  constructor(registry: Registry) {
    const registers = [registry];
    const current = (): IntervalHistogram | undefined => this.histogram;
    const lag = (stat: string, help: string, read: (h: IntervalHistogram) => number): void => {
      new Gauge({
        name: `nodejs_eventloop_lag_${stat}_seconds`,
        help,
        registers,
        collect() {
          const histogram = current();
          // A histogram without samples reports min as 2^63; report 0 until there is something to say.
          this.set(histogram === undefined || histogram.count === 0 ? 0 : read(histogram) / 1e9);
        },
      });
    };
    lag('min', 'The smallest event-loop delay since the server started.', (h) => h.min);
    lag('max', 'The largest event-loop delay since the server started.', (h) => h.max);
    lag('mean', 'The mean event-loop delay since the server started.', (h) => h.mean);
    lag(
      'stddev',
      'The standard deviation of the event-loop delay since the server started.',
      (h) => h.stddev,
    );
    lag('p50', 'The median event-loop delay since the server started.', (h) => h.percentile(50));
    lag('p90', 'The 90th percentile event-loop delay since the server started.', (h) => h.percentile(90));
    lag('p99', 'The 99th percentile event-loop delay since the server started.', (h) => h.percentile(99));
    this.loopDelay = new Histogram({
      name: 'cohort_event_loop_delay_seconds',
      help: `How late each ${EVENT_LOOP_RESOLUTION_MS} ms tick of the event loop ran: a long turn shows as one late tick.`,
      buckets: EVENT_LOOP_DELAY_BUCKETS_SECONDS,
      registers,
    });

    const cpu = (mode: 'user' | 'system'): void => {
      new Counter({
        name: `process_cpu_${mode}_seconds_total`,
        help: `CPU time the process spent in ${mode} mode.`,
        registers,
        collect() {
          const usage = process.cpuUsage();
          this.reset();
          this.inc((mode === 'user' ? usage.user : usage.system) / 1e6);
        },
      });
    };
    cpu('user');
    cpu('system');
    new Gauge({
      name: 'process_resident_memory_bytes',
      help: 'Resident set size of the process.',
      registers,
      collect() {
        this.set(process.memoryUsage.rss());
      },
    });
    new Gauge({
      name: 'nodejs_heap_size_used_bytes',
      help: 'V8 heap in use.',
      registers,
      collect() {
        this.set(process.memoryUsage().heapUsed);
      },
    });
    new Gauge({
      name: 'nodejs_heap_size_total_bytes',
      help: 'V8 heap allocated.',
      registers,
      collect() {
        this.set(process.memoryUsage().heapTotal);
      },
    });
    this.gcDuration = new Histogram({
      name: 'nodejs_gc_duration_seconds',
      help: 'Garbage-collection pauses of the main thread, by kind (major = a full collection).',
      labelNames: ['kind'],
      buckets: GC_DURATION_BUCKETS_SECONDS,
      registers,
    });
    const startTimeSeconds = Math.round(Date.now() / 1_000 - process.uptime());
    new Gauge({
      name: 'process_start_time_seconds',
      help: 'When the process started, in seconds since the epoch.',
      registers,
      collect() {
        this.set(startTimeSeconds);
      },
    });
  }

  /** Starts sampling the event loop and observing collections. Idempotent. */
  start(): void {
    if (this.histogram !== undefined) return;
    this.histogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
    this.histogram.enable();
    this.lastTickMs = performance.now();
    // Node re-arms an interval from when its tick ran: the gap between two ticks, less the resolution, is
    // how long the loop kept the second one waiting.
    this.sampler = setInterval(this.tick, EVENT_LOOP_RESOLUTION_MS);
    this.sampler.unref();
    this.gcObserver = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        // A `gc` entry's detail is { kind, flags } (NodeGCPerformanceDetail), which @types/node leaves untyped.
        const detail = (entry as { detail?: { kind?: number } }).detail;
        this.recordGc(detail?.kind ?? -1, entry.duration);
      }
    });
    this.gcObserver.observe({ entryTypes: ['gc'] });
  }

  /** Stops sampling and observing; the event-loop gauges then report 0. Idempotent. */
  stop(): void {
    this.histogram?.disable();
    this.histogram = undefined;
    clearInterval(this.sampler);
    this.sampler = undefined;
    this.gcObserver?.disconnect();
    this.gcObserver = undefined;
  }

  private readonly tick = (): void => {
    const nowMs = performance.now();
    const delayMs = nowMs - this.lastTickMs - EVENT_LOOP_RESOLUTION_MS;
    this.lastTickMs = nowMs;
    this.loopDelay.observe(delayMs > 0 ? delayMs / 1_000 : 0);
  };

  /** @internal One collection's pause: its perf_hooks kind and its length in ms (public for tests). */
  recordGc(kind: number, durationMs: number): void {
    this.gcDuration.observe({ kind: GC_KIND_LABELS[kind] ?? 'other' }, durationMs / 1_000);
  }
}
