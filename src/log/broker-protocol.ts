import type { ErrorCode } from '../errors';
import type { LogRecord, RecordBatch } from './storage';

/**
 * The Broker contract (`proto/cohort/v1/broker.proto`) as the log layer sees it: the decoded messages
 * with camelCase fields, int64 fields as numbers (the server decodes them exactly or refuses the request)
 * and bytes as Buffers. Field names mirror the proto so the server layer maps one to the other without
 * renaming.
 */

/** `replica_id` of a consumer's Fetch (Kafka's CONSUMER_REPLICA_ID); any id >= 0 is a follower. */
export const CONSUMER_REPLICA_ID = -1;
/** ListOffsets `timestamp` asking for the latest offset (the high watermark). */
export const LATEST_TIMESTAMP = -1;
/** ListOffsets `timestamp` asking for the earliest offset (the log start offset). */
export const EARLIEST_TIMESTAMP = -2;
/**
 * No leader epoch (Kafka's RecordBatch.NO_PARTITION_LEADER_EPOCH): as a request's `currentLeaderEpoch`,
 * "do not check"; in an OffsetForLeaderEpoch answer, "no such epoch here".
 */
export const NO_LEADER_EPOCH = -1;
/** OffsetForLeaderEpoch's end offset when it is not known (Kafka's UNDEFINED_EPOCH_OFFSET). */
export const UNDEFINED_EPOCH_OFFSET = -1;
/** CreateTopics asking for the server's default partition count or replication factor. */
export const DEFAULT_TOPIC_SETTING = -1;

export interface CreatableTopic {
  readonly name: string;
  readonly numPartitions: number;
  readonly replicationFactor: number;
}
export interface CreateTopicsRequest {
  readonly topics: readonly CreatableTopic[];
}
export interface CreatableTopicResult {
  readonly name: string;
  readonly errorCode: ErrorCode;
  readonly errorMessage: string;
}
export interface CreateTopicsResponse {
  readonly topics: CreatableTopicResult[];
}

export interface MetadataRequest {
  /** Empty: every topic. */
  readonly topics: readonly string[];
}
export interface PartitionMetadata {
  readonly partitionIndex: number;
  readonly leaderId: number;
  readonly replicaNodes: readonly number[];
  readonly isrNodes: readonly number[];
  readonly errorCode: ErrorCode;
  /** The epoch of `leaderId`'s leadership (0 on a single node). */
  readonly leaderEpoch: number;
}
export interface TopicMetadata {
  readonly name: string;
  readonly errorCode: ErrorCode;
  readonly partitions: readonly PartitionMetadata[];
  /** Why `errorCode` is not NONE, for people (clients act on the code); '' when there is nothing to add. */
  readonly errorMessage: string;
}
export interface BrokerNode {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}
export interface MetadataResponse {
  /** Empty from a cluster node that is not yet a member of the cluster (see ReplicaManager.metadata). */
  readonly brokers: readonly BrokerNode[];
  readonly topics: readonly TopicMetadata[];
  /** The controller's node id: this node on its own; NO_LEADER_ID (-1) while none is known. */
  readonly controllerId: number;
}

export interface RecordHeader {
  readonly key: string;
  readonly value: Buffer;
}
/** A record as a producer sends it: `offset` is ignored, `timestampMs` 0 means "the time of the append". */
export interface ProduceRecord {
  readonly timestampMs: number;
  /** Empty means no key: proto3 cannot tell the two apart. */
  readonly key: Buffer;
  /** null is Kafka's null value (a tombstone), kept apart from empty bytes (`value_null` on the wire). */
  readonly value: Buffer | null;
  readonly headers: readonly RecordHeader[];
}
export interface ProducePartitionData {
  readonly partitionIndex: number;
  readonly records: readonly ProduceRecord[];
  /**
   * The size of the batch as its producer sent it, which the log's maxMessageBytes bounds instead of the
   * batch it stores: Kafka checks the batch it received, compressed, against max.message.bytes (the Kafka
   * door sets it). Absent: the stored batch is checked.
   */
  readonly receivedBatchBytes?: number;
  /**
   * A Kafka client's batch that the log stores as it came (RecordBatch.fromClientBatch: the Kafka door's
   * Produce); `records` is then empty and ignored.
   */
  readonly clientBatch?: RecordBatch;
}
export interface ProduceTopicData {
  readonly name: string;
  readonly partitions: readonly ProducePartitionData[];
}
export interface ProduceRequest {
  /** 0 (no wait), 1 (the leader's log) or -1 (every in-sync replica). */
  readonly acks: number;
  readonly timeoutMs: number;
  readonly topics: readonly ProduceTopicData[];
}
export interface ProducePartitionResponse {
  readonly partitionIndex: number;
  readonly errorCode: ErrorCode;
  readonly baseOffset: number;
  readonly logAppendTimeMs: number;
  readonly logStartOffset: number;
}
export interface ProduceTopicResponse {
  readonly name: string;
  readonly partitions: ProducePartitionResponse[];
}
export interface ProduceResponse {
  readonly topics: ProduceTopicResponse[];
}

export interface FetchPartition {
  readonly partitionIndex: number;
  readonly fetchOffset: number;
  readonly partitionMaxBytes: number;
  /**
   * The leader epoch the fetcher believes current (KIP-320), checked against the partition's: older →
   * FENCED_LEADER_EPOCH, newer → UNKNOWN_LEADER_EPOCH. Absent or NO_LEADER_EPOCH: not checked.
   */
  readonly currentLeaderEpoch?: number;
}
export interface FetchTopic {
  readonly name: string;
  readonly partitions: readonly FetchPartition[];
}
export interface FetchRequest {
  /** CONSUMER_REPLICA_ID (-1) for a consumer; a follower's node id otherwise. */
  readonly replicaId: number;
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly topics: readonly FetchTopic[];
  /**
   * Answer each partition with the stored batches (`FetchPartitionData.batches`) instead of their
   * records: the Kafka door serves batches of Kafka's layout as they are stored.
   */
  readonly servesBatches?: boolean;
}
export interface FetchPartitionData {
  readonly partitionIndex: number;
  readonly errorCode: ErrorCode;
  readonly highWatermark: number;
  readonly logStartOffset: number;
  /** On the wire a null key is empty bytes; a null value is empty bytes with `value_null` set. */
  readonly records: readonly LogRecord[];
  /**
   * With `servesBatches`, instead of `records`: the whole batches read, whose records the reader must
   * take only from the fetch offset to the high watermark (the first batch may start below the one, the
   * last reach past the other).
   */
  readonly batches?: readonly RecordBatch[];
}
export interface FetchableTopicResponse {
  readonly name: string;
  readonly partitions: FetchPartitionData[];
}
export interface FetchResponse {
  readonly errorCode: ErrorCode;
  readonly responses: FetchableTopicResponse[];
}

export interface ListOffsetsPartition {
  readonly partitionIndex: number;
  /** LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, or a timestamp in ms. */
  readonly timestamp: number;
  /** As FetchPartition's: absent or NO_LEADER_EPOCH is not checked. */
  readonly currentLeaderEpoch?: number;
}
export interface ListOffsetsTopic {
  readonly name: string;
  readonly partitions: readonly ListOffsetsPartition[];
}
export interface ListOffsetsRequest {
  readonly topics: readonly ListOffsetsTopic[];
}
export interface ListOffsetsPartitionResponse {
  readonly partitionIndex: number;
  readonly errorCode: ErrorCode;
  readonly offset: number;
  readonly timestamp: number;
}
export interface ListOffsetsTopicResponse {
  readonly name: string;
  readonly partitions: ListOffsetsPartitionResponse[];
}
export interface ListOffsetsResponse {
  readonly topics: ListOffsetsTopicResponse[];
}

export interface OffsetForLeaderPartition {
  readonly partition: number;
  /** As FetchPartition's: absent or NO_LEADER_EPOCH is not checked. */
  readonly currentLeaderEpoch?: number;
  /** The epoch whose end offset is asked for. */
  readonly leaderEpoch: number;
}
export interface OffsetForLeaderTopic {
  readonly name: string;
  readonly partitions: readonly OffsetForLeaderPartition[];
}
export interface OffsetForLeaderEpochRequest {
  /** The asking follower's node id; CONSUMER_REPLICA_ID for a client. */
  readonly replicaId: number;
  readonly topics: readonly OffsetForLeaderTopic[];
}
/**
 * Kafka's EpochEndOffset: the largest epoch at or below the one asked for that the leader's log has, and
 * the first offset after it (the start of the next epoch, or the LEO for the latest one). NO_LEADER_EPOCH
 * and UNDEFINED_EPOCH_OFFSET when the log has no epoch that old.
 */
export interface EpochEndOffset {
  readonly errorCode: ErrorCode;
  readonly partition: number;
  readonly leaderEpoch: number;
  readonly endOffset: number;
}
export interface OffsetForLeaderTopicResult {
  readonly name: string;
  readonly partitions: EpochEndOffset[];
}
export interface OffsetForLeaderEpochResponse {
  readonly topics: OffsetForLeaderTopicResult[];
}

/** What a Produce or Fetch may park on: the caller going away releases the parked operation. */
export interface BrokerRequestContext {
  /**
   * Runs `listener` once when the caller goes away — at once if it already has — and returns a function
   * that unregisters it (as RequestContext.onCancel of the group layer). Absent when nobody can cancel.
   */
  onCancel?(listener: () => void): () => void;
  /**
   * The cohort node the caller proved to be (node-to-node authentication, distinct from client tokens),
   * or undefined for a client. Replication (Fetch with `replica_id` >= 0, OffsetForLeaderEpoch) is
   * accepted only when this equals the `replica_id` the request names.
   */
  readonly authenticatedNodeId?: number;
}

/** The Broker service as the server calls it. */
export interface BrokerService {
  createTopics(request: CreateTopicsRequest): Promise<CreateTopicsResponse>;
  metadata(request: MetadataRequest): Promise<MetadataResponse>;
  produce(request: ProduceRequest, context?: BrokerRequestContext): Promise<ProduceResponse>;
  fetch(request: FetchRequest, context?: BrokerRequestContext): Promise<FetchResponse>;
  listOffsets(request: ListOffsetsRequest): Promise<ListOffsetsResponse>;
  offsetForLeaderEpoch(
    request: OffsetForLeaderEpochRequest,
    context?: BrokerRequestContext,
  ): Promise<OffsetForLeaderEpochResponse>;
}
