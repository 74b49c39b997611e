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
    if (task.list !== null) task.list.remove(task);
    task.list = this;
    task.prev = this.tail;
    task.next = null;
    if (this.tail === null) this.head = task;
    else this.tail.next = task;
    this.tail = task;
    this.counter.value++;
  }

  remove(task: TimerTask): void {
    if (task.list !== this) return;
    const { prev, next } = task;
    if (prev === null) this.head = next;
    else prev.next = next;
    if (next === null) this.tail = prev;
    else next.prev = prev;
    task.list = null;
    task.prev = null;
    task.next = null;
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
      const next = task.next;
      task.list = null;
      task.prev = null;
      task.next = null;
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
