/**
 * The Broker's requests and responses (`proto/cohort/v1/broker.proto`) as the SDK's transports exchange
 * them: camelCase, field for field. Offsets are `bigint` here, as everywhere in the SDK's API, so they stay
 * exact whatever the server sends; timestamps are numbers of milliseconds (the server refuses any beyond
 * 2^53 - 1). `GrpcTransport` converts both to and from the wire's int64. A unit test compares every field
 * here with the proto.
 *
 * These are copies, not imports: the client never depends on a server-side layer.
 */
import type { ErrorCode } from '../errors';

/** A topic to create; -1 asks for the server's default partition count or replication factor. */
export interface CreatableTopic {
  name: string;
  numPartitions: number;
  replicationFactor: number;
}
/** Creates topics on the leader. */
export interface CreateTopicsRequest {
  topics: CreatableTopic[];
}
/** The outcome for one topic; `errorMessage` says why it failed. */
export interface CreatableTopicResult {
  name: string;
  errorCode: ErrorCode;
  errorMessage: string;
}
/** The outcome of a CreateTopics, topic by topic. */
export interface CreateTopicsResponse {
  topics: CreatableTopicResult[];
}

/** Asks for topic metadata; no topics means every topic. */
export interface MetadataRequest {
  topics: string[];
}
/** One partition's leader, replicas and in-sync replicas. */
export interface PartitionMetadata {
  partitionIndex: number;
  leaderId: number;
  replicaNodes: number[];
  isrNodes: number[];
  errorCode: ErrorCode;
  /** The epoch of the leader's leadership. */
  leaderEpoch: number;
}
/**
 * One topic's partitions, or why it has none: UNKNOWN_TOPIC_OR_PARTITION, or LEADER_NOT_AVAILABLE from a
 * node that is not yet a member of its cluster (retriable: ask another node, or again).
 */
export interface TopicMetadata {
  name: string;
  errorCode: ErrorCode;
  partitions: PartitionMetadata[];
  /** The server's word on `errorCode`, for people; '' when it adds nothing. */
  errorMessage: string;
}
/** A cohort process. */
export interface BrokerNode {
  nodeId: number;
  host: string;
  port: number;
}
/** The brokers and the topics asked for; no brokers from a node that is not yet a member of its cluster. */
export interface MetadataResponse {
  brokers: BrokerNode[];
  topics: TopicMetadata[];
  /** The controller's node id; -1 while none is known. */
  controllerId: number;
}

/** A header of a record. */
export interface RecordHeader {
  key: string;
  value: Buffer;
}
/** A record (the proto's `Record`): `offset` is set by the leader (ignored in a Produce); an empty key means no key. */
export interface WireRecord {
  offset: bigint;
  /** 0 in a Produce: the time of the append. */
  timestampMs: number;
  key: Buffer;
  value: Buffer;
  headers: RecordHeader[];
  /**
   * A null value (Kafka's null, a tombstone on a compacted topic), told apart from empty bytes: `value` is
   * then empty. Absent means false.
   */
  valueNull?: boolean;
  /** In a Fetch response: the epoch of the leader that wrote the record. Ignored in a Produce. */
  leaderEpoch?: number;
}
/** The records for one partition. */
export interface ProducePartitionData {
  partitionIndex: number;
  records: WireRecord[];
}
/** The records for one topic. */
export interface ProduceTopicData {
  name: string;
  partitions: ProducePartitionData[];
}
/** Appends records: `acks` 0, 1 or -1 (every in-sync replica), waiting at most `timeoutMs` for them. */
export interface ProduceRequest {
  acks: number;
  timeoutMs: number;
  topics: ProduceTopicData[];
}
/** The outcome for one partition: the offset its first record got, or why nothing was written. */
export interface ProducePartitionResponse {
  partitionIndex: number;
  errorCode: ErrorCode;
  /** -1 when the partition failed. */
  baseOffset: bigint;
  logAppendTimeMs: number;
  logStartOffset: bigint;
}
/** The outcomes for one topic. */
export interface ProduceTopicResponse {
  name: string;
  partitions: ProducePartitionResponse[];
}
/** The outcome of a Produce, partition by partition. */
export interface ProduceResponse {
  topics: ProduceTopicResponse[];
}

/** Where to read one partition from. */
export interface FetchPartition {
  partitionIndex: number;
  fetchOffset: bigint;
  partitionMaxBytes: number;
  /** The leader epoch the client believes current; absent: not checked. */
  currentLeaderEpoch?: number;
}
/** The partitions of one topic to read. */
export interface FetchTopic {
  name: string;
  partitions: FetchPartition[];
}
/** A long poll: answered once `minBytes` are readable, a partition fails, or `maxWaitMs` passes. */
export interface FetchRequest {
  /** -1: a consumer. */
  replicaId: number;
  maxWaitMs: number;
  minBytes: number;
  maxBytes: number;
  topics: FetchTopic[];
}
/** What one partition returned. */
export interface FetchPartitionData {
  partitionIndex: number;
  errorCode: ErrorCode;
  highWatermark: bigint;
  logStartOffset: bigint;
  records: WireRecord[];
}
/** What one topic returned. */
export interface FetchableTopicResponse {
  name: string;
  partitions: FetchPartitionData[];
}
/** The outcome of a Fetch; a request-level problem (INVALID_REQUEST) in `errorCode`. */
export interface FetchResponse {
  errorCode: ErrorCode;
  responses: FetchableTopicResponse[];
}

/** -1 latest (the high watermark), -2 earliest (the log start), or a timestamp in milliseconds. */
export interface ListOffsetsPartition {
  partitionIndex: number;
  timestamp: number;
  /** The leader epoch the client believes current; absent: not checked. */
  currentLeaderEpoch?: number;
}
/** The partitions of one topic to look up. */
export interface ListOffsetsTopic {
  name: string;
  partitions: ListOffsetsPartition[];
}
/** Looks up offsets. */
export interface ListOffsetsRequest {
  topics: ListOffsetsTopic[];
}
/** One partition's offset (-1 when a timestamp matched no record). */
export interface ListOffsetsPartitionResponse {
  partitionIndex: number;
  errorCode: ErrorCode;
  offset: bigint;
  timestamp: number;
}
/** The offsets of one topic. */
export interface ListOffsetsTopicResponse {
  name: string;
  partitions: ListOffsetsPartitionResponse[];
}
/** The outcome of a ListOffsets. */
export interface ListOffsetsResponse {
  topics: ListOffsetsTopicResponse[];
}

/** One partition of an OffsetForLeaderEpoch: the end offset of `leaderEpoch` is asked for. */
export interface OffsetForLeaderPartition {
  partition: number;
  /** The leader epoch the client believes current; absent: not checked. */
  currentLeaderEpoch?: number;
  leaderEpoch: number;
}
/** The partitions of one topic. */
export interface OffsetForLeaderTopic {
  name: string;
  partitions: OffsetForLeaderPartition[];
}
/** OffsetForLeaderEpoch (Kafka's API 23): `replicaId` -1 for a client. */
export interface OffsetForLeaderEpochRequest {
  replicaId: number;
  topics: OffsetForLeaderTopic[];
}
/** The largest epoch at or below the one asked for on the leader, and where it ends (-1, -1: none). */
export interface EpochEndOffset {
  errorCode: ErrorCode;
  partition: number;
  leaderEpoch: number;
  endOffset: bigint;
}
/** The answers for one topic. */
export interface OffsetForLeaderTopicResult {
  name: string;
  partitions: EpochEndOffset[];
}
/** The outcome of an OffsetForLeaderEpoch. */
export interface OffsetForLeaderEpochResponse {
  topics: OffsetForLeaderTopicResult[];
}
