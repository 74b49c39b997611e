import { crc32 } from 'node:zlib';
import { CohortError, ErrorCode } from '../../errors';
import {
  decodeKafkaLayoutRecords,
  isKafkaLayoutAt,
  isStorableClientBatch,
  isValidKafkaLayoutBatch,
  KafkaLayout,
  MAX_KAFKA_LAYOUT_EPOCH,
  stampKafkaLayout,
} from './kafka-batch-layout';
import { NO_HEADERS, type LogRecord, type RecordHeader, type SimpleRecord } from './log-record';
import { readUvarint, uvarintSize, writeUvarint, type Cursor } from './varint';

/**
 * The unit the log writes, checksums and reads: a batch of records with consecutive-or-gapped offsets.
 * The layout follows Kafka's v2 record batch (big-endian, fixed header, varint records), without
 * producer ids or compression:
 *
 *   offset size field
 *        0    8 baseOffset            first offset the batch covers
 *        8    4 batchLength           bytes after this field (the whole batch is LOG_OVERHEAD + batchLength)
 *       12    1 magic                 RECORD_BATCH_MAGIC (2); 1 for batches written before leader epochs
 *       13    4 crc                   CRC-32 (zlib) of bytes [0, 13) and [17, end): everything but itself
 *       17    2 attributes            0 (reserved)
 *       19    4 lastOffsetDelta       lastOffset - baseOffset
 *       23    8 baseTimestampMs       the smallest record timestamp (Kafka: the first one)
 *       31    8 maxTimestampMs        the largest record timestamp
 *       39    4 recordCount
 *       43    4 partitionLeaderEpoch  the epoch of the leader that assigned the offsets (KIP-101), or -1
 *       47    … records, each:
 *                 length uvarint (bytes after it), attributes int8 (0),
 *                 timestampDelta uvarint, offsetDelta uvarint,
 *                 keyLength+1 uvarint (0 = null) + key, valueLength+1 uvarint (0 = null) + value,
 *                 headerCount uvarint, then per header keyLength uvarint + UTF-8 key, valueLength uvarint + value
 *
 * Magic 1 is the same layout without `partitionLeaderEpoch` (43-byte header, records at 43). It is still
 * read, as epoch -1 (Kafka's NO_PARTITION_LEADER_EPOCH), because data directories hold it; every batch
 * is written as magic 2. Kafka puts the epoch before `magic`; here it follows the fields both versions
 * share, so `magic` and every other header field stay where they were and a reader tells the versions
 * apart by the byte it already reads first.
 *
 * Unlike Kafka the CRC also covers baseOffset and batchLength: cohort assigns offsets before encoding, so
 * nothing rewrites them in place, and a flipped bit in either is caught like any other. Deltas are taken
 * from the batch minimum, so every varint is unsigned.
 *
 * A batch may cover offsets that hold no record (gaps left by compaction), and may even be empty: the
 * cleaner keeps an empty last batch so that a cleaned segment still ends at the same offset.
 *
 * A batch may also have Kafka's RecordBatch v2 layout, as a Kafka client produced it (see
 * `kafka-batch-layout.ts`): its byte 12 is 0x00 or 0xff where this layout's magic is 1 or 2, and
 * `RecordBatch` reads either.
 *
 * Worked example: one record {offset 7, timestamp 1000, key "k", value "v", no headers} written by the
 * leader of epoch 5 encodes as baseOffset 7, batchLength 44, lastOffsetDelta 0, both timestamps 1000,
 * count 1, partitionLeaderEpoch 5, then the record 08 00 00 00 02 6b 02 76 00 (length 8, attributes,
 * Δts 0, Δoffset 0, key, value, 0 headers): 56 bytes (52 in magic 1).
 */
export const RECORD_BATCH_MAGIC = 2;
/** The format before leader epochs: read, never written. */
export const RECORD_BATCH_MAGIC_V1 = 1;
/** Kafka's RecordBatch.NO_PARTITION_LEADER_EPOCH: a batch written without a leader epoch. */
export const NO_PARTITION_LEADER_EPOCH = -1;
/** baseOffset + batchLength: what must be read to learn a batch's size (Kafka's LOG_OVERHEAD). */
export const LOG_OVERHEAD = 12;
/** The header of a batch as written (magic 2); the records follow it. */
export const RECORD_BATCH_HEADER_BYTES = 47;
/** The header of a magic 1 batch: the smallest a batch can be. */
export const RECORD_BATCH_V1_HEADER_BYTES = 43;
/** Offsets inside a batch (and a segment) are 32-bit deltas. */
export const MAX_OFFSET_DELTA = 0x7fffffff;

const MAGIC_AT = 12;
const CRC_AT = 13;
const ATTRIBUTES_AT = 17;
const LAST_OFFSET_DELTA_AT = 19;
const BASE_TIMESTAMP_AT = 23;
const MAX_TIMESTAMP_AT = 31;
const RECORD_COUNT_AT = 39;
const PARTITION_LEADER_EPOCH_AT = 43;
const MAX_INT32 = 0x7fffffff;
/** length, attributes, Δts, Δoffset, key length, value length, header count: one byte each at least. */
const MIN_RECORD_BYTES = 7;
const TWO_POW_32 = 0x1_0000_0000;
/** The high word of a non-negative safe integer is below 2^21. */
const SAFE_HIGH_WORD_LIMIT = 0x20_0000;

/** `checkBatchAt` results besides a size. */
export const INCOMPLETE_BATCH = -1;
export const CORRUPT_BATCH = -2;

/** A record to encode: a producer's `SimpleRecord`, optionally with the offset a leader already gave it. */
export type RecordInput = SimpleRecord & { readonly offset?: number };

export interface EncodeOptions {
  /** The batch's first offset; records without an offset get baseOffset + their index. */
  readonly baseOffset: number;
  /** The last offset the batch covers; defaults to the last record's. Must be given for an empty batch. */
  readonly lastOffset?: number;
  /** The timestamp of records that carry none (the append time). */
  readonly defaultTimestampMs?: number;
  /** The epoch of the leader that assigned the offsets; default NO_PARTITION_LEADER_EPOCH. */
  readonly partitionLeaderEpoch?: number;
}

function readSafeInt64(buffer: Buffer, at: number): number {
  const high = buffer.readUInt32BE(at);
  if (high >= SAFE_HIGH_WORD_LIMIT) return -1;
  return high * TWO_POW_32 + buffer.readUInt32BE(at + 4);
}

function writeSafeInt64(buffer: Buffer, at: number, value: number): void {
  buffer.writeUInt32BE(Math.floor(value / TWO_POW_32), at);
  buffer.writeUInt32BE(value >>> 0, at + 4);
}

function corrupt(message: string): CohortError {
  return new CohortError(ErrorCode.CORRUPT_MESSAGE, message);
}

/** Where a batch's records start: after the header of its magic; -1 for a magic cohort never wrote. */
function headerBytesOf(magic: number | undefined): number {
  if (magic === RECORD_BATCH_MAGIC) return RECORD_BATCH_HEADER_BYTES;
  if (magic === RECORD_BATCH_MAGIC_V1) return RECORD_BATCH_V1_HEADER_BYTES;
  return -1;
}

function batchCrc(buffer: Buffer): number {
  return crc32(buffer.subarray(CRC_AT + 4), crc32(buffer.subarray(0, CRC_AT)));
}

/**
 * Looks at the bytes from `position` to `end` and returns the size of the complete, valid batch that
 * starts there, INCOMPLETE_BATCH when they stop before its end (a torn write), or CORRUPT_BATCH when its
 * header is impossible or its CRC does not match. Does not decode records: the CRC vouches for them.
 * `isCrcChecked` false checks the header alone (loading a segment whose data was fsynced: its records
 * are checked when they are read).
 */
export function checkBatchAt(buffer: Buffer, position: number, end: number, isCrcChecked = true): number {
  if (end - position < LOG_OVERHEAD) return INCOMPLETE_BATCH;
  const batchLength = buffer.readInt32BE(position + 8);
  if (batchLength < RECORD_BATCH_V1_HEADER_BYTES - LOG_OVERHEAD) return CORRUPT_BATCH;
  const size = LOG_OVERHEAD + batchLength;
  if (end - position < size) return INCOMPLETE_BATCH;
  const batch = buffer.subarray(position, position + size);
  if (isKafkaLayoutAt(batch, 0)) return isValidKafkaLayoutBatch(batch, isCrcChecked) ? size : CORRUPT_BATCH;
  const headerBytes = headerBytesOf(batch[MAGIC_AT]);
  if (headerBytes < 0 || size < headerBytes) return CORRUPT_BATCH;
  if (isCrcChecked && batch.readUInt32BE(CRC_AT) !== batchCrc(batch)) return CORRUPT_BATCH;
  // A matching CRC over impossible fields means a writer bug, not a torn write; still not a batch.
  if (batch.readUInt16BE(ATTRIBUTES_AT) !== 0) return CORRUPT_BATCH;
  const baseOffset = readSafeInt64(batch, 0);
  const lastOffsetDelta = batch.readInt32BE(LAST_OFFSET_DELTA_AT);
  const baseTimestampMs = readSafeInt64(batch, BASE_TIMESTAMP_AT);
  const maxTimestampMs = readSafeInt64(batch, MAX_TIMESTAMP_AT);
  const recordCount = batch.readInt32BE(RECORD_COUNT_AT);
  if (baseOffset < 0 || lastOffsetDelta < 0 || !Number.isSafeInteger(baseOffset + lastOffsetDelta)) {
    return CORRUPT_BATCH;
  }
  if (baseTimestampMs < 0 || maxTimestampMs < baseTimestampMs) return CORRUPT_BATCH;
  if (recordCount < 0 || recordCount > lastOffsetDelta + 1) return CORRUPT_BATCH;
  if (recordCount * MIN_RECORD_BYTES > size - headerBytes) return CORRUPT_BATCH;
  if (headerBytes === RECORD_BATCH_HEADER_BYTES) {
    if (batch.readInt32BE(PARTITION_LEADER_EPOCH_AT) < NO_PARTITION_LEADER_EPOCH) return CORRUPT_BATCH;
  }
  return size;
}

/** Enough of a batch's header, in either layout, to read the offsets it spans (`lastOffsetAt`). */
export const OFFSET_RANGE_PREFIX_BYTES = KafkaLayout.LAST_OFFSET_DELTA_AT + 4;

/** The last offset of the batch at `position` from its header alone (OFFSET_RANGE_PREFIX_BYTES of it). */
export function lastOffsetAt(buffer: Buffer, position: number): number {
  const deltaAt = isKafkaLayoutAt(buffer, position) ? KafkaLayout.LAST_OFFSET_DELTA_AT : LAST_OFFSET_DELTA_AT;
  return (
    buffer.readUInt32BE(position) * TWO_POW_32 +
    buffer.readUInt32BE(position + 4) +
    buffer.readInt32BE(position + deltaAt)
  );
}

/** An encoded batch: a view over exactly its bytes, with its header fields and a decoder for its records. */
export class RecordBatch {
  /** The records, once decoded: a batch is immutable, so every reader of it can share them. */
  private decoded: readonly LogRecord[] | undefined;

  /** Kafka's RecordBatch v2 layout (a client's batch stored as it came), not cohort's own. */
  readonly isKafkaLayout: boolean;

  private constructor(readonly buffer: Buffer) {
    this.isKafkaLayout = isKafkaLayoutAt(buffer, 0);
  }

  /** Wraps bytes that `checkBatchAt` has accepted (or that `encode` produced); no checks. */
  static wrap(buffer: Buffer): RecordBatch {
    return new RecordBatch(buffer);
  }

  /** Wraps bytes from elsewhere after checking them; throws CORRUPT_MESSAGE unless they are one valid batch. */
  static fromBuffer(buffer: Buffer): RecordBatch {
    const size = checkBatchAt(buffer, 0, buffer.length);
    if (size === INCOMPLETE_BATCH) throw corrupt('record batch is truncated');
    if (size === CORRUPT_BATCH) throw corrupt('record batch failed its CRC or header checks');
    if (size !== buffer.length) throw corrupt('bytes follow the record batch');
    return new RecordBatch(buffer);
  }

  /**
   * A Kafka client's batch (one Produce partition's records field) that the log can store as it came, or
   * null when it cannot (compressed, idempotent, records without a timestamp, ...: see
   * `isStorableClientBatch`) and the caller must decode it into records. The batch is a view of `bytes`,
   * which an append then stamps with its offset and leader epoch (`assignOffsets`): the caller hands
   * them over.
   */
  static fromClientBatch(bytes: Buffer): RecordBatch | null {
    if (!isStorableClientBatch(bytes)) return null;
    // Whatever epoch the client wrote (its top byte could read as cohort's magic) until the append's.
    stampKafkaLayout(bytes, 0, NO_PARTITION_LEADER_EPOCH);
    return new RecordBatch(bytes);
  }

  /**
   * Gives a client's batch (`fromClientBatch`) its offsets and the leader's epoch before it is appended,
   * as a Kafka leader does in place; the CRC does not cover them. Throws INVALID_RECORD for an epoch this
   * layout cannot carry (the caller stores the records in cohort's layout instead) or a batch of cohort's
   * layout, whose offsets are given at encoding.
   */
  assignOffsets(baseOffset: number, partitionLeaderEpoch: number): void {
    if (
      !this.isKafkaLayout ||
      !Number.isSafeInteger(baseOffset) ||
      baseOffset < 0 ||
      !Number.isSafeInteger(baseOffset + this.lastOffsetDelta) ||
      !Number.isInteger(partitionLeaderEpoch) ||
      partitionLeaderEpoch < NO_PARTITION_LEADER_EPOCH ||
      partitionLeaderEpoch > MAX_KAFKA_LAYOUT_EPOCH
    ) {
      throw new CohortError(
        ErrorCode.INVALID_RECORD,
        `cannot give offset ${baseOffset} and epoch ${partitionLeaderEpoch} to this batch in place`,
      );
    }
    stampKafkaLayout(this.buffer, baseOffset, partitionLeaderEpoch);
  }

  /**
   * Encodes records into one batch. Offsets must increase strictly and stay within 2^31 - 1 of
   * baseOffset; timestamps must be non-negative safe integers. Throws CohortError(INVALID_RECORD or
   * INVALID_TIMESTAMP) for input that breaks those rules.
   */
  static encode(records: readonly RecordInput[], options: EncodeOptions): RecordBatch {
    const { baseOffset, defaultTimestampMs } = options;
    const partitionLeaderEpoch = options.partitionLeaderEpoch ?? NO_PARTITION_LEADER_EPOCH;
    if (!Number.isSafeInteger(baseOffset) || baseOffset < 0) {
      throw new CohortError(
        ErrorCode.INVALID_RECORD,
        `baseOffset must be a non-negative integer, got ${baseOffset}`,
      );
    }
    if (
      !Number.isInteger(partitionLeaderEpoch) ||
      partitionLeaderEpoch < NO_PARTITION_LEADER_EPOCH ||
      partitionLeaderEpoch > MAX_INT32
    ) {
      throw new CohortError(
        ErrorCode.INVALID_RECORD,
        `partitionLeaderEpoch must be -1 or a non-negative 32-bit integer, got ${partitionLeaderEpoch}`,
      );
    }
    const count = records.length;
    let baseTimestampMs = Number.MAX_SAFE_INTEGER;
    let maxTimestampMs = -1;
    let previousOffset = baseOffset - 1;
    for (let i = 0; i < count; i++) {
      const record = records[i]!;
      const offset = record.offset ?? baseOffset + i;
      if (!Number.isSafeInteger(offset) || offset <= previousOffset) {
        throw new CohortError(
          ErrorCode.INVALID_RECORD,
          `record offsets must increase from baseOffset ${baseOffset}; got ${offset} after ${previousOffset}`,
        );
      }
      previousOffset = offset;
      const timestampMs = record.timestampMs ?? defaultTimestampMs;
      if (timestampMs === undefined || !Number.isSafeInteger(timestampMs) || timestampMs < 0) {
        throw new CohortError(
          ErrorCode.INVALID_TIMESTAMP,
          `record timestamps must be non-negative integers (ms), got ${timestampMs}`,
        );
      }
      if (timestampMs < baseTimestampMs) baseTimestampMs = timestampMs;
      if (timestampMs > maxTimestampMs) maxTimestampMs = timestampMs;
    }
    const lastOffset = options.lastOffset ?? previousOffset;
    if (!Number.isSafeInteger(lastOffset) || lastOffset < previousOffset || lastOffset < baseOffset) {
      throw new CohortError(
        ErrorCode.INVALID_RECORD,
        `lastOffset ${lastOffset} must cover baseOffset ${baseOffset} and every record`,
      );
    }
    if (lastOffset - baseOffset > MAX_OFFSET_DELTA) {
      throw new CohortError(
        ErrorCode.INVALID_RECORD,
        `a batch spans at most ${MAX_OFFSET_DELTA + 1} offsets`,
      );
    }
    if (count === 0) {
      // An empty batch only marks an offset range; it takes the default timestamp (or 0) for both.
      baseTimestampMs = maxTimestampMs = defaultTimestampMs ?? 0;
    }

    let size = RECORD_BATCH_HEADER_BYTES;
    for (let i = 0; i < count; i++) {
      const record = records[i]!;
      const bodyBytes = recordBodyBytes(
        record,
        (record.offset ?? baseOffset + i) - baseOffset,
        (record.timestampMs ?? defaultTimestampMs!) - baseTimestampMs,
      );
      size += uvarintSize(bodyBytes) + bodyBytes;
    }

    const buffer = Buffer.allocUnsafe(size);
    writeSafeInt64(buffer, 0, baseOffset);
    buffer.writeInt32BE(size - LOG_OVERHEAD, 8);
    buffer[MAGIC_AT] = RECORD_BATCH_MAGIC;
    buffer.writeUInt16BE(0, ATTRIBUTES_AT);
    buffer.writeInt32BE(lastOffset - baseOffset, LAST_OFFSET_DELTA_AT);
    writeSafeInt64(buffer, BASE_TIMESTAMP_AT, baseTimestampMs);
    writeSafeInt64(buffer, MAX_TIMESTAMP_AT, maxTimestampMs);
    buffer.writeInt32BE(count, RECORD_COUNT_AT);
    buffer.writeInt32BE(partitionLeaderEpoch, PARTITION_LEADER_EPOCH_AT);
    let position = RECORD_BATCH_HEADER_BYTES;
    for (let i = 0; i < count; i++) {
      const record = records[i]!;
      const offsetDelta = (record.offset ?? baseOffset + i) - baseOffset;
      const timestampDelta = (record.timestampMs ?? defaultTimestampMs!) - baseTimestampMs;
      position = writeUvarint(buffer, position, recordBodyBytes(record, offsetDelta, timestampDelta));
      buffer[position++] = 0;
      position = writeUvarint(buffer, position, timestampDelta);
      position = writeUvarint(buffer, position, offsetDelta);
      position = writeNullableBytes(buffer, position, record.key ?? null);
      position = writeNullableBytes(buffer, position, record.value);
      const headers = record.headers ?? NO_HEADERS;
      position = writeUvarint(buffer, position, headers.length);
      for (const header of headers) {
        const keyBytes = Buffer.byteLength(header.key, 'utf8');
        position = writeUvarint(buffer, position, keyBytes);
        position += buffer.write(header.key, position, keyBytes, 'utf8');
        position = writeUvarint(buffer, position, header.value.length);
        buffer.set(header.value, position);
        position += header.value.length;
      }
    }
    buffer.writeUInt32BE(batchCrc(buffer), CRC_AT);
    return new RecordBatch(buffer);
  }

  get baseOffset(): number {
    return readSafeInt64(this.buffer, 0);
  }

  get lastOffsetDelta(): number {
    return this.buffer.readInt32BE(
      this.isKafkaLayout ? KafkaLayout.LAST_OFFSET_DELTA_AT : LAST_OFFSET_DELTA_AT,
    );
  }

  get lastOffset(): number {
    return this.baseOffset + this.lastOffsetDelta;
  }

  /** The offset after this batch. */
  get nextOffset(): number {
    return this.lastOffset + 1;
  }

  /** cohort's layout: the smallest record timestamp; Kafka's: the first record's. */
  get baseTimestampMs(): number {
    return readSafeInt64(this.buffer, this.isKafkaLayout ? KafkaLayout.BASE_TIMESTAMP_AT : BASE_TIMESTAMP_AT);
  }

  get maxTimestampMs(): number {
    return readSafeInt64(this.buffer, this.isKafkaLayout ? KafkaLayout.MAX_TIMESTAMP_AT : MAX_TIMESTAMP_AT);
  }

  get recordCount(): number {
    return this.buffer.readInt32BE(this.isKafkaLayout ? KafkaLayout.RECORD_COUNT_AT : RECORD_COUNT_AT);
  }

  /** 2 (or 1 for cohort's layout before leader epochs). */
  get magic(): number {
    return this.isKafkaLayout ? RECORD_BATCH_MAGIC : this.buffer[MAGIC_AT]!;
  }

  /** The epoch of the leader that assigned this batch's offsets; -1 for a magic 1 batch or none given. */
  get partitionLeaderEpoch(): number {
    if (this.isKafkaLayout) return this.buffer.readInt32BE(KafkaLayout.PARTITION_LEADER_EPOCH_AT);
    return this.buffer[MAGIC_AT] === RECORD_BATCH_MAGIC
      ? this.buffer.readInt32BE(PARTITION_LEADER_EPOCH_AT)
      : NO_PARTITION_LEADER_EPOCH;
  }

  get sizeInBytes(): number {
    return this.buffer.length;
  }

  /** cohort's layout: its CRC-32; Kafka's: the client's CRC-32C. */
  get crc(): number {
    return this.buffer.readUInt32BE(this.isKafkaLayout ? KafkaLayout.CRC_AT : CRC_AT);
  }

  /**
   * Every record, decoded on the first call and shared after it: the active segment's in-memory tail is
   * read by every Fetch its append woke (1,000 parked consumers decode it once, not 1,000 times). Keys,
   * values and header values are views into this batch's buffer (no copy); copy them to keep them beyond
   * the batch. Throws CORRUPT_MESSAGE when the record area contradicts the header (possible only for bytes
   * that bypassed `checkBatchAt`'s CRC, or a writer bug). A batch of Kafka's layout has its CRC-32C
   * checked here, since reads that serve its bytes as they are do not check it.
   */
  records(): readonly LogRecord[] {
    return (this.decoded ??= this.isKafkaLayout
      ? decodeKafkaLayoutRecords(this.buffer, this.partitionLeaderEpoch)
      : this.decode());
  }

  private decode(): LogRecord[] {
    const buffer = this.buffer;
    const end = buffer.length;
    const baseOffset = this.baseOffset;
    const lastOffsetDelta = this.lastOffsetDelta;
    const baseTimestampMs = this.baseTimestampMs;
    const maxTimestampMs = this.maxTimestampMs;
    const count = this.recordCount;
    const leaderEpoch = this.partitionLeaderEpoch;
    const records = new Array<LogRecord>(count);
    const cursor: Cursor = { position: headerBytesOf(buffer[MAGIC_AT]) };
    if (cursor.position < 0) throw corrupt(`record batch magic ${buffer[MAGIC_AT]} is unknown`);
    let previousDelta = -1;
    for (let i = 0; i < count; i++) {
      const length = readUvarint(buffer, cursor, end);
      const recordEnd = cursor.position + length;
      if (recordEnd > end || length < MIN_RECORD_BYTES - 1) throw corrupt('record runs past its batch');
      if (buffer[cursor.position++] !== 0) throw corrupt('record attributes must be 0');
      const timestampMs = baseTimestampMs + readUvarint(buffer, cursor, recordEnd);
      if (timestampMs > maxTimestampMs) throw corrupt('record timestamp exceeds the batch maximum');
      const offsetDelta = readUvarint(buffer, cursor, recordEnd);
      if (offsetDelta <= previousDelta || offsetDelta > lastOffsetDelta) {
        throw corrupt('record offsets must increase within the batch range');
      }
      previousDelta = offsetDelta;
      const key = readNullableBytes(buffer, cursor, recordEnd);
      const value = readNullableBytes(buffer, cursor, recordEnd);
      const headerCount = readUvarint(buffer, cursor, recordEnd);
      let headers: readonly RecordHeader[] = NO_HEADERS;
      if (headerCount > 0) {
        if (headerCount * 2 > recordEnd - cursor.position) throw corrupt('header count exceeds the record');
        const list = new Array<RecordHeader>(headerCount);
        for (let h = 0; h < headerCount; h++) {
          const keyLength = readUvarint(buffer, cursor, recordEnd);
          const keyEnd = cursor.position + keyLength;
          if (keyEnd > recordEnd) throw corrupt('header key runs past its record');
          const headerKey = buffer.toString('utf8', cursor.position, keyEnd);
          cursor.position = keyEnd;
          const valueLength = readUvarint(buffer, cursor, recordEnd);
          const valueEnd = cursor.position + valueLength;
          if (valueEnd > recordEnd) throw corrupt('header value runs past its record');
          list[h] = { key: headerKey, value: buffer.subarray(cursor.position, valueEnd) };
          cursor.position = valueEnd;
        }
        headers = list;
      }
      if (cursor.position !== recordEnd) throw corrupt('record length does not match its fields');
      records[i] = { offset: baseOffset + offsetDelta, timestampMs, key, value, headers, leaderEpoch };
    }
    if (cursor.position !== end) throw corrupt('batch holds bytes after its last record');
    return records;
  }
}

/**
 * Records that already carry their offsets and leader epochs (a follower's, as its leader sent them) as
 * batches: a batch carries one leader epoch, so one per run of records with the same epoch. Offsets must
 * increase across the runs as within each (RecordBatch.encode checks within): INVALID_RECORD otherwise.
 */
export function encodeByLeaderEpoch(records: readonly LogRecord[]): RecordBatch[] {
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

function recordBodyBytes(record: RecordInput, offsetDelta: number, timestampDelta: number): number {
  let bytes = 1 + uvarintSize(timestampDelta) + uvarintSize(offsetDelta);
  bytes += nullableBytesSize(record.key ?? null) + nullableBytesSize(record.value);
  const headers = record.headers ?? NO_HEADERS;
  bytes += uvarintSize(headers.length);
  for (const header of headers) {
    const keyBytes = Buffer.byteLength(header.key, 'utf8');
    bytes += uvarintSize(keyBytes) + keyBytes + uvarintSize(header.value.length) + header.value.length;
  }
  return bytes;
}

function nullableBytesSize(bytes: Uint8Array | null): number {
  return bytes === null ? 1 : uvarintSize(bytes.length + 1) + bytes.length;
}

function writeNullableBytes(buffer: Buffer, position: number, bytes: Uint8Array | null): number {
  if (bytes === null) return writeUvarint(buffer, position, 0);
  position = writeUvarint(buffer, position, bytes.length + 1);
  buffer.set(bytes, position);
  return position + bytes.length;
}

function readNullableBytes(buffer: Buffer, cursor: Cursor, end: number): Buffer | null {
  const lengthPlusOne = readUvarint(buffer, cursor, end);
  if (lengthPlusOne === 0) return null;
  const start = cursor.position;
  const stop = start + lengthPlusOne - 1;
  if (stop > end) throw corrupt('key or value runs past its record');
  cursor.position = stop;
  return buffer.subarray(start, stop);
}
