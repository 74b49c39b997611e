import { isUtf8 } from 'node:buffer';
import { crc32c } from '@node-rs/crc32';
import { CohortError, ErrorCode } from '../../errors';
import { NO_HEADERS, type LogRecord, type RecordHeader } from './log-record';
import type { Cursor } from './varint';

/**
 * The second layout a stored batch may have: Kafka's RecordBatch v2, byte for byte as a Kafka client
 * produced it, for batches the log can keep as they came (see `isStorableClientBatch`). A Kafka broker
 * appends a client's batch after writing its offset and leader epoch into it, and serves the same bytes
 * to consumers; so does cohort for these batches, which spares the Kafka door a decode into records and
 * an encode (and a CRC) each way. The other layout, cohort's own, is `record-batch.ts`'s; `RecordBatch`
 * reads both.
 *
 *   offset size field
 *        0    8 baseOffset            written by the leader at append (outside the CRC, as in Kafka)
 *        8    4 batchLength           bytes after this field
 *       12    4 partitionLeaderEpoch  written by the leader at append (outside the CRC)
 *       16    1 magic                 2
 *       17    4 crc                   CRC-32C (Castagnoli) of bytes [21, end), the client's
 *       21    2 attributes            0: uncompressed, CreateTime, not transactional, not control
 *       23    4 lastOffsetDelta       recordCount - 1: offset deltas are 0, 1, ... in order
 *       27    8 baseTimestamp         the first record's timestamp; records hold signed deltas from it
 *       35    8 maxTimestamp          the largest record timestamp
 *       43    8 producerId            -1 (no idempotence)
 *       51    2 producerEpoch
 *       53    4 baseSequence
 *       57    4 recordCount
 *       61    … records, each: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
 *                 keyLength varint (-1 = null) + key, valueLength varint (-1 = null) + value,
 *                 headerCount varint, then per header keyLength varint + UTF-8 key, valueLength varint
 *                 (-1 = null) + value; varints are zigzag LEB128
 *
 * Telling the layouts apart: cohort's layout has its magic (1 or 2) at byte 12, where this layout has the
 * top byte of partitionLeaderEpoch. The log stores this layout only with an epoch from -1 to
 * MAX_KAFKA_LAYOUT_EPOCH, so that byte is 0x00 or 0xff here and 1 or 2 there.
 *
 * The CRC is the client's and covers everything but baseOffset, batchLength and partitionLeaderEpoch, so
 * stamping those leaves it valid. Reads that hand the bytes on unchanged (the Kafka door's Fetch) do not
 * check it, as a Kafka broker does not: the consumer checks it. Reads that decode records check it first.
 */
export const KAFKA_LAYOUT_HEADER_BYTES = 61;
/** Epochs above this would put a 1 or a 2 at byte 12 and read as cohort's layout. */
export const MAX_KAFKA_LAYOUT_EPOCH = 0xff_ffff;

const PARTITION_LEADER_EPOCH_AT = 12;
const MAGIC_AT = 16;
const CRC_AT = 17;
const ATTRIBUTES_AT = 21;
const LAST_OFFSET_DELTA_AT = 23;
const BASE_TIMESTAMP_AT = 27;
const MAX_TIMESTAMP_AT = 35;
const PRODUCER_ID_AT = 43;
const PRODUCER_EPOCH_AT = 51;
const BASE_SEQUENCE_AT = 53;
const RECORD_COUNT_AT = 57;
const KAFKA_MAGIC = 2;
/** length, attributes, Δts, Δoffset, key length, value length, header count: one byte each at least. */
const MIN_RECORD_BYTES = 7;
const TWO_POW_32 = 0x1_0000_0000;
const SAFE_HIGH_WORD_LIMIT = 0x20_0000;
/** A zigzag varlong takes at most 10 bytes, a varint 5 (Java's reader refuses a longer one). */
const MAX_VARLONG_BYTES = 10;
const MAX_VARINT_BYTES = 5;
const MIN_INT32 = -0x8000_0000;
const MAX_INT32 = 0x7fff_ffff;
const EMPTY = Buffer.alloc(0);

/** Where each header field of Kafka's RecordBatch v2 sits (the table above), for every reader of it. */
export const KafkaLayout = {
  PARTITION_LEADER_EPOCH_AT,
  MAGIC_AT,
  CRC_AT,
  ATTRIBUTES_AT,
  LAST_OFFSET_DELTA_AT,
  BASE_TIMESTAMP_AT,
  MAX_TIMESTAMP_AT,
  PRODUCER_ID_AT,
  PRODUCER_EPOCH_AT,
  BASE_SEQUENCE_AT,
  RECORD_COUNT_AT,
} as const;

/** Whether the batch at `position` has this layout (its byte 12 is not one of cohort's magics). */
export function isKafkaLayoutAt(buffer: Buffer, position: number): boolean {
  const byte = buffer[position + PARTITION_LEADER_EPOCH_AT];
  return byte === 0x00 || byte === 0xff;
}

function corrupt(message: string): CohortError {
  return new CohortError(ErrorCode.CORRUPT_MESSAGE, message);
}

/** A non-negative safe int64 at `at`, or -1. */
function readSafeInt64(buffer: Buffer, at: number): number {
  const high = buffer.readUInt32BE(at);
  if (high >= SAFE_HIGH_WORD_LIMIT) return -1;
  return high * TWO_POW_32 + buffer.readUInt32BE(at + 4);
}

/** The CRC-32C a batch of this layout should carry: over its bytes from the attributes on (Kafka's rule). */
export function kafkaBatchCrc(batch: Buffer): number {
  return crc32c(batch.subarray(ATTRIBUTES_AT));
}

function isCrcValid(batch: Buffer): boolean {
  return batch.readUInt32BE(CRC_AT) === kafkaBatchCrc(batch);
}

/**
 * `checkBatchAt`'s checks of a whole batch in this layout (`batch` is exactly its bytes): the header's
 * fields, and the CRC-32C when `isCrcChecked`. The records are checked when they are decoded.
 */
export function isValidKafkaLayoutBatch(batch: Buffer, isCrcChecked: boolean): boolean {
  if (batch.length < KAFKA_LAYOUT_HEADER_BYTES || batch[MAGIC_AT] !== KAFKA_MAGIC) return false;
  if (batch.readUInt16BE(ATTRIBUTES_AT) !== 0) return false;
  const lastOffsetDelta = batch.readInt32BE(LAST_OFFSET_DELTA_AT);
  const recordCount = batch.readInt32BE(RECORD_COUNT_AT);
  const baseOffset = readSafeInt64(batch, 0);
  if (baseOffset < 0 || lastOffsetDelta < 0 || !Number.isSafeInteger(baseOffset + lastOffsetDelta))
    return false;
  if (recordCount !== lastOffsetDelta + 1) return false;
  if (recordCount * MIN_RECORD_BYTES > batch.length - KAFKA_LAYOUT_HEADER_BYTES) return false;
  if (readSafeInt64(batch, BASE_TIMESTAMP_AT) <= 0 || readSafeInt64(batch, MAX_TIMESTAMP_AT) <= 0)
    return false;
  if (batch.readInt32BE(PARTITION_LEADER_EPOCH_AT) < -1) return false;
  return !isCrcChecked || isCrcValid(batch);
}

/**
 * Whether `bytes` (one Produce partition's records field) is one batch the log can store as it came:
 * complete and alone, magic 2, its CRC-32C right, attributes 0 (no compression, CreateTime, neither
 * transactional nor control), no producer id, records numbered 0, 1, ... (lastOffsetDelta + 1 of them),
 * every record well formed with a timestamp above 0, and maxTimestamp the largest of them. Anything else
 * is false, never an error: the caller decodes such a batch itself, which also says what is wrong with
 * it. Also left to the caller is what cohort's own layout and replication store differently, so that
 * every replica and every rewrite (compaction, truncation) keeps the same record: a timestamp of 0 or
 * none (the append time), an empty key (stored as none), a null header value (stored as empty) and a
 * header key that is not UTF-8. Varints must be as long as Kafka's readers take (5 bytes for an int32
 * field, 10 for the timestamp delta), since the bytes go to consumers as they are.
 */
export function isStorableClientBatch(bytes: Buffer): boolean {
  if (bytes.length < KAFKA_LAYOUT_HEADER_BYTES) return false;
  if (bytes.readInt32BE(8) !== bytes.length - 12 || bytes[MAGIC_AT] !== KAFKA_MAGIC) return false;
  if (bytes.readUInt16BE(ATTRIBUTES_AT) !== 0) return false;
  if (bytes.readInt32BE(PRODUCER_ID_AT) !== -1 || bytes.readInt32BE(PRODUCER_ID_AT + 4) !== -1) return false;
  const recordCount = bytes.readInt32BE(RECORD_COUNT_AT);
  if (recordCount < 1 || bytes.readInt32BE(LAST_OFFSET_DELTA_AT) !== recordCount - 1) return false;
  if (recordCount * MIN_RECORD_BYTES > bytes.length - KAFKA_LAYOUT_HEADER_BYTES) return false;
  const baseTimestampMs = readSafeInt64(bytes, BASE_TIMESTAMP_AT);
  const maxTimestampMs = readSafeInt64(bytes, MAX_TIMESTAMP_AT);
  if (baseTimestampMs <= 0 || maxTimestampMs <= 0) return false;
  try {
    if (walkRecords(bytes, 0, 0, null, true) !== maxTimestampMs) return false;
  } catch (error) {
    if (error instanceof CohortError) return false;
    throw error;
  }
  return isCrcValid(bytes);
}

/** Writes the offset and the leader epoch an append gives a batch of this layout (the CRC stays valid). */
export function stampKafkaLayout(batch: Buffer, baseOffset: number, leaderEpoch: number): void {
  batch.writeUInt32BE(Math.floor(baseOffset / TWO_POW_32), 0);
  batch.writeUInt32BE(baseOffset >>> 0, 4);
  batch.writeInt32BE(leaderEpoch, PARTITION_LEADER_EPOCH_AT);
}

/**
 * The records of a batch of this layout, after checking its CRC-32C (the bytes may come from a file).
 * Throws CORRUPT_MESSAGE when the CRC or any record is wrong. Keys, values and header values are views
 * into the batch; a null header value reads as empty bytes (cohort's RecordHeader has no null).
 */
export function decodeKafkaLayoutRecords(batch: Buffer, leaderEpoch: number): LogRecord[] {
  if (!isCrcValid(batch)) throw corrupt('record batch failed its CRC-32C check');
  const records = new Array<LogRecord>(batch.readInt32BE(RECORD_COUNT_AT));
  walkRecords(batch, readSafeInt64(batch, 0), leaderEpoch, records, false);
  return records;
}

/**
 * Checks every record of the batch and returns the largest timestamp; with `out`, also decodes them into
 * it (offsets from `baseOffset`). `isStoring`: also refuse what the log does not store as it came (see
 * `isStorableClientBatch`). Throws CORRUPT_MESSAGE at the first thing wrong.
 */
function walkRecords(
  batch: Buffer,
  baseOffset: number,
  leaderEpoch: number,
  out: LogRecord[] | null,
  isStoring: boolean,
): number {
  const end = batch.length;
  const count = batch.readInt32BE(RECORD_COUNT_AT);
  const baseTimestampMs = readSafeInt64(batch, BASE_TIMESTAMP_AT);
  const cursor: Cursor = { position: KAFKA_LAYOUT_HEADER_BYTES };
  let maxTimestampMs = -1;
  for (let i = 0; i < count; i++) {
    const length = readVarint(batch, cursor, end);
    if (length < MIN_RECORD_BYTES - 1 || length > end - cursor.position)
      throw corrupt('record runs past its batch');
    const recordEnd = cursor.position + length;
    cursor.position++; // attributes: unused
    const timestampMs = baseTimestampMs + readVarlong(batch, cursor, recordEnd);
    if (!(timestampMs > 0) || !Number.isSafeInteger(timestampMs))
      throw corrupt('record timestamp must be above 0');
    if (timestampMs > maxTimestampMs) maxTimestampMs = timestampMs;
    if (readVarint(batch, cursor, recordEnd) !== i) throw corrupt('record offset deltas must be 0, 1, ...');
    const key = readNullableBytes(batch, cursor, recordEnd);
    if (isStoring && key !== null && key.length === 0) throw corrupt('an empty key is stored as none');
    const value = readNullableBytes(batch, cursor, recordEnd);
    const headerCount = readVarint(batch, cursor, recordEnd);
    if (headerCount < 0 || headerCount * 2 > recordEnd - cursor.position)
      throw corrupt('header count exceeds the record');
    let headers: readonly RecordHeader[] = NO_HEADERS;
    let list: RecordHeader[] | null = null;
    if (headerCount > 0 && out !== null) headers = list = new Array<RecordHeader>(headerCount);
    for (let h = 0; h < headerCount; h++) {
      const keyLength = readVarint(batch, cursor, recordEnd);
      if (keyLength < 0 || keyLength > recordEnd - cursor.position)
        throw corrupt('header key runs past its record');
      const keyStart = cursor.position;
      cursor.position += keyLength;
      const headerValue = readNullableBytes(batch, cursor, recordEnd);
      if (isStoring && (headerValue === null || !isUtf8(batch.subarray(keyStart, keyStart + keyLength)))) {
        throw corrupt('a null header value or a header key that is not UTF-8 is stored otherwise');
      }
      if (list !== null) {
        list[h] = {
          key: batch.toString('utf8', keyStart, keyStart + keyLength),
          value: headerValue ?? EMPTY,
        };
      }
    }
    if (cursor.position !== recordEnd) throw corrupt('record length does not match its fields');
    if (out !== null) out[i] = { offset: baseOffset + i, timestampMs, key, value, headers, leaderEpoch };
  }
  if (cursor.position !== end) throw corrupt('batch holds bytes after its last record');
  return maxTimestampMs;
}

/** A zigzag LEB128 varint (an int32 field: at most 5 bytes, within int32) at the cursor, before `end`. */
function readVarint(buffer: Buffer, cursor: Cursor, end: number): number {
  const value = readZigzag(buffer, cursor, end, MAX_VARINT_BYTES);
  if (value < MIN_INT32 || value > MAX_INT32) throw corrupt('varint is beyond 32 bits');
  return value;
}

/** A zigzag LEB128 varlong at the cursor, before `end`, as a safe integer. */
function readVarlong(buffer: Buffer, cursor: Cursor, end: number): number {
  return readZigzag(buffer, cursor, end, MAX_VARLONG_BYTES);
}

/**
 * A zigzag LEB128 varint of at most `maxBytes` at the cursor (advanced past it) that must end before
 * `end`, as a safe integer; CORRUPT_MESSAGE otherwise. Kafka's records are made of them.
 */
export function readZigzag(buffer: Buffer, cursor: Cursor, end: number, maxBytes: number): number {
  let position = cursor.position;
  let unsigned = 0;
  let scale = 1;
  for (let i = 0; i < maxBytes; i++) {
    if (position >= end) throw corrupt('varint runs past the end of its record');
    const byte = buffer[position++]!;
    unsigned += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      if (unsigned > Number.MAX_SAFE_INTEGER) throw corrupt('varint is larger than a safe integer');
      cursor.position = position;
      return unsigned % 2 === 0 ? unsigned / 2 : -(unsigned + 1) / 2;
    }
    scale *= 0x80;
  }
  throw corrupt(`varint longer than ${maxBytes} bytes`);
}

function readNullableBytes(buffer: Buffer, cursor: Cursor, end: number): Buffer | null {
  const length = readVarint(buffer, cursor, end);
  if (length === -1) return null;
  if (length < -1 || length > end - cursor.position) throw corrupt('key or value runs past its record');
  const start = cursor.position;
  cursor.position = start + length;
  return buffer.subarray(start, start + length);
}
