import type { DelayedOperation } from './delayed-operation';

/**
 * The operations watched under one key, in the order they were watched.
 *
 * Removal leaves a hole (null) that is compacted away later, never while an iteration runs, so a
 * callback fired from inside an iteration may watch, complete or cancel operations on this same list
 * without disturbing the loop above it. `size` counts entries (holes excluded), completed or not: a
 * completed operation stays until the list is next checked or purged, as in Kafka.
 */
export class WatcherList<T extends DelayedOperation> {
  private ops: (T | null)[] = [];
  private holes = 0;
  private iterating = 0;
  private isClosed = false;

  constructor(private readonly onRemoved: (count: number) => void) {}

  get size(): number {
    return this.ops.length - this.holes;
  }

  get isIterating(): boolean {
    return this.iterating > 0;
  }

  watch(op: T): void {
    this.ops.push(op);
  }

  /**
   * Calls `tryComplete` on every operation that was watched when the call began and is not completed;
   * removes those that complete and those found completed. Operations watched during the loop are not
   * visited: they were checked when they were watched, after the event that led here.
   */
  tryCompleteWatched(): number {
    const ops = this.ops;
    const end = ops.length;
    let completed = 0;
    this.iterating++;
    try {
      // A callback may shut the purgatory down (closing this list): stop there.
      for (let i = 0; i < end && !this.isClosed; i++) {
        const op = ops[i];
        if (op === null) continue;
        if (op.isCompleted) {
          this.removeAt(ops, i);
        } else if (op.tryComplete()) {
          completed++;
          // `ops[i]` is still `op` unless a nested call cleared it (e.g. cancelForKey).
          if (ops[i] === op) this.removeAt(ops, i);
        }
      }
    } finally {
      this.iterating--;
    }
    this.compact();
    return completed;
  }

  /** Removes completed operations; returns how many. */
  purgeCompleted(): number {
    const ops = this.ops;
    let purged = 0;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i];
      if (op !== null && op.isCompleted) {
        this.removeAt(ops, i);
        purged++;
      }
    }
    this.compact();
    return purged;
  }

  /**
   * Detaches the list from its purgatory (shutdown): a loop running over it stops at the next entry and
   * nothing more is counted against the purgatory.
   */
  close(): void {
    this.isClosed = true;
    this.ops.length = 0;
    this.holes = 0;
  }

  /** Removes every operation and returns those not completed, each once. */
  removeAll(): T[] {
    const ops = this.ops;
    const remaining = new Set<T>();
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i];
      if (op === null) continue;
      if (!op.isCompleted) remaining.add(op);
      this.removeAt(ops, i);
    }
    this.compact();
    return [...remaining];
  }

  private removeAt(ops: (T | null)[], i: number): void {
    ops[i] = null;
    if (this.isClosed) return;
    this.holes++;
    this.onRemoved(1);
  }

  /**
   * Drops the holes once they are a quarter of the array (or all of it), unless an iteration is running
   * over the array (it relies on indexes). Compacting on every removal would rewrite the whole list each
   * time a checkAndComplete completes one operation, and shrinking the array frees capacity that the next
   * watch must grow back (a copy of the list): O(n) per event. With the quarter rule each compaction pays
   * for the removals that made it, and a scan skips the holes in between.
   */
  private compact(): void {
    if (this.iterating > 0 || this.holes === 0) return;
    const ops = this.ops;
    if (this.holes === ops.length) {
      ops.length = 0;
    } else if (this.holes * 4 < ops.length) {
      return;
    } else {
      let w = 0;
      for (let r = 0; r < ops.length; r++) {
        const op = ops[r];
        if (op !== null) ops[w++] = op;
      }
      ops.length = w;
    }
    this.holes = 0;
  }
}
