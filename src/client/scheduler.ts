/** A task handed to a `Scheduler`. */
export interface ScheduledTask {
  /** Stops the task from running; a no-op once it ran or was cancelled. */
  cancel(): void;
  /** Scheduled, and neither run nor cancelled. */
  readonly isPending: boolean;
}

/**
 * Runs callbacks after a delay on some clock. The SDK's timers (heartbeat, session, stall guard, backoff,
 * deadlines) all go through one, so tests swap real time for a `ManualTime` and advance it.
 */
export interface Scheduler {
  /** Runs `task` once, `delayMs` (≥ 0) after now, never synchronously inside this call. */
  schedule(delayMs: number, task: () => void): ScheduledTask;
}
