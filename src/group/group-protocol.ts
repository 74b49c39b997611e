/**
 * The group coordinator's requests and responses, as plain objects. They mirror the messages of
 * `proto/cohort/v1/group_coordinator.proto` field for field (camelCase, as @grpc/proto-loader decodes them
 * with `keepCase: false, longs: Number, enums: Number, bytes: Buffer, defaults: true, arrays: true`), so the
 * server layer passes decoded messages straight through. An empty string means "not sent".
 */
import type { ErrorCode } from '../errors';
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
import type { GroupChangeListener } from './group-events';

/**
 * A member and its last heartbeat on the coordinator's wall clock (ms); 0 when it does not know (a member
 * on its first join), as DescribeGroups' `last_heartbeat_ms`.
 */
export type MemberLastHeartbeat = readonly [memberId: string, lastHeartbeatMs: number];

// The messages themselves live in src/protocol, shared with the SDK; the group layer re-exports them.
export type * from '../protocol/group-messages';

/** What the transport knows about a call, handed to the coordinator with each request. */
export interface RequestContext {
  /** The peer's host, reported by DescribeGroups as `client_host`. */
  readonly clientHost: string;
  /**
   * Runs `listener` once when the caller goes away (cancel, deadline, disconnect) — at once if it
   * already has — and returns a function that unregisters it. A parked request drops its reply when it
   * runs; the member's state stays as Kafka would keep it (its session timer decides). Absent when nobody
   * can cancel (in-process callers). A hook rather than an AbortSignal: a signal per call, listened to
   * through EventTarget, cost 3–8 µs per parked call when measured (2026-11-30), most of the coordinator's
   * own work in a large rebalance (docs/performance.md, G3).
   */
  onCancel?(listener: () => void): () => void;
  /**
   * Set by a caller that holds a heartbeat stream (the server's HeartbeatStream): a Heartbeat from a member
   * of the group puts it in that member's one watcher slot (replacing any other), so that it hears of the
   * end of the member's generation. Absent for unary calls.
   */
  readonly generationWatcher?: GenerationWatcher;
}

/**
 * Hears that a member's generation is over, once per change: REBALANCE_IN_PROGRESS when the group starts
 * preparing a rebalance with the member in it; UNKNOWN_MEMBER_ID when the member is removed (left, expired,
 * not rejoined, not synced); FENCED_INSTANCE_ID when a restarted instance takes over its group instance id.
 * The last two also empty the slot: that member id is gone. Called synchronously from inside the
 * coordinator, so it must not throw and must not call back into it.
 */
export interface GenerationWatcher {
  onGenerationOver(errorCode: ErrorCode): void;
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
  /**
   * Empties the member's watcher slot if `watcher` is in it (a heartbeat stream closed). The member itself
   * is untouched: its session timeout still decides. Optional: without it a closed stream's watcher stays
   * until the member's next change.
   */
  unwatchMember?(groupId: string, memberId: string, watcher: GenerationWatcher): void;
  /**
   * Hands `listener` a snapshot of each of `groupIds` (every group when empty), then each observable change
   * of them as it happens, until the function returned is called (group-events.ts). Optional: without it
   * the server does not serve WatchGroups (UNIMPLEMENTED).
   */
  watchGroups?(groupIds: readonly string[], listener: GroupChangeListener): () => void;
  /**
   * Each member of `groupId` and when the coordinator last heard from it, read now: far cheaper than a
   * description (no metadata, no assignment), for a page that shows the group's heartbeat ages. Undefined
   * when this coordinator does not serve the group (another node's, not loaded, unknown). Optional.
   */
  lastHeartbeats?(groupId: string): readonly MemberLastHeartbeat[] | undefined;
  /** Answers every parked call with COORDINATOR_NOT_AVAILABLE and stops all timers. Idempotent. */
  shutdown(): void;
}
