import { loadConfig } from '../../src/config';
import { applyHeapGrowingPercent } from '../../src/heap-growth';

/**
 * The heap growing percent the server program would run with here (src/main.ts applies the
 * `heapGrowingPercent` setting to its process): COHORT_HEAP_GROWING_PERCENT, or the default. 0 keeps V8's
 * own choice, to compare.
 */
export function serverHeapGrowingPercent(): number {
  const loaded = loadConfig([], { COHORT_HEAP_GROWING_PERCENT: process.env.COHORT_HEAP_GROWING_PERCENT });
  if (!('config' in loaded)) {
    throw new Error(
      `COHORT_HEAP_GROWING_PERCENT: ${'errors' in loaded ? loaded.errors.join('; ') : 'invalid'}`,
    );
  }
  return loaded.config.heapGrowingPercent;
}

/** For the bench's server children: the server program's heap policy, so they measure the process users run. */
export function applyServerHeapPolicy(): void {
  applyHeapGrowingPercent(serverHeapGrowingPercent(), process.execArgv);
}
