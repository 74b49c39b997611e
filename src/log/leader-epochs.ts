/**
 * What replication asks of a partition's leader-epoch history (the log's LeaderEpochCache: epoch → start
 * offset, Kafka's LeaderEpochFileCache), in one place.
 */
import type { Partition } from './partition';
import type { EpochEndOffset as EpochEndOffsetLookup } from './storage';

/** The latest epoch in the partition's log, or NO_LEADER_EPOCH (-1) if its batches carry none. */
export function latestLocalEpoch(partition: Partition): number {
  return partition.log.latestEpoch();
}

/**
 * Kafka's endOffsetFor(epoch): the largest epoch at or below `leaderEpoch` in the log and the first
 * offset after it (the LEO for the latest epoch); NO_LEADER_EPOCH / UNDEFINED_EPOCH_OFFSET if none.
 *
 * On a leader its own epoch counts as the latest even before it appended anything in it (Kafka's
 * makeLeader assigns it in the cache at once; here the log learns it with the first append): the current
 * epoch ends at the LEO, and an epoch between the log's latest and the current one, which no leader
 * wrote here, ends there too, with the log's latest as the epoch (what Kafka's cache would answer).
 */
export function epochEndOffset(partition: Partition, leaderEpoch: number): EpochEndOffsetLookup {
  if (partition.isLeader) {
    if (leaderEpoch === partition.leaderEpoch) return { leaderEpoch, endOffset: partition.logEndOffset };
    const latestEpoch = partition.log.latestEpoch();
    if (latestEpoch >= 0 && latestEpoch < leaderEpoch && leaderEpoch < partition.leaderEpoch) {
      return { leaderEpoch: latestEpoch, endOffset: partition.logEndOffset };
    }
  }
  return partition.log.endOffsetFor(leaderEpoch);
}
