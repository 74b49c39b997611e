import type { PartitionLog, SimpleRecord } from '../storage';

/**
 * One partition of `__consumer_offsets` as its ConsumerOffsetsWriter sees it: the partition's log (which
 * the writer reads back and compacts, never appends to directly) and an append that resolves only once the
 * batch is committed. ReplicaManager implements it for every partition it hosts (`offsets-topic.ts`);
 * the writer never learns whether the partition has one replica or three.
 */
export interface OffsetsPartition {
  /** "__consumer_offsets-<index>", for messages. */
  readonly key: string;
  readonly log: PartitionLog;
  /**
   * The partition's high watermark: compaction stops below it (a record above it may still be truncated
   * by a new leader, and the older records of its key must survive that).
   */
  readonly highWatermark: number;
  /**
   * Appends `records` as one batch as the leader at `leaderEpoch`, and resolves once it is committed:
   * the HW has passed it, the ISR holds at least min.insync.replicas, and the leader's fsync covers it
   * (acks=-1). Rejects with a CohortError carrying the log's code: NOT_LEADER_OR_FOLLOWER when this node
   * does not lead the partition at `leaderEpoch` (before the append, or while it waits: a deposed leader's
   * write never resolves), NOT_ENOUGH_REPLICAS (nothing appended) or NOT_ENOUGH_REPLICAS_AFTER_APPEND,
   * REQUEST_TIMED_OUT after the commit timeout (the batch stays appended, and may still commit), or a
   * storage error (KAFKA_STORAGE_ERROR, MESSAGE_TOO_LARGE, ...).
   */
  appendCommitted(records: readonly SimpleRecord[], leaderEpoch: number): Promise<void>;
  /**
   * Resolves once the HW has reached `offset` (every record below it is committed: a failover keeps it)
   * while this node leads the partition at `leaderEpoch`; at once if it already has. It waits as long as
   * the leadership lasts: the HW of a new leader moves as soon as its in-sync followers fetch, or once the
   * ISR drops those that do not (replica.lag.time.max.ms). Rejects with NOT_LEADER_OR_FOLLOWER once this
   * node no longer leads the partition at `leaderEpoch`.
   */
  awaitHighWatermark(offset: number, leaderEpoch: number): Promise<void>;
}
