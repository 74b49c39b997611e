/**
 * The group coordinator's requests and responses, as plain objects. They mirror the messages of
 * `proto/cohort/v1/group_coordinator.proto` field for field (camelCase, as @grpc/proto-loader decodes them
 * with `keepCase: false, longs: Number, enums: Number, bytes: Buffer, defaults: true, arrays: true`), so the
 * server layer passes decoded messages straight through. An empty string means "not sent".
 */
import type { ErrorCode } from '../errors';

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
  members: JoinGroupMember[];
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
  /** -1: a commit outside group membership (only on an Empty or unknown group). */
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

export interface DescribeGroupsRequest {
  groups: string[];
}
export interface DescribedGroupMember {
  memberId: string;
  groupInstanceId: string;
  clientId: string;
  clientHost: string;
  memberMetadata: Buffer;
  memberAssignment: Buffer;
}
export interface DescribedGroup {
  errorCode: ErrorCode;
  errorMessage: string;
  groupId: string;
  groupState: string;
  protocolType: string;
  protocolData: string;
  members: DescribedGroupMember[];
}
export interface DescribeGroupsResponse {
  groups: DescribedGroup[];
}

export interface ListGroupsRequest {
  statesFilter: string[];
}
export interface ListedGroup {
  groupId: string;
  protocolType: string;
  groupState: string;
}
export interface ListGroupsResponse {
  errorCode: ErrorCode;
  groups: ListedGroup[];
}

export interface DeleteGroupsRequest {
  groupsNames: string[];
}
export interface DeletableGroupResult {
  groupId: string;
  errorCode: ErrorCode;
}
export interface DeleteGroupsResponse {
  results: DeletableGroupResult[];
}

/** What the transport knows about a call, handed to the coordinator with each request. */
export interface RequestContext {
  /** The peer's host, reported by DescribeGroups as `client_host`. */
  readonly clientHost: string;
  /**
   * Aborted when the caller goes away (cancel, deadline, disconnect). A parked request drops its reply
   * when this fires; the member's state stays as Kafka would keep it (its session timer decides).
   */
  readonly signal?: AbortSignal;
}

/**
 * The coordinator as the server layer sees it. Every method resolves with a response carrying an
 * `errorCode`; it rejects only with a `CohortError` for a request that cannot be understood.
 */
export interface GroupCoordinatorService {
  joinGroup(request: JoinGroupRequest, context: RequestContext): Promise<JoinGroupResponse>;
  syncGroup(request: SyncGroupRequest, context: RequestContext): Promise<SyncGroupResponse>;
  heartbeat(request: HeartbeatRequest, context: RequestContext): Promise<HeartbeatResponse>;
  leaveGroup(request: LeaveGroupRequest, context: RequestContext): Promise<LeaveGroupResponse>;
  offsetCommit(request: OffsetCommitRequest, context: RequestContext): Promise<OffsetCommitResponse>;
  offsetFetch(request: OffsetFetchRequest, context: RequestContext): Promise<OffsetFetchResponse>;
  describeGroups(request: DescribeGroupsRequest, context: RequestContext): Promise<DescribeGroupsResponse>;
  listGroups(request: ListGroupsRequest, context: RequestContext): Promise<ListGroupsResponse>;
  deleteGroups(request: DeleteGroupsRequest, context: RequestContext): Promise<DeleteGroupsResponse>;
  /** Answers every parked call with COORDINATOR_NOT_AVAILABLE and stops all timers. Idempotent. */
  shutdown(): void;
}
