import type { TopicPartition } from './offset-store';

interface Entry extends TopicPartition {
  /** Writes in flight that carry an offset of this partition. */
  writes: number;
}

/**
 * The partitions of a shard's groups that have an offset written but not yet committed: what separates
 * the offsets as written (Kafka's timeline at its latest epoch) from the offsets as committed (the offset
 * store's view, which readers see). A commit's validation counts them (groupMaxCommittedPartitions), an
 * OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for them, and retention neither expires
 * them nor removes their group.
 *
 * An OffsetCommit's handler adds its partitions; its write removes them when the append is committed (the
 * store's view has them by then) or fails (the change is reverted). A partition written by several writes
 * in flight stays until the last of them ends. Keyed by group id, not by group object: a commit written
 * before its group was deleted still lands in the log, and counts for the group of that id.
 */
export class UncommittedOffsets {
  // groupId → "topic\0partition" → entry
  private readonly groups = new Map<string, Map<string, Entry>>();

  add(groupId: string, partitions: readonly TopicPartition[]): void {
    if (partitions.length === 0) return;
    let entries = this.groups.get(groupId);
    if (entries === undefined) {
      entries = new Map();
      this.groups.set(groupId, entries);
    }
    for (const { topic, partition } of partitions) {
      const key = partitionKey(topic, partition);
      const entry = entries.get(key);
      if (entry === undefined) entries.set(key, { topic, partition, writes: 1 });
      else entry.writes++;
    }
  }

  /** Ends one write of each of `partitions` (as `add` counted them). */
  remove(groupId: string, partitions: readonly TopicPartition[]): void {
    const entries = this.groups.get(groupId);
    if (entries === undefined) return;
    for (const { topic, partition } of partitions) {
      const key = partitionKey(topic, partition);
      const entry = entries.get(key);
      if (entry !== undefined && --entry.writes === 0) entries.delete(key);
    }
    if (entries.size === 0) this.groups.delete(groupId);
  }

  has(groupId: string, topic: string, partition: number): boolean {
    return this.groups.get(groupId)?.has(partitionKey(topic, partition)) === true;
  }

  /** Partitions of the group with a write in flight, each once. */
  partitions(groupId: string): Iterable<TopicPartition> {
    return this.groups.get(groupId)?.values() ?? [];
  }

  /** How many partitions of the group have a write in flight; O(1). */
  size(groupId: string): number {
    return this.groups.get(groupId)?.size ?? 0;
  }
}

function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
