import type { Metric, Registry } from 'prom-client';

/**
 * Upper bounds, in seconds, from a heartbeat's 100 µs to a JoinGroup parked through a five-minute rebalance.
 */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = Object.freeze([
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
  300,
]);

/** Records into one labelled series of a LatencyHistogram. */
export interface LatencyRecorder {
  observe(seconds: number): void;
}

/** One labelled series: a count per bucket (not cumulative; the last one is +Inf), their sum and count. */
class Series implements LatencyRecorder {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]) i++;
    this.counts[i]++;
    this.sum += seconds;
    this.count++;
  }
}

export interface LatencyHistogramOptions {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly buckets?: readonly number[];
}

type SampleValue = { value: number; labels: Record<string, string | number>; metricName: string };

/**
 * A Prometheus histogram for the request path. prom-client's Histogram hashes its label object on every
 * `observe` (about 260 ns, and garbage per call); here each labelled series is resolved once, by `series`,
 * and an observation is a short scan of the bounds and three additions into preallocated numbers (a few
 * ns). The text format is produced only when the registry is scraped, in prom-client's own shape, so it
 * registers like any other metric.
 */
export class LatencyHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly labelNames: readonly string[];
  private readonly bounds: readonly number[];
  private readonly series = new Map<string, Series>();

  constructor(options: LatencyHistogramOptions) {
    this.name = options.name;
    this.help = options.help;
    this.labelNames = options.labelNames;
    this.bounds = options.buckets ?? LATENCY_BUCKETS_SECONDS;
    for (let i = 1; i < this.bounds.length; i++) {
      if (!(this.bounds[i] > this.bounds[i - 1])) throw new RangeError(`${this.name}: buckets must increase`);
    }
  }

  /** Adds this histogram to `registry`, which then scrapes it as it scrapes prom-client's own metrics. */
  registerIn(registry: Registry): this {
    // The registry only calls name, get() and reset(); prom-client's Metric type lists its own classes.
    registry.registerMetric(this as unknown as Metric);
    return this;
  }

  /** The series of these label values (in `labelNames` order), created on first use and kept. */
  recorder(...labelValues: string[]): LatencyRecorder {
    if (labelValues.length !== this.labelNames.length) {
      throw new RangeError(
        `${this.name} takes labels ${this.labelNames.join(', ')}, got ${labelValues.length}`,
      );
    }
    const key = labelValues.join('\u0000');
    let series = this.series.get(key);
    if (series === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = labelValues[i]));
      series = new Series(Object.freeze(labels), this.bounds);
      this.series.set(key, series);
    }
    return series;
  }

  /** prom-client's histogram shape: cumulative `_bucket` samples with `le`, then `_sum` and `_count`. */
  get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: SampleValue[];
  }> {
    const values: SampleValue[] = [];
    for (const series of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += series.counts[i];
        values.push({
          value: cumulative,
          labels: { ...series.labels, le: i < this.bounds.length ? this.bounds[i] : '+Inf' },
          metricName: `${this.name}_bucket`,
        });
      }
      values.push({ value: series.sum, labels: { ...series.labels }, metricName: `${this.name}_sum` });
      values.push({ value: series.count, labels: { ...series.labels }, metricName: `${this.name}_count` });
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    });
  }

  /** Zeroes every series in place: recorders handed out keep working. */
  reset(): void {
    for (const series of this.series.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}
