import type { EpochEndOffset, FetchPartitionData } from './broker-protocol';

/** What the follower fetcher asks for, per partition. */
export interface FollowerFetchTarget {
  readonly topic: string;
  readonly partitionIndex: number;
  readonly key: string;
  readonly fetchOffset: number;
  /** The leader epoch the follower follows, sent for the leader to check. */
  readonly currentLeaderEpoch: number;
}

/**
 * A partition that became a follower in a new leader epoch and must find where its log and the leader's
 * part before it fetches (KIP-101/279): the fetcher asks the leader OffsetForLeaderEpoch for `leaderEpoch`
 * (this replica's latest) and hands the answer to `applyEpochEndOffset`.
 */
export interface EpochBoundaryTarget {
  readonly topic: string;
  readonly partitionIndex: number;
  readonly key: string;
  readonly currentLeaderEpoch: number;
  readonly leaderEpoch: number;
}

/**
 * How `applyEpochEndOffset` went: `truncated` (done: fetch next), `again` (truncated to an intermediate
 * epoch boundary: ask again with the new latest epoch), `retry` (an error: back off), `retrySoon`
 * (UNKNOWN_LEADER_EPOCH: the leader has not yet heard of the epoch this replica follows it in; it hears
 * from the same etcd watch, moments later).
 */
export type EpochBoundaryOutcome = 'truncated' | 'again' | 'retry' | 'retrySoon';

/**
 * What one partition of a follower's fetch response did; `retry` asks the fetcher to back off,
 * `retrySoon` to ask again shortly (UNKNOWN_LEADER_EPOCH, as for EpochBoundaryOutcome).
 */
export type FetchedPartitionOutcome = 'appended' | 'truncated' | 'retry' | 'retrySoon';

/**
 * The follower replicas of this node as its replica fetchers see them: which leaders to fetch from, what to
 * ask each leader for, and where the answers go. PartitionFetchStates implements it (and ReplicaManager,
 * by passing each call on to it); the fetchers take it, not the manager that builds them, so the imports
 * point one way.
 */
export interface FollowerReplicas {
  /** Cluster mode: the leaders this node's follower partitions fetch from. */
  followedLeaders(): Set<number>;
  /** The partitions this follower copies from `leaderId`, each from its LEO. */
  followerFetchTargets(leaderId: number): FollowerFetchTarget[];
  /** Whether a partition following `leaderId` waits for its epoch-boundary truncation and `isDue`. */
  hasPendingTruncation(leaderId: number, isDue: (key: string) => boolean): boolean;
  /** The partitions following `leaderId` that must find their epoch boundary before they fetch. */
  epochBoundaryTargets(leaderId: number): EpochBoundaryTarget[];
  /** Applies the leader's OffsetForLeaderEpoch answer for one partition. */
  applyEpochEndOffset(key: string, data: EpochEndOffset, sentLeaderEpoch?: number): EpochBoundaryOutcome;
  /** Applies one partition of a fetch response from the leader. */
  applyFetchedPartition(
    key: string,
    data: FetchPartitionData,
    sentLeaderEpoch?: number,
  ): FetchedPartitionOutcome;
}
