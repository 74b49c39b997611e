/**
 * Group commit for a log's fsyncs: many writers wait for durability, few fsyncs run.
 *
 * A writer asks for `offset` to become durable with `request(offset)`. At most one sync runs at a time.
 * A sync covers everything written before it started: it returns the offset below which the log is now
 * durable (the log end offset when it began), and every waiter below that is released together. Requests
 * made while a sync runs wait for the next one, which starts as soon as the running one ends, so under
 * load each fsync carries every append that arrived during the previous one. The first sync of a burst
 * starts on `setImmediate`, after the I/O callbacks already queued have made their requests.
 *
 * Example: appends 0..99 arrive in one I/O phase and all request durability → one sync, which returns
 * 100 and releases all hundred. Appends 100..149 arrive while it runs → a second sync releases them.
 *
 * Truncation can remove offsets a running sync was going to report; `lowerTo(offset)` caps what that
 * sync may claim and rejects waiters for the removed offsets. A failed sync rejects every waiter and
 * every later request: after an fsync error the page cache can no longer be trusted (the log is offline).
 */
interface Waiter {
  readonly offset: number;
  /** Released only once `syncCount` reaches this (a sync that started after the request). */
  readonly syncs?: number;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

const RESOLVED: Promise<void> = Promise.resolve();

export class GroupCommit {
  private durableOffset: number;
  private waiters: Waiter[] = [];
  private inFlight: Promise<void> | null = null;
  private isScheduled = false;
  private inFlightCeiling = Number.POSITIVE_INFINITY;
  private failure: unknown = null;
  private syncs = 0;

  /**
   * @param sync makes everything written so far durable and resolves with the offset below which it did
   *   (read before its first fsync starts).
   * @param durableOffset the offset below which the log is durable already.
   */
  constructor(
    private readonly sync: () => Promise<number>,
    durableOffset: number,
    /** Called after each completed sync, once `flushedOffset` includes it and its waiters are released. */
    private readonly onSynced?: () => void,
  ) {
    this.durableOffset = durableOffset;
  }

  /** Offsets below this are durable (Kafka's recovery point). */
  get flushedOffset(): number {
    return this.durableOffset;
  }

  /** Syncs completed so far. */
  get syncCount(): number {
    return this.syncs;
  }

  get error(): unknown {
    return this.failure;
  }

  /** Resolves once `offset` is durable; rejects if a sync fails or truncation removes the offset first. */
  request(offset: number): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    if (offset < this.durableOffset) return RESOLVED;
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ offset, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Resolves after a sync that starts after this call, even when every offset is durable already: a
   * change the sync makes durable beside the offsets (a segment file deleted from the directory) needs one.
   */
  requestSync(): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    const syncs = this.syncs + (this.inFlight !== null ? 2 : 1);
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ offset: -1, syncs, resolve, reject });
      this.schedule();
    });
  }

  /** Truncation: nothing at or above `offset` is durable any more, whatever a running sync reports. */
  lowerTo(offset: number, reason: unknown): void {
    if (offset < this.durableOffset) this.durableOffset = offset;
    if (this.inFlight !== null && offset < this.inFlightCeiling) this.inFlightCeiling = offset;
    const removed = this.waiters.filter((waiter) => waiter.offset >= offset);
    if (removed.length === 0) return;
    this.waiters = this.waiters.filter((waiter) => waiter.offset < offset);
    for (const waiter of removed) waiter.reject(reason);
  }

  /** Resolves when no sync is running or queued (used by close). Never rejects. */
  async idle(): Promise<void> {
    while (this.inFlight !== null || this.isScheduled) {
      await (this.inFlight ?? new Promise<void>((resolve) => setImmediate(resolve)));
    }
  }

  private schedule(): void {
    if (this.inFlight !== null || this.isScheduled) return;
    this.isScheduled = true;
    setImmediate(() => {
      this.isScheduled = false;
      this.run();
    });
  }

  private run(): void {
    if (this.waiters.length === 0 || this.failure !== null) return;
    this.inFlightCeiling = Number.POSITIVE_INFINITY;
    this.inFlight = this.sync().then(
      (syncedOffset) => this.complete(syncedOffset),
      (error: unknown) => this.fail(error),
    );
  }

  private complete(syncedOffset: number): void {
    this.inFlight = null;
    this.syncs++;
    const durable = Math.min(syncedOffset, this.inFlightCeiling);
    if (durable > this.durableOffset) this.durableOffset = durable;
    const released: Waiter[] = [];
    const remaining: Waiter[] = [];
    for (const waiter of this.waiters) {
      const isReleased =
        waiter.offset < this.durableOffset && (waiter.syncs === undefined || this.syncs >= waiter.syncs);
      (isReleased ? released : remaining).push(waiter);
    }
    this.waiters = remaining;
    for (const waiter of released) waiter.resolve();
    if (remaining.length > 0) this.schedule();
    this.onSynced?.();
  }

  private fail(error: unknown): void {
    this.inFlight = null;
    this.failure = error;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter.reject(error);
  }
}
