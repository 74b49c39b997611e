import { ErrorCode } from '../errors';
import { NO_LEADER_EPOCH, UNDEFINED_EPOCH_OFFSET } from './broker-protocol';
import type { EpochEndOffset, FetchPartitionData } from './broker-protocol';
import type {
  EpochBoundaryOutcome,
  EpochBoundaryTarget,
  FetchedPartitionOutcome,
  FollowerFetchTarget,
  FollowerReplicas,
} from './follower-replicas';
import { epochEndOffset, latestLocalEpoch } from './leader-epochs';
import type { Partition } from './partition';
import type { PartitionLookup } from './partition-lookup';

/** What the follower partitions' fetch state needs of the node that hosts them (ReplicaManager). */
export interface PartitionFetchStatesHost {
  /** The hosted partitions: a state whose partition is no longer hosted is skipped. */
  readonly partitions: PartitionLookup;
  isShutdown(): boolean;
  /** A follower's log was truncated: reads made before may name records that are gone. */
  onTruncated(): void;
  /** A follower's HW moved: the consumer Fetches parked on it may complete. */
  onHighWatermarkIncreased(key: string): void;
  /** A fetch response brought records for `partition` (a compacted follower may compact). */
  onRecordsFetched(partition: Partition): void;
}

/** Cluster mode: what one follower replica is doing about its leader (Kafka's PartitionFetchState). */
interface PartitionFetchState {
  readonly leaderId: number;
  /** Became a follower in a new epoch: must truncate to the epoch boundary before fetching. */
  needsTruncation: boolean;
  /** The leader answered FENCED_LEADER_EPOCH: this replica's epoch is old; wait for newer metadata. */
  isFenced: boolean;
}

/**
 * The fetch state of this node's follower partitions (Kafka's PartitionFetchState, which its fetcher
 * threads keep), and what the replica fetchers do with it: which leaders to fetch from, which partitions
 * to truncate to their epoch boundary first and which to fetch, and how each answer is applied to the
 * partition's log. ReplicaManager only says which partition follows which leader (`follow`) and which
 * no longer follows (`unfollow`); the fetchers (ReplicaFetcherManager, ReplicaFetcher) take this, not
 * the manager, so the manager and its fetchers no longer reach each other.
 */
export class PartitionFetchStates implements FollowerReplicas {
  /** The follower partitions, by key, and what each is doing about its leader. */
  private readonly states = new Map<string, PartitionFetchState>();

  constructor(private readonly host: PartitionFetchStatesHost) {}

  /**
   * The partition became a follower of `leaderId` (a new leader epoch, or a newer state): it truncates to
   * its epoch boundary before it fetches again.
   */
  follow(key: string, leaderId: number): void {
    this.states.set(key, { leaderId, needsTruncation: true, isFenced: false });
  }

  /** The partition no longer fetches (it leads, has no leader, or is no longer hosted here). */
  unfollow(key: string): void {
    this.states.delete(key);
  }

  /**
   * The partitions this follower copies from `leaderId`, each from its LEO: those that follow that leader,
   * have found their epoch boundary and are not fenced, each with its leader epoch.
   */
  followerFetchTargets(leaderId: number): FollowerFetchTarget[] {
    const targets: FollowerFetchTarget[] = [];
    for (const [key, state] of this.states) {
      const partition = this.host.partitions.getPartition(key);
      if (partition === undefined || state.leaderId !== leaderId) continue;
      if (state.needsTruncation || state.isFenced) continue;
      targets.push({
        topic: partition.topic,
        partitionIndex: partition.partitionIndex,
        key,
        fetchOffset: partition.logEndOffset,
        currentLeaderEpoch: partition.leaderEpoch,
      });
    }
    return targets;
  }

  /** Cluster mode: the leaders this node's follower partitions fetch from. */
  followedLeaders(): Set<number> {
    const leaders = new Set<number>();
    for (const state of this.states.values()) leaders.add(state.leaderId);
    return leaders;
  }

  /**
   * Whether a partition following `leaderId` waits for its epoch-boundary truncation (it just became a
   * follower of that leader, or its epoch moved) and `isDue` (the fetcher's: not sitting out a backoff):
   * the leader's fetcher starts its next round with it.
   */
  hasPendingTruncation(leaderId: number, isDue: (key: string) => boolean): boolean {
    for (const [key, state] of this.states) {
      if (state.leaderId === leaderId && state.needsTruncation && !state.isFenced && isDue(key)) return true;
    }
    return false;
  }

  /**
   * Cluster mode: the partitions following `leaderId` that must find their epoch boundary before they
   * fetch. One whose log records no leader epoch has nothing to ask: it is truncated to its HW here (every
   * record below it is on the leader, as before KIP-101) and fetches next.
   */
  epochBoundaryTargets(leaderId: number): EpochBoundaryTarget[] {
    const targets: EpochBoundaryTarget[] = [];
    for (const [key, state] of this.states) {
      const partition = this.host.partitions.getPartition(key);
      if (partition === undefined || state.leaderId !== leaderId) continue;
      if (!state.needsTruncation || state.isFenced) continue;
      const latestEpoch = latestLocalEpoch(partition);
      if (latestEpoch === NO_LEADER_EPOCH) {
        this.truncateFollower(partition, partition.highWatermark);
        state.needsTruncation = false;
        continue;
      }
      targets.push({
        topic: partition.topic,
        partitionIndex: partition.partitionIndex,
        key,
        currentLeaderEpoch: partition.leaderEpoch,
        leaderEpoch: latestEpoch,
      });
    }
    return targets;
  }

  /**
   * Applies the leader's OffsetForLeaderEpoch answer for one partition (Kafka's
   * AbstractFetcherThread.getOffsetTruncationState, KIP-279):
   * - no end offset: the leader knows nothing of the epoch; truncate to the HW;
   * - no epoch (an old leader): truncate to the leader's end offset;
   * - the leader's epoch, which this replica also has: truncate to the smaller of the two ends of it;
   * - an epoch this replica does not have: truncate to the end of the largest epoch below it that it
   *   has, and ask again (`again`) with that one.
   * Never past the local LEO. FENCED_LEADER_EPOCH parks the partition until newer metadata arrives;
   * UNKNOWN_LEADER_EPOCH asks again shortly (`retrySoon`); other errors ask for a backoff (`retry`).
   */
  applyEpochEndOffset(key: string, data: EpochEndOffset, sentLeaderEpoch?: number): EpochBoundaryOutcome {
    const partition = this.host.partitions.getPartition(key);
    const state = this.states.get(key);
    if (partition === undefined || state === undefined || this.host.isShutdown()) return 'retry';
    if (!state.needsTruncation) return 'truncated';
    // An answer to a request sent in an older epoch says nothing of the current one (the metadata moved
    // while it was in flight): its fence is already lifted, and its end offset is asked for again.
    if (sentLeaderEpoch !== undefined && sentLeaderEpoch !== partition.leaderEpoch) return 'again';
    if (data.errorCode === ErrorCode.FENCED_LEADER_EPOCH) {
      state.isFenced = true;
      return 'retry';
    }
    if (data.errorCode === ErrorCode.UNKNOWN_LEADER_EPOCH) return 'retrySoon';
    if (data.errorCode !== ErrorCode.NONE) return 'retry';
    const logEndOffset = partition.logEndOffset;
    let offset: number;
    let isComplete = true;
    if (data.endOffset === UNDEFINED_EPOCH_OFFSET) {
      offset = partition.highWatermark;
    } else if (data.leaderEpoch === NO_LEADER_EPOCH) {
      offset = data.endOffset;
    } else {
      const local = epochEndOffset(partition, data.leaderEpoch);
      if (local.leaderEpoch === NO_LEADER_EPOCH) {
        offset = data.endOffset;
      } else if (local.leaderEpoch !== data.leaderEpoch) {
        offset = local.endOffset;
        isComplete = false;
      } else {
        offset = Math.min(local.endOffset, data.endOffset);
      }
    }
    this.truncateFollower(partition, Math.min(offset, logEndOffset));
    if (!isComplete) return 'again';
    state.needsTruncation = false;
    return 'truncated';
  }

  /** Cuts a follower's log at `offset` if it reaches past it. */
  private truncateFollower(partition: Partition, offset: number): void {
    if (offset >= partition.logEndOffset) return;
    this.host.onTruncated();
    partition.truncateTo(Math.max(offset, partition.logStartOffset));
  }

  /**
   * Applies one partition of a fetch response from the leader: appends its records and takes the
   * leader's HW (capped at the local LEO). OFFSET_OUT_OF_RANGE means this replica is ahead of the leader
   * or behind its log start: without leader epochs the safe rule is to truncate to the leader's HW (every
   * record below it is on the leader) or, behind the log start, to restart at the leader's log start.
   */
  applyFetchedPartition(
    key: string,
    data: FetchPartitionData,
    sentLeaderEpoch?: number,
  ): FetchedPartitionOutcome {
    const partition = this.host.partitions.getPartition(key);
    if (partition === undefined || partition.isLeader || this.host.isShutdown()) return 'retry';
    if (data.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
      if (data.highWatermark < 0 || data.logStartOffset < 0) return 'retry';
      this.host.onTruncated();
      if (partition.logEndOffset < data.logStartOffset)
        partition.truncateFullyAndStartAt(data.logStartOffset);
      else partition.truncateTo(Math.min(data.highWatermark, partition.logEndOffset));
      return 'truncated';
    }
    if (data.errorCode === ErrorCode.FENCED_LEADER_EPOCH) {
      // This replica's epoch is older than the leader's: wait for the metadata that says so — unless the
      // fetch was sent in an epoch this replica has already left (the metadata arrived while it was in
      // flight): then the fence is old news, and marking the new epoch fenced would park the partition
      // until the next change of its state, which may never come.
      if (sentLeaderEpoch !== undefined && sentLeaderEpoch !== partition.leaderEpoch) return 'appended';
      const state = this.states.get(key);
      if (state !== undefined) state.isFenced = true;
      return 'retry';
    }
    if (data.errorCode === ErrorCode.UNKNOWN_LEADER_EPOCH) return 'retrySoon';
    if (data.errorCode !== ErrorCode.NONE) return 'retry';
    if (data.records.length > 0) {
      // Only what follows the local LEO: a response to an older fetch offset may overlap.
      const from = partition.logEndOffset;
      const fresh =
        data.records[0]!.offset >= from ? data.records : data.records.filter((r) => r.offset >= from);
      if (fresh.length > 0) {
        partition.appendRecordsAsFollower(fresh);
        // A consumer reading this follower waits for the HW, not the LEO: nothing to wake yet.
      }
    }
    if (partition.updateFollowerHighWatermark(data.highWatermark)) this.host.onHighWatermarkIncreased(key);
    if (data.records.length > 0) this.host.onRecordsFetched(partition);
    return 'appended';
  }
}
