import { SYSTEM_TIME } from './system-time';
import type { Time } from './time';

/**
 * A clock that follows a real one (by default the system clock) and can also be jumped ahead by hand:
 * `--manual-clock=running`. Real Kafka clients wait on wall time (a Fetch's max wait, a JoinGroup parked
 * until the rebalance ends), so on a clock that stands still their long polls never end; on this one they
 * end on time, and a test still expires a session on demand by advancing past it.
 *
 * Both readings are the source's plus an offset that only `advance` changes, so the clock never moves
 * back and a jump of `ms` moves both readings by exactly `ms`. Timers arm real timeouts from its readings
 * (it has no `onAdvance`: a timer driven only by `advance` would never see wall time pass) and subscribe
 * to `onJump`, which `advance` calls after moving the offset, so whatever a jump made due runs inside
 * `advance`, as on a ManualTime.
 *
 * Example: the source reads 1 000, a task is armed for 5 000 ms (deadline 6 000); `advance(10_000)` makes
 * the clock read 11 000 and the task runs before `advance` returns; a task armed for 20 000 ms after the
 * jump (deadline 31 000) runs when the source reaches 21 000, 20 s of wall time later.
 */
export class RunningManualTime implements Time {
  private readonly source: Time;
  private offsetMs = 0;
  private readonly listeners = new Set<(monotonicMs: number) => void>();

  /** `source`: the clock it follows; tests pass a clock of their own instead of sleeping. */
  constructor(source: Time = SYSTEM_TIME) {
    this.source = source;
  }

  monotonicMs(): number {
    return this.source.monotonicMs() + this.offsetMs;
  }

  nowMs(): number {
    return this.source.nowMs() + this.offsetMs;
  }

  /**
   * Jumps both clocks forward by `ms` (a non-negative integer), then tells every subscribed timer, which
   * runs what became due before `advance` returns. Returns the monotonic reading after the jump.
   */
  advance(ms: number): number {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new RangeError(`advance takes a non-negative integer number of milliseconds, got ${ms}`);
    }
    this.offsetMs += ms;
    const monotonicMs = this.monotonicMs();
    // As ManualTime: every listener hears of the jump even if one throws; the first error is rethrown.
    let firstError: unknown;
    let hasError = false;
    for (const listener of this.listeners) {
      try {
        listener(monotonicMs);
      } catch (error) {
        if (!hasError) {
          hasError = true;
          firstError = error;
        }
      }
    }
    if (hasError) throw firstError;
    return monotonicMs;
  }

  onJump(listener: (monotonicMs: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
