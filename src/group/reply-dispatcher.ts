/**
 * Delivers the answers of parked calls without letting one event-loop task run unbounded.
 *
 * Why: when a rebalance of N members completes, N parked JoinGroup calls are answered at once. Resolving a
 * promise is cheap, but each resolution runs its continuation (the transport encodes and writes the reply)
 * in the same task's microtask queue, so N = 5,000 replies would all be written inside one task. The
 * dispatcher lets the first `sliceSize` replies of a task go out synchronously and queues the rest; a
 * `setImmediate` turn then delivers the next `sliceSize`, and so on. Other I/O (heartbeats of other groups)
 * interleaves between turns. Small rebalances never wait: their replies fit in the first slice.
 *
 * Example with sliceSize = 100 (the default) and a 250-member rebalance: replies 1–100 resolve in the task
 * that completed the join, 101–200 in the next turn, 201–250 in the one after.
 *
 * Order is preserved: a reply is never delivered before one queued earlier.
 */
export class ReplyDispatcher {
  readonly sliceSize: number;
  private deliveredThisTurn = 0;
  private isTurnScheduled = false;
  // Two parallel arrays and a head index: queuing allocates no closure per reply.
  private resolvers: Array<(value: never) => void> = [];
  private values: unknown[] = [];
  private head = 0;

  constructor(sliceSize: number) {
    if (!Number.isSafeInteger(sliceSize) || sliceSize < 1) {
      throw new RangeError(`replySliceSize must be a positive integer, got ${sliceSize}`);
    }
    this.sliceSize = sliceSize;
  }

  /** Replies waiting for a later turn. */
  get queued(): number {
    return this.resolvers.length - this.head;
  }

  deliver<T>(resolve: (value: T) => void, value: T): void {
    if (this.queued === 0 && this.deliveredThisTurn < this.sliceSize) {
      this.deliveredThisTurn++;
      this.scheduleTurn();
      resolve(value);
      return;
    }
    this.resolvers.push(resolve as (value: never) => void);
    this.values.push(value);
    this.scheduleTurn();
  }

  /** Delivers everything queued now (shutdown: nothing may stay unanswered). */
  flush(): void {
    while (this.queued > 0) this.deliverOne();
    this.reset();
  }

  private scheduleTurn(): void {
    if (this.isTurnScheduled) return;
    this.isTurnScheduled = true;
    setImmediate(this.onTurn);
  }

  private readonly onTurn = (): void => {
    this.isTurnScheduled = false;
    this.deliveredThisTurn = 0;
    while (this.queued > 0 && this.deliveredThisTurn < this.sliceSize) {
      this.deliveredThisTurn++;
      this.deliverOne();
    }
    if (this.queued === 0) this.reset();
    // Even when the queue is empty, the next turn resets the budget spent by this one.
    if (this.deliveredThisTurn > 0) this.scheduleTurn();
  };

  private deliverOne(): void {
    const i = this.head++;
    const resolve = this.resolvers[i];
    const value = this.values[i] as never;
    // Release references at once: a delivered reply must not be kept alive by the queue.
    this.resolvers[i] = undefined as unknown as (value: never) => void;
    this.values[i] = undefined;
    resolve(value);
  }

  private reset(): void {
    if (this.head === 0) return;
    this.resolvers = [];
    this.values = [];
    this.head = 0;
  }
}
