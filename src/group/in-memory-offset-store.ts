import type { CommittedOffset, OffsetStore, TopicPartition, TopicPartitionOffset } from './offset-store';

const RESOLVED: Promise<void> = Promise.resolve();

/**
 * Offsets in process memory: durable for as long as the process lives. A commit is visible to reads as soon
 * as `commit` returns. Used until the log provides a durable store.
 */
export class InMemoryOffsetStore implements OffsetStore {
  // groupId → topic → partition → offset
  private readonly groups = new Map<string, Map<string, Map<number, CommittedOffset>>>();
  /** groupId → partitions with an offset */
  private readonly counts = new Map<string, number>();

  commit(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    let topics = this.groups.get(groupId);
    if (topics === undefined) {
      topics = new Map();
      this.groups.set(groupId, topics);
    }
    for (const { topic, partition, offset } of offsets) {
      let partitions = topics.get(topic);
      if (partitions === undefined) {
        partitions = new Map();
        topics.set(topic, partitions);
      }
      if (!partitions.has(partition)) this.counts.set(groupId, (this.counts.get(groupId) ?? 0) + 1);
      partitions.set(partition, offset);
    }
    return RESOLVED;
  }

  committedPartitions(groupId: string): number {
    return this.counts.get(groupId) ?? 0;
  }

  get(groupId: string, topic: string, partition: number): CommittedOffset | undefined {
    return this.groups.get(groupId)?.get(topic)?.get(partition);
  }

  list(groupId: string): TopicPartitionOffset[] {
    const result: TopicPartitionOffset[] = [];
    const topics = this.groups.get(groupId);
    if (topics === undefined) return result;
    for (const [topic, partitions] of topics) {
      for (const [partition, offset] of partitions) result.push({ topic, partition, offset });
    }
    return result;
  }

  hasOffsets(groupId: string): boolean {
    return this.groups.has(groupId);
  }

  deleteGroup(groupId: string): Promise<void> {
    this.groups.delete(groupId);
    this.counts.delete(groupId);
    return RESOLVED;
  }

  deleteOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<void> {
    const topics = this.groups.get(groupId);
    if (topics === undefined) return RESOLVED;
    for (const { topic, partition } of partitions) {
      const offsets = topics.get(topic);
      if (offsets === undefined || !offsets.delete(partition)) continue;
      this.counts.set(groupId, (this.counts.get(groupId) ?? 1) - 1);
      if (offsets.size === 0) topics.delete(topic);
    }
    if (topics.size === 0) {
      this.groups.delete(groupId);
      this.counts.delete(groupId);
    }
    return RESOLVED;
  }

  groupIds(): Iterable<string> {
    return this.groups.keys();
  }
}
