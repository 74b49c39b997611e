import { MAX_DELAY_MS, type Timer } from '../timer';
import type { DelayedOperation } from './delayed-operation';
import type { PurgatoryStats } from './purgatory-stats';
import { WatcherList } from './watcher-list';

export const DEFAULT_PURGE_INTERVAL = 1_000;
/** Watcher entries a purge may visit per call, so a purge never stalls the event loop (KAFKA-1441). */
export const DEFAULT_PURGE_WORK_PER_CALL = 1_024;

export interface PurgatoryOptions {
  /**
   * Purge completed operations from watcher lists once more than this many are estimated there, and more
   * than there are pending operations.
   */
  purgeInterval?: number;
  /** Upper bound on the watcher entries one purge step visits. */
  purgeWorkPerCall?: number;
}

/**
 * Holds operations that wait for an event on one of their keys or for their timeout (Kafka's
 * DelayedOperationPurgatory, for one event loop).
 *
 * `tryCompleteElseWatch` checks, then watches, then times: on one event loop nothing can happen between
 * the check and the watch, so the check–watch–check dance Kafka needs against other threads reduces to
 * one check, and no wake-up is lost. Completion is exactly once (see DelayedOperation), whichever of an
 * event, the timeout or a re-entrant call from a callback gets there first.
 *
 * Completed operations leave the other keys' watcher lists lazily: when a key is next checked, or by a
 * purge, which starts once `estimated operations − numDelayed` exceeds both `purgeInterval` (Kafka's rule)
 * and `numDelayed` (so a pass's cost stays proportional to what it removes), and then advances a bounded
 * step with each call, so its cost is spread instead of stalling the loop.
 *
 * Each purgatory should have a timer of its own: `numDelayed` is that timer's size, as in Kafka.
 */
export class DelayedOperationPurgatory<T extends DelayedOperation> {
  private readonly watchersByKey = new Map<string, WatcherList<T>>();
  private readonly purgeInterval: number;
  private readonly purgeWorkPerCall: number;
  private readonly onRemoved = (count: number): void => {
    this.watchedCount -= count;
  };
  private watchedCount = 0;
  /** Operations watched since the last purge began; Kafka's estimatedTotalOperations. */
  private estimatedTotalOperations = 0;
  private purgeCursor: Iterator<[string, WatcherList<T>]> | null = null;
  private isShutdown = false;

  constructor(
    readonly name: string,
    private readonly timer: Timer,
    options: PurgatoryOptions = {},
  ) {
    this.purgeInterval = options.purgeInterval ?? DEFAULT_PURGE_INTERVAL;
    this.purgeWorkPerCall = options.purgeWorkPerCall ?? DEFAULT_PURGE_WORK_PER_CALL;
    if (!(this.purgeInterval >= 0))
      throw new RangeError(`purgeInterval must be >= 0, got ${this.purgeInterval}`);
    if (!(this.purgeWorkPerCall >= 1)) {
      throw new RangeError(`purgeWorkPerCall must be >= 1, got ${this.purgeWorkPerCall}`);
    }
  }

  /** Watcher entries, counting an operation once per key and completed ones not yet purged (Kafka's "PurgatorySize"). */
  get watched(): number {
    return this.watchedCount;
  }

  /** Operations waiting for their timeout (Kafka's "NumDelayedOperations"). */
  get numDelayed(): number {
    return this.timer.size;
  }

  /** Both of Kafka's gauges at once, under this purgatory's name (for metrics, read on scrape). */
  stats(): PurgatoryStats {
    return { name: this.name, watched: this.watchedCount, numDelayed: this.timer.size };
  }

  /** The number of keys with a watcher list. */
  get watchedKeys(): number {
    return this.watchersByKey.size;
  }

  /**
   * Completes `op` now if it can; otherwise watches it under every key and starts its timeout.
   * Returns true only if it completed here, at once.
   */
  tryCompleteElseWatch(op: T, keys: readonly string[]): boolean {
    if (this.isShutdown) throw new Error(`${this.name}: purgatory is shut down`);
    // Refuse a timeout the timer would refuse before anything is watched, so a bad call leaves no trace.
    if (!(op.delayMs <= MAX_DELAY_MS)) {
      throw new RangeError(
        `${this.name}: operation timeout must be <= ${MAX_DELAY_MS} ms, got ${op.delayMs}`,
      );
    }
    if (op.tryComplete()) return true;
    for (let i = 0; i < keys.length; i++) {
      // tryComplete may have completed it through a re-entrant path; don't watch a finished operation.
      if (op.isCompleted) break;
      this.watchersFor(keys[i]).watch(op);
      this.watchedCount++;
    }
    if (keys.length > 0) this.estimatedTotalOperations++;
    if (!op.isCompleted) {
      this.timer.add(op);
      // A zero or negative timeout expires inside `add`; forceComplete already cancelled it then.
    }
    this.maybePurge();
    return false;
  }

  /** Tries to complete the operations watched on `key`; returns how many completed. */
  checkAndComplete(key: string): number {
    const watchers = this.watchersByKey.get(key);
    if (watchers === undefined) {
      this.maybePurge();
      return 0;
    }
    const completed = watchers.tryCompleteWatched();
    this.removeIfEmpty(key, watchers);
    this.maybePurge();
    return completed;
  }

  /**
   * Stops watching `key`: its operations leave the list and their timeouts are cancelled; they are not
   * completed. Returns the ones that were not completed, each once, for the caller to finish: they stay
   * on any other keys they were watched under (as in Kafka), where an event can still complete them.
   */
  cancelForKey(key: string): T[] {
    const watchers = this.watchersByKey.get(key);
    if (watchers === undefined) return [];
    this.watchersByKey.delete(key);
    const cancelled = watchers.removeAll();
    for (const op of cancelled) op.cancel();
    this.estimatedTotalOperations = Math.max(0, this.estimatedTotalOperations - cancelled.length);
    return cancelled;
  }

  /** Drops every watcher list and stops the timer. Pending operations are not completed. */
  shutdown(): void {
    if (this.isShutdown) return;
    this.isShutdown = true;
    this.purgeCursor = null;
    // Close each list: a shutdown from inside an onComplete stops the loop that called it.
    for (const watchers of this.watchersByKey.values()) watchers.close();
    this.watchersByKey.clear();
    this.watchedCount = 0;
    this.timer.shutdown();
  }

  private watchersFor(key: string): WatcherList<T> {
    let watchers = this.watchersByKey.get(key);
    if (watchers === undefined) {
      watchers = new WatcherList<T>(this.onRemoved);
      this.watchersByKey.set(key, watchers);
    }
    return watchers;
  }

  private removeIfEmpty(key: string, watchers: WatcherList<T>): void {
    if (watchers.size === 0 && !watchers.isIterating && this.watchersByKey.get(key) === watchers) {
      this.watchersByKey.delete(key);
    }
  }

  /** Starts a purge when enough completed operations may be lingering, and advances one bounded step. */
  private maybePurge(): void {
    if (this.purgeCursor === null) {
      // Kafka purges once more than purgeInterval completed operations may sit in the lists. A pass visits
      // every entry, pending ones included, so with many pending operations that rule makes the purge
      // cost per operation grow with the number pending (at 900,000 operations/s, ~80 entries visited
      // per operation: the largest cost cohort had in bench:purgatory). Waiting until the completed ones
      // also outnumber the pending ones keeps a pass's cost proportional to what it removes, and the
      // lists at most about twice their live size; below purgeInterval pending it is Kafka's rule.
      const completedEstimate = this.estimatedTotalOperations - this.timer.size;
      if (completedEstimate <= this.purgeInterval || completedEstimate <= this.timer.size) return;
      this.estimatedTotalOperations = this.timer.size;
      this.purgeCursor = this.watchersByKey.entries();
    }
    let budget = this.purgeWorkPerCall;
    while (budget > 0) {
      const next = this.purgeCursor.next();
      if (next.done) {
        this.purgeCursor = null;
        return;
      }
      const [key, watchers] = next.value;
      budget -= watchers.size + 1;
      if (watchers.isIterating) continue;
      watchers.purgeCompleted();
      // Deleting the entry the iterator stands on is safe for a Map.
      this.removeIfEmpty(key, watchers);
    }
  }
}
