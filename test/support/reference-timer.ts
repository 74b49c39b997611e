/**
 * The naive reference the property tests hold SystemTimer against: every pending task in one list sorted
 * by the time it must run, so "what is due" is a prefix of the list. No wheels, no buckets, no cascading:
 * it is slow and obviously right, which is the point.
 *
 * It states the timer's contract, not its implementation:
 * - a task added with `delayMs` has the deadline `now + ceil(delayMs)` (whole milliseconds, rounded up so
 *   it is never early); a delay of zero or less means "due now";
 * - a task that is due when added runs at once, inside `add` (or, when added from inside a running task,
 *   later in the same pass);
 * - any other task runs at the first tick boundary at or after its deadline: at its deadline when
 *   `tickMs` is 1, and never more than `tickMs - 1` ms after it otherwise;
 * - adding a pending task again re-arms it (its old deadline is forgotten), cancelling removes it.
 */
export interface ReferenceEntry<K> {
  readonly id: K;
  /** The deadline the caller asked for, in whole milliseconds: the task must not run before it. */
  readonly deadlineMs: number;
  /** When the task is due: the deadline rounded up to the tick, or the time of `add` if due then. */
  readonly runAtMs: number;
}

export class ReferenceTimer<K> {
  /** Pending tasks by `runAtMs`; equal times in the order they were added. */
  private readonly entries: ReferenceEntry<K>[] = [];

  constructor(readonly tickMs = 1) {
    if (!Number.isSafeInteger(tickMs) || tickMs < 1)
      throw new RangeError(`tickMs must be >= 1, got ${tickMs}`);
  }

  get size(): number {
    return this.entries.length;
  }

  /** Schedules (or re-arms) `id`; returns its entry. */
  add(id: K, delayMs: number, nowMs: number): ReferenceEntry<K> {
    this.cancel(id);
    const deadlineMs = delayMs > 0 ? nowMs + Math.ceil(delayMs) : nowMs;
    const runAtMs = deadlineMs <= nowMs ? nowMs : Math.ceil(deadlineMs / this.tickMs) * this.tickMs;
    const entry: ReferenceEntry<K> = { id, deadlineMs, runAtMs };
    let i = this.entries.length;
    while (i > 0 && this.entries[i - 1].runAtMs > runAtMs) i--;
    this.entries.splice(i, 0, entry);
    return entry;
  }

  /** Forgets `id`; true if it was pending. */
  cancel(id: K): boolean {
    const i = this.entries.findIndex((e) => e.id === id);
    if (i < 0) return false;
    this.entries.splice(i, 1);
    return true;
  }

  get(id: K): ReferenceEntry<K> | undefined {
    return this.entries.find((e) => e.id === id);
  }

  /** The pending tasks due by `nowMs`, earliest first. */
  dueBy(nowMs: number): ReferenceEntry<K>[] {
    const due: ReferenceEntry<K>[] = [];
    for (const e of this.entries) {
      if (e.runAtMs > nowMs) break;
      due.push(e);
    }
    return due;
  }

  /** The earliest `runAtMs` pending, or undefined when nothing is. */
  nextRunAtMs(): number | undefined {
    return this.entries.length === 0 ? undefined : this.entries[0].runAtMs;
  }
}
