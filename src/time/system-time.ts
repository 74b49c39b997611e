import { performance } from 'node:perf_hooks';
import type { Time } from './time';

/** The real clocks. The only place in cohort that reads them. */
export class SystemTime implements Time {
  monotonicMs(): number {
    // Whole milliseconds keep timer arithmetic in small integers (V8 Smis) and comparisons exact.
    return Math.floor(performance.now());
  }

  nowMs(): number {
    return Date.now();
  }
}

/** A process-wide instance: SystemTime has no state. */
export const SYSTEM_TIME: Time = new SystemTime();
