import * as fs from 'node:fs';
import * as path from 'node:path';
import { CohortError, ErrorCode } from '../../errors';
import type { Time } from '../../time';
import { ensureDirectory, fsyncDirectorySync } from './file-io';
import { GroupCommit } from './group-commit';
import {
  highWatermarkCheckpointPath,
  readHighWatermarkCheckpoint,
  writeHighWatermarkCheckpoint,
  writeHighWatermarkCheckpointSync,
} from './high-watermark-checkpoint';
import {
  type EpochEndOffset,
  type EpochEntry,
  LeaderEpochCache,
  leaderEpochCheckpointPath,
  readLeaderEpochCheckpoint,
  UNDEFINED_EPOCH,
} from './leader-epoch-cache';
import { createLogConfig, type LogConfig } from './log-config';
import { buildOffsetMap, cleanGroup, groupSegmentsBySize } from './log-cleaner';
import { LocalLog, type LogReadInfo, type ReadOptions, segmentIndexIn } from './local-log';
import type { LogOffsetMetadata } from './log-offset-metadata';
import type { LogRecord, SimpleRecord } from './log-record';
import {
  CorruptLogError,
  type LogFileRemovalReason,
  type LogRecoveryListener,
  type LogRecoveryOptions,
  type LogTruncationKind,
} from './log-recovery';
import { type CorruptRegion, LogSegment, type SegmentOpenMode, type TimestampAndOffset } from './log-segment';
import { RecordBatch } from './record-batch';
import {
  readRecoveryCheckpoint,
  recoveryCheckpointPath,
  type RecoveryCheckpoint,
  writeRecoveryCheckpoint,
  writeRecoveryCheckpointSync,
} from './recovery-checkpoint';
import {
  CLEANED_FILE_SUFFIX,
  INDEX_FILE_SUFFIX,
  LOG_FILE_SUFFIX,
  SWAP_FILE_SUFFIX,
  parseSegmentFileName,
  segmentFilePath,
} from './segment-file-names';

/**
 * The durable log of one partition, in one directory, after Kafka's UnifiedLog: an ordered list of
 * segments (`local-log.ts`: the active segment takes appends, roll, read, truncate, delete) and what makes
 * them a replica's log: offsets and leader epochs, flushes, checkpoints, retention and compaction.
 *
 * - logStartOffset is the first segment's base offset; logEndOffset (LEO) the active segment's next
 *   offset. Offsets are assigned by the leader's `append` (LEO, LEO+1, ...) or given by the leader to a
 *   follower's `appendAsFollower`; compaction may leave gaps, never reorders.
 * - Writes and reads are synchronous page-cache operations, so each is atomic on the event loop. Only
 *   fsync is asynchronous and goes through a `GroupCommit`: under the default policy (`flushMessages` 1)
 *   every append returns a `flushed` promise that settles after an fsync covering it, and appends that
 *   arrive together share that fsync. A flush fsyncs every segment written since the last one and, when
 *   files were created, the directory.
 * - Retention (`deleteOldSegments`, called periodically by the owner) removes a prefix of segments
 *   whose newest record is older than `retentionMs`, then a prefix while the log exceeds
 *   `retentionBytes`. The active segment is never deleted.
 * - Compaction (`compact`) rewrites the non-active segments of a compacted log (see `log-cleaner.ts`) and
 *   swaps the result in with `.cleaned` → `.swap` → final renames.
 * - Recovery point (Kafka's recovery-point-offset-checkpoint): offsets below it are fsynced. It is kept
 *   in `recovery-checkpoint.ts`'s file, written crash-safely after a sync that covers a newly sealed
 *   segment, at most once a minute otherwise, below a truncation before it cuts, and at close with a
 *   clean-shutdown mark.
 * - Open: leftover `.cleaned` files are deleted; `.swap` files complete their swap (the segments whose
 *   base offsets lie in the swap segment's range go, the suffix is dropped). After a clean shutdown no
 *   segment is validated; after an unclean stop only the segments holding offsets at or after the
 *   recovery point are (from their last index entry, see `log-segment.ts`); segments wholly below it
 *   have their batch headers walked, not their CRCs checked. Bad bytes at or after the recovery point are
 *   a torn tail: they are cut, and every later segment is deleted, as Kafka does (what follows a torn
 *   write was never fsynced, so never acknowledged). Bad bytes below it, or in a segment that is not the
 *   last when there is no checkpoint, are damage: the open throws CorruptLogError, changing no `.log`
 *   file, unless `truncateCorruptLogs` is set; then only the damaged bytes are removed (the valid
 *   batches after them in that segment are kept, later segments too: their data is whole), and if the log
 *   would end below the recovery point an empty segment starts at it, so no offset that was handed out is
 *   ever reused. Every cut, deleted segment
 *   and rebuilt index is reported to the recovery listener.
 * - Leader epochs: every batch carries the epoch of the leader that assigned its offsets (`append`'s
 *   `leaderEpoch`, or each record's own on a follower), and `leaderEpochCache` (see `leader-epoch-cache.ts`)
 *   says where each epoch started, for OffsetForLeaderEpoch and a follower's truncation. It changes in
 *   memory; its file is written off the event loop before each recovery checkpoint, and the open rebuilds
 *   the entries at or above the recovery point from the batches (see `loadEpochEntries`).
 * - High watermark: the owner checkpoints it (`checkpointHighWatermark`) and a restarted replica starts
 *   from `checkpointedHighWatermark` (see `high-watermark-checkpoint.ts`).
 *
 * Bad input (unknown offsets, oversized batches, keyless records in a compacted log) throws a
 * CohortError carrying the Kafka error code the caller puts in its response.
 */
export interface LogAppendInfo {
  readonly firstOffset: number;
  readonly lastOffset: number;
  readonly recordCount: number;
  readonly maxTimestampMs: number;
  /** The wall-clock time of the append (Kafka's log append time). */
  readonly logAppendTimeMs: number;
  readonly logStartOffset: number;
  readonly sizeInBytes: number;
  /**
   * Non-null when the flush policy asks for an fsync at this append (always, under the default
   * `flushMessages` 1): it resolves once the append is durable and must be awaited before acknowledging
   * acks ≥ 1; it rejects if the fsync fails or a truncation removes the records first. Null when the
   * policy lets the append be acknowledged from the page cache.
   */
  readonly flushed: Promise<void> | null;
}

export type { LogReadInfo, ReadOptions } from './local-log';

export interface CompactionResult {
  readonly isAborted: boolean;
  readonly segmentsBefore: number;
  readonly segmentsAfter: number;
  readonly recordsRemoved: number;
  readonly bytesBefore: number;
  readonly bytesAfter: number;
}

export interface PartitionLogOptions {
  readonly time: Time;
  readonly config?: Partial<LogConfig>;
  /** What recovery may cut and whom it tells (default: refuse damaged logs, tell nobody). */
  readonly recovery?: LogRecoveryOptions;
  /**
   * False: `open` makes no directory durable itself (no fsync on the event loop). The caller then fsyncs
   * the parent of a directory `open` created before the log takes an acknowledged append (CreateTopics
   * does it once for all its partitions); the log's own first flush fsyncs its directory, as always.
   * Default true.
   */
  readonly syncDirectories?: boolean;
}

/**
 * The recovery point is checkpointed at most this often by time (Kafka's
 * log.flush.offset.checkpoint.interval.ms), and in any case after a sync that covers a sealed segment.
 */
export const RECOVERY_POINT_CHECKPOINT_INTERVAL_MS = 60_000;

const RESOLVED: Promise<void> = Promise.resolve();
const ignore = (): void => undefined;
const pauseImmediately = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class PartitionLog {
  readonly config: LogConfig;
  private readonly time: Time;
  private readonly localLog: LocalLog;
  private readonly groupCommit: GroupCommit;
  /** Exclusive: offsets below it have been handed to the group commit by the flush policy. */
  private flushRequestedOffset: number;
  private lastFlushMonotonicMs: number;
  private cleaning: Promise<CompactionResult> | null = null;
  private closing: Promise<void> | null = null;
  private isClosing = false;
  private isClosed = false;
  private readonly recoveryListener: LogRecoveryListener | undefined;
  /** The recovery point the checkpoint file holds (or an async write is about to make it hold). */
  private checkpointedRecoveryPoint: number;
  private lastCheckpointMonotonicMs: number;
  /** Bumped by every synchronous checkpoint write: an asynchronous one started before it is dropped. */
  private checkpointGeneration = 0;
  private checkpointing: Promise<void> | null = null;
  private isCheckpointPending = false;
  /** Where each leader epoch started in this log; changed only by the log's appends and truncations. */
  readonly leaderEpochCache: LeaderEpochCache;
  /** The high watermark the checkpoint file holds, as written (undefined: no file). */
  private highWatermarkOnDisk: number | undefined;
  /** The last high watermark asked to be checkpointed. */
  private highWatermarkRequested: number | undefined;
  private highWatermarkWriting: Promise<void> | null = null;
  /** Bumped by every synchronous high-watermark write: an asynchronous one started before it is dropped. */
  private highWatermarkGeneration = 0;

  private constructor(
    readonly dir: string,
    config: LogConfig,
    time: Time,
    segments: LogSegment[],
    recoveryPoint: number,
    recoveryListener: LogRecoveryListener | undefined,
    epochEntries: readonly EpochEntry[],
    highWatermark: number | undefined,
  ) {
    this.config = config;
    this.time = time;
    this.localLog = new LocalLog(dir, config, time, segments, () => this.syncDirectorySoon());
    this.recoveryListener = recoveryListener;
    this.flushRequestedOffset = this.logEndOffset;
    this.lastFlushMonotonicMs = time.monotonicMs();
    this.checkpointedRecoveryPoint = recoveryPoint;
    this.lastCheckpointMonotonicMs = this.lastFlushMonotonicMs;
    this.groupCommit = new GroupCommit(
      () => this.syncSegments(),
      recoveryPoint,
      () => this.maybeCheckpoint(),
    );
    this.leaderEpochCache = new LeaderEpochCache(
      dir,
      epochEntries,
      () => this.logEndOffset,
      (epoch, startOffset, latest) =>
        recoveryListener?.onNonMonotonicLeaderEpoch?.(dir, epoch, startOffset, latest.epoch),
    );
    this.highWatermarkOnDisk = highWatermark;
    this.highWatermarkRequested = highWatermark;
  }

  /**
   * Opens (creating if needed) the log in `dir` and recovers it. Throws CorruptLogError when data below
   * the recovery point is damaged and `recovery.truncateCorruptLogs` is not set.
   */
  static open(dir: string, options: PartitionLogOptions): PartitionLog {
    const config = createLogConfig(options.config);
    const time = options.time;
    const syncDirectories = options.syncDirectories ?? true;
    if (syncDirectories) ensureDirectory(dir);
    else fs.mkdirSync(dir, { recursive: true });
    const nowMs = time.monotonicMs();
    const loaded = loadSegments(dir, config, nowMs, options.recovery ?? {});
    const segments = loaded.segments;
    const isNew = segments.length === 0 && loaded.checkpoint === null;
    if (segments.length === 0) {
      segments.push(LogSegment.create(dir, 0, config.indexIntervalBytes, nowMs));
      if (syncDirectories) fsyncDirectorySync(dir);
    }
    const logStartOffset = segments[0]!.baseOffset;
    const logEndOffset = segments[segments.length - 1]!.nextOffset;
    // What was fsynced before the stop still is; without a checkpoint nothing is known to be.
    const recoveryPoint = Math.max(
      logStartOffset,
      Math.min(loaded.checkpoint?.recoveryPoint ?? 0, logEndOffset),
    );
    const checkpoint: RecoveryCheckpoint = { recoveryPoint, isCleanShutdown: false };
    const listener = options.recovery?.listener;
    let highWatermark: number | undefined;
    let epochEntries: readonly EpochEntry[];
    try {
      const found = readHighWatermarkCheckpoint(dir);
      if (found === 'unreadable') {
        listener?.onHighWatermarkCheckpointUnreadable?.(dir, highWatermarkCheckpointPath(dir));
      }
      highWatermark = typeof found === 'number' ? found : undefined;
      // Before the recovery checkpoint below: the entries it covers must be on disk first.
      epochEntries = loadEpochEntries(dir, segments, loaded.checkpoint?.recoveryPoint ?? 0, listener);
      // A new log needs no checkpoint yet: it has nothing to protect, and its first one is written after
      // the sync that covers its first sealed segment. Skipping it saves a created partition two fsyncs and
      // a rename (a CreateTopics of 10,000 partitions would otherwise pay 20,000 fsyncs).
      if (
        !isNew &&
        (loaded.checkpoint === null ||
          loaded.checkpoint.isCleanShutdown ||
          loaded.checkpoint.recoveryPoint !== recoveryPoint)
      ) {
        // Before the first append: a clean-shutdown mark left in place would skip the recovery of what
        // this process appends and never fsyncs.
        try {
          writeRecoveryCheckpointSync(dir, checkpoint);
        } catch (error) {
          throw new CohortError(
            ErrorCode.KAFKA_STORAGE_ERROR,
            `cannot write ${recoveryCheckpointPath(dir)}`,
            { cause: error },
          );
        }
      }
    } catch (error) {
      for (const segment of segments) segment.close();
      if (error instanceof CohortError) throw error;
      throw new CohortError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot open the checkpoints of ${dir}`, {
        cause: error,
      });
    }
    const log = new PartitionLog(
      dir,
      config,
      time,
      segments,
      recoveryPoint,
      listener,
      epochEntries,
      highWatermark,
    );
    return log;
  }

  get logStartOffset(): number {
    return this.localLog.logStartOffset;
  }

  get logEndOffset(): number {
    return this.localLog.logEndOffset;
  }

  get logEndOffsetMetadata(): LogOffsetMetadata {
    return this.localLog.logEndOffsetMetadata;
  }

  /** The latest leader epoch of the log, or -1 when no batch carried one (see `leaderEpochCache`). */
  latestEpoch(): number {
    return this.leaderEpochCache.latestEpoch();
  }

  /** The (epoch, startOffset) entries of `leaderEpochCache`, oldest first. */
  epochEntries(): readonly EpochEntry[] {
    return this.leaderEpochCache.epochEntries();
  }

  /** Kafka's OffsetForLeaderEpoch answer from this log (see `LeaderEpochCache.endOffsetFor`). */
  endOffsetFor(requestedEpoch: number): EpochEndOffset {
    return this.leaderEpochCache.endOffsetFor(requestedEpoch);
  }

  /**
   * The high watermark last checkpointed (read at open, then the last one written), capped to
   * [logStartOffset, logEndOffset]; undefined when the partition has no checkpoint (new, or written
   * before cohort kept one).
   */
  get checkpointedHighWatermark(): number | undefined {
    const value = this.highWatermarkOnDisk;
    if (value === undefined) return undefined;
    return Math.max(this.logStartOffset, Math.min(value, this.logEndOffset));
  }

  /**
   * Writes `highWatermark` to the partition's `high-watermark-checkpoint`, off the event loop (see
   * `high-watermark-checkpoint.ts`). Resolves at once when it is the value already written; while a write
   * is under way the newest value asked for is written after it, and the returned promise resolves once
   * that is done. Rejects with the I/O error of a failed write (the older file stays), and after close.
   * Nothing is written for a log taken offline.
   */
  checkpointHighWatermark(highWatermark: number): Promise<void> {
    if (this.isClosed || this.isClosing) return Promise.reject(closedError(this.dir));
    if (!Number.isSafeInteger(highWatermark) || highWatermark < 0) {
      return Promise.reject(
        new CohortError(ErrorCode.OFFSET_OUT_OF_RANGE, `cannot checkpoint high watermark ${highWatermark}`),
      );
    }
    if (this.isOffline) return RESOLVED;
    this.highWatermarkRequested = highWatermark;
    if (this.highWatermarkWriting !== null) return this.highWatermarkWriting;
    if (highWatermark === this.highWatermarkOnDisk) return RESOLVED;
    this.highWatermarkWriting = this.writeHighWatermarks();
    return this.highWatermarkWriting;
  }

  /** Offsets below this are known to be fsynced (Kafka's recovery point). */
  get recoveryPoint(): number {
    return this.groupCommit.flushedOffset;
  }

  get sizeInBytes(): number {
    return this.localLog.sizeInBytes;
  }

  get numberOfSegments(): number {
    return this.localLog.segments.length;
  }

  /** Base offsets of the segments, oldest first. */
  segmentBaseOffsets(): number[] {
    return this.localLog.segments.map((segment) => segment.baseOffset);
  }

  /** fsync rounds completed (each covers every append that was waiting when it started). */
  get flushCount(): number {
    return this.groupCommit.syncCount;
  }

  /** True after an fsync failed: the log takes no more appends (Kafka takes the log dir offline). */
  get isOffline(): boolean {
    return this.groupCommit.error !== null;
  }

  /**
   * Leader append: gives the records offsets from the LEO on (one batch) and writes them. Records without
   * a timestamp get the append time. Throws CohortError: INVALID_RECORD (no records, or a keyless record
   * in a compacted log), INVALID_TIMESTAMP, MESSAGE_TOO_LARGE (batch > maxMessageBytes),
   * RECORD_LIST_TOO_LARGE (batch > segmentBytes).
   *
   * `isAcknowledged` false (a producer's acks=0: nobody waits for the append) never asks for an fsync of
   * its own: its records count toward `flushMessages` and become durable with the next fsync (an
   * acknowledged append's, the flush interval's, an explicit flush, or close). Fire-and-forget producers
   * would otherwise cost an fsync per request without anyone gaining a guarantee from it.
   *
   * `leaderEpoch` is the epoch of the leader appending (Kafka's partitionLeaderEpoch), stored in the batch;
   * a new one adds an entry to `leaderEpochCache`. One below the cache's latest (a leader that has been
   * replaced and does not know it yet) is refused before anything is written, as Kafka's
   * FENCED_LEADER_EPOCH. The default 0 is the epoch of a partition that never changed leader.
   *
   * `receivedBatchBytes` is the size of the batch as its producer sent it (a Kafka producer's, compressed):
   * given, it is what maxMessageBytes bounds, as Kafka checks the batch it received, so a compressed batch
   * within the limit is taken whatever it decompresses to (segmentBytes still bounds what is stored).
   * Absent, the batch as stored is checked.
   */
  append(
    records: readonly SimpleRecord[],
    isAcknowledged = true,
    leaderEpoch = 0,
    receivedBatchBytes?: number,
  ): LogAppendInfo {
    this.ensureWritable();
    if (records.length === 0)
      throw new CohortError(ErrorCode.INVALID_RECORD, 'an append needs at least one record');
    const latestEpoch = this.leaderEpochCache.latestEpoch();
    if (leaderEpoch < latestEpoch) {
      // A deposed leader's append: refused (the producer re-finds the leader) rather than stored out of order.
      throw new CohortError(
        ErrorCode.FENCED_LEADER_EPOCH,
        `leader epoch ${leaderEpoch} is below the log's latest epoch ${latestEpoch} (fenced leader epoch)`,
      );
    }
    this.checkKeys(records);
    const logAppendTimeMs = this.time.nowMs();
    const batch = RecordBatch.encode(records, {
      baseOffset: this.logEndOffset,
      defaultTimestampMs: logAppendTimeMs,
      partitionLeaderEpoch: leaderEpoch,
    });
    const checkedBytes = receivedBatchBytes ?? batch.sizeInBytes;
    if (checkedBytes > this.config.maxMessageBytes) {
      throw new CohortError(
        ErrorCode.MESSAGE_TOO_LARGE,
        `batch of ${checkedBytes} bytes exceeds maxMessageBytes ${this.config.maxMessageBytes}`,
      );
    }
    return this.appendBatch(batch, logAppendTimeMs, isAcknowledged);
  }

  /**
   * Follower append: stores records with the offsets the leader gave them (increasing, gaps allowed, the
   * first at or after the LEO) and the leader epochs they carry: consecutive records of one epoch go in
   * one batch, a change of epoch starts the next (and adds its entry to `leaderEpochCache`). Throws
   * CohortError INVALID_RECORD for records out of order, behind the LEO or with an impossible epoch,
   * RECORD_LIST_TOO_LARGE for a batch larger than a segment; nothing is written then.
   */
  appendAsFollower(records: readonly LogRecord[]): LogAppendInfo {
    this.ensureWritable();
    if (records.length === 0)
      throw new CohortError(ErrorCode.INVALID_RECORD, 'an append needs at least one record');
    const firstOffset = records[0]!.offset;
    if (!Number.isSafeInteger(firstOffset) || firstOffset < this.logEndOffset) {
      throw new CohortError(
        ErrorCode.INVALID_RECORD,
        `follower append starts at ${firstOffset}, below the log end offset ${this.logEndOffset}`,
      );
    }
    this.checkKeys(records);
    const batches = encodeByEpoch(records);
    const nowMs = this.time.nowMs();
    if (batches.length === 1) return this.appendBatch(batches[0]!, nowMs, true);
    for (const batch of batches) this.localLog.checkBatchFits(batch);
    let recordCount = 0;
    let maxTimestampMs = -1;
    let sizeInBytes = 0;
    let last: LogAppendInfo | undefined;
    for (let i = 0; i < batches.length; i++) {
      // Only the last asks for the flush: it covers every batch before it.
      last = this.appendBatch(batches[i]!, nowMs, i === batches.length - 1);
      recordCount += last.recordCount;
      maxTimestampMs = Math.max(maxTimestampMs, last.maxTimestampMs);
      sizeInBytes += last.sizeInBytes;
    }
    return { ...last!, firstOffset, recordCount, maxTimestampMs, sizeInBytes };
  }

  /**
   * Reads records from `fetchOffset` on: whole batches up to `maxBytes` in total, across segments, below
   * `maxOffset`. Throws CohortError OFFSET_OUT_OF_RANGE when fetchOffset is below the log start offset or
   * above the LEO, INVALID_FETCH_SIZE for a negative maxBytes, CORRUPT_MESSAGE for a batch failing its CRC.
   */
  read(fetchOffset: number, maxBytes: number, options: ReadOptions = {}): LogReadInfo {
    this.ensureOpen();
    return this.localLog.read(fetchOffset, maxBytes, options);
  }

  /**
   * Every batch below `endOffset`, oldest first, CRC-checked, for a replay of the whole log (the
   * `__consumer_offsets` load). Unlike `read`, which throws CORRUPT_MESSAGE at a bad batch, damage is
   * yielded as a CorruptRegion and the replay goes on with the next valid batch, so one bad batch cannot
   * hide every later one. The segments are the ones of the moment the replay starts.
   */
  *replayBatches(endOffset = this.logEndOffset): Generator<RecordBatch | CorruptRegion> {
    this.ensureOpen();
    yield* this.localLog.replayBatches(endOffset);
  }

  /** Where `offset` sits on disk (for DelayedFetch's byte accounting). OFFSET_OUT_OF_RANGE outside the log. */
  convertToOffsetMetadata(offset: number): LogOffsetMetadata {
    this.ensureOpen();
    return this.localLog.convertToOffsetMetadata(offset);
  }

  /** The first record whose timestamp is at or after `timestampMs` (Kafka's ListOffsets by time), or null. */
  offsetForTimestamp(timestampMs: number): TimestampAndOffset | null {
    this.ensureOpen();
    return this.localLog.offsetForTimestamp(timestampMs);
  }

  /**
   * Resolves once every record up to `offset` (default: the last one) is fsynced, sharing the fsync with
   * other waiters. Rejects if the fsync fails or truncation removes the offset first.
   */
  flush(offset = this.logEndOffset - 1): Promise<void> {
    if (this.isClosed) return Promise.reject(closedError(this.dir));
    if (offset >= this.logEndOffset) {
      return Promise.reject(
        new CohortError(
          ErrorCode.OFFSET_OUT_OF_RANGE,
          `cannot flush ${offset}: the log ends at ${this.logEndOffset}`,
        ),
      );
    }
    if (offset < 0) return RESOLVED;
    if (offset >= this.flushRequestedOffset) this.flushRequestedOffset = offset + 1;
    return this.groupCommit.request(offset);
  }

  /**
   * The time-based flush policy (Kafka's log flusher): flushes when unflushed data exists and the last
   * flush ended `flushIntervalMs` ago or more. The owner calls this periodically; null when not due.
   */
  maybeFlush(): Promise<void> | null {
    if (this.isClosed || this.isClosing || this.logEndOffset <= this.recoveryPoint) return null;
    if (this.time.monotonicMs() - this.lastFlushMonotonicMs < this.config.flushIntervalMs) return null;
    const flushed = this.flush();
    flushed.catch(ignore);
    return flushed;
  }

  /**
   * Applies retention to a `delete` log: drops the oldest segments whose newest record is older than
   * retentionMs, then the oldest while the log is larger than retentionBytes; never the active segment,
   * and, as Kafka, only segments wholly below `maxOffset` (the owner passes the high watermark, so
   * retention never removes records the in-sync followers or consumers have not been able to read).
   * Returns the number of segments deleted.
   */
  deleteOldSegments(maxOffset: number = Infinity): number {
    this.ensureOpen();
    if (this.config.cleanupPolicy !== 'delete') return 0;
    let deleted = 0;
    const { retentionMs, retentionBytes } = this.config;
    try {
      if (retentionMs >= 0) {
        const nowMs = this.time.nowMs();
        deleted += this.localLog.deleteOldest(
          maxOffset,
          (segment) => nowMs - segment.maxTimestampMs > retentionMs,
        );
      }
      if (retentionBytes >= 0) {
        let excessBytes = this.sizeInBytes - retentionBytes;
        deleted += this.localLog.deleteOldest(maxOffset, (segment) => {
          if (excessBytes - segment.sizeInBytes < 0) return false;
          excessBytes -= segment.sizeInBytes;
          return true;
        });
      }
    } finally {
      if (deleted > 0) {
        this.leaderEpochCache.truncateFromStart(this.logStartOffset);
        this.syncDirectorySoon();
      }
    }
    return deleted;
  }

  /**
   * Compacts a `compact` log: keeps the last record per key and drops tombstones in every segment but the
   * active one (see `log-cleaner.ts`). Runs in steps that yield to the event loop; a truncation or close
   * meanwhile aborts it. Concurrent calls share one run.
   *
   * With `maxOffset` (the owner passes the high watermark, as Kafka's cleaner stops at the last stable
   * offset) only segments wholly below it are cleaned: a record above the HW may still be truncated away
   * by a new leader, and the older records of its key must then still be there.
   */
  compact(maxOffset: number = Infinity): Promise<CompactionResult> {
    if (this.isClosed || this.isClosing) return Promise.reject(closedError(this.dir));
    if (this.config.cleanupPolicy !== 'compact') {
      return Promise.reject(
        new CohortError(
          ErrorCode.INVALID_CONFIG,
          `log ${this.dir} has cleanupPolicy ${this.config.cleanupPolicy}`,
        ),
      );
    }
    this.cleaning ??= this.runCompaction(maxOffset).finally(() => {
      this.cleaning = null;
    });
    return this.cleaning;
  }

  /**
   * Removes every record at or after `offset` (a follower diverging from its leader). The LEO becomes
   * `offset`, or less where compaction left a gap just below it. Below the log start offset it empties the
   * log and restarts it at `offset`. Waiters for removed offsets' flushes are rejected.
   */
  truncateTo(offset: number): void {
    this.ensureWritable();
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new CohortError(ErrorCode.OFFSET_OUT_OF_RANGE, `cannot truncate to ${offset}`);
    }
    if (offset >= this.logEndOffset) return;
    if (offset <= this.logStartOffset) {
      this.truncateFullyAndStartAt(offset);
      return;
    }
    this.lowerCheckpoint(offset);
    this.localLog.truncateTo(offset);
    // The LEO can end below `offset` (a compaction gap): nothing from it on is durable any more, and the
    // recovery point must come down to it too, or records appended there next would lie below the
    // checkpoint and a crash's open would take them as fsynced (not scanned, their epochs not rebuilt).
    this.lowerCheckpoint(this.logEndOffset);
    this.lowerFlushState(this.logEndOffset);
    this.lowerHighWatermarkCheckpoint(this.logEndOffset);
    // After the records: a crash in between leaves the cache ahead of the log, which the open trims.
    this.leaderEpochCache.truncateFromEnd(this.logEndOffset);
  }

  /** Deletes every segment and starts an empty log at `offset` (a follower whose offset is out of range). */
  truncateFullyAndStartAt(offset: number): void {
    this.ensureWritable();
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new CohortError(ErrorCode.OFFSET_OUT_OF_RANGE, `cannot restart the log at ${offset}`);
    }
    const oldStartOffset = this.logStartOffset;
    this.lowerCheckpoint(Math.min(offset, oldStartOffset));
    this.localLog.truncateFullyAndStartAt(offset);
    // Every old offset is gone, so every waiter for one is rejected.
    this.lowerFlushState(Math.min(offset, oldStartOffset));
    this.flushRequestedOffset = offset;
    this.leaderEpochCache.clear();
    this.lowerHighWatermarkCheckpoint(offset);
  }

  /** Waits for compaction and pending flushes, fsyncs what is left and closes every file. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.closeFiles();
    return this.closing;
  }

  private async closeFiles(): Promise<void> {
    this.isClosing = true;
    if (this.cleaning !== null) await this.cleaning.catch(ignore);
    if (!this.isOffline) await this.flush().catch(ignore);
    await this.groupCommit.idle();
    await this.checkpointing;
    await this.highWatermarkWriting?.catch(ignore);
    // Not needed for safety (the open repairs a stale file), but it spares the next open a replay, and no
    // write is left running in the directory after close.
    await this.leaderEpochCache.flush().catch(ignore);
    if (!this.isOffline && this.recoveryPoint >= this.logEndOffset) {
      // Everything is fsynced: the next open validates nothing (Kafka's clean-shutdown marker).
      const checkpoint = { recoveryPoint: this.logEndOffset, isCleanShutdown: true };
      const generation = this.checkpointGeneration;
      // The leader-epoch file first (see `maybeCheckpoint`): it then holds every entry, and the next open
      // replays no batch.
      await this.leaderEpochCache
        .flush()
        .then(() =>
          writeRecoveryCheckpoint(this.dir, checkpoint, () => generation === this.checkpointGeneration),
        )
        .then((isWritten) => {
          if (!isWritten) return;
          this.checkpointedRecoveryPoint = checkpoint.recoveryPoint;
          this.recoveryListener?.onCheckpoint?.(this.dir, checkpoint.recoveryPoint, true);
        })
        .catch((error: unknown) => this.recoveryListener?.onCheckpointError?.(this.dir, error));
    }
    this.isClosed = true;
    this.localLog.close();
  }

  private appendBatch(batch: RecordBatch, logAppendTimeMs: number, isAcknowledged: boolean): LogAppendInfo {
    this.localLog.append(batch);
    // In memory only, after the batch (a failed write adds no entry): the file follows before the next
    // recovery checkpoint (see `maybeCheckpoint`), and the open rebuilds what it lacks from the batches.
    this.leaderEpochCache.assign(batch.partitionLeaderEpoch, batch.baseOffset);
    const lastOffset = batch.lastOffset;
    let flushed: Promise<void> | null = null;
    const unflushedMessages = batch.nextOffset - Math.max(this.recoveryPoint, this.flushRequestedOffset);
    if (isAcknowledged && unflushedMessages >= this.config.flushMessages) {
      flushed = this.flush(lastOffset);
      // The caller may not await it (acks=0); a failure must not become an unhandled rejection.
      flushed.catch(ignore);
    }
    return {
      firstOffset: batch.baseOffset,
      lastOffset,
      recordCount: batch.recordCount,
      maxTimestampMs: batch.maxTimestampMs,
      logAppendTimeMs,
      logStartOffset: this.logStartOffset,
      sizeInBytes: batch.sizeInBytes,
      flushed,
    };
  }

  /** Writes the newest requested high watermark until the file holds it; one write at a time. */
  private async writeHighWatermarks(): Promise<void> {
    try {
      while (
        this.highWatermarkRequested !== undefined &&
        this.highWatermarkRequested !== this.highWatermarkOnDisk
      ) {
        const value = this.highWatermarkRequested;
        const generation = this.highWatermarkGeneration;
        const isWritten = await writeHighWatermarkCheckpoint(
          this.dir,
          value,
          () => generation === this.highWatermarkGeneration,
        );
        // Dropped: a truncation wrote a lower value meanwhile (and set what is requested now).
        if (isWritten) this.highWatermarkOnDisk = value;
      }
    } finally {
      this.highWatermarkWriting = null;
    }
  }

  /** The group commit's sync: the segments' fsync, then the time the flush interval counts from. */
  private async syncSegments(): Promise<number> {
    const target = await this.localLog.sync();
    this.lastFlushMonotonicMs = this.time.monotonicMs();
    return target;
  }

  /**
   * After a sync: checkpoints the recovery point when the sync covered a segment sealed since the last
   * checkpoint, or when the last one is a minute old. Off the event loop, one write at a time.
   */
  private maybeCheckpoint(): void {
    if (this.isClosing || this.isClosed || this.isOffline) return;
    const recoveryPoint = this.recoveryPoint;
    if (recoveryPoint <= this.checkpointedRecoveryPoint) return;
    const sealedEnd = this.localLog.activeSegment.baseOffset;
    const isSealedCovered = this.checkpointedRecoveryPoint < sealedEnd && recoveryPoint >= sealedEnd;
    const nowMs = this.time.monotonicMs();
    const isDue = nowMs - this.lastCheckpointMonotonicMs >= RECOVERY_POINT_CHECKPOINT_INTERVAL_MS;
    if (!isSealedCovered && !isDue) return;
    if (this.checkpointing !== null) {
      this.isCheckpointPending = true;
      return;
    }
    const generation = this.checkpointGeneration;
    this.lastCheckpointMonotonicMs = nowMs;
    // The leader-epoch file first: the open trusts its entries below the checkpointed recovery point.
    this.checkpointing = this.leaderEpochCache
      .flush()
      .then(() =>
        writeRecoveryCheckpoint(
          this.dir,
          { recoveryPoint, isCleanShutdown: false },
          () => generation === this.checkpointGeneration && !this.isClosed,
        ),
      )
      .then((isWritten) => {
        if (!isWritten) return;
        this.checkpointedRecoveryPoint = recoveryPoint;
        this.recoveryListener?.onCheckpoint?.(this.dir, recoveryPoint, false);
      })
      .catch((error: unknown) => this.recoveryListener?.onCheckpointError?.(this.dir, error))
      .finally(() => {
        this.checkpointing = null;
        if (this.isCheckpointPending) {
          this.isCheckpointPending = false;
          this.maybeCheckpoint();
        }
      });
  }

  /**
   * Before a truncation to `offset`: the checkpoint must not claim offsets that are about to be removed
   * and then written again, unflushed, by later appends (a crash would make those look damaged).
   * Synchronous, and it drops any asynchronous write in flight.
   */
  private lowerCheckpoint(offset: number): void {
    this.checkpointGeneration++;
    if (this.checkpointedRecoveryPoint <= offset) return;
    try {
      writeRecoveryCheckpointSync(this.dir, { recoveryPoint: offset, isCleanShutdown: false });
    } catch (error) {
      throw new CohortError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `cannot write ${recoveryCheckpointPath(this.dir)}`,
        { cause: error },
      );
    }
    this.checkpointedRecoveryPoint = offset;
  }

  /**
   * After a truncation to `offset`: the high-watermark checkpoint must not stay above it, or the records
   * appended there later (not committed yet) would count as committed after a crash. Rare (a follower
   * truncating below its checkpointed HW), synchronous, and it drops any asynchronous write in flight.
   */
  private lowerHighWatermarkCheckpoint(offset: number): void {
    this.highWatermarkGeneration++;
    if (this.highWatermarkRequested !== undefined && this.highWatermarkRequested > offset) {
      this.highWatermarkRequested = offset;
    }
    if (this.highWatermarkOnDisk === undefined || this.highWatermarkOnDisk <= offset) return;
    try {
      writeHighWatermarkCheckpointSync(this.dir, offset);
    } catch (error) {
      throw new CohortError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `cannot write ${highWatermarkCheckpointPath(this.dir)}`,
        { cause: error },
      );
    }
    this.highWatermarkOnDisk = offset;
  }

  private async runCompaction(maxOffset: number): Promise<CompactionResult> {
    const log = this.localLog;
    let cleanableCount = 0;
    while (
      cleanableCount < log.segments.length - 1 &&
      log.segments[cleanableCount + 1]!.baseOffset <= maxOffset
    ) {
      cleanableCount++;
    }
    const cleanable = log.segments.slice(0, cleanableCount);
    const segmentsBefore = log.segments.length;
    const bytesBefore = this.sizeInBytes;
    // The offset map describes every cleanable segment, so a change to any of them (not only to the group
    // being cleaned) makes it stale: a truncation could remove the record that made an older one obsolete.
    const tracked = new Map(cleanable.map((segment) => [segment, segment.sizeInBytes]));
    let recordsRemoved = 0;
    const result = (isAborted: boolean): CompactionResult => ({
      isAborted,
      segmentsBefore,
      segmentsAfter: log.segments.length,
      recordsRemoved,
      bytesBefore,
      bytesAfter: this.sizeInBytes,
    });
    const isIntact = (): boolean => {
      if (this.isClosing) return false;
      const present = new Set(log.segments);
      for (const [segment, size] of tracked) {
        if (segment.isClosed || !present.has(segment) || segment.sizeInBytes !== size) return false;
      }
      return true;
    };
    const pause = async (): Promise<boolean> => {
      await pauseImmediately();
      return isIntact();
    };
    if (cleanable.length === 0) return result(false);
    const offsetMap = await buildOffsetMap(cleanable, pause);
    if (offsetMap === null) return result(true);
    for (const group of groupSegmentsBySize(cleanable, this.config.segmentBytes)) {
      if (!isIntact()) return result(true);
      const cleaned = await cleanGroup(
        group,
        offsetMap,
        this.config.indexIntervalBytes,
        group[0]!.createdMonotonicMs,
        pause,
      );
      if (cleaned === null) return result(true);
      if (cleaned.recordsRemoved === 0 && group.length === 1 && cleaned.corruptRegions.length === 0) {
        cleaned.cleaned.close();
        cleaned.cleaned.deleteFiles();
        continue;
      }
      log.replaceSegments(group, cleaned.cleaned);
      for (const region of cleaned.corruptRegions) {
        // Damage read past by the cleaner is gone from the log now: reported as a recovery cut is.
        this.recoveryListener?.onTruncation?.({
          kind: 'corrupt',
          dir: this.dir,
          file: region.file,
          offset: region.offset,
          position: region.position,
          truncatedBytes: region.sizeInBytes,
          deletedFiles: [],
          recoveryPoint: this.checkpointedRecoveryPoint,
        });
      }
      for (const old of group) tracked.delete(old);
      tracked.set(cleaned.cleaned, cleaned.cleaned.sizeInBytes);
      recordsRemoved += cleaned.recordsRemoved;
    }
    return result(false);
  }

  /** A sync off the event loop for a change of the directory alone (segments deleted); failures, as any. */
  private syncDirectorySoon(): void {
    this.groupCommit.requestSync().catch(ignore);
  }

  private lowerFlushState(offset: number): void {
    if (offset < this.flushRequestedOffset) this.flushRequestedOffset = offset;
    this.groupCommit.lowerTo(offset, truncatedError(offset));
  }

  private checkKeys(records: readonly { readonly key?: Uint8Array | null }[]): void {
    if (this.config.cleanupPolicy !== 'compact') return;
    for (const record of records) {
      if (record.key === undefined || record.key === null) {
        throw new CohortError(ErrorCode.INVALID_RECORD, 'a compacted log needs a key on every record');
      }
    }
  }

  private ensureOpen(): void {
    if (this.isClosed) throw closedError(this.dir);
  }

  private ensureWritable(): void {
    if (this.isClosed || this.isClosing) throw closedError(this.dir);
    if (this.isOffline) {
      throw new CohortError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `log ${this.dir} is offline after an fsync failure`,
        {
          cause: this.groupCommit.error,
        },
      );
    }
  }
}

function closedError(dir: string): CohortError {
  return new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `log ${dir} is closed`);
}

function truncatedError(offset: number): CohortError {
  return new CohortError(
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    `records from offset ${offset} were truncated before they were flushed`,
  );
}

/**
 * A follower's records as batches: one per run of records with the same leader epoch. Offsets must
 * increase across the runs as within each (RecordBatch.encode checks within).
 */
function encodeByEpoch(records: readonly LogRecord[]): RecordBatch[] {
  const batches: RecordBatch[] = [];
  let start = 0;
  for (let i = 1; i <= records.length; i++) {
    const epoch = records[start]!.leaderEpoch;
    if (i < records.length && records[i]!.leaderEpoch === epoch) continue;
    if (start > 0 && !(records[start]!.offset > records[start - 1]!.offset)) {
      throw new CohortError(
        ErrorCode.INVALID_RECORD,
        `record offsets must increase; got ${records[start]!.offset} after ${records[start - 1]!.offset}`,
      );
    }
    // One run (the usual case): the records as they are, no copy.
    const run = start === 0 && i === records.length ? records : records.slice(start, i);
    batches.push(
      RecordBatch.encode(run, { baseOffset: records[start]!.offset, partitionLeaderEpoch: epoch }),
    );
    start = i;
  }
  return batches;
}

/**
 * The leader-epoch entries of a log at open. The file may be behind the log or ahead of it (its writes are
 * asynchronous, see `leader-epoch-cache.ts`), but every entry it holds below the checkpointed recovery
 * point `trustedBelow` is right, and it holds every entry starting there. So:
 *
 * - The file's entries below the recovery point are kept (the one covering the log start is moved to
 *   it); those at or above it are dropped, and the batches from the recovery point (capped to the log) to
 *   the end are replayed with follower semantics. That is the part of the log an unclean open validates
 *   anyway, and nothing after a clean shutdown (the recovery point is then the log end). When the recovery
 *   point is at or below the log start, nothing of the file is kept and the whole log is replayed: the
 *   whole log lies above the recovery point then, and recovery validated it all.
 * - No file: a data directory written before leader epochs (magic 1, no epoch below the recovery point),
 *   a new log, or a file lost. One batch tells them apart: the one just below the recovery point. Without
 *   an epoch there is nothing to find below it (epochs only ever start after magic-1 batches), so only the
 *   tail is replayed; with one, the file was lost, and the log is rebuilt as for a damaged file.
 * - A damaged file: the entries are rebuilt from every batch of the log, read once and CRC-checked (the
 *   cost of validating the whole log, paid only when the file cannot be read), and reported.
 *
 * When the entries differ from what the file says (after a crash, a replay or a rebuild changed them), the
 * file is rewritten before returning, so the open's own recovery checkpoint never covers a stale entry.
 */
function loadEpochEntries(
  dir: string,
  segments: readonly LogSegment[],
  trustedBelow: number,
  listener: LogRecoveryListener | undefined,
): readonly EpochEntry[] {
  const logStartOffset = segments[0]!.baseOffset;
  const logEndOffset = segments[segments.length - 1]!.nextOffset;
  const found = readLeaderEpochCheckpoint(dir);
  const replayFrom = Math.max(logStartOffset, Math.min(trustedBelow, logEndOffset));
  let rebuild: 'missing' | 'unreadable' | null = found === 'unreadable' ? 'unreadable' : null;
  if (
    found === null &&
    replayFrom > logStartOffset &&
    epochBefore(segments, replayFrom) !== UNDEFINED_EPOCH
  ) {
    rebuild = 'missing';
  }
  const onFile = rebuild === null ? ((found as EpochEntry[] | null) ?? []) : [];
  const asFileSays = new LeaderEpochCache(dir, onFile, () => logEndOffset);
  asFileSays.truncateFromStart(logStartOffset);
  const isKept = rebuild === null && trustedBelow > logStartOffset;
  const from = isKept ? replayFrom : logStartOffset;
  const cache = new LeaderEpochCache(
    dir,
    isKept ? onFile.filter((entry) => entry.startOffset < from) : [],
    () => logEndOffset,
  );
  cache.truncateFromStart(logStartOffset);
  for (const segment of segments.slice(segmentIndexIn(segments, from))) {
    const position = segment.baseOffset >= from ? 0 : segment.translateOffset(from);
    if (position < 0) continue;
    for (const item of segment.scanBatches(position)) {
      if (item instanceof RecordBatch) cache.assign(item.partitionLeaderEpoch, item.baseOffset, true);
    }
  }
  const entries = cache.epochEntries();
  if (rebuild !== null) {
    listener?.onLeaderEpochCacheRebuilt?.({
      dir,
      file: leaderEpochCheckpointPath(dir),
      reason: rebuild,
      entries: entries.length,
    });
  }
  if (rebuild !== null || !sameEntries(entries, asFileSays.epochEntries())) {
    try {
      cache.writeSync();
    } catch (error) {
      throw new CohortError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot write ${cache.file}`, { cause: error });
    }
  }
  return entries;
}

/** The leader epoch of the batch holding `offset - 1`; UNDEFINED_EPOCH when it has none. */
function epochBefore(segments: readonly LogSegment[], offset: number): number {
  const segment = segments[segmentIndexIn(segments, offset - 1)]!;
  const position = segment.translateOffset(offset - 1);
  if (position < 0) return UNDEFINED_EPOCH;
  for (const item of segment.scanBatches(position)) {
    // Damage where the batch should be: nothing known, so the caller rebuilds (0 is any epoch at all).
    return item instanceof RecordBatch ? item.partitionLeaderEpoch : 0;
  }
  return UNDEFINED_EPOCH;
}

function sameEntries(a: readonly EpochEntry[], b: readonly EpochEntry[]): boolean {
  return (
    a.length === b.length &&
    a.every((entry, i) => entry.epoch === b[i]!.epoch && entry.startOffset === b[i]!.startOffset)
  );
}

interface LoadedSegments {
  readonly segments: LogSegment[];
  /** The checkpoint found on open; null when there was none or it could not be read. */
  readonly checkpoint: RecoveryCheckpoint | null;
}

/**
 * Reads a partition directory: deletes `.cleaned` leftovers, completes `.swap`s, deletes index files
 * without a log, opens every segment (validating those the recovery point does not cover), cuts a torn
 * tail with every later segment, and refuses or cuts damage below the recovery point (see the class
 * comment). Nothing in a `.log` file is changed before the decision to refuse is taken.
 */
function loadSegments(
  dir: string,
  config: LogConfig,
  nowMs: number,
  recovery: LogRecoveryOptions,
): LoadedSegments {
  const interval = config.indexIntervalBytes;
  const listener = recovery.listener;
  const found = readRecoveryCheckpoint(dir);
  if (found === 'unreadable') listener?.onCheckpointUnreadable?.(dir, recoveryCheckpointPath(dir));
  const checkpoint = found === 'unreadable' ? null : found;
  let names = fs.readdirSync(dir);
  let isChanged = false;
  const remove = (name: string, reason?: LogFileRemovalReason): void => {
    const file = path.join(dir, name);
    if (reason !== undefined && fs.existsSync(file)) listener?.onFileRemoved?.(dir, file, reason);
    fs.rmSync(file, { force: true });
    isChanged = true;
  };
  for (const name of names) {
    if (parseSegmentFileName(name)?.state === CLEANED_FILE_SUFFIX) remove(name, 'unfinished_compaction');
  }
  const swaps = names
    .map(parseSegmentFileName)
    .filter((file) => file !== null && file.state === SWAP_FILE_SUFFIX && file.kind === LOG_FILE_SUFFIX)
    .map((file) => file!.baseOffset)
    .sort((a, b) => a - b);
  for (const baseOffset of swaps) {
    // The swap segment was fsynced before it was renamed to .swap: it is whole and it is the truth.
    const swap = LogSegment.open(dir, baseOffset, interval, nowMs, SWAP_FILE_SUFFIX);
    const end = swap.nextOffset;
    for (const name of fs.readdirSync(dir)) {
      const file = parseSegmentFileName(name);
      if (file !== null && file.state === '' && file.baseOffset >= baseOffset && file.baseOffset < end)
        remove(name, 'replaced_by_swap');
    }
    fsyncDirectorySync(dir);
    swap.renameTo('');
    swap.close();
    isChanged = true;
  }
  names = fs.readdirSync(dir);
  const logs = new Set<number>();
  for (const name of names) {
    const file = parseSegmentFileName(name);
    if (file === null) continue;
    if (file.state !== '') remove(name, 'leftover');
    else if (file.kind === LOG_FILE_SUFFIX) logs.add(file.baseOffset);
  }
  for (const name of names) {
    const file = parseSegmentFileName(name);
    if (file !== null && file.state === '' && file.kind === INDEX_FILE_SUFFIX && !logs.has(file.baseOffset)) {
      remove(name, 'orphan_index');
    }
  }
  const recoveryPoint = checkpoint?.recoveryPoint ?? null;
  const report = (
    kind: LogTruncationKind,
    segment: LogSegment,
    position: number,
    truncatedBytes: number,
    deletedFiles: readonly string[] = [],
  ): void => {
    listener?.onTruncation?.({
      kind,
      dir,
      file: segment.path,
      offset: segment.nextOffset,
      position,
      truncatedBytes,
      deletedFiles,
      recoveryPoint,
    });
  };
  const segments: LogSegment[] = [];
  const baseOffsets = [...logs].sort((a, b) => a - b);
  let isCutBelowRecoveryPoint = false;
  try {
    for (let i = 0; i < baseOffsets.length; i++) {
      const isLast = i === baseOffsets.length - 1;
      // After a clean shutdown nothing needs validating; after an unclean stop, what the recovery point
      // does not cover; without a checkpoint, everything.
      let mode: SegmentOpenMode = 'validate';
      if (checkpoint !== null) {
        const isCovered =
          checkpoint.isCleanShutdown || (!isLast && baseOffsets[i + 1]! <= checkpoint.recoveryPoint);
        if (isCovered) mode = 'load';
      }
      const segment = LogSegment.open(dir, baseOffsets[i]!, interval, nowMs, '', mode);
      segments.push(segment);
      if (segment.wasIndexMissing || segment.indexEntriesDropped > 0 || segment.indexEntriesAdded > 0) {
        listener?.onIndexRebuild?.({
          dir,
          file: segment.indexPath,
          wasMissing: segment.wasIndexMissing,
          droppedEntries: segment.indexEntriesDropped,
          addedEntries: segment.indexEntriesAdded,
        });
      }
      const previous = segments[segments.length - 2];
      if (previous !== undefined && previous.nextOffset > segment.baseOffset) {
        // Overlap cannot come from cohort's own writes; trust the older segment up to the newer one's start.
        const position = previous.translateOffset(segment.baseOffset);
        const bytes = previous.truncateTo(segment.baseOffset);
        report('overlap', previous, position, bytes);
      }
      const invalidBytes = segment.invalidTailBytes;
      if (invalidBytes > 0) {
        const lostOffset = segment.nextOffset;
        const position = segment.invalidTailPosition;
        // Fsynced data cannot be torn by a crash. Without a checkpoint, a sealed segment's data counts as
        // fsynced: every sync after its roll covered it.
        const isDamage = recoveryPoint === null ? !isLast : lostOffset < recoveryPoint;
        if (isDamage) {
          if (recovery.truncateCorruptLogs !== true) {
            throw new CorruptLogError(segment.path, lostOffset, position, invalidBytes, recoveryPoint);
          }
          const removedBytes = segment.removeInvalidRegions();
          isCutBelowRecoveryPoint = true;
          listener?.onTruncation?.({
            kind: 'corrupt',
            dir,
            file: segment.path,
            offset: lostOffset,
            position,
            truncatedBytes: removedBytes,
            deletedFiles: [],
            recoveryPoint,
          });
        } else {
          segment.cutInvalidTail();
          const deletedFiles: string[] = [];
          let deletedBytes = 0;
          for (const later of baseOffsets.slice(i + 1)) {
            for (const kind of [LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX] as const) {
              const file = segmentFilePath(dir, later, kind);
              if (kind === LOG_FILE_SUFFIX && fs.existsSync(file)) {
                deletedBytes += fs.statSync(file).size;
                deletedFiles.push(file);
              }
              remove(path.basename(file));
            }
          }
          report('torn_tail', segment, position, invalidBytes + deletedBytes, deletedFiles);
          break;
        }
      }
      if (segment.isEmpty && !isLast && invalidBytes === 0) {
        // An empty segment that is not the last holds no offsets: drop it rather than keep a hole.
        segments.pop();
        segment.close();
        listener?.onFileRemoved?.(dir, segment.path, 'empty_segment');
        segment.deleteFiles();
        isChanged = true;
      }
    }
    const last = segments[segments.length - 1];
    if (
      isCutBelowRecoveryPoint &&
      last !== undefined &&
      recoveryPoint !== null &&
      last.nextOffset < recoveryPoint
    ) {
      // Offsets up to the recovery point were handed out (and perhaps read): the log goes on after them.
      if (last.isEmpty) {
        segments.pop();
        last.close();
        last.deleteFiles();
      }
      segments.push(LogSegment.create(dir, recoveryPoint, interval, nowMs));
      isChanged = true;
    }
  } catch (error) {
    for (const segment of segments) segment.close();
    throw error;
  }
  if (isChanged) fsyncDirectorySync(dir);
  return { segments, checkpoint };
}
