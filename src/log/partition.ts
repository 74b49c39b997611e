import { CohortError, ErrorCode } from '../errors';
import type {
  LogAppendInfo,
  LogOffsetMetadata,
  LogReadInfo,
  LogRecord,
  PartitionLog,
  SimpleRecord,
} from './storage';
import { topicPartitionKey } from './topic-partition';

/** A follower's log end offset before its first fetch (Kafka's UNKNOWN_OFFSET). */
export const UNKNOWN_OFFSET = -1;

/**
 * What the leader knows of one follower, from its fetches (Kafka's ReplicaState). A follower's fetch
 * offset is its log end offset: it asks for the first record it does not have.
 */
export interface FollowerState {
  readonly replicaId: number;
  logEndOffset: number;
  /** The last time the follower was known to have everything the leader had (drives ISR shrink). */
  lastCaughtUpTimeMs: number;
  /** The leader's LEO when the follower last fetched, and when that was. */
  lastFetchLeaderLogEndOffset: number;
  lastFetchTimeMs: number;
}

/** The outcome of `checkEnoughReplicasReachOffset`: shared constants, so the check never allocates. */
export interface ReplicationCheck {
  readonly hasEnough: boolean;
  readonly errorCode: ErrorCode;
}
const NOT_YET: ReplicationCheck = Object.freeze({ hasEnough: false, errorCode: ErrorCode.NONE });
const ENOUGH: ReplicationCheck = Object.freeze({ hasEnough: true, errorCode: ErrorCode.NONE });
const ENOUGH_BUT_ISR_TOO_SMALL: ReplicationCheck = Object.freeze({
  hasEnough: true,
  errorCode: ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
});
const NOT_LEADER: ReplicationCheck = Object.freeze({
  hasEnough: false,
  errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER,
});

export interface PartitionOptions {
  readonly topic: string;
  readonly partitionIndex: number;
  readonly log: PartitionLog;
  readonly localNodeId: number;
  readonly leaderId: number;
  /** The leader first, then its followers. */
  readonly replicas: readonly number[];
  readonly minInsyncReplicas: number;
  readonly replicaLagTimeMaxMs: number;
  readonly nowMs: number;
}

/**
 * One partition on this process, after Kafka's `Partition`: its log and, on the leader, the replication
 * state that decides what consumers may read and when acks=-1 is satisfied.
 *
 * - LEO (log end offset): the offset the next record gets. Each follower's LEO is the fetch offset of its
 *   latest Fetch.
 * - ISR (in-sync replicas): the leader and the followers that keep up. HW (high watermark) = the smallest
 *   LEO in the ISR: every in-sync replica has every record below it. Consumers read below the HW,
 *   followers up to the LEO. The HW never moves back on the leader.
 * - A follower joins the ISR once its LEO reaches the HW. It leaves it when it has not caught up with
 *   the leader's LEO for more than `replicaLagTimeMaxMs`: "caught up" is stamped when a fetch asks for the
 *   leader's LEO, or at least for the LEO the leader had at the follower's previous fetch (then it was
 *   caught up at that previous fetch's time). A follower whose LEO equals the leader's never lags.
 * - acks=-1 waits until the HW passes the produce's last offset, i.e. until every replica in the ISR has
 *   it; a shrinking ISR can therefore complete it too.
 *
 * Worked example, replicas [0, 1, 2], ISR all three, lag 10 s. The leader appends offsets 0..4 (LEO 5);
 * HW stays 0. Follower 1 fetches at 5 (HW still 0, follower 2 at 0). Follower 2 stops. At t = 10.001 s the
 * leader drops 2 from the ISR (LEO 0 ≠ 5, not caught up for over 10 s): ISR [0, 1], HW 5, and a waiting
 * acks=-1 produce of offset 4 completes. Follower 2 comes back and fetches at 5 ≥ HW: ISR [0, 1, 2].
 *
 * On a follower only the log and the HW (the leader's, capped at the local LEO) are kept; replicas and
 * ISR are what the leader last reported through Metadata.
 */
export class Partition {
  readonly topic: string;
  readonly partitionIndex: number;
  /** "<topic>-<partition>": the purgatory key of this partition's delayed operations. */
  readonly key: string;
  readonly log: PartitionLog;
  readonly localNodeId: number;
  private leader: number;
  private replicaIds: readonly number[];
  private isrIds: readonly number[];
  private readonly minInsyncReplicas: number;
  private readonly replicaLagTimeMaxMs: number;
  private readonly followers = new Map<number, FollowerState>();
  private hw: number;
  private hwMetadata: LogOffsetMetadata | null = null;

  constructor(options: PartitionOptions) {
    this.topic = options.topic;
    this.partitionIndex = options.partitionIndex;
    this.key = topicPartitionKey(options.topic, options.partitionIndex);
    this.log = options.log;
    this.localNodeId = options.localNodeId;
    this.leader = options.leaderId;
    this.replicaIds = Object.freeze([...options.replicas]);
    this.minInsyncReplicas = options.minInsyncReplicas;
    this.replicaLagTimeMaxMs = options.replicaLagTimeMaxMs;
    if (this.isLeader) {
      // Kafka's choice for a new leader: every replica starts in sync, as caught up now, with an unknown
      // LEO. With followers the HW starts at the checkpointed one (Kafka's replication-offset-checkpoint):
      // records above it may be missing on a follower and must not reach consumers before the followers
      // have them again. Without followers this replica is the whole ISR, so its LEO is the HW.
      this.isrIds = this.replicaIds;
      const hasFollowers = this.replicaIds.some((id) => id !== this.localNodeId);
      this.hw = hasFollowers
        ? (this.log.checkpointedHighWatermark ?? this.log.logStartOffset)
        : this.log.logEndOffset;
      for (const replicaId of this.replicaIds) {
        if (replicaId === this.localNodeId) continue;
        this.followers.set(replicaId, {
          replicaId,
          logEndOffset: UNKNOWN_OFFSET,
          lastCaughtUpTimeMs: options.nowMs,
          lastFetchLeaderLogEndOffset: this.log.logEndOffset,
          lastFetchTimeMs: options.nowMs,
        });
      }
    } else {
      this.isrIds = Object.freeze([]);
      // Until the leader says otherwise, a follower vouches for nothing beyond its checkpointed HW.
      this.hw = this.log.checkpointedHighWatermark ?? this.log.logStartOffset;
    }
  }

  get isLeader(): boolean {
    return this.leader === this.localNodeId;
  }

  get leaderId(): number {
    return this.leader;
  }

  get replicas(): readonly number[] {
    return this.replicaIds;
  }

  get isr(): readonly number[] {
    return this.isrIds;
  }

  get highWatermark(): number {
    return this.hw;
  }

  get logEndOffset(): number {
    return this.log.logEndOffset;
  }

  get logStartOffset(): number {
    return this.log.logStartOffset;
  }

  /** Where the HW sits on disk, for DelayedFetch's byte count; cached until the HW moves. */
  get highWatermarkMetadata(): LogOffsetMetadata {
    let metadata = this.hwMetadata;
    if (metadata === null || metadata.messageOffset !== this.hw) {
      metadata = this.log.convertToOffsetMetadata(Math.max(this.hw, this.log.logStartOffset));
      this.hwMetadata = metadata;
    }
    return metadata;
  }

  /** The leader's state of follower `replicaId`, or undefined if it is not a replica of this partition. */
  followerState(replicaId: number): Readonly<FollowerState> | undefined {
    return this.followers.get(replicaId);
  }

  /** True if `replicaId` may fetch this partition as a follower from here. */
  isFollowerReplica(replicaId: number): boolean {
    return this.isLeader && this.followers.has(replicaId);
  }

  /**
   * Appends a producer's records (Kafka's appendRecordsToLeader). acks=-1 with fewer in-sync replicas
   * than `minInsyncReplicas` is refused before anything is written. Storage errors (MESSAGE_TOO_LARGE,
   * INVALID_TIMESTAMP, ...) are thrown as CohortErrors. The caller checks `maybeIncrementLeaderHW`.
   */
  appendRecordsToLeader(records: readonly SimpleRecord[], requiredAcks: number): LogAppendInfo {
    if (!this.isLeader) {
      throw new CohortError(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        `node ${this.localNodeId} is not the leader of ${this.key}`,
      );
    }
    if (requiredAcks === -1 && this.isrIds.length < this.minInsyncReplicas) {
      throw new CohortError(
        ErrorCode.NOT_ENOUGH_REPLICAS,
        `${this.key} has ${this.isrIds.length} in-sync replicas; acks=-1 needs ${this.minInsyncReplicas}`,
      );
    }
    // acks=0: nobody waits for this append, so it asks for no fsync of its own (PartitionLog.append).
    return this.log.append(records, requiredAcks !== 0);
  }

  /**
   * A follower fetched from `fetchOffset` (so its LEO is `fetchOffset`) at `nowMs`: updates its caught-up
   * time, lets it rejoin the ISR once it reaches the HW, and moves the HW. Returns true if the HW moved.
   */
  updateFollowerFetchState(replicaId: number, fetchOffset: number, nowMs: number): boolean {
    const state = this.followers.get(replicaId);
    if (state === undefined || !this.isLeader) return false;
    const leaderEndOffset = this.log.logEndOffset;
    if (fetchOffset >= leaderEndOffset) {
      state.lastCaughtUpTimeMs = Math.max(state.lastCaughtUpTimeMs, nowMs);
    } else if (fetchOffset >= state.lastFetchLeaderLogEndOffset) {
      state.lastCaughtUpTimeMs = Math.max(state.lastCaughtUpTimeMs, state.lastFetchTimeMs);
    }
    state.logEndOffset = fetchOffset;
    state.lastFetchLeaderLogEndOffset = leaderEndOffset;
    state.lastFetchTimeMs = nowMs;
    if (!this.isrIds.includes(replicaId) && fetchOffset >= this.hw) {
      // Keep the ISR in replica order, so Metadata reads the same whatever order followers rejoin in.
      this.isrIds = Object.freeze(
        this.replicaIds.filter((id) => id === replicaId || this.isrIds.includes(id)),
      );
    }
    return this.maybeIncrementLeaderHW();
  }

  /**
   * Drops from the ISR every follower that has not caught up for more than `replicaLagTimeMaxMs`
   * (Kafka's maybeShrinkIsr, run every half of it). Returns the followers removed (empty if none); the HW
   * may then move, which `maybeIncrementLeaderHW` reports.
   */
  maybeShrinkIsr(nowMs: number): number[] {
    if (!this.isLeader) return [];
    const leaderEndOffset = this.log.logEndOffset;
    let removed: number[] | null = null;
    for (const replicaId of this.isrIds) {
      const state = this.followers.get(replicaId);
      if (state === undefined) continue;
      const isOutOfSync =
        state.logEndOffset !== leaderEndOffset && nowMs - state.lastCaughtUpTimeMs > this.replicaLagTimeMaxMs;
      if (isOutOfSync) (removed ??= []).push(replicaId);
    }
    if (removed === null) return [];
    const out = removed;
    this.isrIds = Object.freeze(this.isrIds.filter((id) => !out.includes(id)));
    return out;
  }

  /** HW = the smallest LEO in the ISR, never moving back. Returns true if it moved. */
  maybeIncrementLeaderHW(): boolean {
    if (!this.isLeader) return false;
    let newHw = this.log.logEndOffset;
    for (const replicaId of this.isrIds) {
      const state = this.followers.get(replicaId);
      if (state !== undefined && state.logEndOffset < newHw) newHw = state.logEndOffset;
    }
    if (newHw <= this.hw) return false;
    this.hw = newHw;
    return true;
  }

  /**
   * Whether every in-sync replica has the records below `requiredOffset` (Kafka's
   * checkEnoughReplicasReachOffset): once the HW reaches it, NONE if the ISR is still at least
   * `minInsyncReplicas` large, else NOT_ENOUGH_REPLICAS_AFTER_APPEND.
   */
  checkEnoughReplicasReachOffset(requiredOffset: number): ReplicationCheck {
    if (!this.isLeader) return NOT_LEADER;
    if (this.hw < requiredOffset) return NOT_YET;
    return this.isrIds.length >= this.minInsyncReplicas ? ENOUGH : ENOUGH_BUT_ISR_TOO_SMALL;
  }

  /**
   * Reads from `fetchOffset`: below the HW for a consumer, below the LEO for a follower. Throws
   * OFFSET_OUT_OF_RANGE for an offset outside [log start, LEO]; an offset between HW and LEO reads
   * nothing for a consumer (it waits for the HW), as in Kafka.
   */
  read(fetchOffset: number, maxBytes: number, isFromFollower: boolean, minOneMessage: boolean): LogReadInfo {
    const maxOffset = isFromFollower ? this.log.logEndOffset : this.hw;
    return this.log.read(fetchOffset, maxBytes, { maxOffset, minOneMessage });
  }

  // --- follower side ---

  /** Takes the assignment the leader reported through Metadata (leader, replicas, ISR). */
  updateAssignment(leaderId: number, replicas: readonly number[], isr: readonly number[]): void {
    if (this.isLeader) return;
    this.leader = leaderId;
    this.replicaIds = Object.freeze([...replicas]);
    this.isrIds = Object.freeze([...isr]);
  }

  /** Appends records fetched from the leader, with the leader's offsets. */
  appendRecordsAsFollower(records: readonly LogRecord[]): LogAppendInfo {
    return this.log.appendAsFollower(records);
  }

  /** The follower's HW: the leader's, capped at what this replica has. Returns true if it moved up. */
  updateFollowerHighWatermark(leaderHighWatermark: number): boolean {
    const newHw = Math.max(Math.min(leaderHighWatermark, this.log.logEndOffset), this.log.logStartOffset);
    const isIncreased = newHw > this.hw;
    this.hw = newHw;
    return isIncreased;
  }

  /** Removes every record at or after `offset` (the leader does not have them). */
  truncateTo(offset: number): void {
    this.log.truncateTo(offset);
    this.hwMetadata = null;
    this.hw = Math.max(Math.min(this.hw, this.log.logEndOffset), this.log.logStartOffset);
  }

  /** Empties the log and restarts it at `offset` (the leader no longer has this replica's offsets). */
  truncateFullyAndStartAt(offset: number): void {
    this.log.truncateFullyAndStartAt(offset);
    this.hwMetadata = null;
    this.hw = offset;
  }

  /**
   * Retention: deletes old segments; returns how many. Only below the HW, as Kafka: a record the in-sync
   * replicas have not all fetched is never removed by retention (a follower would find its fetch offset
   * gone and have to start over from the new log start).
   */
  deleteOldSegments(): number {
    const deleted = this.log.deleteOldSegments(this.hw);
    if (deleted > 0) this.hwMetadata = null;
    return deleted;
  }
}
