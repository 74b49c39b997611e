/**
 * Holds what the code under test hands to the event loop's next turn (`setImmediate`) until the test runs
 * it. A partition's load restores its groups in steps and yields a turn between two steps (TurnBudget):
 * while the turns are held it takes its next step only when the test says, so the test sees the shard
 * between any two steps and counts them, instead of guessing how many turns a step takes.
 *
 * While installed, nothing else gets a `setImmediate` turn either: install it only around what the test
 * steps through, and `restore()` it after (in an afterEach, so a failed test restores it too).
 */
export class HeldTurns {
  private readonly original: typeof setImmediate;
  private readonly queued: Array<() => void> = [];
  private waiters: Array<() => void> = [];
  private isInstalled = true;

  constructor() {
    this.original = globalThis.setImmediate;
    const hold = <Args extends unknown[]>(callback: (...args: Args) => void, ...args: Args) => {
      this.queued.push(() => callback(...args));
      const waiters = this.waiters;
      this.waiters = [];
      for (const wake of waiters) wake();
      // Nobody under test keeps or clears the handle of a turn it yields.
      return undefined as unknown as NodeJS.Immediate;
    };
    globalThis.setImmediate = hold as unknown as typeof setImmediate;
  }

  /** Turns asked for and not run yet. */
  get pending(): number {
    return this.queued.length;
  }

  /** Resolves once the code under test has asked for a turn (at once when one is pending). */
  yielded(): Promise<void> {
    if (this.queued.length > 0) return Promise.resolve();
    return new Promise<void>((wake) => this.waiters.push(wake));
  }

  /** Runs the turns asked for so far, oldest first: the code takes its next step. */
  run(): void {
    for (const turn of this.queued.splice(0)) turn();
  }

  /**
   * Lets the code take its steps one at a time until `done` settles: `afterStep` sees the state after
   * each step (the last one included), before the next is let run. Returns how many turns it let run:
   * the times the code yielded, a turn pending when it is called included.
   */
  async stepUntil(done: Promise<unknown>, afterStep: () => void = () => undefined): Promise<number> {
    let isDone = false;
    const ended = done.then(
      () => (isDone = true),
      () => (isDone = true),
    );
    let yields = 0;
    for (;;) {
      await Promise.race([ended, this.yielded()]);
      afterStep();
      if (isDone) return yields;
      yields++;
      this.run();
    }
  }

  /** Gives `setImmediate` back. Idempotent. */
  restore(): void {
    if (!this.isInstalled) return;
    this.isInstalled = false;
    globalThis.setImmediate = this.original;
  }
}
