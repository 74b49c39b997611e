import type { ErrorCode } from '../errors';
import type { LogRecord } from './storage';

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
}
export interface TopicMetadata {
  readonly name: string;
  readonly errorCode: ErrorCode;
  readonly partitions: readonly PartitionMetadata[];
}
export interface BrokerNode {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}
export interface MetadataResponse {
  readonly brokers: readonly BrokerNode[];
  readonly topics: readonly TopicMetadata[];
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
  readonly value: Buffer;
  readonly headers: readonly RecordHeader[];
}
export interface ProducePartitionData {
  readonly partitionIndex: number;
  readonly records: readonly ProduceRecord[];
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
}
export interface FetchPartitionData {
  readonly partitionIndex: number;
  readonly errorCode: ErrorCode;
  readonly highWatermark: number;
  readonly logStartOffset: number;
  /** On the wire a null key or value is empty bytes. */
  readonly records: readonly LogRecord[];
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
}
