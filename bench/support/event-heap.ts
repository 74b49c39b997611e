/**
 * A binary min-heap of items by time, kept in two parallel arrays so that sifting compares plain numbers
 * and never reads the items (which, in the purgatory bench, are the two sides' different operation
 * classes: the load generator must cost both sides the same).
 */
export class EventHeap<T> {
  private readonly times: number[] = [];
  private readonly items: T[] = [];

  get size(): number {
    return this.times.length;
  }

  /** The earliest time queued, or Infinity when empty. */
  peekTime(): number {
    return this.times.length === 0 ? Infinity : this.times[0];
  }

  push(time: number, item: T): void {
    const times = this.times;
    const items = this.items;
    let i = times.length;
    times.push(time);
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (times[parent] <= time) break;
      times[i] = times[parent];
      items[i] = items[parent];
      i = parent;
    }
    times[i] = time;
    items[i] = item;
  }

  /** Removes and returns the earliest item; the heap must not be empty. */
  pop(): T {
    const times = this.times;
    const items = this.items;
    const top = items[0];
    const lastTime = times.pop() as number;
    const lastItem = items.pop() as T;
    const n = times.length;
    if (n > 0) {
      let i = 0;
      while (true) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && times[child + 1] < times[child]) child++;
        if (times[child] >= lastTime) break;
        times[i] = times[child];
        items[i] = items[child];
        i = child;
      }
      times[i] = lastTime;
      items[i] = lastItem;
    }
    return top;
  }

  clear(): void {
    this.times.length = 0;
    this.items.length = 0;
  }
}
