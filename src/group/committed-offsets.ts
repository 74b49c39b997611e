export interface CommittedOffset {
  readonly committedOffset: number;
  /** -1 when the client did not send one. */
  readonly committedLeaderEpoch: number;
  readonly metadata: string;
  /** Wall-clock time of the commit (Time.nowMs): offsets committed outside membership expire from it. */
  readonly commitTimestampMs: number;
}

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

export interface TopicPartitionOffset extends TopicPartition {
  readonly offset: CommittedOffset;
}

/**
 * What reads committed offsets across groups from outside the coordinator (consumer-lag metrics, the live
 * page): the router gives it over the partitions it serves.
 */
export interface CommittedOffsetsReader {
  /** Groups that have offsets. */
  groupIds(): Iterable<string>;
  /** Every committed offset of the group. */
  list(groupId: string): TopicPartitionOffset[];
  /** Partitions the group has an offset for; O(1). */
  committedPartitions(groupId: string): number;
}

/**
 * The latest committed offset of each group, topic and partition (Kafka's offsets cache: the coordinator
 * shard's, which GroupOffsets keeps and replay changes), with the number
 * of partitions each group has an offset for, kept as offsets come and go so that reading it is O(1)
 * (groupMaxCommittedPartitions checks it on every commit). A group with no offset left has no entry.
 */
export class CommittedOffsets {
  // groupId → topic → partition → offset
  private readonly groups = new Map<string, Map<string, Map<number, CommittedOffset>>>();
  /** groupId → partitions with an offset */
  private readonly counts = new Map<string, number>();
  private total = 0;

  /** Offsets held, over every group. */
  get size(): number {
    return this.total;
  }

  put(groupId: string, topic: string, partition: number, offset: CommittedOffset): void {
    let topics = this.groups.get(groupId);
    if (topics === undefined) {
      topics = new Map();
      this.groups.set(groupId, topics);
    }
    let partitions = topics.get(topic);
    if (partitions === undefined) {
      partitions = new Map();
      topics.set(topic, partitions);
    }
    if (!partitions.has(partition)) {
      this.counts.set(groupId, (this.counts.get(groupId) ?? 0) + 1);
      this.total++;
    }
    partitions.set(partition, offset);
  }

  remove(groupId: string, topic: string, partition: number): void {
    const topics = this.groups.get(groupId);
    const partitions = topics?.get(topic);
    if (topics === undefined || partitions === undefined || !partitions.delete(partition)) return;
    this.counts.set(groupId, (this.counts.get(groupId) ?? 1) - 1);
    this.total--;
    if (partitions.size > 0) return;
    topics.delete(topic);
    if (topics.size > 0) return;
    this.groups.delete(groupId);
    this.counts.delete(groupId);
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

  /** Partitions the group has an offset for; O(1). */
  committedPartitions(groupId: string): number {
    return this.counts.get(groupId) ?? 0;
  }

  /** Groups that have offsets. */
  groupIds(): Iterable<string> {
    return this.groups.keys();
  }
}

/** The committed offsets as their readers get them: replay alone changes them. */
export type ReadonlyCommittedOffsets = CommittedOffsetsReader &
  Pick<CommittedOffsets, 'size' | 'get' | 'hasOffsets'>;
