import type { TopicPartition } from './committed-offsets';

/**
 * The partitions of a shard's groups that have an offset written but not yet committed: what separates
 * the offsets as written (Kafka's timeline at its latest epoch) from the offsets as committed (GroupOffsets'
 * replay of the committed records, which readers see). A commit's validation counts them
 * (groupMaxCommittedPartitions), an OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for
 * them, and retention neither expires them nor removes their group.
 *
 * An OffsetCommit's handler adds its partitions; its write removes them when the append is committed (the
 * committed offsets have them by then) or fails (the change is reverted). A partition written by several
 * writes in flight stays until the last of them ends. Keyed by group id, not by group object: a commit
 * written before its group was deleted still lands in the log, and counts for the group of that id.
 */
export class UncommittedOffsets {
  // groupId → "topic\0partition" → writes in flight that carry an offset of it. Counts, not objects: a
  // commit adds and removes one entry per partition, on the hot path.
  private readonly groups = new Map<string, Map<string, number>>();

  add(groupId: string, partitions: readonly TopicPartition[]): void {
    if (partitions.length === 0) return;
    let writes = this.groups.get(groupId);
    if (writes === undefined) {
      writes = new Map();
      this.groups.set(groupId, writes);
    }
    for (const { topic, partition } of partitions) {
      const key = partitionKey(topic, partition);
      writes.set(key, (writes.get(key) ?? 0) + 1);
    }
  }

  /** Ends one write of each of `partitions` (as `add` counted them). */
  remove(groupId: string, partitions: readonly TopicPartition[]): void {
    const writes = this.groups.get(groupId);
    if (writes === undefined) return;
    for (const { topic, partition } of partitions) {
      const key = partitionKey(topic, partition);
      const count = writes.get(key);
      if (count === undefined) continue;
      if (count > 1) writes.set(key, count - 1);
      else writes.delete(key);
    }
    if (writes.size === 0) this.groups.delete(groupId);
  }

  has(groupId: string, topic: string, partition: number): boolean {
    return this.groups.get(groupId)?.has(partitionKey(topic, partition)) === true;
  }

  /** Partitions of the group with a write in flight, each once (read only when a group nears its limit). */
  *partitions(groupId: string): Iterable<TopicPartition> {
    const writes = this.groups.get(groupId);
    if (writes === undefined) return;
    for (const key of writes.keys()) {
      const at = key.lastIndexOf('\u0000');
      yield { topic: key.slice(0, at), partition: Number(key.slice(at + 1)) };
    }
  }

  /** How many partitions of the group have a write in flight; O(1). */
  size(groupId: string): number {
    return this.groups.get(groupId)?.size ?? 0;
  }
}

function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
