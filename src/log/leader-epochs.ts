import { NO_LEADER_EPOCH, UNDEFINED_EPOCH_OFFSET } from './broker-protocol';
import type { Partition } from './partition';

/**
 * What replication asks of a partition's leader-epoch history (Kafka's LeaderEpochFileCache: epoch →
 * start offset), in one place.
 *
 * Until the log stores the leader epoch of its batches, the only epoch a partition can vouch for is the
 * current one of its leader, whose end is the LEO: a follower learns "no epoch info" for any other and
 * truncates to its HW, as before KIP-101.
 */
export interface EpochEndOffsetLookup {
  readonly leaderEpoch: number;
  readonly endOffset: number;
}

const UNKNOWN_EPOCH: EpochEndOffsetLookup = Object.freeze({
  leaderEpoch: NO_LEADER_EPOCH,
  endOffset: UNDEFINED_EPOCH_OFFSET,
});

/** The latest epoch in the partition's log, or NO_LEADER_EPOCH if it has none recorded. */
export function latestLocalEpoch(partition: Partition): number {
  void partition;
  return NO_LEADER_EPOCH;
}

/**
 * Kafka's endOffsetFor(epoch): the largest epoch at or below `leaderEpoch` in the log and the first
 * offset after it (the LEO for the latest epoch); NO_LEADER_EPOCH / UNDEFINED_EPOCH_OFFSET if none.
 */
export function epochEndOffset(partition: Partition, leaderEpoch: number): EpochEndOffsetLookup {
  if (partition.isLeader && leaderEpoch === partition.leaderEpoch) {
    return { leaderEpoch, endOffset: partition.logEndOffset };
  }
  return UNKNOWN_EPOCH;
}
