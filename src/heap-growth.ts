import { getHeapStatistics, setFlagsFromString } from 'node:v8';

/**
 * The heap size limit from which V8 lets the old generation grow up to 4× what a full collection kept
 * before the next one (V8's MaxGrowingFactor, 64-bit: an old generation that may reach 2 GiB). On a smaller
 * heap its own factor is 1.3–2× at most, which a fixed factor of 2× could only loosen; so the setting is
 * applied from this size up.
 */
export const LARGE_HEAP_MIN_BYTES = 2 * 1024 ** 3;

/** The operator's own V8 flag on the node command line (either spelling), which cohort does not override. */
const OWN_FLAG = /^--heap[-_]growing[-_]percent(=|$)/;

export interface HeapGrowthOptions {
  /** Default: v8.getHeapStatistics().heap_size_limit. */
  readonly heapSizeLimitBytes?: number;
  /** Default: v8.setFlagsFromString. */
  readonly setFlags?: (flags: string) => void;
}

/**
 * The server program's heap policy (the `heapGrowingPercent` setting): caps how far V8's old generation
 * grows past what a full collection kept before the next one, at (1 + percent/100)×. Returns whether it
 * applied it: not for 0 (V8's own choice), not on a heap below LARGE_HEAP_MIN_BYTES, and not when the node
 * command line already sets V8's flag.
 *
 * Why: the longest event-loop task of a large rebalance is a full collection's atomic pause, which grows
 * with the dead objects it meets (every call's HTTP/2 header values are external strings V8 finalises one
 * by one in the pause, and parked calls die old). Growing up to 4×, one collection meets a whole large
 * rebalance's garbage at once; at 2× collections come sooner and each pause is shorter. Measured in
 * docs/performance.md, G11. Process-wide, so only the server program (src/main.ts) calls it, once the
 * server is ready (after the start-up replay, which it would only slow); an embedded server leaves its host
 * process's V8 alone.
 */
export function applyHeapGrowingPercent(
  percent: number,
  /** The node command line's options (process.execArgv), which the caller reads. */
  execArgv: readonly string[],
  options: HeapGrowthOptions = {},
): boolean {
  if (percent === 0) return false;
  const limitBytes = options.heapSizeLimitBytes ?? getHeapStatistics().heap_size_limit;
  if (limitBytes < LARGE_HEAP_MIN_BYTES) return false;
  if (execArgv.some((arg) => OWN_FLAG.test(arg))) return false;
  (options.setFlags ?? setFlagsFromString)(`--heap-growing-percent=${percent}`);
  return true;
}
