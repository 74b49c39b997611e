/**
 * The purgatory a Node developer writes without a timing wheel, as the baseline for bench:purgatory: one
 * setTimeout per operation for its timeout, and a Map from key to the Set of operations watching it.
 * Completion is exactly once through a flag; a completed operation leaves every Set it is in at once and
 * clears its timeout, so nothing lingers and no purge is needed.
 */
export abstract class NaiveOperation {
  isCompleted = false;
  private timeout: NodeJS.Timeout | null = null;
  private purgatory: NaivePurgatory<NaiveOperation> | null = null;
  private watchedKeys: readonly string[] = [];

  constructor(readonly timeoutMs: number) {}

  abstract tryComplete(): boolean;
  abstract onComplete(): void;
  abstract onExpiration(): void;

  forceComplete(): boolean {
    if (this.isCompleted) return false;
    this.isCompleted = true;
    if (this.timeout !== null) {
      clearTimeout(this.timeout);
      this.timeout = null;
    }
    if (this.purgatory !== null) {
      this.purgatory.unwatch(this, this.watchedKeys);
      this.purgatory = null;
    }
    this.onComplete();
    return true;
  }

  /** @internal Called by NaivePurgatory when it starts watching the operation. */
  watchIn(purgatory: NaivePurgatory<NaiveOperation>, keys: readonly string[]): void {
    this.purgatory = purgatory;
    this.watchedKeys = keys;
    this.timeout = setTimeout(() => {
      this.timeout = null;
      if (this.forceComplete()) this.onExpiration();
    }, this.timeoutMs);
  }

  /** @internal Called by NaivePurgatory.shutdown. */
  abandon(): void {
    if (this.timeout !== null) clearTimeout(this.timeout);
    this.timeout = null;
    this.purgatory = null;
  }
}

export class NaivePurgatory<T extends NaiveOperation> {
  private readonly watchers = new Map<string, Set<T>>();
  private pendingCount = 0;

  /** Operations watched and not completed. */
  get pending(): number {
    return this.pendingCount;
  }

  tryCompleteElseWatch(op: T, keys: readonly string[]): boolean {
    if (op.tryComplete()) return true;
    for (let i = 0; i < keys.length; i++) {
      let set = this.watchers.get(keys[i]);
      if (set === undefined) {
        set = new Set<T>();
        this.watchers.set(keys[i], set);
      }
      set.add(op);
    }
    this.pendingCount++;
    op.watchIn(this as unknown as NaivePurgatory<NaiveOperation>, keys);
    return false;
  }

  checkAndComplete(key: string): number {
    const set = this.watchers.get(key);
    if (set === undefined) return 0;
    let completed = 0;
    // Deleting from a Set while iterating it is well defined: deleted entries are skipped.
    for (const op of set) if (op.tryComplete()) completed++;
    return completed;
  }

  /** @internal */
  unwatch(op: NaiveOperation, keys: readonly string[]): void {
    for (let i = 0; i < keys.length; i++) this.watchers.get(keys[i])?.delete(op as T);
    this.pendingCount--;
  }

  shutdown(): void {
    for (const set of this.watchers.values()) for (const op of set) op.abandon();
    this.watchers.clear();
    this.pendingCount = 0;
  }
}
