/**
 * The group coordinator's requests and responses, as plain objects. They mirror the messages of
 * `proto/cohort/v1/group_coordinator.proto` field for field (camelCase, as @grpc/proto-loader decodes them
 * with `keepCase: false, longs: Number, enums: Number, bytes: Buffer, defaults: true, arrays: true`), so the
 * server layer passes decoded messages straight through. An empty string means "not sent".
 */
import type {
  DeleteGroupsRequest,
  DeleteGroupsResponse,
  DescribeGroupsRequest,
  DescribeGroupsResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  JoinGroupRequest,
  JoinGroupResponse,
  LeaveGroupRequest,
  LeaveGroupResponse,
  ListGroupsRequest,
  ListGroupsResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  SyncGroupRequest,
  SyncGroupResponse,
} from '../protocol/group-messages';

// The messages themselves live in src/protocol, shared with the SDK; the group layer re-exports them.
export type * from '../protocol/group-messages';

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
