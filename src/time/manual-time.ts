import type { Time } from './time';

/**
 * A clock that moves only through `advance`. Tests use it, and so does the server's `--manual-clock`
 * mode, where integration tests drive rebalances deterministically instead of sleeping.
 *
 * `advance` moves the clock first and then tells every subscribed timer, which runs whatever became due
 * before `advance` returns (the order Kafka's MockTimer uses). A task that schedules another from inside
 * its callback therefore measures the new delay from the advanced time.
 */
export class ManualTime implements Time {
  private monotonic: number;
  private wall: number;
  private readonly listeners = new Set<(monotonicMs: number) => void>();

  constructor(startMonotonicMs = 0, startWallMs = 1_700_000_000_000) {
    if (!Number.isSafeInteger(startMonotonicMs) || startMonotonicMs < 0) {
      throw new RangeError(`startMonotonicMs must be a non-negative integer, got ${startMonotonicMs}`);
    }
    this.monotonic = startMonotonicMs;
    this.wall = startWallMs;
  }

  monotonicMs(): number {
    return this.monotonic;
  }

  nowMs(): number {
    return this.wall;
  }

  /** Moves both clocks forward by `ms` (a non-negative integer) and runs what became due. */
  advance(ms: number): number {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new RangeError(`advance takes a non-negative integer number of milliseconds, got ${ms}`);
    }
    this.monotonic += ms;
    this.wall += ms;
    // Every listener hears of the advance even if one throws; the first error is rethrown afterwards.
    // A Set visits entries added during iteration and skips deleted ones, which is what we want for a
    // timer shut down (or created) by a task.
    let firstError: unknown;
    let hasError = false;
    for (const listener of this.listeners) {
      try {
        listener(this.monotonic);
      } catch (error) {
        if (!hasError) {
          hasError = true;
          firstError = error;
        }
      }
    }
    if (hasError) throw firstError;
    return this.monotonic;
  }

  onAdvance(listener: (monotonicMs: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
