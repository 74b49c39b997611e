import { CohortError, ErrorCode } from '../../errors';
import type { Time } from '../../time';
import { HighWatermarkCheckpointWriter } from './high-watermark-checkpoint';
import { MAX_KAFKA_LAYOUT_EPOCH } from './kafka-batch-layout';
import { type EpochEndOffset, type EpochEntry, LeaderEpochCache } from './leader-epoch-cache';
import { createLogConfig, type LogConfig } from './log-config';
import { cleanLog, type CompactionResult } from './log-cleaner';
import { LocalLog, type LogReadInfo, type ReadOptions } from './local-log';
import { LogFlusher } from './log-flusher';
import { type LoadedLog, loadLog } from './log-loader';
import type { LogOffsetMetadata } from './log-offset-metadata';
import type { LogRecord, SimpleRecord } from './log-record';
import type { LogRecoveryListener, LogRecoveryOptions } from './log-recovery';
import type { CorruptRegion, TimestampAndOffset } from './log-segment';
import { encodeByLeaderEpoch, RecordBatch } from './record-batch';
import { RecoveryCheckpointWriter } from './recovery-checkpoint';

/**
 * The durable log of one partition, in one directory, after Kafka's UnifiedLog: an ordered list of
 * segments (`local-log.ts`: the active segment takes appends, roll, read, truncate, delete) and what makes
 * them a replica's log: offsets and leader epochs, flushes, checkpoints, retention and compaction.
 *
 * - logStartOffset is the first segment's base offset; logEndOffset (LEO) the active segment's next
 *   offset. Offsets are assigned by the leader's `append` (LEO, LEO+1, ...) or given by the leader to a
 *   follower's `appendAsFollower`; compaction may leave gaps, never reorders.
 * - Writes and reads are synchronous page-cache operations, so each is atomic on the event loop. Only
 *   fsync is asynchronous, and `log-flusher.ts` decides when: under the default policy (`flushMessages`
 *   1) every append returns a `flushed` promise that settles after an fsync covering it, and appends that
 *   arrive together share that fsync.
 * - Retention (`deleteOldSegments`, called periodically by the owner) removes a prefix of segments
 *   whose newest record is older than `retentionMs`, then a prefix while the log exceeds
 *   `retentionBytes`. The active segment is never deleted.
 * - Compaction (`compact`) rewrites the non-active segments of a compacted log (see `log-cleaner.ts`) and
 *   swaps the result in with `.cleaned` → `.swap` → final renames.
 * - Recovery point (Kafka's recovery-point-offset-checkpoint): offsets below it are fsynced. It is kept
 *   in `recovery-checkpoint.ts`'s file, written crash-safely after a sync that covers a newly sealed
 *   segment, at most once a minute otherwise, below a truncation before it cuts, and at close with a
 *   clean-shutdown mark.
 * - Open (`log-loader.ts`): unfinished compactions are finished or undone, the part of the log the
 *   recovery point does not cover is validated, a torn tail is cut, and damage below the recovery point
 *   refuses the open (CorruptLogError) unless `truncateCorruptLogs` is set. Every repair is reported to
 *   the recovery listener.
 * - Leader epochs: every batch carries the epoch of the leader that assigned its offsets (`append`'s
 *   `leaderEpoch`, or each record's own on a follower), and `leaderEpochCache` (see `leader-epoch-cache.ts`)
 *   says where each epoch started, for OffsetForLeaderEpoch and a follower's truncation. It changes in
 *   memory; its file is written off the event loop before each recovery checkpoint, and the open rebuilds
 *   the entries at or above the recovery point from the batches (see `loadEpochEntries` in `log-loader.ts`).
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

export type { CompactionResult } from './log-cleaner';

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

export { RECOVERY_POINT_CHECKPOINT_INTERVAL_MS } from './recovery-checkpoint';

const RESOLVED: Promise<void> = Promise.resolve();
const ignore = (): void => undefined;

export class PartitionLog {
  readonly config: LogConfig;
  private readonly time: Time;
  private readonly localLog: LocalLog;
  private readonly flusher: LogFlusher;
  private cleaning: Promise<CompactionResult> | null = null;
  private closing: Promise<void> | null = null;
  private isClosing = false;
  private isClosed = false;
  private readonly recoveryListener: LogRecoveryListener | undefined;
  private readonly recoveryCheckpoint: RecoveryCheckpointWriter;
  /** Where each leader epoch started in this log; changed only by the log's appends and truncations. */
  readonly leaderEpochCache: LeaderEpochCache;
  private readonly highWatermarkCheckpoint: HighWatermarkCheckpointWriter;

  private constructor(
    readonly dir: string,
    config: LogConfig,
    time: Time,
    loaded: LoadedLog,
    recoveryListener: LogRecoveryListener | undefined,
  ) {
    const recoveryPoint = loaded.recoveryPoint;
    this.config = config;
    this.time = time;
    this.localLog = new LocalLog(dir, config, time, loaded.segments, () => this.flusher.syncDirectorySoon());
    this.recoveryListener = recoveryListener;
    const nowMs = time.monotonicMs();
    this.recoveryCheckpoint = new RecoveryCheckpointWriter(
      dir,
      time,
      recoveryPoint,
      nowMs,
      {
        recoveryPointState: () =>
          this.isClosing || this.isClosed || this.isOffline
            ? null
            : { recoveryPoint: this.recoveryPoint, sealedEndOffset: this.localLog.activeSegment.baseOffset },
        isClosed: () => this.isClosed,
        flushLeaderEpochs: () => this.leaderEpochCache.flush(),
      },
      recoveryListener,
    );
    this.flusher = new LogFlusher(this.localLog, time, recoveryPoint, nowMs, () =>
      this.recoveryCheckpoint.afterSync(),
    );
    this.leaderEpochCache = new LeaderEpochCache(
      dir,
      loaded.epochEntries,
      () => this.logEndOffset,
      (epoch, startOffset, latest) =>
        recoveryListener?.onNonMonotonicLeaderEpoch?.(dir, epoch, startOffset, latest.epoch),
    );
    this.highWatermarkCheckpoint = new HighWatermarkCheckpointWriter(dir, loaded.highWatermark);
  }

  /**
   * Opens (creating if needed) the log in `dir` and recovers it. Throws CorruptLogError when data below
   * the recovery point is damaged and `recovery.truncateCorruptLogs` is not set.
   */
  static open(dir: string, options: PartitionLogOptions): PartitionLog {
    const config = createLogConfig(options.config);
    const recovery = options.recovery ?? {};
    const loaded = loadLog(dir, config, options.time, recovery, options.syncDirectories ?? true);
    return new PartitionLog(dir, config, options.time, loaded, recovery.listener);
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
    const value = this.highWatermarkCheckpoint.written;
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
    return this.highWatermarkCheckpoint.write(highWatermark);
  }

  /** Offsets below this are known to be fsynced (Kafka's recovery point). */
  get recoveryPoint(): number {
    return this.flusher.flushedOffset;
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
    return this.flusher.syncCount;
  }

  /** True after an fsync failed: the log takes no more appends (Kafka takes the log dir offline). */
  get isOffline(): boolean {
    return this.flusher.error !== null;
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
    this.checkLeaderEpoch(leaderEpoch);
    this.checkKeys(records);
    const logAppendTimeMs = this.time.nowMs();
    const batch = RecordBatch.encode(records, {
      baseOffset: this.logEndOffset,
      defaultTimestampMs: logAppendTimeMs,
      partitionLeaderEpoch: leaderEpoch,
    });
    this.checkMessageBytes(receivedBatchBytes ?? batch.sizeInBytes);
    return this.appendBatch(batch, logAppendTimeMs, isAcknowledged);
  }

  /** A deposed leader's append is refused (the producer re-finds the leader) rather than stored out of order. */
  private checkLeaderEpoch(leaderEpoch: number): void {
    const latestEpoch = this.leaderEpochCache.latestEpoch();
    if (leaderEpoch < latestEpoch) {
      throw new CohortError(
        ErrorCode.FENCED_LEADER_EPOCH,
        `leader epoch ${leaderEpoch} is below the log's latest epoch ${latestEpoch} (fenced leader epoch)`,
      );
    }
  }

  private checkMessageBytes(checkedBytes: number): void {
    if (checkedBytes > this.config.maxMessageBytes) {
      throw new CohortError(
        ErrorCode.MESSAGE_TOO_LARGE,
        `batch of ${checkedBytes} bytes exceeds maxMessageBytes ${this.config.maxMessageBytes}`,
      );
    }
  }

  /**
   * Leader append of a Kafka client's batch as it came (`RecordBatch.fromClientBatch`), as Kafka appends
   * one: the batch gets its offsets from the LEO on and the leader's epoch written in place, and its bytes
   * are stored unchanged otherwise, its client's CRC-32C with them. The checks and errors are `append`'s
   * (the batch's timestamps are all set, so none is the append time); a leader epoch above
   * MAX_KAFKA_LAYOUT_EPOCH, which that layout cannot carry, stores the records in cohort's layout instead.
   */
  appendClientBatch(batch: RecordBatch, isAcknowledged = true, leaderEpoch = 0): LogAppendInfo {
    this.ensureWritable();
    if (leaderEpoch > MAX_KAFKA_LAYOUT_EPOCH) {
      // Without their offsets (the batch's own, from 0): the LEO gives them theirs.
      const records = batch
        .records()
        .map(({ timestampMs, key, value, headers }) => ({ timestampMs, key, value, headers }));
      return this.append(records, isAcknowledged, leaderEpoch, batch.sizeInBytes);
    }
    this.checkLeaderEpoch(leaderEpoch);
    if (this.config.cleanupPolicy === 'compact') this.checkKeys(batch.records());
    this.checkMessageBytes(batch.sizeInBytes);
    batch.assignOffsets(this.logEndOffset, leaderEpoch);
    return this.appendBatch(batch, this.time.nowMs(), isAcknowledged);
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
    const batches = encodeByLeaderEpoch(records);
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
    return this.flusher.request(offset);
  }

  /**
   * The time-based flush policy (Kafka's log flusher): flushes when unflushed data exists and the last
   * flush ended `flushIntervalMs` ago or more. The owner calls this periodically; null when not due.
   */
  maybeFlush(): Promise<void> | null {
    if (this.isClosed || this.isClosing || this.logEndOffset <= this.recoveryPoint) return null;
    if (!this.flusher.isIntervalElapsed()) return null;
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
        this.flusher.syncDirectorySoon();
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
    this.cleaning ??= cleanLog(
      this.localLog,
      maxOffset,
      () => this.isClosing,
      (region) => this.reportCleanedDamage(region),
    ).finally(() => {
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
    this.recoveryCheckpoint.lowerTo(offset);
    this.localLog.truncateTo(offset);
    // The LEO can end below `offset` (a compaction gap): nothing from it on is durable any more, and the
    // recovery point must come down to it too, or records appended there next would lie below the
    // checkpoint and a crash's open would take them as fsynced (not scanned, their epochs not rebuilt).
    this.recoveryCheckpoint.lowerTo(this.logEndOffset);
    this.flusher.lowerTo(this.logEndOffset);
    this.highWatermarkCheckpoint.lowerTo(this.logEndOffset);
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
    this.recoveryCheckpoint.lowerTo(Math.min(offset, oldStartOffset));
    this.localLog.truncateFullyAndStartAt(offset);
    // Every old offset is gone, so every waiter for one is rejected.
    this.flusher.lowerTo(Math.min(offset, oldStartOffset));
    this.flusher.restartAt(offset);
    this.leaderEpochCache.clear();
    this.highWatermarkCheckpoint.lowerTo(offset);
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
    await this.flusher.idle();
    await this.recoveryCheckpoint.idle();
    await this.highWatermarkCheckpoint.idle();
    // Not needed for safety (the open repairs a stale file), but it spares the next open a replay, and no
    // write is left running in the directory after close.
    await this.leaderEpochCache.flush().catch(ignore);
    if (!this.isOffline && this.recoveryPoint >= this.logEndOffset) {
      // Everything is fsynced: the next open validates nothing (Kafka's clean-shutdown marker).
      await this.recoveryCheckpoint.writeCleanShutdown(this.logEndOffset);
    }
    this.isClosed = true;
    this.localLog.close();
  }

  private appendBatch(batch: RecordBatch, logAppendTimeMs: number, isAcknowledged: boolean): LogAppendInfo {
    this.localLog.append(batch);
    // In memory only, after the batch (a failed write adds no entry): the file follows before the next
    // recovery checkpoint (see `RecoveryCheckpointWriter`), and the open rebuilds what it lacks from the
    // batches.
    this.leaderEpochCache.assign(batch.partitionLeaderEpoch, batch.baseOffset);
    const lastOffset = batch.lastOffset;
    let flushed: Promise<void> | null = null;
    if (this.flusher.isDueAfterAppend(batch.nextOffset, isAcknowledged)) {
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

  /** Damage the cleaner read past is gone from the log now: reported as a recovery cut is. */
  private reportCleanedDamage(region: CorruptRegion): void {
    this.recoveryListener?.onTruncation?.({
      kind: 'corrupt',
      dir: this.dir,
      file: region.file,
      offset: region.offset,
      position: region.position,
      truncatedBytes: region.sizeInBytes,
      deletedFiles: [],
      recoveryPoint: this.recoveryCheckpoint.checkpointed,
    });
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
          cause: this.flusher.error,
        },
      );
    }
  }
}

function closedError(dir: string): CohortError {
  return new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `log ${dir} is closed`);
}
