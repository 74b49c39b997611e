import type { TimerTaskList } from './timer-task-list';

/**
 * A unit of work to run once its delay has passed.
 *
 * The task is its own list node (Kafka keeps a separate TimerTaskEntry): a bucket links tasks through
 * `timerPrev`/`timerNext`, so adding, cancelling and re-arming a task never allocates. Re-arming is simply adding
 * the same task again, which moves it to the bucket of its new deadline.
 *
 * A task is pending from `Timer.add` until it runs or is cancelled; a pending task is in exactly one list
 * (a wheel bucket or the timer's list of due tasks), so `cancel` always finds it, even after it became due
 * but before it ran.
 */
export abstract class TimerTask {
  /** Delay counted from the moment the task is added to a timer. May be changed before re-adding. */
  delayMs: number;

  /**
   * Absolute deadline on the timer's monotonic clock, set by `Timer.add` (whole ms, rounded up to the
   * timer's tick). Read-only for everyone but the timer. A SystemTimer on real time marks a re-armed task
   * whose deadline it fixes at the end of the synchronous run by storing `-(lower bound) - 1` here until
   * then (a flag without a field: every pending task's bytes count).
   */
  expirationMs = 0;
  /** @internal The list holding the task while it is pending; null otherwise. */
  timerList: TimerTaskList | null = null;
  /** @internal */
  timerPrev: TimerTask | null = null;
  /** @internal */
  timerNext: TimerTask | null = null;

  constructor(delayMs: number) {
    this.delayMs = delayMs;
  }

  /** Called once, on the event loop, at or after the deadline. */
  abstract run(): void;

  /** Stops the task from running. A no-op for a task that is not pending. */
  cancel(): void {
    const list = this.timerList;
    if (list !== null) list.remove(this);
  }

  /**
   * The deadline as the timer knows it now: `expirationMs`, or while a SystemTimer has yet to fix a
   * re-armed task's deadline (until the end of the synchronous run that re-armed it), its lower bound,
   * which is earlier by at most that run's length. Reads fields only: no clock, no allocation.
   */
  get deadlineMs(): number {
    const expirationMs = this.expirationMs;
    return expirationMs >= 0 ? expirationMs : -expirationMs - 1;
  }

  /** Scheduled, and neither run nor cancelled yet. */
  get isPending(): boolean {
    return this.timerList !== null;
  }
}
