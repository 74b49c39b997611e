import type { CommittedOffset, TopicPartition, TopicPartitionOffset } from './committed-offsets';

export type { CommittedOffset, TopicPartition, TopicPartitionOffset } from './committed-offsets';

/**
 * Where committed offsets live. The coordinator validates a commit against the group, hands the accepted
 * partitions to `commit`, and acknowledges the OffsetCommit only when the returned promise resolves: a
 * durable implementation (the log) resolves after its append is replicated, the in-memory one at once.
 *
 * Reads are synchronous: an implementation keeps the materialised latest offset per partition in memory
 * (Kafka's offsets cache) and updates it when a commit becomes durable, never before, so a fetch never sees
 * an offset that could still be lost.
 *
 * A rejected `commit` or `deleteGroup` fails the whole request. Reject with a `CohortError` whose code says
 * why (NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE, ...); the
 * coordinator maps it to the code Kafka gives OffsetCommit clients. Anything else becomes
 * UNKNOWN_SERVER_ERROR.
 */
export interface OffsetStore {
  commit(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void>;
  /** The latest durable offset of one partition, or undefined if none was committed. */
  get(groupId: string, topic: string, partition: number): CommittedOffset | undefined;
  /** Every committed offset of the group. */
  list(groupId: string): TopicPartitionOffset[];
  hasOffsets(groupId: string): boolean;
  /** How many partitions the group has a durable offset for; O(1) (groupMaxCommittedPartitions reads it). */
  committedPartitions(groupId: string): number;
  /** Removes every offset of the group (DeleteGroups, or retention); resolves once that is durable. */
  deleteGroup(groupId: string): Promise<void>;
  /**
   * Removes these offsets of the group (they expired); resolves once that is durable. Reads go on seeing
   * them until then, as they see a commit only once it is durable.
   */
  deleteOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<void>;
  /**
   * Groups that have offsets. The coordinator creates an Empty group for each at start-up, so a durable store
   * that outlives the process brings its groups back (Kafka loads them from __consumer_offsets).
   */
  groupIds(): Iterable<string>;
}

/** An offset commit record as the group layer holds it (the key's group, topic and partition; the value). */
export interface OffsetCommitRecord extends TopicPartitionOffset {
  readonly groupId: string;
}
