import { CohortError, ErrorCode } from '../../errors';

/**
 * What opening a log reports about what it repaired, and what it may repair. The storage layer logs
 * nothing itself: the server turns these events into log lines and metrics (docs/operations.md).
 *
 * Truncation kinds:
 * - `torn_tail`: bytes at or after the recovery point, the expected result of a crash (they were never
 *   fsynced, so never acknowledged under the default flush policy): cut, as Kafka cuts them, with every
 *   later segment.
 * - `corrupt`: bytes below the recovery point (fsynced, so possibly acknowledged and read) that fail
 *   their checks: real damage. The open refuses (CorruptLogError) unless `truncateCorruptLogs` is set.
 * - `overlap`: a segment whose offsets run into the next one's (no cohort write leaves that); the older
 *   one is cut where the newer one starts.
 */
export type LogTruncationKind = 'torn_tail' | 'corrupt' | 'overlap';

export interface LogTruncationEvent {
  readonly kind: LogTruncationKind;
  /** The partition directory. */
  readonly dir: string;
  /** The segment file that was cut. */
  readonly file: string;
  /** The first offset that was lost (the offset after the last whole batch kept). */
  readonly offset: number;
  /** Where the cut was made in `file`. */
  readonly position: number;
  /** Bytes removed: from `file` and from every segment file deleted with it. */
  readonly truncatedBytes: number;
  /** Later segment files deleted with the cut (a torn tail before them). */
  readonly deletedFiles: readonly string[];
  /** The checkpointed recovery point the cut was judged against; null when there was none. */
  readonly recoveryPoint: number | null;
}

export interface LogIndexRebuildEvent {
  readonly dir: string;
  /** The `.index` file. */
  readonly file: string;
  /** The file did not exist. */
  readonly wasMissing: boolean;
  /** Entries that could not be right (past the log, out of order, pointing at a bad batch). */
  readonly droppedEntries: number;
  /** Entries added by scanning the log. */
  readonly addedEntries: number;
}

/**
 * Why an open removed a file that held no data of the log: `unfinished_compaction` (a `.cleaned` file
 * whose swap never started), `replaced_by_swap` (a segment a completed `.swap` replaces), `orphan_index`
 * (an index without its log), `leftover` (another state suffix), `empty_segment` (an empty segment that
 * was not the last).
 */
export type LogFileRemovalReason =
  'unfinished_compaction' | 'replaced_by_swap' | 'orphan_index' | 'leftover' | 'empty_segment';

/**
 * The leader-epoch cache was rebuilt from every batch of the log at open: its file was `unreadable`
 * (damaged), or `missing` while batches below the recovery point carry epochs (the file was lost; a data
 * directory written before leader epochs has none there and is not rebuilt).
 */
export interface LeaderEpochCacheRebuildEvent {
  readonly dir: string;
  readonly file: string;
  readonly reason: 'missing' | 'unreadable';
  /** Entries the batches gave. */
  readonly entries: number;
}

export interface LogRecoveryListener {
  onTruncation?(event: LogTruncationEvent): void;
  /** A file that held no data of the log (see LogFileRemovalReason) was removed at open. */
  onFileRemoved?(dir: string, file: string, reason: LogFileRemovalReason): void;
  onIndexRebuild?(event: LogIndexRebuildEvent): void;
  /** The recovery-point checkpoint could not be read: the whole log was recovered as if it had none. */
  onCheckpointUnreadable?(dir: string, file: string): void;
  /** The recovery point was checkpointed (after a sync, or at a clean close). */
  onCheckpoint?(dir: string, recoveryPoint: number, isCleanShutdown: boolean): void;
  /** A checkpoint write failed (the older checkpoint stays: the next recovery looks at more). */
  onCheckpointError?(dir: string, error: unknown): void;
  onLeaderEpochCacheRebuilt?(event: LeaderEpochCacheRebuildEvent): void;
  /**
   * A follower append carried leader epoch `epoch`, below the cache's latest (the follower did not
   * truncate first): its batch is stored, and the cache entries it contradicts are removed (Kafka warns
   * likewise).
   */
  onNonMonotonicLeaderEpoch?(dir: string, epoch: number, startOffset: number, latestEpoch: number): void;
  /** The high-watermark checkpoint could not be read: the partition starts as if it had none. */
  onHighWatermarkCheckpointUnreadable?(dir: string, file: string): void;
  /**
   * A partition directory of another incarnation of its topic (another topic id) was moved aside to
   * `stray` before this topic's log opened there empty.
   */
  onStrayLog?(dir: string, stray: string, strayTopicId: string, topicId: string): void;
}

export interface LogRecoveryOptions {
  /**
   * Cut damaged data below the recovery point instead of refusing to open (the operator's
   * `--truncate-corrupt-logs`). Default false.
   */
  readonly truncateCorruptLogs?: boolean;
  readonly listener?: LogRecoveryListener;
}

/**
 * A log that holds damaged data below its recovery point, which opening it would have to cut. Thrown by
 * `PartitionLog.open` before anything in the log's `.log` files is changed.
 */
export class CorruptLogError extends CohortError {
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly position: number,
    /** Bytes of that segment from `position` to its end. */
    readonly corruptBytes: number,
    readonly recoveryPoint: number | null,
  ) {
    super(
      ErrorCode.KAFKA_STORAGE_ERROR,
      `corrupt data in ${file} at offset ${offset} (byte ${position}): recovery would cut up to the ` +
        `${corruptBytes} bytes from there to the end of the segment, data that ` +
        (recoveryPoint === null
          ? 'lies in a sealed segment'
          : `lies below the recovery point ${recoveryPoint} (it was fsynced)`) +
        '; refusing to start. Restore the partition from a replica or a backup, or start once with ' +
        '--truncate-corrupt-logs to cut it (docs/operations.md, "Damaged files")',
    );
    this.name = 'CorruptLogError';
  }
}
