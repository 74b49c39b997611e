import { TimerTask } from '../timer';

/**
 * A request that could not be answered at once: it waits in a purgatory until `tryComplete` succeeds
 * (triggered by an event on one of its keys) or its timeout expires (`run`, called by the timer).
 *
 * Exactly-once completion: `forceComplete` flips `isCompleted` once and only the first caller gets true,
 * cancels the timeout, then calls `onComplete`. On one event loop no lock is needed for that; what matters
 * is that the flag is set *before* `onComplete` runs, so an `onComplete` that re-enters the purgatory (and
 * so triggers `tryComplete` on this very operation) cannot complete it twice.
 *
 * Subclasses implement `tryComplete` as Kafka's do: check the condition and, if it holds,
 * `return this.forceComplete()`; otherwise return false.
 */
export abstract class DelayedOperation extends TimerTask {
  private completed = false;

  get isCompleted(): boolean {
    return this.completed;
  }

  /** Completes the operation if no one has; true only for the call that did it. */
  forceComplete(): boolean {
    if (this.completed) return false;
    this.completed = true;
    this.cancel();
    this.onComplete();
    return true;
  }

  /** Tries to complete now; must call `forceComplete` (and return its result) when it can. */
  abstract tryComplete(): boolean;

  /** The operation's work once completed, whether by an event or by expiry. Called exactly once. */
  abstract onComplete(): void;

  /** Called after `onComplete` when the timeout, not an event, completed the operation. */
  abstract onExpiration(): void;

  /** The timer's callback: the timeout passed. */
  run(): void {
    if (this.forceComplete()) this.onExpiration();
  }
}
