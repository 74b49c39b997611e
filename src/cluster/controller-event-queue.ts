/**
 * Kafka's `ControllerEventManager`: the controller handles one event at a time, in the order they
 * arrived, each to completion (its reads and writes included) before the next starts. Its decisions read
 * and change one in-memory view of the cluster; with the handling serialised, no two decisions
 * interleave across an `await`, and no handler can re-enter another: an event raised while handling one
 * is queued behind it.
 */
export class ControllerEventQueue {
  private readonly events: (() => Promise<void>)[] = [];
  private isRunning = false;
  private idleWaiters: (() => void)[] = [];

  /** `onError` receives what a handler threw; the queue carries on with the next event. */
  constructor(private readonly onError: (error: unknown) => void) {}

  /**
   * Queues `handle`; it runs after every event queued before it has finished, and never inside the
   * caller's stack (the first event of an idle queue starts on a microtask).
   */
  put(handle: () => Promise<void>): void {
    this.events.push(handle);
    if (this.isRunning) return;
    this.isRunning = true;
    queueMicrotask(() => void this.drain());
  }

  get size(): number {
    return this.events.length + (this.isRunning ? 1 : 0);
  }

  /** Resolves once no event is queued or running. */
  idle(): Promise<void> {
    if (this.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async drain(): Promise<void> {
    try {
      for (let handle = this.events.shift(); handle !== undefined; handle = this.events.shift()) {
        try {
          await handle();
        } catch (error) {
          this.onError(error);
        }
      }
    } finally {
      this.isRunning = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}
