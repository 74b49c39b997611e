import { CohortError, ErrorCode } from '../../errors';
import type { Time } from '../../time';
import { fsyncDirectory, fsyncDirectorySync } from './file-io';
import type { LogConfig } from './log-config';
import type { LogOffsetMetadata } from './log-offset-metadata';
import type { LogRecord } from './log-record';
import { type CorruptRegion, LogSegment, type TimestampAndOffset } from './log-segment';
import { RecordBatch } from './record-batch';
import { SWAP_FILE_SUFFIX } from './segment-file-names';

export interface ReadOptions {
  /** Exclusive upper bound on returned offsets (the high watermark for consumers); default the LEO. */
  readonly maxOffset?: number;
  /** Return the first record even if its batch alone exceeds maxBytes (KIP-74); default true. */
  readonly minOneMessage?: boolean;
  /**
   * Decode the batches into `records` (default true). False leaves `records` empty for a reader that
   * hands the batches on (the Kafka door), so that a batch is not decoded for nothing.
   */
  readonly isDecoded?: boolean;
}

export interface LogReadInfo {
  /** Records at or after the fetch offset and below maxOffset, in offset order (none unless isDecoded). */
  readonly records: LogRecord[];
  /** The whole batches they came from (the first may start before the fetch offset). */
  readonly batches: readonly RecordBatch[];
  readonly sizeInBytes: number;
  /** Where a reader continues: after the last batch returned (skipping compaction gaps), capped at maxOffset. */
  readonly nextFetchOffset: number;
  readonly fetchOffsetMetadata: LogOffsetMetadata;
}

/**
 * The segments of one partition directory, after Kafka's LocalLog: an ordered list of segments (see
 * `log-segment.ts`), the last of which (the active segment) takes appends, and what is done to the list as
 * a whole: roll, read across segments, truncate, delete the oldest, replace a group by its cleaned copy,
 * and the fsync of what was written. When to fsync, what the offsets mean to replication, and what the
 * checkpoints hold are `PartitionLog`'s.
 *
 * - logStartOffset is the first segment's base offset; logEndOffset (LEO) the active segment's next
 *   offset. Compaction may leave gaps between offsets, never reorders them.
 * - Roll: a batch goes to a new segment (base = its first offset) when it would push the active one past
 *   `segmentBytes`, when the active one is older than `segmentMs`, or when its offsets no longer fit the
 *   active segment's 32-bit relative offsets.
 * - Writes and reads are synchronous page-cache operations, so each is atomic on the event loop. Only
 *   `sync` is asynchronous: it fsyncs every segment written since the last one and, when files were
 *   created, renamed or deleted, the directory.
 * - A segment removed from the list (truncation, retention, compaction, an empty active segment replaced
 *   at a roll) loses its files at once, but is closed only once no running sync can be fsyncing its
 *   descriptor (`retire`).
 */
export class LocalLog {
  private segmentList: LogSegment[];
  /** Segments removed from the log while a sync may still fsync them: closed once it ends. */
  private retired: LogSegment[] = [];
  private isSyncing = false;
  private isDirectoryDirty: boolean;

  /**
   * @param requestDirectorySync asks for a sync soon after a truncation deleted segment files, so that
   *   their unlinks become durable without waiting for the next append's flush.
   */
  constructor(
    readonly dir: string,
    readonly config: LogConfig,
    private readonly time: Time,
    segments: LogSegment[],
    private readonly requestDirectorySync: () => void,
  ) {
    this.segmentList = segments;
    // Recovered data may sit only in the page cache (the process, not the machine, crashed): the first
    // sync fsyncs every segment and the directory before anything new is reported durable.
    this.isDirectoryDirty = true;
  }

  /** The segments, oldest first; the last is the active one. */
  get segments(): readonly LogSegment[] {
    return this.segmentList;
  }

  get activeSegment(): LogSegment {
    return this.segmentList[this.segmentList.length - 1]!;
  }

  get logStartOffset(): number {
    return this.segmentList[0]!.baseOffset;
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

  get sizeInBytes(): number {
    let size = 0;
    for (const segment of this.segmentList) size += segment.sizeInBytes;
    return size;
  }

  /** RECORD_LIST_TOO_LARGE for a batch that no segment could hold. */
  checkBatchFits(batch: RecordBatch): void {
    if (batch.sizeInBytes > this.config.segmentBytes) {
      throw new CohortError(
        ErrorCode.RECORD_LIST_TOO_LARGE,
        `batch of ${batch.sizeInBytes} bytes exceeds segmentBytes ${this.config.segmentBytes}`,
      );
    }
  }

  /** Writes `batch` at the log end, in a new segment when the active one must roll first. */
  append(batch: RecordBatch): void {
    this.checkBatchFits(batch);
    this.maybeRoll(batch);
    this.activeSegment.append(batch);
  }

  /** See `PartitionLog.read`. */
  read(fetchOffset: number, maxBytes: number, options: ReadOptions): LogReadInfo {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
      throw new CohortError(
        ErrorCode.INVALID_FETCH_SIZE,
        `maxBytes must be a non-negative integer, got ${maxBytes}`,
      );
    }
    this.checkOffsetInRange(fetchOffset);
    const maxOffset = Math.min(options.maxOffset ?? this.logEndOffset, this.logEndOffset);
    const minOneMessage = options.minOneMessage ?? true;
    const isDecoded = options.isDecoded ?? true;
    const records: LogRecord[] = [];
    let hasRecord = false;
    const batches: RecordBatch[] = [];
    let fetchOffsetMetadata: LogOffsetMetadata | null = null;
    let sizeInBytes = 0;
    let offset = fetchOffset;
    let segmentIndex = this.segmentIndexFor(fetchOffset);
    while (offset < maxOffset && segmentIndex < this.segmentList.length) {
      const segment = this.segmentList[segmentIndex]!;
      if (offset >= segment.nextOffset) {
        segmentIndex++;
        continue;
      }
      // Keep taking a batch past the budget until a record is returned: a run of batches emptied by
      // compaction must not leave a reader refetching the same offset forever.
      const mustTakeOne = minOneMessage && !hasRecord;
      const read = segment.read(offset, maxBytes - sizeInBytes, maxOffset, mustTakeOne);
      if (read.batches.length === 0) break;
      fetchOffsetMetadata ??= {
        messageOffset: fetchOffset,
        segmentBaseOffset: segment.baseOffset,
        relativePositionInSegment: read.firstPosition,
      };
      for (const batch of read.batches) {
        batches.push(batch);
        if (!isDecoded) {
          hasRecord ||= hasRecordIn(batch, fetchOffset, maxOffset);
          continue;
        }
        for (const record of batch.records()) {
          if (record.offset >= fetchOffset && record.offset < maxOffset) records.push(record);
        }
        hasRecord = records.length > 0;
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

  /** See `PartitionLog.replayBatches`. */
  *replayBatches(endOffset: number): Generator<RecordBatch | CorruptRegion> {
    for (const segment of [...this.segmentList]) {
      if (segment.baseOffset >= endOffset) return;
      for (const item of segment.scanBatches()) {
        if (item instanceof RecordBatch && item.baseOffset >= endOffset) return;
        yield item;
      }
    }
  }

  /** See `PartitionLog.convertToOffsetMetadata`. */
  convertToOffsetMetadata(offset: number): LogOffsetMetadata {
    this.checkOffsetInRange(offset);
    if (offset === this.logEndOffset) return this.logEndOffsetMetadata;
    for (let i = this.segmentIndexFor(offset); i < this.segmentList.length; i++) {
      const segment = this.segmentList[i]!;
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

  /** See `PartitionLog.offsetForTimestamp`. */
  offsetForTimestamp(timestampMs: number): TimestampAndOffset | null {
    for (const segment of this.segmentList) {
      if (segment.maxTimestampMs < timestampMs) continue;
      const found = segment.findOffsetByTimestamp(timestampMs);
      if (found !== null) return found;
    }
    return null;
  }

  /**
   * Removes every record at or after `offset`, which lies above the log start: the segments starting there
   * or later go, newest first, so that a crash part-way leaves a prefix of the log; the one holding it is
   * cut. The LEO can end below `offset` where compaction left a gap.
   */
  truncateTo(offset: number): void {
    const segmentsBefore = this.segmentList.length;
    while (this.activeSegment.baseOffset >= offset) {
      this.retire(this.segmentList.pop()!);
    }
    if (this.segmentList.length < segmentsBefore) this.requestDirectorySync();
    this.activeSegment.truncateTo(offset);
  }

  /** Deletes every segment and starts an empty log at `offset`. */
  truncateFullyAndStartAt(offset: number): void {
    const old = this.segmentList;
    // The new segment exists before the old ones go: a crash in between leaves either the old log or a
    // log that restarts at `offset`, never an empty directory that would restart at 0.
    const fresh = LogSegment.create(
      this.dir,
      offset,
      this.config.indexIntervalBytes,
      this.time.monotonicMs(),
    );
    fsyncDirectorySync(this.dir);
    this.segmentList = [fresh];
    for (let i = old.length - 1; i >= 0; i--) {
      if (old[i]!.baseOffset !== offset) this.retire(old[i]!);
      else this.retireWithoutDeleting(old[i]!);
    }
    this.requestDirectorySync();
  }

  /**
   * Deletes the oldest segments while `isDeletable` holds and the next segment starts at or below
   * maxOffset; never the active segment. Returns how many went. Retention runs it once per rule and asks
   * for the directory sync itself, once for all of them.
   */
  deleteOldest(maxOffset: number, isDeletable: (segment: LogSegment) => boolean): number {
    let deleted = 0;
    while (
      this.segmentList.length > 1 &&
      this.segmentList[1]!.baseOffset <= maxOffset &&
      isDeletable(this.segmentList[0]!)
    ) {
      this.retire(this.segmentList.shift()!);
      deleted++;
    }
    return deleted;
  }

  /**
   * Replaces `group` (consecutive segments of the log) by its cleaned segment, written as `.cleaned` (see
   * `log-cleaner.ts`). Synchronous, so nothing interleaves; each rename is made durable before the step
   * after it, which is what lets the open (`log-loader.ts`) finish or undo a crashed swap.
   */
  replaceSegments(group: readonly LogSegment[], cleaned: LogSegment): void {
    cleaned.renameTo(SWAP_FILE_SUFFIX);
    fsyncDirectorySync(this.dir);
    for (const old of group) old.deleteFiles();
    cleaned.renameTo('');
    fsyncDirectorySync(this.dir);
    const at = this.segmentList.indexOf(group[0]!);
    this.segmentList.splice(at, group.length, cleaned);
    for (const old of group) this.retireWithoutDeleting(old);
  }

  /**
   * Fsyncs every segment written since the last sync (and the directory when files changed) and resolves
   * with the offset below which the log is now durable: the LEO when it began. One at a time (the group
   * commit's sync). A failure is a KAFKA_STORAGE_ERROR: the log is offline.
   */
  async sync(): Promise<number> {
    const target = this.logEndOffset;
    const dirty = this.segmentList.filter((segment) => segment.isDirty);
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
    return target;
  }

  /** Closes every file (the caller has let the last sync end). */
  close(): void {
    for (const segment of this.segmentList) segment.close();
    for (const segment of this.retired) segment.close();
    this.retired = [];
  }

  /** OFFSET_OUT_OF_RANGE unless `offset` lies in [logStartOffset, logEndOffset]. */
  checkOffsetInRange(offset: number): void {
    if (!Number.isSafeInteger(offset) || offset < this.logStartOffset || offset > this.logEndOffset) {
      throw new CohortError(
        ErrorCode.OFFSET_OUT_OF_RANGE,
        `offset ${offset} is outside the log [${this.logStartOffset}, ${this.logEndOffset}]`,
      );
    }
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
      this.segmentList[this.segmentList.length - 1] = fresh;
      if (active.baseOffset !== fresh.baseOffset) this.retire(active);
      else this.retireWithoutDeleting(active);
    } else {
      active.releaseTail();
      this.segmentList.push(fresh);
    }
  }

  /**
   * Removes a segment's files now; closes it once no sync can be using its descriptors. The unlink is made
   * durable by the next sync's directory fsync (`requestDirectorySync`, or the next append's flush): before
   * it, a power loss could bring the segment back (records a truncation removed, or retention deleted).
   */
  private retire(segment: LogSegment): void {
    segment.deleteFiles();
    this.isDirectoryDirty = true;
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

  /** The last segment whose base offset is at or below `offset` (0 when it precedes them all). */
  private segmentIndexFor(offset: number): number {
    return segmentIndexIn(this.segmentList, offset);
  }
}

/** The last segment whose base offset is at or below `offset` (0 when it precedes them all). */
export function segmentIndexIn(segments: readonly LogSegment[], offset: number): number {
  let low = 0;
  let high = segments.length - 1;
  let found = 0;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    if (segments[mid]!.baseOffset <= offset) {
      found = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  return found;
}

/** Whether `batch` holds a record in [fromOffset, maxOffset), from its header when it has no gaps. */
function hasRecordIn(batch: RecordBatch, fromOffset: number, maxOffset: number): boolean {
  if (batch.recordCount === 0 || batch.lastOffset < fromOffset || batch.baseOffset >= maxOffset) return false;
  if (batch.recordCount === batch.lastOffsetDelta + 1) return true;
  return batch.records().some((record) => record.offset >= fromOffset && record.offset < maxOffset);
}
