import type { TimerTask } from './timer-task';

/** What the purgatory and the coordinator need of a timer. */
export interface Timer {
  /**
   * Schedules `task` to run `task.delayMs` from now. Adding a pending task re-arms it: it moves to its new
   * deadline without allocating. A task that is already due runs at once.
   */
  add(task: TimerTask): void;
  /**
   * Runs every task due by now, in non-decreasing deadline order; tasks with equal deadlines run in no
   * guaranteed order. True if any ran.
   */
  advanceClock(): boolean;
  /** The number of pending tasks. */
  readonly size: number;
  /** Drops every pending task and releases the event-loop timer. Adding afterwards is an error. */
  shutdown(): void;
}
