/**
 * The group coordinator's requests and responses, as plain objects: what the SDK sends and reads and what
 * the coordinator takes and answers. They mirror
 * `proto/cohort/v1/group_coordinator.proto` field for field, camelCase, as @grpc/proto-loader decodes them
 * with `keepCase: false, longs: Number, enums: Number, bytes: Buffer, defaults: true, arrays: true`. An empty
 * string means "not sent". A unit test compares every field here with the proto.
 *
 * This layer imports nothing but `errors`, so both `group` (server side) and `client` (the SDK) use these
 * types without depending on each other.
 */
import type { ErrorCode } from '../errors';

/** One protocol a joining member supports, with its metadata (for consumers: the encoded subscription). */
export interface Protocol {
  name: string;
  metadata: Buffer;
}

/** Asks to join (or rejoin) a group with the protocols this member supports. */
export interface JoinGroupRequest {
  groupId: string;
  memberId: string;
  groupInstanceId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: Protocol[];
  clientId: string;
  reason: string;
}
/** One member's metadata, as the leader receives it. */
export interface JoinGroupMember {
  memberId: string;
  groupInstanceId: string;
  metadata: Buffer;
}
/** The outcome of a JoinGroup: the generation, the chosen protocol and the leader. */
export interface JoinGroupResponse {
  errorCode: ErrorCode;
  generationId: number;
  protocolType: string;
  protocolName: string;
  leaderId: string;
  memberId: string;
  /** Every member's metadata, for the leader only. */
  members: JoinGroupMember[];
  /** KIP-814: a rejoining static leader must not reassign; it sends an empty SyncGroup. */
  skipAssignment: boolean;
}

/** The leader's assignment for one member. */
export interface SyncGroupAssignment {
  memberId: string;
  assignment: Buffer;
}
/** Completes a rebalance; only the leader sends assignments. */
export interface SyncGroupRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string;
  protocolType: string;
  protocolName: string;
  assignments: SyncGroupAssignment[];
}
/** This member's assignment in the new generation. */
export interface SyncGroupResponse {
  errorCode: ErrorCode;
  protocolType: string;
  protocolName: string;
  assignment: Buffer;
}

/** Keeps the session of a member of a generation alive. */
export interface HeartbeatRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string;
}
/** NONE, or why the member must rejoin or stop. */
export interface HeartbeatResponse {
  errorCode: ErrorCode;
}
/**
 * One message of a HeartbeatStream: the answer to the stream's `sequence`-th HeartbeatRequest (1, 2, ...),
 * or, with sequence 0, a push telling the member its generation is over.
 */
export interface HeartbeatStreamResponse {
  errorCode: ErrorCode;
  sequence: number;
}

/** A member leaving the group. */
export interface MemberIdentity {
  memberId: string;
  groupInstanceId: string;
  reason: string;
}
/** Removes members from a group at once, so it rebalances without waiting for a session to expire. */
export interface LeaveGroupRequest {
  groupId: string;
  members: MemberIdentity[];
}
/** The outcome for one member that asked to leave. */
export interface LeaveGroupMemberResponse {
  memberId: string;
  groupInstanceId: string;
  errorCode: ErrorCode;
}
/** The outcome of a LeaveGroup. */
export interface LeaveGroupResponse {
  errorCode: ErrorCode;
  members: LeaveGroupMemberResponse[];
}

/** An offset to commit for one partition. */
export interface OffsetCommitPartition {
  partitionIndex: number;
  committedOffset: number;
  committedLeaderEpoch: number;
  committedMetadata: string;
}
/** Offsets to commit for one topic. */
export interface OffsetCommitTopic {
  name: string;
  partitions: OffsetCommitPartition[];
}
/** Commits offsets, fenced by generation and member id. */
export interface OffsetCommitRequest {
  groupId: string;
  /** -1: a commit outside group membership. */
  generationId: number;
  memberId: string;
  groupInstanceId: string;
  topics: OffsetCommitTopic[];
}
/** The outcome for one committed partition. */
export interface OffsetCommitPartitionResponse {
  partitionIndex: number;
  errorCode: ErrorCode;
}
/** The outcomes for one topic. */
export interface OffsetCommitTopicResponse {
  name: string;
  partitions: OffsetCommitPartitionResponse[];
}
/** The outcome of an OffsetCommit, partition by partition. */
export interface OffsetCommitResponse {
  topics: OffsetCommitTopicResponse[];
}

/** The partitions of one topic whose committed offsets to read. */
export interface OffsetFetchTopic {
  name: string;
  partitionIndexes: number[];
}
/** Reads a group's committed offsets. */
export interface OffsetFetchRequest {
  groupId: string;
  /** Empty: every committed offset of the group. */
  topics: OffsetFetchTopic[];
  requireStable: boolean;
}
/** The committed offset of one partition. */
export interface OffsetFetchPartition {
  partitionIndex: number;
  /** -1: nothing committed. */
  committedOffset: number;
  committedLeaderEpoch: number;
  metadata: string;
  errorCode: ErrorCode;
}
/** Committed offsets of one topic. */
export interface OffsetFetchTopicResponse {
  name: string;
  partitions: OffsetFetchPartition[];
}
/** The outcome of an OffsetFetch. */
export interface OffsetFetchResponse {
  errorCode: ErrorCode;
  topics: OffsetFetchTopicResponse[];
}

/** The groups to describe. */
export interface DescribeGroupsRequest {
  groups: string[];
}
/** One member as DescribeGroups shows it. */
export interface DescribedGroupMember {
  memberId: string;
  groupInstanceId: string;
  clientId: string;
  clientHost: string;
  /** The member's metadata for the chosen protocol (consumers: the subscription); empty unless Stable. */
  memberMetadata: Buffer;
  /** The member's assignment (consumers: encoded with the consumer protocol); empty unless Stable. */
  memberAssignment: Buffer;
  /**
   * When the coordinator last heard from the member (Heartbeat, SyncGroup, OffsetCommit or a completed
   * join), on its wall clock in ms; 0 when it does not know (a member on its first join). A cohort extension.
   */
  lastHeartbeatMs: number;
}
/** One group: its state, protocol and members, or why it cannot be described. */
export interface DescribedGroup {
  errorCode: ErrorCode;
  errorMessage: string;
  groupId: string;
  groupState: string;
  protocolType: string;
  /** The chosen protocol (the assignor's name) of a Stable group; empty otherwise. */
  protocolData: string;
  members: DescribedGroupMember[];
  /** The group's generation (0 before its first rebalance); -1 with an error. A cohort extension. */
  generationId: number;
}
/** The outcome of a DescribeGroups, group by group. */
export interface DescribeGroupsResponse {
  groups: DescribedGroup[];
}

/** Lists groups, optionally only those in some states (case-insensitive). */
export interface ListGroupsRequest {
  statesFilter: string[];
}
/** One group in a listing. */
export interface ListedGroup {
  groupId: string;
  protocolType: string;
  groupState: string;
}
/** Every group the coordinator holds. */
export interface ListGroupsResponse {
  errorCode: ErrorCode;
  groups: ListedGroup[];
}

/** Deletes empty groups and their committed offsets. */
export interface DeleteGroupsRequest {
  groupsNames: string[];
}
/** The outcome for one group (NON_EMPTY_GROUP while it has members). */
export interface DeletableGroupResult {
  groupId: string;
  errorCode: ErrorCode;
}
/** The outcome of a DeleteGroups, group by group. */
export interface DeleteGroupsResponse {
  results: DeletableGroupResult[];
}

/** Watches groups (WatchGroups): these ids, or every group when empty. */
export interface WatchGroupsRequest {
  groupIds: string[];
}
/** One change of a watched group, or its state when the watch opened (`isSnapshot`). */
export interface GroupEvent {
  /** The group as DescribeGroups describes it now, assignments included. */
  group: DescribedGroup;
  /** What changed: one of GROUP_EVENT_REASONS (group-event-reason.ts). */
  reason: string;
  /** The coordinator's wall clock when the change happened. */
  timestampMs: number;
  /** True for the first event of each group on the stream. */
  isSnapshot: boolean;
}
