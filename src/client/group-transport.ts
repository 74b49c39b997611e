import type { ErrorCode } from '../errors';
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
 * One member's `HeartbeatStream` call (docs/protocol.md, "Heartbeat streams"). Each `send` resolves with the
 * error code of its answer (answers come in order); pushes (sequence 0) go to the `onPush` given when it was
 * opened. Once the stream has ended every `send`, pending or new, rejects with a `CohortError`.
 */
export interface HeartbeatStream {
  /** Sends one heartbeat; resolves with its answer's `errorCode`, rejects when the stream ends first. */
  send(request: HeartbeatRequest): Promise<ErrorCode>;
  /** Cancels the stream; sends not yet answered reject. Idempotent. */
  close(): void;
  /** True once the stream ended because the server does not serve HeartbeatStream (gRPC UNIMPLEMENTED). */
  readonly unsupported: boolean;
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
  /**
   * Opens a heartbeat stream; `onPush` gets the code of every push. Optional: a transport without it (or a
   * server answering UNIMPLEMENTED) makes the member send unary heartbeats.
   */
  openHeartbeatStream?(onPush: (code: ErrorCode) => void): HeartbeatStream;
  leaveGroup(request: LeaveGroupRequest, options: CallOptions): Promise<LeaveGroupResponse>;
  offsetCommit(request: OffsetCommitRequest, options: CallOptions): Promise<OffsetCommitResponse>;
  offsetFetch(request: OffsetFetchRequest, options: CallOptions): Promise<OffsetFetchResponse>;
  /**
   * Calls `onFound` once a coordinator of `groupId` is known other than the one the transport last found
   * moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE) or unreachable; returns a function that stops the
   * wait. The member ends a backoff after such a failure early with it. Optional: a transport to one
   * node has no coordinator to find.
   */
  onCoordinatorFound?(groupId: string, onFound: () => void): () => void;
}
