import * as fs from 'node:fs';
import * as path from 'node:path';
import { CohortError, ErrorCode } from '../../errors';
import type { Time } from '../../time';
import { ensureDirectory, fsyncDirectory, fsyncDirectorySync } from './file-io';
import { GroupCommit } from './group-commit';
import { createLogConfig, type LogConfig } from './log-config';
import { buildOffsetMap, cleanGroup, groupSegmentsBySize } from './log-cleaner';
import type { LogOffsetMetadata } from './log-offset-metadata';
import type { LogRecord, SimpleRecord } from './log-record';
import { LogSegment, type TimestampAndOffset } from './log-segment';
import { RecordBatch } from './record-batch';
import {
  CLEANED_FILE_SUFFIX,
  INDEX_FILE_SUFFIX,
  LOG_FILE_SUFFIX,
  SWAP_FILE_SUFFIX,
  parseSegmentFileName,
  segmentFilePath,
} from './segment-file-names';

/**
 * The durable log of one partition, in one directory, after Kafka's UnifiedLog/LocalLog: an ordered list
 * of segments (see `log-segment.ts`), the last of which (the active segment) takes appends.
 *
 * - logStartOffset is the first segment's base offset; logEndOffset (LEO) the active segment's next
 *   offset. Offsets are assigned by the leader's `append` (LEO, LEO+1, ...) or given by the leader to a
 *   follower's `appendAsFollower`; compaction may leave gaps, never reorders.
 * - Roll: a batch goes to a new segment (base = its first offset) when it would push the active one past
 *   `segmentBytes`, when the active one is older than `segmentMs`, or when its offsets no longer fit the
 *   active segment's 32-bit relative offsets.
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
 * - Open: leftover `.cleaned` files are deleted; `.swap` files complete their swap (the segments whose
 *   base offsets lie in the swap segment's range go, the suffix is dropped); each segment recovers its
 *   tail (see `log-segment.ts`). If a segment that is not the last lost bytes, every later segment is
 *   deleted too, as Kafka does: what follows a torn write was never acknowledged (it would have needed
 *   the same fsync) and keeping it would punch a hole in the log.
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

export interface ReadOptions {
  /** Exclusive upper bound on returned offsets (the high watermark for consumers); default the LEO. */
  readonly maxOffset?: number;
  /** Return the first record even if its batch alone exceeds maxBytes (KIP-74); default true. */
  readonly minOneMessage?: boolean;
}

export interface LogReadInfo {
  /** Records at or after the fetch offset and below maxOffset, in offset order. */
  readonly records: LogRecord[];
  /** The whole batches they came from (the first may start before the fetch offset). */
  readonly batches: readonly RecordBatch[];
  readonly sizeInBytes: number;
  /** Where a reader continues: after the last batch returned (skipping compaction gaps), capped at maxOffset. */
  readonly nextFetchOffset: number;
  readonly fetchOffsetMetadata: LogOffsetMetadata;
}

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
  /**
   * False: `open` makes no directory durable itself (no fsync on the event loop). The caller then fsyncs
   * the parent of a directory `open` created before the log takes an acknowledged append (CreateTopics
   * does it once for all its partitions); the log's own first flush fsyncs its directory, as always.
   * Default true.
   */
  readonly syncDirectories?: boolean;
}

const RESOLVED: Promise<void> = Promise.resolve();
const ignore = (): void => undefined;
const pauseImmediately = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class PartitionLog {
  readonly config: LogConfig;
  private readonly time: Time;
  private segments: LogSegment[];
  private readonly groupCommit: GroupCommit;
  /** Segments removed from the log while a sync may still fsync them: closed once it ends. */
  private retired: LogSegment[] = [];
  private isSyncing = false;
  private isDirectoryDirty: boolean;
  /** Exclusive: offsets below it have been handed to the group commit by the flush policy. */
  private flushRequestedOffset: number;
  private lastFlushMonotonicMs: number;
  private cleaning: Promise<CompactionResult> | null = null;
  private closing: Promise<void> | null = null;
  private isClosing = false;
  private isClosed = false;

  private constructor(
    readonly dir: string,
    config: LogConfig,
    time: Time,
    segments: LogSegment[],
  ) {
    this.config = config;
    this.time = time;
    this.segments = segments;
    // Recovered data may sit only in the page cache (the process, not the machine, crashed): the first
    // flush fsyncs every segment and the directory before anything new is reported durable.
    this.isDirectoryDirty = true;
    this.flushRequestedOffset = this.logEndOffset;
    this.lastFlushMonotonicMs = time.monotonicMs();
    this.groupCommit = new GroupCommit(() => this.syncSegments(), this.logEndOffset);
  }

  /** Opens (creating if needed) the log in `dir` and recovers it. */
  static open(dir: string, options: PartitionLogOptions): PartitionLog {
    const config = createLogConfig(options.config);
    const time = options.time;
    const syncDirectories = options.syncDirectories ?? true;
    if (syncDirectories) ensureDirectory(dir);
    else fs.mkdirSync(dir, { recursive: true });
    const nowMs = time.monotonicMs();
    const segments = loadSegments(dir, config, nowMs);
    if (segments.length === 0) {
      segments.push(LogSegment.create(dir, 0, config.indexIntervalBytes, nowMs));
      if (syncDirectories) fsyncDirectorySync(dir);
    }
    return new PartitionLog(dir, config, time, segments);
  }

  get logStartOffset(): number {
    return this.segments[0]!.baseOffset;
  }

  get logEndOffset(): number {
    return this.activeSegment.nextOffset;
  }

  get logEndOffsetMetadata(): LogOffsetMetadata {
    const active = this.activeSegment;
    return {
      messageOffset: active.nextOffset,
      segmentBaseOffset: active.baseOffset,
      relativePositionInSegment: active.sizeInBytes,
    };
  }

  /** Offsets below this are known to be fsynced (Kafka's recovery point). */
  get recoveryPoint(): number {
    return this.groupCommit.flushedOffset;
  }

  get sizeInBytes(): number {
    let size = 0;
    for (const segment of this.segments) size += segment.sizeInBytes;
    return size;
  }

  get numberOfSegments(): number {
    return this.segments.length;
  }

  /** Base offsets of the segments, oldest first. */
  segmentBaseOffsets(): number[] {
    return this.segments.map((segment) => segment.baseOffset);
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
   */
  append(records: readonly SimpleRecord[], isAcknowledged = true): LogAppendInfo {
    this.ensureWritable();
    if (records.length === 0)
      throw new CohortError(ErrorCode.INVALID_RECORD, 'an append needs at least one record');
    this.checkKeys(records);
    const logAppendTimeMs = this.time.nowMs();
    const batch = RecordBatch.encode(records, {
      baseOffset: this.logEndOffset,
      defaultTimestampMs: logAppendTimeMs,
    });
    if (batch.sizeInBytes > this.config.maxMessageBytes) {
      throw new CohortError(
        ErrorCode.MESSAGE_TOO_LARGE,
        `batch of ${batch.sizeInBytes} bytes exceeds maxMessageBytes ${this.config.maxMessageBytes}`,
      );
    }
    return this.appendBatch(batch, logAppendTimeMs, isAcknowledged);
  }

  /**
   * Follower append: stores records with the offsets the leader gave them (increasing, gaps allowed, the
   * first at or after the LEO). Throws CohortError INVALID_RECORD for records out of order or behind the
   * LEO, RECORD_LIST_TOO_LARGE for a batch larger than a segment.
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
    const batch = RecordBatch.encode(records, { baseOffset: firstOffset });
    return this.appendBatch(batch, this.time.nowMs(), true);
  }

  /**
   * Reads records from `fetchOffset` on: whole batches up to `maxBytes` in total, across segments, below
   * `maxOffset`. Throws CohortError OFFSET_OUT_OF_RANGE when fetchOffset is below the log start offset or
   * above the LEO, INVALID_FETCH_SIZE for a negative maxBytes, CORRUPT_MESSAGE for a batch failing its CRC.
   */
  read(fetchOffset: number, maxBytes: number, options: ReadOptions = {}): LogReadInfo {
    this.ensureOpen();
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new CohortError(
        ErrorCode.INVALID_FETCH_SIZE,
        `maxBytes must be a non-negative integer, got ${maxBytes}`,
      );
    }
    this.checkOffsetInRange(fetchOffset);
    const maxOffset = Math.min(options.maxOffset ?? this.logEndOffset, this.logEndOffset);
    const minOneMessage = options.minOneMessage ?? true;
    const records: LogRecord[] = [];
    const batches: RecordBatch[] = [];
    let fetchOffsetMetadata: LogOffsetMetadata | null = null;
    let sizeInBytes = 0;
    let offset = fetchOffset;
    let segmentIndex = this.segmentIndexFor(fetchOffset);
    while (offset < maxOffset && segmentIndex < this.segments.length) {
      const segment = this.segments[segmentIndex]!;
      if (offset >= segment.nextOffset) {
        segmentIndex++;
        continue;
      }
      // Keep taking a batch past the budget until a record is returned: a run of batches emptied by
      // compaction must not leave a reader refetching the same offset forever.
      const mustTakeOne = minOneMessage && records.length === 0;
      const read = segment.read(offset, maxBytes - sizeInBytes, maxOffset, mustTakeOne);
      if (read.batches.length === 0) break;
      fetchOffsetMetadata ??= {
        messageOffset: fetchOffset,
        segmentBaseOffset: segment.baseOffset,
        relativePositionInSegment: read.firstPosition,
      };
      for (const batch of read.batches) {
        batches.push(batch);
        for (const record of batch.records()) {
          if (record.offset >= fetchOffset && record.offset < maxOffset) records.push(record);
        }
      }
      sizeInBytes += read.sizeInBytes;
      offset = read.batches[read.batches.length - 1]!.nextOffset;
    }
    return {
      records,
      batches,
      sizeInBytes,
      nextFetchOffset: batches.length === 0 ? fetchOffset : Math.min(offset, maxOffset),
      fetchOffsetMetadata: fetchOffsetMetadata ?? this.convertToOffsetMetadata(fetchOffset),
    };
  }

  /** Where `offset` sits on disk (for DelayedFetch's byte accounting). OFFSET_OUT_OF_RANGE outside the log. */
  convertToOffsetMetadata(offset: number): LogOffsetMetadata {
    this.ensureOpen();
    this.checkOffsetInRange(offset);
    if (offset === this.logEndOffset) return this.logEndOffsetMetadata;
    for (let i = this.segmentIndexFor(offset); i < this.segments.length; i++) {
      const segment = this.segments[i]!;
      const position = segment.translateOffset(offset);
      if (position >= 0) {
        return {
          messageOffset: offset,
          segmentBaseOffset: segment.baseOffset,
          relativePositionInSegment: position,
        };
      }
    }
    return this.logEndOffsetMetadata;
  }

  /** The first record whose timestamp is at or after `timestampMs` (Kafka's ListOffsets by time), or null. */
  offsetForTimestamp(timestampMs: number): TimestampAndOffset | null {
    this.ensureOpen();
    for (const segment of this.segments) {
      if (segment.maxTimestampMs < timestampMs) continue;
      const found = segment.findOffsetByTimestamp(timestampMs);
      if (found !== null) return found;
    }
    return null;
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
    if (retentionMs >= 0) {
      const nowMs = this.time.nowMs();
      deleted += this.deletePrefix(maxOffset, (segment) => nowMs - segment.maxTimestampMs > retentionMs);
    }
    if (retentionBytes >= 0) {
      let excessBytes = this.sizeInBytes - retentionBytes;
      deleted += this.deletePrefix(maxOffset, (segment) => {
        if (excessBytes - segment.sizeInBytes < 0) return false;
        excessBytes -= segment.sizeInBytes;
        return true;
      });
    }
    return deleted;
  }

  /**
   * Compacts a `compact` log: keeps the last record per key and drops tombstones in every segment but the
   * active one (see `log-cleaner.ts`). Runs in steps that yield to the event loop; a truncation or close
   * meanwhile aborts it. Concurrent calls share one run.
   */
  compact(): Promise<CompactionResult> {
    if (this.isClosed || this.isClosing) return Promise.reject(closedError(this.dir));
    if (this.config.cleanupPolicy !== 'compact') {
      return Promise.reject(
        new CohortError(
          ErrorCode.INVALID_CONFIG,
          `log ${this.dir} has cleanupPolicy ${this.config.cleanupPolicy}`,
        ),
      );
    }
    this.cleaning ??= this.runCompaction().finally(() => {
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
    // Newest first, so that a crash part-way leaves a prefix of the log.
    while (this.activeSegment.baseOffset >= offset) {
      this.retire(this.segments.pop()!);
    }
    this.activeSegment.truncateTo(offset);
    // The LEO can end below `offset` (a compaction gap): nothing from it on is durable any more.
    this.lowerFlushState(this.logEndOffset);
  }

  /** Deletes every segment and starts an empty log at `offset` (a follower whose offset is out of range). */
  truncateFullyAndStartAt(offset: number): void {
    this.ensureWritable();
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new CohortError(ErrorCode.OFFSET_OUT_OF_RANGE, `cannot restart the log at ${offset}`);
    }
    const old = this.segments;
    // The new segment exists before the old ones go: a crash in between leaves either the old log or a
    // log that restarts at `offset`, never an empty directory that would restart at 0.
    const fresh = LogSegment.create(
      this.dir,
      offset,
      this.config.indexIntervalBytes,
      this.time.monotonicMs(),
    );
    fsyncDirectorySync(this.dir);
    this.segments = [fresh];
    for (let i = old.length - 1; i >= 0; i--) {
      if (old[i]!.baseOffset !== offset) this.retire(old[i]!);
      else this.retireWithoutDeleting(old[i]!);
    }
    // Every old offset is gone, so every waiter for one is rejected.
    this.lowerFlushState(Math.min(offset, old[0]!.baseOffset));
    this.flushRequestedOffset = offset;
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
    this.isClosed = true;
    for (const segment of this.segments) segment.close();
    for (const segment of this.retired) segment.close();
    this.retired = [];
  }

  private get activeSegment(): LogSegment {
    return this.segments[this.segments.length - 1]!;
  }

  private appendBatch(batch: RecordBatch, logAppendTimeMs: number, isAcknowledged: boolean): LogAppendInfo {
    if (batch.sizeInBytes > this.config.segmentBytes) {
      throw new CohortError(
        ErrorCode.RECORD_LIST_TOO_LARGE,
        `batch of ${batch.sizeInBytes} bytes exceeds segmentBytes ${this.config.segmentBytes}`,
      );
    }
    this.maybeRoll(batch);
    this.activeSegment.append(batch);
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

  private maybeRoll(batch: RecordBatch): void {
    const active = this.activeSegment;
    const nowMs = this.time.monotonicMs();
    const isFull = active.sizeInBytes + batch.sizeInBytes > this.config.segmentBytes;
    const isOld = nowMs - active.createdMonotonicMs >= this.config.segmentMs;
    const fitsOffsets = active.canHoldOffset(batch.lastOffset);
    if (active.isEmpty ? fitsOffsets : !isFull && !isOld && fitsOffsets) return;
    const fresh = LogSegment.create(this.dir, batch.baseOffset, this.config.indexIntervalBytes, nowMs);
    this.isDirectoryDirty = true;
    if (active.isEmpty) {
      // An empty active segment holds nothing: the new one replaces it instead of leaving an empty hole.
      this.segments[this.segments.length - 1] = fresh;
      if (active.baseOffset !== fresh.baseOffset) this.retire(active);
      else this.retireWithoutDeleting(active);
    } else {
      active.releaseTail();
      this.segments.push(fresh);
    }
  }

  /** The group commit's sync: fsync every dirty segment (and the directory when files changed). */
  private async syncSegments(): Promise<number> {
    const target = this.logEndOffset;
    const dirty = this.segments.filter((segment) => segment.isDirty);
    const isDirectoryDirty = this.isDirectoryDirty;
    this.isDirectoryDirty = false;
    this.isSyncing = true;
    try {
      await Promise.all(dirty.map((segment) => segment.flush()));
      if (isDirectoryDirty) await fsyncDirectory(this.dir);
    } catch (error) {
      throw new CohortError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        `fsync in ${this.dir} failed; the log is offline`,
        {
          cause: error,
        },
      );
    } finally {
      this.isSyncing = false;
      this.closeRetired();
    }
    this.lastFlushMonotonicMs = this.time.monotonicMs();
    return target;
  }

  /** Deletes the oldest segments while `isDeletable` holds and the next segment starts at or below maxOffset. */
  private deletePrefix(maxOffset: number, isDeletable: (segment: LogSegment) => boolean): number {
    let deleted = 0;
    while (
      this.segments.length > 1 &&
      this.segments[1]!.baseOffset <= maxOffset &&
      isDeletable(this.segments[0]!)
    ) {
      this.retire(this.segments.shift()!);
      deleted++;
    }
    return deleted;
  }

  private async runCompaction(): Promise<CompactionResult> {
    const cleanable = this.segments.slice(0, -1);
    const segmentsBefore = this.segments.length;
    const bytesBefore = this.sizeInBytes;
    // The offset map describes every cleanable segment, so a change to any of them (not only to the group
    // being cleaned) makes it stale: a truncation could remove the record that made an older one obsolete.
    const tracked = new Map(cleanable.map((segment) => [segment, segment.sizeInBytes]));
    let recordsRemoved = 0;
    const result = (isAborted: boolean): CompactionResult => ({
      isAborted,
      segmentsBefore,
      segmentsAfter: this.segments.length,
      recordsRemoved,
      bytesBefore,
      bytesAfter: this.sizeInBytes,
    });
    const isIntact = (): boolean => {
      if (this.isClosing) return false;
      const present = new Set(this.segments);
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
      if (cleaned.recordsRemoved === 0 && group.length === 1) {
        cleaned.cleaned.close();
        cleaned.cleaned.deleteFiles();
        continue;
      }
      this.swapIn(group, cleaned.cleaned);
      for (const old of group) tracked.delete(old);
      tracked.set(cleaned.cleaned, cleaned.cleaned.sizeInBytes);
      recordsRemoved += cleaned.recordsRemoved;
    }
    return result(false);
  }

  /**
   * Replaces `group` by its cleaned segment. Synchronous, so nothing interleaves; each rename is made
   * durable before the step after it, which is what lets `loadSegments` finish or undo a crashed swap.
   */
  private swapIn(group: readonly LogSegment[], cleaned: LogSegment): void {
    cleaned.renameTo(SWAP_FILE_SUFFIX);
    fsyncDirectorySync(this.dir);
    for (const old of group) old.deleteFiles();
    cleaned.renameTo('');
    fsyncDirectorySync(this.dir);
    const at = this.segments.indexOf(group[0]!);
    this.segments.splice(at, group.length, cleaned);
    for (const old of group) this.retireWithoutDeleting(old);
  }

  /** Removes a segment's files now; closes it once no sync can be using its descriptors. */
  private retire(segment: LogSegment): void {
    segment.deleteFiles();
    this.retireWithoutDeleting(segment);
  }

  private retireWithoutDeleting(segment: LogSegment): void {
    if (this.isSyncing) this.retired.push(segment);
    else segment.close();
  }

  private closeRetired(): void {
    for (const segment of this.retired) segment.close();
    this.retired = [];
  }

  private lowerFlushState(offset: number): void {
    if (offset < this.flushRequestedOffset) this.flushRequestedOffset = offset;
    this.groupCommit.lowerTo(offset, truncatedError(offset));
  }

  /** The last segment whose base offset is at or below `offset` (0 when it precedes them all). */
  private segmentIndexFor(offset: number): number {
    let low = 0;
    let high = this.segments.length - 1;
    let found = 0;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if (this.segments[mid]!.baseOffset <= offset) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    return found;
  }

  private checkOffsetInRange(offset: number): void {
    if (!Number.isSafeInteger(offset) || offset < this.logStartOffset || offset > this.logEndOffset) {
      throw new CohortError(
        ErrorCode.OFFSET_OUT_OF_RANGE,
        `offset ${offset} is outside the log [${this.logStartOffset}, ${this.logEndOffset}]`,
      );
    }
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
 * Reads a partition directory: deletes `.cleaned` leftovers, completes `.swap`s, deletes index files
 * without a log, opens and recovers every segment, and drops what follows a segment that lost its tail.
 */
function loadSegments(dir: string, config: LogConfig, nowMs: number): LogSegment[] {
  const interval = config.indexIntervalBytes;
  let names = fs.readdirSync(dir);
  let isChanged = false;
  const remove = (name: string): void => {
    fs.rmSync(path.join(dir, name), { force: true });
    isChanged = true;
  };
  for (const name of names) {
    if (parseSegmentFileName(name)?.state === CLEANED_FILE_SUFFIX) remove(name);
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
        remove(name);
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
    if (file.state !== '') remove(name);
    else if (file.kind === LOG_FILE_SUFFIX) logs.add(file.baseOffset);
  }
  for (const name of names) {
    const file = parseSegmentFileName(name);
    if (file !== null && file.state === '' && file.kind === INDEX_FILE_SUFFIX && !logs.has(file.baseOffset)) {
      remove(name);
    }
  }
  const segments: LogSegment[] = [];
  const baseOffsets = [...logs].sort((a, b) => a - b);
  for (let i = 0; i < baseOffsets.length; i++) {
    const segment = LogSegment.open(dir, baseOffsets[i]!, interval, nowMs);
    const previous = segments[segments.length - 1];
    if (previous !== undefined && previous.nextOffset > segment.baseOffset) {
      // Overlap cannot come from cohort's own writes; trust the older segment up to the newer one's start.
      previous.truncateTo(segment.baseOffset);
    }
    if (segment.isEmpty && i < baseOffsets.length - 1 && segment.truncatedOnOpenBytes === 0) {
      // An empty segment that is not the last holds no offsets: drop it rather than keep a hole.
      segment.close();
      segment.deleteFiles();
      isChanged = true;
      continue;
    }
    segments.push(segment);
    if (segment.truncatedOnOpenBytes > 0 && i < baseOffsets.length - 1) {
      for (const later of baseOffsets.slice(i + 1)) {
        remove(path.basename(segmentFilePath(dir, later, LOG_FILE_SUFFIX)));
        remove(path.basename(segmentFilePath(dir, later, INDEX_FILE_SUFFIX)));
      }
      break;
    }
  }
  if (isChanged) fsyncDirectorySync(dir);
  return segments;
}
