import type { TimerTaskList } from './timer-task-list';

/**
 * A binary min-heap of buckets by expiration: cohort's replacement for Kafka's DelayQueue. It holds
 * buckets, never tasks, so its size is bounded by the number of wheel slots in use, not by the number of
 * timers. A bucket is in the queue exactly while its expiration is set (not -1): it is pushed when it
 * gets an expiration and leaves only by `pop`, after which it is flushed and its expiration reset.
 */
export class BucketQueue {
  private readonly heap: TimerTaskList[] = [];

  get size(): number {
    return this.heap.length;
  }

  /** The earliest expiration queued, or Infinity when empty. */
  peekExpirationMs(): number {
    return this.heap.length === 0 ? Infinity : this.heap[0].expirationMs;
  }

  push(bucket: TimerTaskList): void {
    const heap = this.heap;
    let i = heap.length;
    heap.push(bucket);
    const expiration = bucket.expirationMs;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].expirationMs <= expiration) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = bucket;
  }

  pop(): TimerTaskList | undefined {
    const heap = this.heap;
    if (heap.length === 0) return undefined;
    const top = heap[0];
    const last = heap.pop() as TimerTaskList;
    const n = heap.length;
    if (n > 0) {
      const expiration = last.expirationMs;
      let i = 0;
      while (true) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && heap[child + 1].expirationMs < heap[child].expirationMs) child++;
        if (heap[child].expirationMs >= expiration) break;
        heap[i] = heap[child];
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }

  clear(): void {
    this.heap.length = 0;
  }
}
