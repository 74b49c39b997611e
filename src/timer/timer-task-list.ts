import type { TimerTask } from './timer-task';

/** The number of pending tasks of one timer, shared by all of its lists so `size` is exact and O(1). */
export interface TaskCounter {
  value: number;
}

/**
 * A bucket of the timing wheel: an intrusive doubly linked list of tasks (O(1) add and remove) with the
 * expiration of the time slot it currently stands for. The timer queues buckets, not tasks, by that
 * expiration; `expirationMs === -1` means the bucket is not queued.
 */
export class TimerTaskList {
  expirationMs = -1;
  private head: TimerTask | null = null;
  private tail: TimerTask | null = null;

  constructor(private readonly counter: TaskCounter) {}

  /** Appends `task`, first taking it out of whatever list held it (that is what re-arming is). */
  add(task: TimerTask): void {
    if (task.timerList !== null) task.timerList.remove(task);
    task.timerList = this;
    task.timerPrev = this.tail;
    task.timerNext = null;
    if (this.tail === null) this.head = task;
    else this.tail.timerNext = task;
    this.tail = task;
    this.counter.value++;
  }

  remove(task: TimerTask): void {
    if (task.timerList !== this) return;
    const prev = task.timerPrev;
    const next = task.timerNext;
    if (prev === null) this.head = next;
    else prev.timerNext = next;
    if (next === null) this.tail = prev;
    else next.timerPrev = prev;
    task.timerList = null;
    task.timerPrev = null;
    task.timerNext = null;
    this.counter.value--;
  }

  /** Removes and returns the first task, or null when empty. */
  shift(): TimerTask | null {
    const task = this.head;
    if (task !== null) this.remove(task);
    return task;
  }

  get isEmpty(): boolean {
    return this.head === null;
  }

  /**
   * Empties the bucket, handing each task to `reinsert`, and marks the bucket unqueued so it can stand for
   * a later time slot. Tasks are detached one at a time, so `reinsert` may add them anywhere, this bucket
   * included.
   */
  flush(reinsert: (task: TimerTask) => void): void {
    // Detach the chain first: tasks re-added to this very bucket must not be visited again.
    let task = this.head;
    this.head = null;
    this.tail = null;
    this.expirationMs = -1;
    while (task !== null) {
      const next = task.timerNext;
      task.timerList = null;
      task.timerPrev = null;
      task.timerNext = null;
      this.counter.value--;
      reinsert(task);
      task = next;
    }
  }

  /** Sets the slot's expiration; true if it changed, i.e. the bucket must be (re)queued. */
  setExpiration(expirationMs: number): boolean {
    if (this.expirationMs === expirationMs) return false;
    this.expirationMs = expirationMs;
    return true;
  }
}
