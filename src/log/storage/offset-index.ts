import * as fs from 'node:fs';
import { CohortError, ErrorCode } from '../../errors';
import { fsyncAsync, writeFully } from './file-io';

/**
 * The sparse offset index of one segment (`<baseOffset>.index`), after Kafka's OffsetIndex: every
 * `indexIntervalBytes` of log, the segment records where a batch starts, so a read seeks to the nearest
 * entry at or below its offset and scans at most one interval of batch headers from there.
 *
 * File format: 16-byte entries, big-endian, in increasing order of offset and position:
 *
 *   0  4  relativeOffset   the batch's baseOffset - the segment's baseOffset
 *   4  4  position         the batch's byte position in the .log file
 *   8  8  maxTimestampMs   the largest timestamp in the segment up to and including that batch
 *
 * The timestamp column does the job of Kafka's separate time index: it never decreases, so a timestamp
 * search is a binary search too, and the last entry bounds the segment's max timestamp without a scan of
 * the whole segment. Worked example: a segment at base 100 with entries (5, 4100, t1) and (11, 8230, t2)
 * reads offset 113 by scanning from position 8230 (batch 111 and on); offset 104 scans from position 0.
 *
 * The index is a cache of the log, never the authority: a crash can leave it ahead of, behind, or torn
 * against the .log. `sanitize` drops entries that cannot be right and the segment rebuilds the rest by
 * scanning. All entries are kept in memory (typed arrays, 16 bytes each); the file is appended in step.
 *
 * An index without entries holds no file descriptor: the file exists (created empty, or found empty on
 * open) and is opened by the first `append`. A segment's first batch never gets an entry, so a partition
 * that has taken less than `indexIntervalBytes` — every partition of a topic just created — costs the
 * process one descriptor (its `.log`), not two: a 10,000-partition topic fits a limit of 20,000 open
 * files with room for connections (docs/operations.md, "Bounds"). If that first open fails (EMFILE), the
 * entry is skipped: the index is a cache, and a missing entry only makes reads scan one interval more.
 */
export const INDEX_ENTRY_BYTES = 16;
const MAX_UINT32 = 0xffff_ffff;

export class OffsetIndex {
  /** -1 while the index has no entries and has not opened its file yet, and once closed. */
  private fd: number;
  private isClosed = false;
  private count = 0;
  private relativeOffsets: Uint32Array;
  private positions: Uint32Array;
  private maxTimestamps: Float64Array;
  private readonly scratch = Buffer.alloc(INDEX_ENTRY_BYTES);
  private dirty = false;
  private tornBytes = 0;

  private constructor(
    private filePath: string,
    readonly baseOffset: number,
    fd: number,
    capacity: number,
  ) {
    this.fd = fd;
    this.relativeOffsets = new Uint32Array(capacity);
    this.positions = new Uint32Array(capacity);
    this.maxTimestamps = new Float64Array(capacity);
  }

  /** Opens (or creates) the index file and loads every whole entry; a torn trailing entry is cut off. */
  static open(filePath: string, baseOffset: number): OffsetIndex {
    const fd = fs.openSync(filePath, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644);
    try {
      const bytes = fs.readFileSync(fd);
      const count = Math.floor(bytes.length / INDEX_ENTRY_BYTES);
      const index = new OffsetIndex(filePath, baseOffset, fd, Math.max(16, count));
      for (let i = 0; i < count; i++) {
        const at = i * INDEX_ENTRY_BYTES;
        index.relativeOffsets[i] = bytes.readUInt32BE(at);
        index.positions[i] = bytes.readUInt32BE(at + 4);
        const high = bytes.readInt32BE(at + 8);
        index.maxTimestamps[i] = high * 0x1_0000_0000 + bytes.readUInt32BE(at + 12);
      }
      index.count = count;
      index.tornBytes = bytes.length - count * INDEX_ENTRY_BYTES;
      if (index.tornBytes > 0) fs.ftruncateSync(fd, count * INDEX_ENTRY_BYTES);
      if (count === 0) {
        // Nothing to keep a descriptor for until the first entry (see the class comment).
        fs.closeSync(fd);
        index.fd = -1;
      }
      return index;
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
  }

  /** Creates an empty index, replacing any file at that path; its descriptor is opened by the first append. */
  static create(filePath: string, baseOffset: number): OffsetIndex {
    fs.closeSync(
      fs.openSync(filePath, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o644),
    );
    return new OffsetIndex(filePath, baseOffset, -1, 16);
  }

  /** Whether the index holds an open file descriptor (it has entries, or had and was not closed). */
  get isOpen(): boolean {
    return this.fd >= 0;
  }

  /** Bytes of a torn trailing entry that `open` cut off (a crash in the middle of an index write). */
  get tornBytesAtOpen(): number {
    return this.tornBytes;
  }

  get path(): string {
    return this.filePath;
  }

  get entries(): number {
    return this.count;
  }

  get isDirty(): boolean {
    return this.dirty;
  }

  offsetAt(entry: number): number {
    return this.baseOffset + this.relativeOffsets[entry]!;
  }

  positionAt(entry: number): number {
    return this.positions[entry]!;
  }

  maxTimestampAt(entry: number): number {
    return this.maxTimestamps[entry]!;
  }

  /** Adds an entry; offsets and positions must increase (a broken invariant otherwise). */
  append(offset: number, position: number, maxTimestampMs: number): void {
    const relativeOffset = offset - this.baseOffset;
    const last = this.count - 1;
    if (
      relativeOffset < 0 ||
      relativeOffset > MAX_UINT32 ||
      position > MAX_UINT32 ||
      (last >= 0 && (relativeOffset <= this.relativeOffsets[last]! || position <= this.positions[last]!))
    ) {
      throw new CohortError(
        ErrorCode.UNKNOWN_SERVER_ERROR,
        `index entry (${offset}, ${position}) does not follow the last one in ${this.filePath}`,
      );
    }
    if (this.fd < 0) {
      if (this.isClosed) throw new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `${this.filePath} is closed`);
      try {
        this.fd = fs.openSync(this.filePath, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644);
      } catch {
        // Out of descriptors (or the file went): skip the entry, as the class comment says; the next one
        // tries again.
        return;
      }
    }
    if (this.count === this.positions.length) this.grow();
    this.relativeOffsets[this.count] = relativeOffset;
    this.positions[this.count] = position;
    this.maxTimestamps[this.count] = maxTimestampMs;
    const scratch = this.scratch;
    scratch.writeUInt32BE(relativeOffset, 0);
    scratch.writeUInt32BE(position, 4);
    scratch.writeInt32BE(Math.floor(maxTimestampMs / 0x1_0000_0000), 8);
    scratch.writeUInt32BE(maxTimestampMs >>> 0, 12);
    writeFully(this.fd, scratch, this.count * INDEX_ENTRY_BYTES);
    this.count++;
    this.dirty = true;
  }

  /** The last entry whose offset is at or below `offset`, or -1 when the segment must be read from its start. */
  lookup(offset: number): number {
    let low = 0;
    let high = this.count - 1;
    let found = -1;
    const relative = offset - this.baseOffset;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if (this.relativeOffsets[mid]! <= relative) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    return found;
  }

  /**
   * The last entry whose maxTimestampMs is below `timestampMs`: nothing before its batch can hold a record
   * at or after that time, so a timestamp search scans from there. -1 means scan from the start.
   */
  lookupByTimestamp(timestampMs: number): number {
    let low = 0;
    let high = this.count - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if (this.maxTimestamps[mid]! < timestampMs) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    return found;
  }

  /**
   * Drops every entry from the first one that cannot describe a log of `logSizeInBytes` bytes: offsets
   * and positions must increase, positions lie inside the log, timestamps never decrease. Returns how
   * many entries were dropped.
   */
  sanitize(logSizeInBytes: number): number {
    let valid = 0;
    for (; valid < this.count; valid++) {
      const position = this.positions[valid]!;
      const maxTimestampMs = this.maxTimestamps[valid]!;
      if (position >= logSizeInBytes || !Number.isSafeInteger(maxTimestampMs) || maxTimestampMs < 0) break;
      if (valid > 0) {
        const previous = valid - 1;
        if (this.relativeOffsets[valid]! <= this.relativeOffsets[previous]!) break;
        if (position <= this.positions[previous]!) break;
        if (maxTimestampMs < this.maxTimestamps[previous]!) break;
      }
    }
    const dropped = this.count - valid;
    if (dropped > 0) this.truncateToEntries(valid);
    return dropped;
  }

  /** Keeps the first `entries` entries, in memory and on disk. */
  truncateToEntries(entries: number): void {
    if (entries >= this.count) return;
    this.count = Math.max(0, entries);
    fs.ftruncateSync(this.fd, this.count * INDEX_ENTRY_BYTES);
    this.dirty = true;
  }

  /** Drops every entry at or after byte `position` of the log. */
  truncateToPosition(position: number): void {
    let keep = this.count;
    while (keep > 0 && this.positions[keep - 1]! >= position) keep--;
    if (keep !== this.count) this.truncateToEntries(keep);
  }

  /** fsyncs the file if anything changed since the last flush started. */
  async flush(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    await fsyncAsync(this.fd);
  }

  flushSync(): void {
    if (!this.dirty) return;
    this.dirty = false;
    fs.fsyncSync(this.fd);
  }

  /** Renames the file; the open descriptor keeps working. The caller makes the directory durable. */
  renameTo(filePath: string): void {
    fs.renameSync(this.filePath, filePath);
    this.filePath = filePath;
  }

  close(): void {
    this.isClosed = true;
    if (this.fd < 0) return;
    fs.closeSync(this.fd);
    this.fd = -1;
  }

  private grow(): void {
    const capacity = this.positions.length * 2;
    const relativeOffsets = new Uint32Array(capacity);
    relativeOffsets.set(this.relativeOffsets);
    const positions = new Uint32Array(capacity);
    positions.set(this.positions);
    const maxTimestamps = new Float64Array(capacity);
    maxTimestamps.set(this.maxTimestamps);
    this.relativeOffsets = relativeOffsets;
    this.positions = positions;
    this.maxTimestamps = maxTimestamps;
  }
}
