import { compareTopicPartitions, topicPartitionKey, type TopicPartition } from './topic-partition';

/** A member as lag rows name it: who owns a partition, and what it owns. */
export interface LagMember {
  readonly memberId: string;
  readonly clientId: string;
  readonly clientHost: string;
  /** The member's partitions; null when its assignment is unknown (another protocol type, undecodable). */
  readonly assignment: readonly TopicPartition[] | null;
}

/** An offset a group committed for one partition. */
export interface CommittedPartitionOffset extends TopicPartition {
  readonly offset: bigint;
}

/** One partition of a consumer group, as `kafka-consumer-groups --describe` shows it. */
export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  /** What the group committed; null when nothing was. */
  readonly committedOffset: bigint | null;
  /** The partition's high watermark (Kafka's tool calls it LOG-END-OFFSET); null if it could not be read. */
  readonly highWatermark: bigint | null;
  /** `highWatermark - committedOffset`; null when either is unknown. */
  readonly lag: bigint | null;
  /** The member that owns the partition now, if any. */
  readonly memberId: string | null;
  readonly clientId: string | null;
  readonly clientHost: string | null;
}

/**
 * The partitions a group's lag is reported for, as kafka-consumer-groups picks them: each partition a
 * member owns or the group has a committed offset for, by topic then partition.
 */
export function lagPartitions(
  members: readonly LagMember[],
  committed: readonly CommittedPartitionOffset[],
): TopicPartition[] {
  const keys = new Map<string, TopicPartition>();
  for (const member of members) {
    for (const tp of member.assignment ?? []) keys.set(topicPartitionKey(tp), tp);
  }
  for (const c of committed) {
    const key = topicPartitionKey(c);
    if (!keys.has(key)) keys.set(key, { topic: c.topic, partition: c.partition });
  }
  return [...keys.values()].sort(compareTopicPartitions);
}

/**
 * The lag rows of a group over `partitions` (from `lagPartitions`): committed offset, high watermark
 * (`highWatermarks[i]` for `partitions[i]`, null when unknown), their difference (never below 0: a commit
 * past the high watermark is caught up) and the owning member. The SDK's describeConsumerGroup and the admin
 * page both compute lag here, so the CLI and the page always agree.
 */
export function partitionLags(
  partitions: readonly TopicPartition[],
  members: readonly LagMember[],
  committed: readonly CommittedPartitionOffset[],
  highWatermarks: readonly (bigint | null)[],
): PartitionLag[] {
  const owners = new Map<string, LagMember>();
  for (const member of members) {
    for (const tp of member.assignment ?? []) owners.set(topicPartitionKey(tp), member);
  }
  const committedByKey = new Map<string, bigint>();
  for (const c of committed) committedByKey.set(topicPartitionKey(c), c.offset);
  return partitions.map((tp, i): PartitionLag => {
    const key = topicPartitionKey(tp);
    const committedOffset = committedByKey.get(key) ?? null;
    const highWatermark = highWatermarks[i] ?? null;
    const owner = owners.get(key);
    return {
      topic: tp.topic,
      partition: tp.partition,
      committedOffset,
      highWatermark,
      lag:
        committedOffset === null || highWatermark === null
          ? null
          : highWatermark > committedOffset
            ? highWatermark - committedOffset
            : 0n,
      memberId: owner?.memberId ?? null,
      clientId: owner?.clientId ?? null,
      clientHost: owner?.clientHost ?? null,
    };
  });
}
