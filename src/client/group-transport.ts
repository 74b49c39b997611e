import type {
  HeartbeatRequest,
  HeartbeatResponse,
  JoinGroupRequest,
  JoinGroupResponse,
  LeaveGroupRequest,
  LeaveGroupResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  SyncGroupRequest,
  SyncGroupResponse,
} from '../protocol/group-messages';

/** Per-call settings every transport honours. */
export interface CallOptions {
  /** The call's deadline, in milliseconds from now. */
  readonly timeoutMs: number;
  /** Aborting cancels the call; the promise then rejects (with anything: the caller already moved on). */
  readonly signal?: AbortSignal;
}

/**
 * How a `GroupMember` reaches the group coordinator. Each method resolves with the coordinator's response,
 * whose `errorCode` carries the protocol outcome; it rejects only when no response arrived (connection
 * refused, deadline, cancelled, an undecodable request), with a `CohortError` whose `code` says what
 * happened (e.g. COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT), so the member treats both alike.
 *
 * `GrpcGroupTransport` is the real one; tests drive members with a scripted fake.
 */
export interface GroupTransport {
  joinGroup(request: JoinGroupRequest, options: CallOptions): Promise<JoinGroupResponse>;
  syncGroup(request: SyncGroupRequest, options: CallOptions): Promise<SyncGroupResponse>;
  heartbeat(request: HeartbeatRequest, options: CallOptions): Promise<HeartbeatResponse>;
  leaveGroup(request: LeaveGroupRequest, options: CallOptions): Promise<LeaveGroupResponse>;
  offsetCommit(request: OffsetCommitRequest, options: CallOptions): Promise<OffsetCommitResponse>;
  offsetFetch(request: OffsetFetchRequest, options: CallOptions): Promise<OffsetFetchResponse>;
}
