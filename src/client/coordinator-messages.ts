/**
 * The group coordinator's requests and responses the SDK sends and reads, as plain objects. They mirror
 * `proto/cohort/v1/group_coordinator.proto` field for field, camelCase, as @grpc/proto-loader decodes them
 * with `keepCase: false, longs: Number, enums: Number, bytes: Buffer, defaults: true, arrays: true`. An empty
 * string means "not sent". A unit test compares every field here with the proto.
 *
 * These are copies, not imports: the client never depends on a server-side layer.
 */
import type { ErrorCode } from '../errors';

/** One protocol a joining member supports, with its metadata (for consumers: the encoded subscription). */
export interface Protocol {
  name: string;
  metadata: Buffer;
}

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
export interface JoinGroupMember {
  memberId: string;
  groupInstanceId: string;
  metadata: Buffer;
}
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

export interface SyncGroupAssignment {
  memberId: string;
  assignment: Buffer;
}
export interface SyncGroupRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string;
  protocolType: string;
  protocolName: string;
  assignments: SyncGroupAssignment[];
}
export interface SyncGroupResponse {
  errorCode: ErrorCode;
  protocolType: string;
  protocolName: string;
  assignment: Buffer;
}

export interface HeartbeatRequest {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string;
}
export interface HeartbeatResponse {
  errorCode: ErrorCode;
}

export interface MemberIdentity {
  memberId: string;
  groupInstanceId: string;
  reason: string;
}
export interface LeaveGroupRequest {
  groupId: string;
  members: MemberIdentity[];
}
export interface LeaveGroupMemberResponse {
  memberId: string;
  groupInstanceId: string;
  errorCode: ErrorCode;
}
export interface LeaveGroupResponse {
  errorCode: ErrorCode;
  members: LeaveGroupMemberResponse[];
}

export interface OffsetCommitPartition {
  partitionIndex: number;
  committedOffset: number;
  committedLeaderEpoch: number;
  committedMetadata: string;
}
export interface OffsetCommitTopic {
  name: string;
  partitions: OffsetCommitPartition[];
}
export interface OffsetCommitRequest {
  groupId: string;
  /** -1: a commit outside group membership. */
  generationId: number;
  memberId: string;
  groupInstanceId: string;
  topics: OffsetCommitTopic[];
}
export interface OffsetCommitPartitionResponse {
  partitionIndex: number;
  errorCode: ErrorCode;
}
export interface OffsetCommitTopicResponse {
  name: string;
  partitions: OffsetCommitPartitionResponse[];
}
export interface OffsetCommitResponse {
  topics: OffsetCommitTopicResponse[];
}

export interface OffsetFetchTopic {
  name: string;
  partitionIndexes: number[];
}
export interface OffsetFetchRequest {
  groupId: string;
  /** Empty: every committed offset of the group. */
  topics: OffsetFetchTopic[];
  requireStable: boolean;
}
export interface OffsetFetchPartition {
  partitionIndex: number;
  /** -1: nothing committed. */
  committedOffset: number;
  committedLeaderEpoch: number;
  metadata: string;
  errorCode: ErrorCode;
}
export interface OffsetFetchTopicResponse {
  name: string;
  partitions: OffsetFetchPartition[];
}
export interface OffsetFetchResponse {
  errorCode: ErrorCode;
  topics: OffsetFetchTopicResponse[];
}
