import { DelayedOperation } from '../purgatory';
import type { PartitionLookup } from './partition-lookup';
import type { LogOffsetMetadata } from './storage';

/** One partition of a parked Fetch. */
export interface FetchPartitionStatus {
  /** The partition's purgatory key, "<topic>-<partition>". */
  readonly key: string;
  readonly partitionMaxBytes: number;
  /**
   * Where the fetch offset sat on disk when the Fetch was first read; null for a partition whose first
   * read failed (it is answered with its error and never waited on).
   */
  readonly startOffsetMetadata: LogOffsetMetadata | null;
}

export interface FetchParams {
  readonly replicaId: number;
  readonly isFromFollower: boolean;
  readonly minBytes: number;
  readonly maxBytes: number;
  /** FetchRequest.servesBatches. */
  readonly servesBatches: boolean;
}

/**
 * A Fetch that found fewer than `minBytes` and waits, watched under every partition it reads (Kafka's
 * DelayedFetch). It completes when
 *
 * - A: a follower fetches a partition this process no longer leads, or B: a partition is gone;
 * - C: the fetch offset and the readable end (the LEO for a follower, the HW for a consumer) lie in
 *   different segments: the log rolled or was truncated, so the bytes cannot be counted by position and
 *   there is data (or news) to return at once;
 * - D: the bytes between each fetch offset and its readable end, each capped at its partition's
 *   `partitionMaxBytes`, add up to `minBytes`;
 * - or when `maxWaitMs` passes. Either way `onComplete` reads the log again and answers with whatever is
 *   there, so an expired Fetch returns what arrived meanwhile, possibly nothing.
 *
 * Counting uses positions in the segment (LogOffsetMetadata), never reading the log: a check is a few
 * comparisons per partition, cheap enough to run on every append.
 *
 * Which events wake it (ReplicaManager): an append on the leader checks the partition's key, which only a
 * follower's Fetch can satisfy (its end is the LEO); a consumer's end is the HW, so it completes when the
 * HW moves (a follower fetched, or the ISR shrank). On a follower, the HW moves with each fetch response.
 *
 * A cancelled call aborts the operation: it completes without reading or answering, so its watcher
 * entries become garbage the purgatory purges.
 */
export class DelayedFetch extends DelayedOperation {
  private isAborted = false;

  constructor(
    maxWaitMs: number,
    private readonly params: FetchParams,
    private readonly statuses: readonly FetchPartitionStatus[],
    private readonly partitions: PartitionLookup,
    private readonly respond: () => void,
    private readonly onExpired: () => void = () => undefined,
  ) {
    super(maxWaitMs);
  }

  get isFromFollower(): boolean {
    return this.params.isFromFollower;
  }

  override tryComplete(): boolean {
    let accumulatedBytes = 0;
    for (let i = 0; i < this.statuses.length; i++) {
      const status = this.statuses[i]!;
      const fetchOffset = status.startOffsetMetadata;
      if (fetchOffset === null) continue;
      const partition = this.partitions.getPartition(status.key);
      if (partition === undefined) return this.forceComplete(); // B
      if (this.params.isFromFollower && !partition.isLeader) return this.forceComplete(); // A
      const endOffset = this.params.isFromFollower
        ? partition.log.logEndOffsetMetadata
        : partition.highWatermarkMetadata;
      // Same message offset: nothing new, whatever the segments say (a roll leaves the HW on the old one).
      if (endOffset.messageOffset === fetchOffset.messageOffset) continue;
      if (endOffset.segmentBaseOffset < fetchOffset.segmentBaseOffset) return this.forceComplete(); // C: truncated
      if (fetchOffset.segmentBaseOffset < endOffset.segmentBaseOffset) return this.forceComplete(); // C: rolled
      if (fetchOffset.messageOffset < endOffset.messageOffset) {
        const available = endOffset.relativePositionInSegment - fetchOffset.relativePositionInSegment;
        accumulatedBytes += Math.min(available, status.partitionMaxBytes);
      }
    }
    if (accumulatedBytes >= this.params.minBytes) return this.forceComplete(); // D
    return false;
  }

  override onComplete(): void {
    if (!this.isAborted) this.respond();
  }

  override onExpiration(): void {
    if (!this.isAborted) this.onExpired();
  }

  /** The caller went away: complete without reading or answering. */
  abort(): void {
    if (this.isCompleted) return;
    this.isAborted = true;
    this.forceComplete();
  }
}
