/**
 * Items waiting for a slow reader, at most one per key: putting an item under a key that already waits
 * replaces it in place (`merge` decides what the replacement holds), so the queue never holds more items
 * than there are keys, however many are put. Items leave in the order their keys began to wait.
 *
 * Worked example, keys being group ids: put(a1), put(b1), put(a2) leaves [a2, b1] (a2 took a1's place);
 * shift() gives a2, then b1.
 */
export class CoalescingQueue<T> {
  private readonly items = new Map<string, T>();

  constructor(private readonly merge: (older: T, newer: T) => T = (_older, newer) => newer) {}

  /** Keys waiting now. */
  get size(): number {
    return this.items.size;
  }

  put(key: string, item: T): void {
    const older = this.items.get(key);
    this.items.set(key, older === undefined ? item : this.merge(older, item));
  }

  /** The item of the key that has waited longest, removed; undefined when empty. */
  shift(): T | undefined {
    for (const [key, item] of this.items) {
      this.items.delete(key);
      return item;
    }
    return undefined;
  }

  clear(): void {
    this.items.clear();
  }
}
