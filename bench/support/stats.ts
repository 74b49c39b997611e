/**
 * Order statistics for benchmark samples. The machine is shared and noisy, so every figure a bench
 * reports is a median over rounds, and latency distributions are summarised by nearest-rank percentiles.
 */

/** The median of `values` (the mean of the two middle values for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * The nearest-rank `p`-th percentile (0 < p <= 100) of an ascending sample: the smallest value with at
 * least p% of the sample at or below it. NaN when empty.
 */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** An ascending copy of the first `count` samples, as a Float64Array (whose sort is numeric). */
export function sortedSample(samples: Float64Array, count = samples.length): Float64Array {
  return samples.slice(0, count).sort();
}
