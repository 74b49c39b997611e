import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Counter, Gauge, type Registry } from 'prom-client';

/** How often the event-loop monitor samples, in ms (prom-client's default precision). */
export const EVENT_LOOP_RESOLUTION_MS = 10;

/**
 * Event-loop delay and the process's CPU, memory and start time, under the names prom-client's default
 * metrics use, so Node dashboards work unchanged. prom-client's `collectDefaultMetrics` is not used: it
 * starts a monitor and a GC observer that nothing can stop, which would outlive every server of a test run;
 * this one is started with the server and stopped by `stop()`.
 *
 * The event-loop figures (min, max, mean, stddev, p50, p90, p99 of the delay) cover the time since the
 * previous scrape, as prom-client's do: the histogram is reset after each read.
 */
export class RuntimeMetrics {
  private histogram: IntervalHistogram | undefined;

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
    lag('min', 'The smallest event-loop delay since the last scrape.', (h) => h.min);
    lag('max', 'The largest event-loop delay since the last scrape.', (h) => h.max);
    lag('mean', 'The mean event-loop delay since the last scrape.', (h) => h.mean);
    lag('stddev', 'The standard deviation of the event-loop delay since the last scrape.', (h) => h.stddev);
    lag('p50', 'The median event-loop delay since the last scrape.', (h) => h.percentile(50));
    lag('p90', 'The 90th percentile event-loop delay since the last scrape.', (h) => h.percentile(90));
    // Registered last of the seven, so its collect runs last in a scrape and may reset the histogram.
    lag('p99', 'The 99th percentile event-loop delay since the last scrape.', (h) => {
      const p99 = h.percentile(99);
      h.reset();
      return p99;
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

  /** Starts sampling the event loop. Idempotent. */
  start(): void {
    if (this.histogram !== undefined) return;
    this.histogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
    this.histogram.enable();
  }

  /** Stops sampling; the gauges then report 0. Idempotent. */
  stop(): void {
    this.histogram?.disable();
    this.histogram = undefined;
  }
}
