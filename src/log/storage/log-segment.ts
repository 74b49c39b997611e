import * as fs from 'node:fs';
import { CohortError, ErrorCode } from '../../errors';
import { fsyncAsync, readAt, writeFully } from './file-io';
import { isKafkaLayoutAt } from './kafka-batch-layout';
import { OffsetIndex } from './offset-index';
import {
  CORRUPT_BATCH,
  INCOMPLETE_BATCH,
  LOG_OVERHEAD,
  MAX_OFFSET_DELTA,
  RECORD_BATCH_V1_HEADER_BYTES,
  OFFSET_RANGE_PREFIX_BYTES,
  RecordBatch,
  checkBatchAt,
  lastOffsetAt,
} from './record-batch';
import {
  INDEX_FILE_SUFFIX,
  LOG_FILE_SUFFIX,
  segmentFilePath,
  type SegmentFileState,
} from './segment-file-names';

/**
 * One segment of a partition's log, after Kafka's LogSegment: an append-only `.log` file of record
 * batches (see `record-batch.ts`) and its sparse `.index` (see `offset-index.ts`), both named by the
 * segment's base offset. Every offset in the segment is at or above the base offset and below the next
 * segment's.
 *
 * Append: the batch is written at the end of the file; when more than `indexIntervalBytes` were written
 * since the last index entry, the batch also gets one (Kafka's rule, so entries are about an interval
 * apart and the first batch never needs one).
 *
 * Read by offset: the index gives the last indexed batch at or below the offset; batch headers are
 * scanned from there (read a chunk at a time, not one read per header) to the first batch whose last
 * offset reaches it; whole batches are read from that position on. The batch this process appended last
 * is also kept in memory while it is the segment's tail (up to TAIL_BATCH_MAX_BYTES): readers that
 * follow the log — a consumer woken by that append, a follower fetching at its LEO — get it without any
 * file read. Kafka leaves this to the page cache; here each read is a system call, and a woken long poll
 * would otherwise pay a dozen of them to find a batch it was just handed.
 *
 * Recovery of the tail (on every open, and after a truncation): the index is sanitized and its last
 * entry must point at a batch header carrying exactly its offset, else it is dropped. Batches are then
 * validated from that entry to the end of the file (size, magic, CRC, header invariants, increasing
 * offsets); the file is cut at the first batch that is torn or corrupt and the index entries past the
 * cut are dropped and rebuilt from the scan. If the entry's own batch is bad, the entry goes and the scan
 * restarts from the one before. Everything before the last good entry was fsynced before the entry was
 * (the log flushes before its index), so the scan is bounded by one index interval plus what was
 * appended since the index was last written.
 *
 * How much of that an open does is the caller's choice (`SegmentOpenMode`): `recover` validates and
 * cuts; `validate` validates and leaves the cut to the caller (the partition log decides whether the bad
 * bytes are a torn tail to cut or damage to refuse); `load`, for a segment wholly below the recovery point
 * (its data was fsynced), walks the same batches checking only their headers, and falls back to
 * `validate` when a header is wrong. Records of a loaded segment are CRC-checked when they are read.
 */
export type SegmentOpenMode = 'recover' | 'validate' | 'load';

const SCAN_CHUNK_BYTES = 1 << 20;
/**
 * Headers are looked for in reads of this size: the batch holding an offset starts less than one index
 * interval (4 KiB by default) plus one batch after the indexed position, so one read usually covers it.
 */
const HEADER_SCAN_CHUNK_BYTES = 8192;
/** Shared by every segment: reads are synchronous and the scan never yields, so no two scans overlap. */
const headerScanChunk = Buffer.allocUnsafe(HEADER_SCAN_CHUNK_BYTES);
/** The last appended batch is kept in memory only up to this size (one per partition's active segment). */
export const TAIL_BATCH_MAX_BYTES = 64 * 1024;
/** Enough of a header to find a batch's range, in either layout. */
const HEADER_PREFIX_BYTES = OFFSET_RANGE_PREFIX_BYTES;
const TWO_POW_32 = 0x1_0000_0000;

export interface SegmentReadResult {
  readonly batches: RecordBatch[];
  readonly sizeInBytes: number;
  /** Where the first returned batch starts in this segment's file (for LogOffsetMetadata). */
  readonly firstPosition: number;
}

/** Bytes of a segment that hold no valid batch, found by `scanBatches` and skipped. */
export interface CorruptRegion {
  readonly file: string;
  readonly position: number;
  readonly sizeInBytes: number;
  /** The first offset no valid batch before the region covers; the region held offsets from there. */
  readonly offset: number;
}

export interface TimestampAndOffset {
  readonly timestampMs: number;
  readonly offset: number;
}

export class LogSegment {
  private fd: number;
  private logPath: string;
  private readonly index: OffsetIndex;
  private size: number;
  private next: number;
  private maxTimestamp = -1;
  private bytesSinceLastIndexEntry = 0;
  private logDirty = false;
  private readonly headerScratch = Buffer.allocUnsafe(HEADER_PREFIX_BYTES);
  /**
   * The last batch appended by this process, while it is the last in the file (so it starts at
   * `size - tail.sizeInBytes`); null otherwise.
   */
  private tail: RecordBatch | null = null;
  /** Bytes cut off the tail when the segment was opened in `recover` mode (0 after a clean shutdown). */
  readonly truncatedOnOpenBytes: number;
  /** End of the last valid batch found by the open; bytes past it are the invalid tail until cut. */
  private validEnd: number;
  /** Whether the index file did not exist when the segment was opened (it was rebuilt from the log). */
  readonly wasIndexMissing: boolean;
  private readonly indexEntriesAtOpen: number;
  private droppedIndexEntries = 0;
  private addedIndexEntries = 0;

  private constructor(
    readonly dir: string,
    readonly baseOffset: number,
    private readonly indexIntervalBytes: number,
    /** Monotonic time the segment was created or opened; `segmentMs` rolls count from it. */
    readonly createdMonotonicMs: number,
    fd: number,
    logPath: string,
    index: OffsetIndex,
    mode: SegmentOpenMode | null,
    wasIndexMissing = false,
  ) {
    this.fd = fd;
    this.logPath = logPath;
    this.index = index;
    this.size = fs.fstatSync(fd).size;
    this.next = baseOffset;
    this.wasIndexMissing = wasIndexMissing;
    this.indexEntriesAtOpen = index.entries;
    this.validEnd = this.size;
    if (mode !== null) {
      this.validEnd = this.scanTail(mode !== 'load');
      // A header that cannot be right: find exactly where the valid batches end, CRCs included.
      if (mode === 'load' && this.validEnd < this.size) this.validEnd = this.scanTail(true);
    }
    this.truncatedOnOpenBytes = mode === 'recover' ? this.cutInvalidTail() : 0;
    // What an earlier process wrote may still be only in the page cache: the next flush must fsync it.
    // A loaded segment lies below the recovery point: it was fsynced.
    this.logDirty = mode !== null && mode !== 'load';
  }

  /** Creates an empty segment, replacing any files with its names. */
  static create(
    dir: string,
    baseOffset: number,
    indexIntervalBytes: number,
    createdMonotonicMs: number,
    state: SegmentFileState = '',
  ): LogSegment {
    const logPath = segmentFilePath(dir, baseOffset, LOG_FILE_SUFFIX, state);
    const fd = fs.openSync(logPath, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o644);
    try {
      const index = OffsetIndex.create(
        segmentFilePath(dir, baseOffset, INDEX_FILE_SUFFIX, state),
        baseOffset,
      );
      return new LogSegment(
        dir,
        baseOffset,
        indexIntervalBytes,
        createdMonotonicMs,
        fd,
        logPath,
        index,
        null,
      );
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
  }

  /** Opens an existing segment (a missing index is rebuilt) and checks its tail as `mode` says. */
  static open(
    dir: string,
    baseOffset: number,
    indexIntervalBytes: number,
    createdMonotonicMs: number,
    state: SegmentFileState = '',
    mode: SegmentOpenMode = 'recover',
  ): LogSegment {
    const logPath = segmentFilePath(dir, baseOffset, LOG_FILE_SUFFIX, state);
    const fd = fs.openSync(logPath, fs.constants.O_RDWR);
    let index: OffsetIndex | undefined;
    try {
      const indexPath = segmentFilePath(dir, baseOffset, INDEX_FILE_SUFFIX, state);
      const wasIndexMissing = !fs.existsSync(indexPath);
      index = OffsetIndex.open(indexPath, baseOffset);
      return new LogSegment(
        dir,
        baseOffset,
        indexIntervalBytes,
        createdMonotonicMs,
        fd,
        logPath,
        index,
        mode,
        wasIndexMissing,
      );
    } catch (error) {
      index?.close();
      fs.closeSync(fd);
      throw error;
    }
  }

  get path(): string {
    return this.logPath;
  }

  get indexPath(): string {
    return this.index.path;
  }

  get sizeInBytes(): number {
    return this.size;
  }

  /** The offset after the last batch, or the base offset when the segment is empty. */
  get nextOffset(): number {
    return this.next;
  }

  /** The largest record timestamp in the segment, -1 when it has no batch. */
  get maxTimestampMs(): number {
    return this.maxTimestamp;
  }

  get isEmpty(): boolean {
    return this.size === 0;
  }

  get isDirty(): boolean {
    return this.logDirty || this.index.isDirty;
  }

  get indexEntries(): number {
    return this.index.entries;
  }

  /**
   * Index entries the open found wrong and dropped (past the log, out of order, at a bad batch); a torn
   * trailing entry counts as one.
   */
  get indexEntriesDropped(): number {
    return this.droppedIndexEntries + (this.index.tornBytesAtOpen > 0 ? 1 : 0);
  }

  /** Index entries the open added by scanning the log (a missing index, or one behind its log). */
  get indexEntriesAdded(): number {
    return this.addedIndexEntries;
  }

  /** Whether a batch ending at `lastOffset` still fits the 32-bit relative offsets of this segment. */
  canHoldOffset(lastOffset: number): boolean {
    return lastOffset - this.baseOffset <= MAX_OFFSET_DELTA;
  }

  /** Appends a batch whose offsets follow the segment's and fit it (the caller rolls otherwise). */
  append(batch: RecordBatch): void {
    const baseOffset = batch.baseOffset;
    if (baseOffset < this.next || !this.canHoldOffset(batch.lastOffset)) {
      throw new CohortError(
        ErrorCode.UNKNOWN_SERVER_ERROR,
        `batch [${baseOffset}, ${batch.lastOffset}] does not fit segment ${this.baseOffset} at ${this.next}`,
      );
    }
    const position = this.size;
    try {
      writeFully(this.fd, batch.buffer, position);
    } catch (error) {
      // Leave no partial batch behind; if even that fails, recovery will cut it on the next open.
      try {
        fs.ftruncateSync(this.fd, position);
      } catch {
        // ignored: the original error is the one to report
      }
      throw new CohortError(ErrorCode.KAFKA_STORAGE_ERROR, `append to ${this.logPath} failed`, {
        cause: error,
      });
    }
    this.size += batch.sizeInBytes;
    this.logDirty = true;
    this.next = batch.nextOffset;
    if (batch.sizeInBytes <= TAIL_BATCH_MAX_BYTES) {
      this.tail = isViewOfLargerBuffer(batch) ? RecordBatch.wrap(exactCopy(batch.buffer)) : batch;
    } else {
      this.releaseTail();
    }
    if (batch.maxTimestampMs > this.maxTimestamp) this.maxTimestamp = batch.maxTimestampMs;
    if (this.bytesSinceLastIndexEntry > this.indexIntervalBytes) {
      this.index.append(baseOffset, position, this.maxTimestamp);
      this.bytesSinceLastIndexEntry = 0;
    }
    this.bytesSinceLastIndexEntry += batch.sizeInBytes;
  }

  /**
   * The position of the first batch whose last offset is at or after `offset`, or -1 if the segment
   * has none (the offset is past its end).
   */
  translateOffset(offset: number): number {
    if (offset >= this.next) return -1;
    if (this.tail !== null && offset >= this.tail.baseOffset) return this.size - this.tail.sizeInBytes;
    const entry = this.index.lookup(offset);
    let position = entry >= 0 ? this.index.positionAt(entry) : 0;
    const chunk = headerScanChunk;
    let chunkStart = position;
    let chunkLength = 0;
    while (position < this.size) {
      let at = position - chunkStart;
      if (at + HEADER_PREFIX_BYTES > chunkLength) {
        chunkLength = fs.readSync(
          this.fd,
          chunk,
          0,
          Math.min(HEADER_SCAN_CHUNK_BYTES, this.size - position),
          position,
        );
        chunkStart = position;
        at = 0;
        if (chunkLength < HEADER_PREFIX_BYTES) break;
      }
      if (lastOffsetAt(chunk, at) >= offset) return position;
      position += LOG_OVERHEAD + chunk.readInt32BE(at + 8);
    }
    return -1;
  }

  /**
   * Reads whole batches from the one holding `startOffset` on, at most `maxBytes` of them, stopping before
   * a batch that starts at or after `maxOffset`. With `minOneMessage` the first batch is returned even
   * when it alone exceeds `maxBytes` (Kafka's KIP-74 rule, so a large batch cannot stall a reader). Each
   * batch read from the file has its CRC checked (a bad one throws CORRUPT_MESSAGE); the in-memory tail
   * is the batch as this process wrote it and is returned without one.
   */
  read(startOffset: number, maxBytes: number, maxOffset: number, minOneMessage: boolean): SegmentReadResult {
    const start = this.translateOffset(startOffset);
    if (start < 0) return { batches: [], sizeInBytes: 0, firstPosition: -1 };
    const tail = this.tail;
    if (tail !== null && start === this.size - tail.sizeInBytes) {
      // What the file read below would return for the last batch, without reading it.
      const isReturned = tail.baseOffset < maxOffset && (tail.sizeInBytes <= maxBytes || minOneMessage);
      return isReturned
        ? { batches: [tail], sizeInBytes: tail.sizeInBytes, firstPosition: start }
        : { batches: [], sizeInBytes: 0, firstPosition: start };
    }
    const available = this.size - start;
    let buffer = readAt(this.fd, start, Math.min(available, Math.max(maxBytes, 0)));
    let batches = this.parseBatches(buffer, maxOffset);
    if (batches.length === 0 && minOneMessage) {
      const header = readAt(this.fd, start, LOG_OVERHEAD);
      const size = header.length === LOG_OVERHEAD ? LOG_OVERHEAD + header.readInt32BE(8) : 0;
      buffer = readAt(this.fd, start, Math.min(size, available));
      batches = this.parseBatches(buffer, maxOffset);
    }
    let sizeInBytes = 0;
    for (const batch of batches) sizeInBytes += batch.sizeInBytes;
    return { batches, sizeInBytes, firstPosition: start };
  }

  /**
   * Every batch from byte `position` to the end, read `chunkBytes` at a time (a batch larger than a chunk
   * is read whole). Throws CORRUPT_MESSAGE at a batch that fails its checks.
   */
  *batchesFrom(position = 0, chunkBytes = SCAN_CHUNK_BYTES): Generator<RecordBatch> {
    let chunk: Buffer = Buffer.alloc(0);
    let chunkStart = position;
    while (position < this.size) {
      const relative = position - chunkStart;
      const size = checkBatchAt(chunk, relative, chunk.length);
      if (size === INCOMPLETE_BATCH) {
        const needed =
          chunk.length - relative >= LOG_OVERHEAD ? LOG_OVERHEAD + chunk.readInt32BE(relative + 8) : 0;
        const available = this.size - position;
        if (chunk.length - relative >= available) {
          throw new CohortError(ErrorCode.CORRUPT_MESSAGE, `torn batch at ${position} in ${this.logPath}`);
        }
        chunk = readAt(this.fd, position, Math.min(Math.max(chunkBytes, needed), available));
        chunkStart = position;
        continue;
      }
      if (size === CORRUPT_BATCH) {
        throw new CohortError(ErrorCode.CORRUPT_MESSAGE, `corrupt batch at ${position} in ${this.logPath}`);
      }
      yield RecordBatch.wrap(chunk.subarray(relative, relative + size));
      position += size;
    }
  }

  /**
   * Every valid batch from the start of the file, CRC-checked, for a reader that must get past damage (the
   * replay of `__consumer_offsets`): bytes where no valid batch starts are yielded as one CorruptRegion
   * and skipped to the next position where a valid batch with a later offset starts. While looking for it,
   * a candidate larger than `chunkBytes` is not read (so garbage lengths cost no large reads): such a batch
   * right after damage is counted in the region.
   */
  *scanBatches(
    from = 0,
    fromOffset = this.baseOffset,
    chunkBytes = SCAN_CHUNK_BYTES,
  ): Generator<RecordBatch | CorruptRegion> {
    let chunk: Buffer = Buffer.alloc(0);
    let chunkStart = 0;
    let next = fromOffset;
    const batchAt = (at: number, isResync: boolean): RecordBatch | null => {
      if (this.size - at < RECORD_BATCH_V1_HEADER_BYTES) return null;
      let relative = at - chunkStart;
      if (relative < 0 || relative + LOG_OVERHEAD > chunk.length) {
        chunk = readAt(this.fd, at, Math.min(chunkBytes, this.size - at));
        chunkStart = at;
        relative = 0;
      }
      const declared = LOG_OVERHEAD + chunk.readInt32BE(relative + 8);
      if (declared < RECORD_BATCH_V1_HEADER_BYTES || declared > this.size - at) return null;
      if (relative + declared > chunk.length) {
        if (isResync && declared > chunkBytes) return null;
        chunk = readAt(this.fd, at, Math.max(chunkBytes, declared));
        chunkStart = at;
        relative = 0;
      }
      const size = checkBatchAt(chunk, relative, chunk.length);
      if (size < 0) return null;
      const batch = RecordBatch.wrap(chunk.subarray(relative, relative + size));
      return batch.baseOffset >= next && this.canHoldOffset(batch.lastOffset) ? batch : null;
    };
    let position = from;
    while (position < this.size) {
      const batch = batchAt(position, false);
      if (batch !== null) {
        yield batch;
        next = batch.nextOffset;
        position += batch.sizeInBytes;
        continue;
      }
      let resync = position + 1;
      while (resync < this.size && batchAt(resync, true) === null) resync++;
      yield { file: this.logPath, position, sizeInBytes: resync - position, offset: next };
      position = resync;
    }
  }

  /** The first record (lowest offset) whose timestamp is at or after `timestampMs`, or null. */
  findOffsetByTimestamp(timestampMs: number): TimestampAndOffset | null {
    if (this.maxTimestamp < timestampMs) return null;
    const entry = this.index.lookupByTimestamp(timestampMs);
    for (const batch of this.batchesFrom(entry >= 0 ? this.index.positionAt(entry) : 0)) {
      if (batch.maxTimestampMs < timestampMs || batch.recordCount === 0) continue;
      for (const record of batch.records()) {
        if (record.timestampMs >= timestampMs)
          return { timestampMs: record.timestampMs, offset: record.offset };
      }
    }
    return null;
  }

  /**
   * Removes every record at or after `offset`. A batch that straddles the offset is rewritten with only
   * its earlier records, so the segment then ends exactly at `offset`. Returns the bytes removed.
   */
  truncateTo(offset: number): number {
    const position = this.translateOffset(Math.max(offset, this.baseOffset));
    if (position < 0) return 0;
    this.releaseTail();
    const before = this.size;
    let replacement: RecordBatch | null = null;
    const [straddling] = this.batchesFrom(position);
    if (straddling !== undefined && straddling.baseOffset < offset) {
      const kept = straddling.records().filter((record) => record.offset < offset);
      replacement = RecordBatch.encode(kept, {
        baseOffset: straddling.baseOffset,
        lastOffset: offset - 1,
        defaultTimestampMs: straddling.baseTimestampMs,
        partitionLeaderEpoch: straddling.partitionLeaderEpoch,
      });
    }
    this.index.truncateToPosition(position);
    fs.ftruncateSync(this.fd, position);
    this.size = position;
    this.logDirty = true;
    if (replacement !== null) {
      writeFully(this.fd, replacement.buffer, position);
      this.size += replacement.sizeInBytes;
    }
    this.recover();
    return before - this.size;
  }

  /**
   * Validates the tail from the last good index entry, cuts the file at the first torn or corrupt batch,
   * rebuilds the index past that entry, and restores nextOffset and maxTimestampMs. Returns bytes cut.
   */
  recover(): number {
    this.validEnd = this.scanTail(true);
    return this.cutInvalidTail();
  }

  /** Bytes after the last valid batch the open found (the caller cuts them or refuses the log). */
  get invalidTailBytes(): number {
    return this.size - this.validEnd;
  }

  /** Where the invalid tail starts in the file; the first offset it would lose is `nextOffset`. */
  get invalidTailPosition(): number {
    return this.validEnd;
  }

  /**
   * Removes the invalid tail the open found but keeps every valid batch after the damage: they are read
   * (the tail after the last index entry is about one index interval), the file is cut where the damage
   * starts and they are written back there with their offsets, so only the damaged bytes and the offsets
   * they held are lost. Returns the bytes removed.
   */
  removeInvalidRegions(): number {
    if (this.validEnd >= this.size) return 0;
    const kept: RecordBatch[] = [];
    for (const item of this.scanBatches(this.validEnd, this.next)) {
      if (item instanceof RecordBatch) kept.push(RecordBatch.wrap(Buffer.from(item.buffer)));
    }
    const before = this.size;
    this.cutInvalidTail();
    // append() indexes as it goes; the count restarts from the last entry, as after a scan.
    for (const batch of kept) this.append(batch);
    this.releaseTail();
    return before - this.size;
  }

  /** Cuts the invalid tail the open found. Returns the bytes cut. */
  cutInvalidTail(): number {
    const cut = this.size - this.validEnd;
    this.cutAt(this.validEnd);
    return cut;
  }

  /**
   * Finds the end of the valid batches from the last good index entry on (CRCs checked or headers only),
   * rebuilding the index past that entry and restoring nextOffset and maxTimestampMs; cuts nothing.
   */
  private scanTail(isCrcChecked: boolean): number {
    this.releaseTail();
    this.index.sanitize(this.size);
    for (;;) {
      const entry = this.lastEntryMatchingLog();
      const start = entry >= 0 ? this.index.positionAt(entry) : 0;
      const validEnd = this.scanFrom(entry, start, isCrcChecked);
      if (validEnd === start && entry >= 0) {
        // The indexed batch itself is bad: forget the entry and find the end of the batch before it.
        this.index.truncateToEntries(entry);
        continue;
      }
      // Entries up to `entry` are the file's own; those after it were dropped, and the scan added these.
      this.droppedIndexEntries = Math.max(this.droppedIndexEntries, this.indexEntriesAtOpen - (entry + 1));
      this.addedIndexEntries = this.index.entries - (entry + 1);
      return validEnd;
    }
  }

  /** fsyncs what was written since the last flush started (log first, then index). */
  async flush(): Promise<void> {
    if (this.logDirty) {
      this.logDirty = false;
      await fsyncAsync(this.fd);
    }
    await this.index.flush();
  }

  flushSync(): void {
    if (this.logDirty) {
      this.logDirty = false;
      fs.fsyncSync(this.fd);
    }
    this.index.flushSync();
  }

  /** Renames both files to another state suffix; open descriptors keep working. The caller fsyncs the dir. */
  renameTo(state: SegmentFileState): void {
    const logPath = segmentFilePath(this.dir, this.baseOffset, LOG_FILE_SUFFIX, state);
    fs.renameSync(this.logPath, logPath);
    this.logPath = logPath;
    this.index.renameTo(segmentFilePath(this.dir, this.baseOffset, INDEX_FILE_SUFFIX, state));
  }

  get isClosed(): boolean {
    return this.fd < 0;
  }

  /** Drops the in-memory copy of the last batch (the segment stopped being the active one, or changed). */
  releaseTail(): void {
    this.tail = null;
  }

  close(): void {
    this.releaseTail();
    if (this.fd < 0) return;
    fs.closeSync(this.fd);
    this.fd = -1;
    this.index.close();
  }

  /** Unlinks both files. Open descriptors stay valid until `close` (POSIX), so in-flight fsyncs finish. */
  deleteFiles(): void {
    for (const file of [this.logPath, this.index.path]) {
      try {
        fs.unlinkSync(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }

  private parseBatches(buffer: Buffer, maxOffset: number): RecordBatch[] {
    const batches: RecordBatch[] = [];
    let position = 0;
    while (position < buffer.length) {
      // A batch of Kafka's layout goes out as it is, its CRC-32C for the consumer to check (as Kafka's
      // brokers leave it); decoding it (RecordBatch.records) checks it. cohort's layout is checked here.
      const size = checkBatchAt(buffer, position, buffer.length, !isKafkaLayoutAt(buffer, position));
      if (size === INCOMPLETE_BATCH) break;
      if (size === CORRUPT_BATCH) {
        throw new CohortError(ErrorCode.CORRUPT_MESSAGE, `corrupt batch in ${this.logPath}`);
      }
      const batch = RecordBatch.wrap(buffer.subarray(position, position + size));
      if (batch.baseOffset >= maxOffset) break;
      batches.push(batch);
      position += size;
    }
    return batches;
  }

  /** Drops index entries from the end until the last one points at a batch header with its offset. */
  private lastEntryMatchingLog(): number {
    const header = this.headerScratch;
    while (this.index.entries > 0) {
      const entry = this.index.entries - 1;
      const read = fs.readSync(this.fd, header, 0, LOG_OVERHEAD, this.index.positionAt(entry));
      if (
        read === LOG_OVERHEAD &&
        header.readUInt32BE(0) * TWO_POW_32 + header.readUInt32BE(4) === this.index.offsetAt(entry)
      ) {
        return entry;
      }
      this.index.truncateToEntries(entry);
    }
    return -1;
  }

  /**
   * Walks valid batches from `start` (the batch of index entry `entry`, or the file start when -1),
   * re-adding index entries after it and setting nextOffset / maxTimestampMs. Returns the end of the
   * last valid batch.
   */
  private scanFrom(entry: number, start: number, isCrcChecked: boolean): number {
    this.index.truncateToEntries(entry + 1);
    this.next = entry >= 0 ? this.index.offsetAt(entry) : this.baseOffset;
    this.maxTimestamp = entry > 0 ? this.index.maxTimestampAt(entry - 1) : -1;
    this.bytesSinceLastIndexEntry = 0;
    let position = start;
    let chunk: Buffer = Buffer.alloc(0);
    let chunkStart = start;
    while (position < this.size) {
      const relative = position - chunkStart;
      const size = checkBatchAt(chunk, relative, chunk.length, isCrcChecked);
      if (size === INCOMPLETE_BATCH) {
        const available = this.size - position;
        if (chunk.length - relative >= available) break; // the rest of the file is a torn batch
        const needed =
          chunk.length - relative >= LOG_OVERHEAD ? LOG_OVERHEAD + chunk.readInt32BE(relative + 8) : 0;
        chunk = readAt(this.fd, position, Math.min(Math.max(SCAN_CHUNK_BYTES, needed), available));
        chunkStart = position;
        continue;
      }
      if (size === CORRUPT_BATCH) break;
      const batch = RecordBatch.wrap(chunk.subarray(relative, relative + size));
      const baseOffset = batch.baseOffset;
      // The indexed batch must carry the entry's offset; every later one must start after its predecessor.
      const isIndexedBatch = position === start && entry >= 0;
      if (isIndexedBatch ? baseOffset !== this.next : baseOffset < this.next) break;
      if (!this.canHoldOffset(batch.lastOffset)) break;
      if (batch.maxTimestampMs > this.maxTimestamp) this.maxTimestamp = batch.maxTimestampMs;
      if (!isIndexedBatch && this.bytesSinceLastIndexEntry > this.indexIntervalBytes) {
        this.index.append(baseOffset, position, this.maxTimestamp);
        this.bytesSinceLastIndexEntry = 0;
      }
      this.bytesSinceLastIndexEntry += size;
      this.next = batch.nextOffset;
      position += size;
    }
    return position;
  }

  private cutAt(position: number): void {
    if (position >= this.size) return;
    this.releaseTail();
    this.index.truncateToPosition(position);
    fs.ftruncateSync(this.fd, position);
    this.size = position;
    this.logDirty = true;
  }
}

/**
 * A client's batch kept as it came is a view into its whole request (up to the Kafka door's request
 * limit): kept as the tail, it would keep that alive until the next append. cohort's own batches are
 * encoded to their size (small ones share Node's 8 KiB pool, which is fine to keep).
 */
function isViewOfLargerBuffer(batch: RecordBatch): boolean {
  return batch.isKafkaLayout && batch.buffer.buffer.byteLength !== batch.buffer.byteLength;
}

function exactCopy(bytes: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(copy);
  return copy;
}
