import type { ErrorCode } from '../errors';
import type { CoordinatorLoadResult, CoordinatorPartitionWriter } from './coordinator-partition-writer';
import type { GroupState } from './group-state';
import type { OffsetRetentionCheckSummary } from './offset-retention-check';
import type { RebalanceReason } from './rebalance-reason';

/**
 * A member that has not finished its first join lives on this fixed timeout instead of its session timeout
 * (Kafka's NewMemberJoinTimeoutMs): it cannot heartbeat usefully yet, and a client that gave up on its
 * JoinGroup must not hold a rebalance for a whole session.
 */
export const NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000;
/**
 * Replies of parked calls delivered per event-loop turn (see ReplyDispatcher). A reply costs the transport
 * ~70 µs (encode, HTTP/2 frames, write), so 100 are ~7 ms: a turn that also meets a full garbage collection
 * (20–33 ms at 5,000 parked calls when measured, 2026-11-30) stays well under 50 ms. 250 made such turns
 * 50–55 ms (docs/performance.md, G5; later collections are G11's).
 */
export const DEFAULT_REPLY_SLICE_SIZE = 100;
/**
 * Offsets the retention check looks at in one event-loop turn before it yields. A check over 1,000,000
 * offsets of groups that never had members takes ~53 ms in one task, its longest turn ~4 ms in slices of
 * 10,000 (`npm run bench:group -- --only=retention`; docs/performance.md, G12).
 */
export const RETENTION_CHECK_OFFSETS_PER_TURN = 10_000;
/** OffsetFetch's answer for a partition without a committed offset. */
export const INVALID_OFFSET = -1;

/**
 * What the coordinator tells the layers above it (logs, metrics) as it happens. Every hook is optional and
 * runs synchronously inside the request or timer task that caused it, so it must be cheap and must not
 * call back into the coordinator. None runs on a successful heartbeat.
 */
export interface GroupCoordinatorListener {
  /** After every state change of a group (`group.state` is the new state). */
  onStateChange?(groupId: string, previous: GroupState, next: GroupState, generationId: number): void;
  /**
   * A rebalance starts: the group has just moved to PreparingRebalance; `generationId` is the generation it
   * is leaving. `memberId` is the member whose join, update, leave or expiry caused it ('' when no single
   * member did: sync-expired, store-failed, over-capacity).
   */
  onPrepareRebalance?(groupId: string, generationId: number, reason: RebalanceReason, memberId: string): void;
  /** A member's session ran out (or a new member never completed its first join) and it was removed. */
  onMemberExpired?(groupId: string, memberId: string, groupInstanceId: string): void;
  /**
   * A request was fenced as it arrived: FENCED_INSTANCE_ID (another member id holds its group instance id)
   * or ILLEGAL_GENERATION (it names a generation the group has left).
   */
  onFenced?(groupId: string, memberId: string, groupInstanceId: string, errorCode: ErrorCode): void;
  /**
   * A group's metadata record could not be stored (its members got `storeGroupErrorCode(error)`, if any).
   * Not for an append that ends after the shard's unload: the unload ended that write first.
   */
  onGroupStoreFailed?(groupId: string, generationId: number, error: unknown): void;
  /**
   * Offsets of a group expired (offsets.retention.minutes) and their removal is durable; `isGroupRemoved`
   * when the group went with them (it was Empty and has nothing left).
   */
  onOffsetsExpired?(groupId: string, partitions: number, isGroupRemoved: boolean): void;
  /**
   * The tombstones of expired offsets, or of an expired group, could not be written; the next check tries
   * again.
   */
  onOffsetExpiryFailed?(groupId: string, error: unknown): void;
  /**
   * `partitions` partitions of an OffsetCommit were refused one by one with `errorCode`:
   * INVALID_TOPIC_EXCEPTION (a name no topic can have), UNKNOWN_TOPIC_OR_PARTITION (a negative partition),
   * OFFSET_METADATA_TOO_LARGE, or INVALID_COMMIT_OFFSET_SIZE (past groupMaxCommittedPartitions).
   */
  onOffsetCommitRefused?(groupId: string, errorCode: ErrorCode, partitions: number): void;
  /** A retention check's pass over the groups ended (Kafka logs the same after each cleanup). */
  onOffsetRetentionCheckCompleted?(summary: OffsetRetentionCheckSummary): void;
  /**
   * An elected partition finished loading: its `groups` are served from now on. `durationMs` runs from the
   * election to here, on the coordinator's monotonic clock (the replay, the restore, and the wait for the
   * high watermark to cover what was replayed).
   */
  onShardLoaded?(partitionIndex: number, leaderEpoch: number, groups: number, durationMs: number): void;
  /**
   * An elected partition's records were replayed (before its groups are restored): what the load read and
   * what it brought back.
   */
  onPartitionReplayed?(partitionIndex: number, leaderEpoch: number, result: CoordinatorLoadResult): void;
  /**
   * A load skipped a record of the partition it could not decode (no key, an unknown key type or value
   * version, bytes that do not parse); the key keeps the value an earlier record gave it.
   */
  onCorruptRecord?(partitionIndex: number, offset: number, error: unknown): void;
  /** An elected partition's load failed: its groups get COORDINATOR_NOT_AVAILABLE until its next election. */
  onShardLoadFailed?(partitionIndex: number, leaderEpoch: number, error: unknown): void;
  /** A partition was unloaded (resigned, or superseded by a newer election); `groups` were dropped. */
  onShardUnloaded?(partitionIndex: number, leaderEpoch: number, groups: number): void;
  /**
   * An election or resignation was ignored: its epoch is older than the partition's current one (a late
   * notification of a leadership this node has already lost or replaced).
   */
  onStaleLeadership?(partitionIndex: number, leaderEpoch: number, currentEpoch: number): void;
}

/** What the coordinator runs on, whatever partitions it leads (the router's options, and GroupCoordinator's). */
export interface GroupCoordinatorRuntimeOptions {
  /** Parked replies delivered per event-loop turn; default DEFAULT_REPLY_SLICE_SIZE (100). */
  replySliceSize?: number;
  /** Offsets the retention check looks at per event-loop turn; default RETENTION_CHECK_OFFSETS_PER_TURN. */
  retentionCheckOffsetsPerTurn?: number;
  /** Makes a member id from the client id or group instance id; default `${prefix}-${randomUUID()}`. */
  generateMemberId?: (prefix: string) => string;
  listener?: GroupCoordinatorListener;
  /** Errors thrown by timer callbacks (broken invariants). Without it they are rethrown by the timer. */
  onTimerError?: (error: unknown) => void;
  /**
   * Errors thrown by a `watchGroups` listener (a bug: listeners must not throw); the listener is
   * unsubscribed. Without it they are rethrown on a later microtask.
   */
  onWatchListenerError?: (error: unknown) => void;
}

/** GroupCoordinator's options: the runtime's, and the one partition it leads. */
export interface GroupCoordinatorOptions extends GroupCoordinatorRuntimeOptions {
  /**
   * Where its records go, loaded at construction (`whenLoaded` says when it is done). Default: an
   * InMemoryPartitionWriter, empty, committing every append at once: groups and offsets live as long as
   * the process, and the coordinator serves from its construction.
   */
  writer?: CoordinatorPartitionWriter;
}
