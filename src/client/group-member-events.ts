import type { TopicPartition } from './topic-partition';

/** A rebalance completed and this member holds a new assignment. */
export interface AssignedEvent {
  readonly generationId: number;
  readonly memberId: string;
  readonly leaderId: string;
  readonly isLeader: boolean;
  /** The assignor the group voted for. */
  readonly protocolName: string;
  /** Everything the member now owns. */
  readonly partitions: readonly TopicPartition[];
  /** What it did not own before this rebalance (all of `partitions` under eager rebalancing). */
  readonly added: readonly TopicPartition[];
  /** The leader's user data for this member, if its assignor sent any. */
  readonly userData: Buffer | null;
}

/** Why partitions were revoked: a rebalance (eager), a cooperative hand-over, or `close()`. */
export type RevokeReason = 'rebalance' | 'reassigned' | 'close';

/**
 * The member is about to give up `partitions` in an orderly way: finish or stop their work and commit their
 * offsets now (the generation is still valid). Pass a promise to `waitUntil`, synchronously inside the
 * listener, and the member waits for it (bounded by `rebalanceTimeoutMs`, or by the deadline of `close()`)
 * before it rejoins or leaves; heartbeats keep going meanwhile. A rejected promise does not stop the
 * rebalance: handle its errors yourself.
 */
export interface RevokedEvent {
  /** The generation in which the partitions were owned. */
  readonly generationId: number;
  readonly partitions: readonly TopicPartition[];
  readonly reason: RevokeReason;
  waitUntil(work: PromiseLike<unknown>): void;
}

/**
 * Why an assignment was lost:
 * - `unknown-member`, `illegal-generation`: the coordinator no longer knows this member or generation.
 * - `fenced`: another instance with the same `groupInstanceId` took over (fatal).
 * - `session-expired`: no heartbeat got through for `sessionTimeoutMs`; the coordinator has evicted us.
 * - `processing-stalled`: work held longer than `maxProcessingIntervalMs`; the member left the group.
 * - `failed`: a fatal error stopped the member.
 * - `closed`: `close()` while the member held partitions of a generation it could no longer vouch for.
 */
export type LostReason =
  | 'unknown-member'
  | 'illegal-generation'
  | 'fenced'
  | 'session-expired'
  | 'processing-stalled'
  | 'failed'
  | 'closed';

/**
 * The member lost `partitions` without an orderly hand-over: other members may already own them. Stop work
 * on them at once and do NOT commit (the commit would be rejected anyway). Work started with
 * `GroupMember.process` sees its signal aborted at the same moment.
 */
export interface LostEvent {
  readonly generationId: number;
  readonly partitions: readonly TopicPartition[];
  readonly reason: LostReason;
  /** The error behind it, rebuilt from the coordinator's code where there was one. */
  readonly error?: Error;
}

/** The events a `GroupMember` emits, for `member.on(name, listener)`. */
export interface GroupMemberEvents {
  assigned: [event: AssignedEvent];
  revoked: [event: RevokedEvent];
  lost: [event: LostEvent];
  /**
   * A fatal error: the member has stopped (state `failed`). As with any Node EventEmitter, an `error` with no
   * listener is thrown, so attach one.
   */
  error: [error: Error];
  /** `close()` finished (or a failed member was closed). */
  closed: [];
}
