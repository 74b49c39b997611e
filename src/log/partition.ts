import { CohortError, ErrorCode } from '../errors';
import type {
  LogAppendInfo,
  LogOffsetMetadata,
  LogReadInfo,
  LogRecord,
  PartitionLog,
  RecordBatch,
  SimpleRecord,
} from './storage';
import { NO_LEADER_EPOCH } from './broker-protocol';
import type { IsrChangeResult, PartitionLeadership } from './partition-roles';
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

/**
 * An ISR change this leader wants committed in the metadata store before it acts on it (cluster mode):
 * the ISR it proposes and the state (epochs) it was decided from. At most one is in flight per partition.
 */
export interface IsrProposal {
  readonly kind: 'shrink' | 'expand';
  readonly isr: readonly number[];
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
}

/** The state of a partition's leadership as applyClusterMetadata gives it, without the partition's name. */
export type PartitionState = Pick<
  PartitionLeadership,
  'leader' | 'leaderEpoch' | 'isr' | 'replicas' | 'partitionEpoch'
>;

/** How a partition reports whether a request's leader epoch is the current one (Kafka's checkCurrentLeaderEpoch). */
export function checkLeaderEpoch(requestedEpoch: number | undefined, currentEpoch: number): ErrorCode {
  if (requestedEpoch === undefined || requestedEpoch === NO_LEADER_EPOCH) return ErrorCode.NONE;
  if (requestedEpoch < currentEpoch) return ErrorCode.FENCED_LEADER_EPOCH;
  if (requestedEpoch > currentEpoch) return ErrorCode.UNKNOWN_LEADER_EPOCH;
  return ErrorCode.NONE;
}

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
  /** The leader epoch this state starts at; 0 (a single node) when absent. */
  readonly leaderEpoch?: number;
  /**
   * Cluster mode: ISR changes are proposed (here, to ReplicaManager, which sends them to the
   * IsrChangeProposer) instead of being made at once; `completeIsrProposal` applies the outcome. Absent:
   * the leader changes its ISR itself (a single node).
   */
  readonly proposeIsr?: (partition: Partition, proposal: IsrProposal) => void;
  /**
   * Whether this node may act as a leader now (its session; LeadershipGuard): while false the HW does not
   * advance and acks=-1 answers NOT_LEADER_OR_FOLLOWER. Absent: always.
   */
  readonly isLeadershipActive?: () => boolean;
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
 * ISR are what the cluster last reported (makeFollower).
 *
 * Leader epochs (cluster mode, after Kafka's Partition.makeLeader / makeFollower): every leader election
 * raises the partition's `leaderEpoch`; `partitionEpoch` is the version of its state in the metadata store.
 * A state older than the one held (lower leader epoch, or the same at a lower partition epoch) is ignored.
 * Requests naming a leader epoch are checked against it (`checkLeaderEpoch`).
 *
 * The HW never advances while the committed ISR is smaller than `minInsyncReplicas` (KAFKA-15583): a
 * record answered NOT_ENOUGH_REPLICAS_AFTER_APPEND, or appended with acks=1 while the ISR is too small,
 * is not readable while only the leader holds it.
 *
 * ISR changes in cluster mode go through the metadata store (`proposeIsr`), at most one in flight; until
 * one is committed the HW is computed over the larger of the two ISRs (the "maximal" ISR, Kafka's
 * PendingShrinkIsr / PendingExpandIsr): a shrink does not let the HW pass the removed follower before the
 * store agrees, an expansion waits for the new follower at once but counts for acks=-1 and the minimum
 * only once committed.
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
  private epoch: number;
  private stateEpoch = 0;
  /** The LEO when this replica became leader at its epoch: a follower must reach it to join the ISR. */
  private leaderEpochStartOffset = 0;
  private readonly proposeIsr: ((partition: Partition, proposal: IsrProposal) => void) | undefined;
  private readonly isLeadershipActive: () => boolean;
  /** The ISR change in flight (cluster mode), or null. */
  private pendingIsr: IsrProposal | null = null;
  /** A proposal was refused as stale: no other until applyClusterMetadata brings the current state. */
  private isAwaitingMetadata = false;
  /** A proposal failed (the store did not answer): no other before this time. */
  private proposeRetryAtMs = 0;

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
    this.epoch = options.leaderEpoch ?? 0;
    this.proposeIsr = options.proposeIsr;
    this.isLeadershipActive = options.isLeadershipActive ?? alwaysActive;
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

  /** The committed ISR: what acks=-1 and `minInsyncReplicas` count. */
  get isr(): readonly number[] {
    return this.isrIds;
  }

  /**
   * What the HW waits for: the committed ISR, or the proposed one while an expansion is in flight (a
   * pending shrink still waits for the follower it would remove).
   */
  get maximalIsr(): readonly number[] {
    const pending = this.pendingIsr;
    return pending !== null && pending.kind === 'expand' ? pending.isr : this.isrIds;
  }

  /** The ISR change in flight, or null. */
  get pendingIsrChange(): IsrProposal | null {
    return this.pendingIsr;
  }

  get leaderEpoch(): number {
    return this.epoch;
  }

  get partitionEpoch(): number {
    return this.stateEpoch;
  }

  /** NONE if `requestedEpoch` (absent or NO_LEADER_EPOCH: no check) is this partition's leader epoch. */
  checkCurrentLeaderEpoch(requestedEpoch: number | undefined): ErrorCode {
    return checkLeaderEpoch(requestedEpoch, this.epoch);
  }

  /** True when the committed ISR is smaller than `minInsyncReplicas`: the HW stays where it is. */
  get isUnderMinIsr(): boolean {
    return this.isrIds.length < this.minInsyncReplicas;
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
   * `receivedBatchBytes`: the batch's size as the producer sent it, for the size limit (PartitionLog.append).
   */
  appendRecordsToLeader(
    records: readonly SimpleRecord[],
    requiredAcks: number,
    receivedBatchBytes?: number,
  ): LogAppendInfo {
    this.checkLeaderAppend(requiredAcks);
    // acks=0: nobody waits for this append, so it asks for no fsync of its own (PartitionLog.append).
    return this.log.append(records, requiredAcks !== 0, this.epoch, receivedBatchBytes);
  }

  /**
   * `appendRecordsToLeader` for a Kafka client's batch stored as it came (RecordBatch.fromClientBatch):
   * the same checks, the batch stamped with this leader's epoch.
   */
  appendClientBatchToLeader(batch: RecordBatch, requiredAcks: number): LogAppendInfo {
    this.checkLeaderAppend(requiredAcks);
    return this.log.appendClientBatch(batch, requiredAcks !== 0, this.epoch);
  }

  private checkLeaderAppend(requiredAcks: number): void {
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
    if (
      !this.maximalIsr.includes(replicaId) &&
      fetchOffset >= this.hw &&
      fetchOffset >= this.leaderEpochStartOffset
    ) {
      // Keep the ISR in replica order, so Metadata reads the same whatever order followers rejoin in.
      const isr = this.isrIds;
      const expanded = Object.freeze(this.replicaIds.filter((id) => id === replicaId || isr.includes(id)));
      if (this.proposeIsr === undefined) this.isrIds = expanded;
      else if (this.isLeadershipActive()) this.propose('expand', expanded, nowMs);
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
    const shrunk = Object.freeze(this.isrIds.filter((id) => !out.includes(id)));
    if (this.proposeIsr === undefined) {
      this.isrIds = shrunk;
      return out;
    }
    // Cluster mode: nothing changes here until the store commits it (completeIsrProposal), and a node
    // whose session is gone proposes nothing.
    if (this.isLeadershipActive()) this.propose('shrink', shrunk, nowMs);
    return [];
  }

  /** Hands an ISR change to `proposeIsr`, unless one is in flight or proposals wait (stale, failed). */
  private propose(kind: IsrProposal['kind'], isr: readonly number[], nowMs: number): void {
    if (this.pendingIsr !== null || this.isAwaitingMetadata || nowMs < this.proposeRetryAtMs) return;
    const proposal: IsrProposal = { kind, isr, leaderEpoch: this.epoch, partitionEpoch: this.stateEpoch };
    this.pendingIsr = proposal;
    this.proposeIsr!(this, proposal);
  }

  /**
   * The outcome of `proposal` (cluster mode). Committed: the ISR and partition epoch become the store's
   * (returns true: the ISR changed, the HW may move). Stale: the committed ISR stays and no proposal is
   * made until `makeLeader` brings the current state. Failed: the committed ISR stays and a new proposal
   * may be made from `nowMs + retryBackoffMs`. An outcome for a proposal no longer pending (a newer state
   * arrived meanwhile) is ignored.
   */
  completeIsrProposal(
    proposal: IsrProposal,
    result: IsrChangeResult,
    nowMs: number,
    retryBackoffMs: number,
  ): boolean {
    if (this.pendingIsr !== proposal) return false;
    this.pendingIsr = null;
    if (result.kind === 'committed') {
      const state = result.state;
      if (!this.isLeader || state.leader !== this.localNodeId || state.leaderEpoch !== this.epoch) {
        this.isAwaitingMetadata = true;
        return false;
      }
      this.isrIds = Object.freeze([...state.isr]);
      this.stateEpoch = state.partitionEpoch;
      return true;
    }
    if (result.kind === 'stale') this.isAwaitingMetadata = true;
    else this.proposeRetryAtMs = nowMs + retryBackoffMs;
    return false;
  }

  /**
   * HW = the smallest LEO in the maximal ISR, never moving back, and not at all while the committed ISR
   * is below `minInsyncReplicas`. Returns true if it moved.
   */
  maybeIncrementLeaderHW(): boolean {
    if (!this.isLeader || this.isUnderMinIsr || !this.isLeadershipActive()) return false;
    const newHw = this.isrEndOffset();
    if (newHw <= this.hw) return false;
    this.hw = newHw;
    return true;
  }

  /** The smallest LEO in the maximal ISR: what the HW would be with no minimum. */
  private isrEndOffset(): number {
    let endOffset = this.log.logEndOffset;
    for (const replicaId of this.maximalIsr) {
      const state = this.followers.get(replicaId);
      if (state !== undefined && state.logEndOffset < endOffset) endOffset = state.logEndOffset;
    }
    return endOffset;
  }

  /**
   * Whether every in-sync replica has the records below `requiredOffset` (Kafka's
   * checkEnoughReplicasReachOffset): once the HW reaches it, NONE if the ISR is still at least
   * `minInsyncReplicas` large, else NOT_ENOUGH_REPLICAS_AFTER_APPEND. While the ISR is below the minimum
   * the HW stays put, so the same answer comes once every remaining in-sync replica has the records: the
   * producer learns they were appended but not confirmed, and no consumer reads them meanwhile.
   */
  checkEnoughReplicasReachOffset(requiredOffset: number): ReplicationCheck {
    if (!this.isLeader || !this.isLeadershipActive()) return NOT_LEADER;
    if (this.hw >= requiredOffset) {
      return this.isUnderMinIsr ? ENOUGH_BUT_ISR_TOO_SMALL : ENOUGH;
    }
    return this.isUnderMinIsr && this.isrEndOffset() >= requiredOffset ? ENOUGH_BUT_ISR_TOO_SMALL : NOT_YET;
  }

  /**
   * Reads from `fetchOffset`: below the HW for a consumer, below the LEO for a follower. Throws
   * OFFSET_OUT_OF_RANGE for an offset outside [log start, LEO]; an offset between HW and LEO reads
   * nothing for a consumer (it waits for the HW), as in Kafka.
   */
  read(
    fetchOffset: number,
    maxBytes: number,
    isFromFollower: boolean,
    minOneMessage: boolean,
    isDecoded = true,
  ): LogReadInfo {
    const maxOffset = isFromFollower ? this.log.logEndOffset : this.hw;
    return this.log.read(fetchOffset, maxBytes, { maxOffset, minOneMessage, isDecoded });
  }

  // --- roles (cluster mode) ---

  /** True if `state` is older than what this partition holds (and so must be ignored). */
  private isStale(state: PartitionState): boolean {
    return (
      state.leaderEpoch < this.epoch ||
      (state.leaderEpoch === this.epoch && state.partitionEpoch < this.stateEpoch)
    );
  }

  /**
   * Makes this replica the leader at `state` (Kafka's Partition.makeLeader): takes its replicas, ISR and
   * epochs. A new leader epoch starts every follower afresh (unknown LEO, caught up as of `nowMs`, as
   * Kafka's new leader assumes) and records where the epoch starts; the HW stays what this replica knew
   * and moves once the ISR has caught up. The same epoch at a newer partition epoch (an ISR change) keeps
   * the followers' states. Drops any ISR proposal in flight: the state it came from is gone. Returns
   * true if anything changed; a stale `state` changes nothing.
   */
  makeLeader(state: PartitionState, nowMs: number): boolean {
    if (this.isStale(state)) return false;
    const isNewLeaderEpoch = state.leaderEpoch > this.epoch || !this.isLeader;
    const isChanged =
      isNewLeaderEpoch || state.partitionEpoch !== this.stateEpoch || !sameIds(state.isr, this.isrIds);
    this.leader = this.localNodeId;
    this.epoch = state.leaderEpoch;
    this.stateEpoch = state.partitionEpoch;
    this.replicaIds = Object.freeze([...state.replicas]);
    this.isrIds = Object.freeze([...state.isr]);
    this.pendingIsr = null;
    this.isAwaitingMetadata = false;
    this.proposeRetryAtMs = 0;
    const leaderEndOffset = this.log.logEndOffset;
    if (isNewLeaderEpoch) {
      this.followers.clear();
      this.leaderEpochStartOffset = leaderEndOffset;
    }
    for (const replicaId of this.replicaIds) {
      if (replicaId === this.localNodeId || this.followers.has(replicaId)) continue;
      this.followers.set(replicaId, {
        replicaId,
        logEndOffset: UNKNOWN_OFFSET,
        lastCaughtUpTimeMs: nowMs,
        lastFetchLeaderLogEndOffset: leaderEndOffset,
        lastFetchTimeMs: nowMs,
      });
    }
    for (const replicaId of [...this.followers.keys()]) {
      if (!this.replicaIds.includes(replicaId)) this.followers.delete(replicaId);
    }
    return isChanged;
  }

  /**
   * Makes this replica a follower of `state.leader` (Kafka's Partition.makeFollower): takes the leader,
   * replicas, ISR and epochs and forgets the leader's view of followers. Returns true if the leader or
   * the leader epoch changed (the fetcher must then find the epoch boundary again before fetching);
   * false for a stale state or one that changes neither.
   */
  makeFollower(state: PartitionState): boolean {
    if (this.isStale(state)) return false;
    const isChanged = this.isLeader || state.leader !== this.leader || state.leaderEpoch !== this.epoch;
    this.leader = state.leader;
    this.epoch = state.leaderEpoch;
    this.stateEpoch = state.partitionEpoch;
    this.replicaIds = Object.freeze([...state.replicas]);
    this.isrIds = Object.freeze([...state.isr]);
    this.followers.clear();
    this.pendingIsr = null;
    this.isAwaitingMetadata = false;
    return isChanged;
  }

  // --- follower side ---

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

const alwaysActive = (): boolean => true;

/** The same node ids in the same order. */
export function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}
