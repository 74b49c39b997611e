import { CommittedOffsets } from './committed-offsets';
import type { CommittedOffset, OffsetStore, TopicPartition, TopicPartitionOffset } from './offset-store';

const RESOLVED: Promise<void> = Promise.resolve();

/**
 * Offsets in process memory: durable for as long as the process lives. A commit is visible to reads as soon
 * as `commit` returns. The coordinator's store when it has no log (GroupCoordinator on its own, tests).
 */
export class InMemoryOffsetStore implements OffsetStore {
  private readonly offsets = new CommittedOffsets();

  commit(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    for (const { topic, partition, offset } of offsets) this.offsets.put(groupId, topic, partition, offset);
    return RESOLVED;
  }

  committedPartitions(groupId: string): number {
    return this.offsets.committedPartitions(groupId);
  }

  get(groupId: string, topic: string, partition: number): CommittedOffset | undefined {
    return this.offsets.get(groupId, topic, partition);
  }

  list(groupId: string): TopicPartitionOffset[] {
    return this.offsets.list(groupId);
  }

  hasOffsets(groupId: string): boolean {
    return this.offsets.hasOffsets(groupId);
  }

  deleteGroup(groupId: string): Promise<void> {
    this.offsets.removeGroup(groupId);
    return RESOLVED;
  }

  deleteOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<void> {
    for (const { topic, partition } of partitions) this.offsets.remove(groupId, topic, partition);
    return RESOLVED;
  }

  groupIds(): Iterable<string> {
    return this.offsets.groupIds();
  }
}
