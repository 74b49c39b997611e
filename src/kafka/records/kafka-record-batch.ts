import { CohortError } from '../../errors';
import { kafkaBatchCrc, KafkaLayout, readZigzag } from '../../log/storage/kafka-batch-layout';
import { compress, CompressionCodec, decompress } from './compression';
import { KafkaRecordsError } from './kafka-records-error';

/**
 * Kafka's RecordBatch v2 (magic 2), as clients send it in Produce and read it in Fetch. The log keeps
 * the usual client batch as it came (src/log/storage/kafka-batch-layout.ts) and serves it back as it is;
 * this codec is for the rest: the door decodes any other batch (compressed, idempotent, records without
 * timestamps) into records, says what is wrong with a bad one, and encodes records stored in cohort's own
 * layout (src/log/storage/record-batch.ts) into new batches for a Fetch.
 *
 *   offset size field
 *        0    8 baseOffset            ignored on Produce (the leader assigns offsets)
 *        8    4 batchLength           bytes after this field
 *       12    4 partitionLeaderEpoch
 *       16    1 magic                 2 (0 and 1, the old MessageSets, keep magic at this byte too)
 *       17    4 crc                   CRC-32C (Castagnoli) of bytes [21, end)
 *       21    2 attributes            bits 0-2 compression, 3 LogAppendTime, 4 transactional, 5 control
 *       23    4 lastOffsetDelta
 *       27    8 baseTimestamp         (Kafka: firstTimestamp) record timestamps are deltas from it
 *       35    8 maxTimestamp
 *       43    8 producerId            -1 without idempotence
 *       51    2 producerEpoch
 *       53    4 baseSequence
 *       57    4 recordsCount
 *       61    … records, compressed together as one blob when bits 0-2 are not 0; each record:
 *                 length varint (bytes after it), attributes int8 (unused), timestampDelta varlong,
 *                 offsetDelta varint, keyLength varint (-1 = null) + key, valueLength varint + value,
 *                 headerCount varint, then per header keyLength varint + UTF-8 key, valueLength varint
 *                 (-1 = null) + value
 *
 * Varints are zigzag-encoded LEB128 (0 → 00, -1 → 01, 1 → 02, 300 → d8 04).
 *
 * Worked example: one record {offsetDelta 0, timestamp 1000, key "k", value "v"} at baseOffset 7, epoch
 * 5, uncompressed: a 61-byte header (batchLength 61 - 12 + 9 = 58, lastOffsetDelta 0, both timestamps
 * 1000, producerId -1, epoch -1, baseSequence -1, count 1) then the record 10 00 00 00 02 6b 02 76 00
 * (length 8, attributes, Δts 0, Δoffset 0, key length 1, 'k', value length 1, 'v', no headers): 70 bytes.
 *
 * Decoding never trusts a length: every one is checked against the bytes that remain (and record counts
 * against the smallest a record can be) before anything is allocated, and every failure is a
 * KafkaRecordsError. Keys, values and header values are views into the input (or into its decompressed
 * records), not copies: copy them to keep them past the request.
 */
export const KAFKA_RECORD_BATCH_MAGIC = 2;
/** baseOffset + batchLength. */
export const KAFKA_LOG_OVERHEAD = 12;
/** Everything before the records. */
export const KAFKA_RECORD_BATCH_HEADER_BYTES = 61;
/** Kafka's RecordBatch.NO_PRODUCER_ID, NO_PRODUCER_EPOCH and NO_SEQUENCE. */
export const NO_PRODUCER_ID = -1;
export const NO_PRODUCER_EPOCH = -1;
export const NO_SEQUENCE = -1;
/** Kafka's RecordBatch.NO_TIMESTAMP: a record produced without a timestamp. */
export const NO_TIMESTAMP = -1;
/** The default bound on what one Produce partition's batches may decompress to. */
export const DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024;

const COMPRESSION_MASK = 0x07;
const LOG_APPEND_TIME_FLAG = 0x08;
const TRANSACTIONAL_FLAG = 0x10;
const CONTROL_FLAG = 0x20;
/** length, attributes, Δts, Δoffset, key length, value length, header count: one byte each at least. */
const MIN_RECORD_BYTES = 7;
/** A header's key length and value length. */
const MIN_HEADER_BYTES = 2;
const TWO_POW_32 = 0x1_0000_0000;
/** A signed 64-bit value is a safe integer when its high word lies in [-2^21, 2^21). */
const SAFE_HIGH_WORD = 0x20_0000;
/** A zigzag varlong takes at most 10 bytes; beyond 2^53 it is refused anyway. */
const MAX_VARLONG_BYTES = 10;
/** Offsets in a batch are int32 deltas from its baseOffset. */
const MAX_OFFSET_DELTA = 0x7fffffff;

export interface KafkaRecordHeader {
  readonly key: string;
  readonly value: Buffer | null;
}

export interface KafkaRecord {
  readonly offsetDelta: number;
  /** Absolute: baseTimestamp + timestampDelta, or the batch's maxTimestamp under LogAppendTime. */
  readonly timestampMs: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly KafkaRecordHeader[];
}

export interface KafkaRecordBatch {
  readonly baseOffset: number;
  readonly partitionLeaderEpoch: number;
  readonly compression: CompressionCodec;
  readonly isLogAppendTime: boolean;
  /** Always false in a decoded batch: transactional and control batches are refused (no transactions). */
  readonly isTransactional: boolean;
  readonly isControl: boolean;
  readonly lastOffsetDelta: number;
  readonly baseTimestampMs: number;
  readonly maxTimestampMs: number;
  readonly producerId: number;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly records: readonly KafkaRecord[];
  /** The batch's bytes on the wire (compressed, header included). */
  readonly sizeInBytes: number;
}

export interface DecodeOptions {
  /** What all the batches may decompress to together; DEFAULT_MAX_DECOMPRESSED_BYTES if absent. */
  readonly maxDecompressedBytes?: number;
}

const NO_HEADERS: readonly KafkaRecordHeader[] = Object.freeze([]);

function invalid(message: string): KafkaRecordsError {
  return new KafkaRecordsError('invalid-record', message);
}

function readInt64(buffer: Buffer, at: number): number {
  const high = buffer.readInt32BE(at);
  if (high >= SAFE_HIGH_WORD || high < -SAFE_HIGH_WORD) return Number.NaN;
  return high * TWO_POW_32 + buffer.readUInt32BE(at + 4);
}

function writeInt64(buffer: Buffer, at: number, value: number): void {
  const high = Math.floor(value / TWO_POW_32);
  buffer.writeInt32BE(high, at);
  buffer.writeUInt32BE(value - high * TWO_POW_32, at + 4);
}

/**
 * Every batch in `bytes` (a Produce partition's `records` field), each checked whole: length, magic 2,
 * CRC-32C, attributes, then every record. Throws KafkaRecordsError on the first thing wrong; partial
 * trailing bytes are `truncated` (a Produce's batches are always complete). Kafka's Produce v3+ takes
 * exactly one batch per partition; checking that is the door's.
 */
export function decodeKafkaRecordBatches(bytes: Buffer, options: DecodeOptions = {}): KafkaRecordBatch[] {
  let budget = options.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES;
  const batches: KafkaRecordBatch[] = [];
  let position = 0;
  if (bytes.length === 0) throw new KafkaRecordsError('truncated', 'no record batch');
  while (position < bytes.length) {
    const batch = decodeBatchAt(bytes, position, budget);
    budget -= batch.decodedBytes;
    batches.push(batch.batch);
    position += batch.batch.sizeInBytes;
  }
  return batches;
}

function decodeBatchAt(
  bytes: Buffer,
  position: number,
  maxDecompressedBytes: number,
): { batch: KafkaRecordBatch; decodedBytes: number } {
  const remaining = bytes.length - position;
  if (remaining < KAFKA_LOG_OVERHEAD) {
    throw new KafkaRecordsError('truncated', `${remaining} bytes are too few for a batch header`);
  }
  const batchLength = bytes.readInt32BE(position + 8);
  // magic sits at the same byte in every format: read it first, so an old MessageSet gets its own reason.
  if (remaining > KafkaLayout.MAGIC_AT) {
    const magic = bytes.readInt8(position + KafkaLayout.MAGIC_AT);
    if (magic === 0 || magic === 1) {
      throw new KafkaRecordsError('unsupported-magic', `magic ${magic} MessageSets are not accepted`);
    }
    if (magic !== KAFKA_RECORD_BATCH_MAGIC) {
      throw new KafkaRecordsError('invalid-record', `record batch magic ${magic} is unknown`);
    }
  }
  if (batchLength < KAFKA_RECORD_BATCH_HEADER_BYTES - KAFKA_LOG_OVERHEAD) {
    throw new KafkaRecordsError('invalid-length', `batchLength ${batchLength} is below the header's size`);
  }
  if (batchLength > remaining - KAFKA_LOG_OVERHEAD) {
    throw new KafkaRecordsError(
      'truncated',
      `batchLength ${batchLength} exceeds the ${remaining - KAFKA_LOG_OVERHEAD} bytes that follow it`,
    );
  }
  const size = KAFKA_LOG_OVERHEAD + batchLength;
  const batch = bytes.subarray(position, position + size);
  const storedCrc = batch.readUInt32BE(KafkaLayout.CRC_AT);
  const crc = kafkaBatchCrc(batch);
  if (crc !== storedCrc) {
    throw new KafkaRecordsError(
      'crc-mismatch',
      `record batch CRC-32C is 0x${crc.toString(16)}, stored 0x${storedCrc.toString(16)}`,
    );
  }

  const attributes = batch.readInt16BE(KafkaLayout.ATTRIBUTES_AT);
  if ((attributes & TRANSACTIONAL_FLAG) !== 0) {
    throw new KafkaRecordsError('transactional', 'transactional record batches are not supported');
  }
  if ((attributes & CONTROL_FLAG) !== 0) {
    throw new KafkaRecordsError('control', 'clients may not write control batches');
  }
  const codec = attributes & COMPRESSION_MASK;
  const isLogAppendTime = (attributes & LOG_APPEND_TIME_FLAG) !== 0;
  const baseOffset = readInt64(batch, 0);
  const lastOffsetDelta = batch.readInt32BE(KafkaLayout.LAST_OFFSET_DELTA_AT);
  const baseTimestampMs = readInt64(batch, KafkaLayout.BASE_TIMESTAMP_AT);
  const maxTimestampMs = readInt64(batch, KafkaLayout.MAX_TIMESTAMP_AT);
  const producerId = readInt64(batch, KafkaLayout.PRODUCER_ID_AT);
  const recordsCount = batch.readInt32BE(KafkaLayout.RECORD_COUNT_AT);
  if (Number.isNaN(baseOffset)) throw invalid('baseOffset is beyond 2^53');
  if (Number.isNaN(baseTimestampMs) || Number.isNaN(maxTimestampMs))
    throw invalid('timestamp is beyond 2^53');
  if (Number.isNaN(producerId)) throw invalid('producerId is beyond 2^53');
  if (lastOffsetDelta < 0) throw invalid(`lastOffsetDelta ${lastOffsetDelta} is negative`);
  if (recordsCount <= 0) throw invalid(`recordsCount ${recordsCount}: a batch must hold records`);

  let records = batch.subarray(KAFKA_RECORD_BATCH_HEADER_BYTES);
  if (codec !== CompressionCodec.NONE) records = decompress(codec, records, maxDecompressedBytes);
  else if (records.length > maxDecompressedBytes) {
    throw new KafkaRecordsError('too-large', `records exceed the ${maxDecompressedBytes}-byte limit`);
  }
  if (recordsCount > records.length / MIN_RECORD_BYTES) {
    throw invalid(`recordsCount ${recordsCount} cannot fit in ${records.length} bytes`);
  }
  return {
    batch: {
      baseOffset,
      partitionLeaderEpoch: batch.readInt32BE(KafkaLayout.PARTITION_LEADER_EPOCH_AT),
      compression: codec as CompressionCodec,
      isLogAppendTime,
      isTransactional: false,
      isControl: false,
      lastOffsetDelta,
      baseTimestampMs,
      maxTimestampMs,
      producerId,
      producerEpoch: batch.readInt16BE(KafkaLayout.PRODUCER_EPOCH_AT),
      baseSequence: batch.readInt32BE(KafkaLayout.BASE_SEQUENCE_AT),
      records: decodeRecords(records, recordsCount, baseTimestampMs, isLogAppendTime ? maxTimestampMs : -1),
      sizeInBytes: size,
    },
    decodedBytes: codec === CompressionCodec.NONE ? 0 : records.length,
  };
}

/** A read position that the varint readers advance. */
interface Cursor {
  position: number;
}

/** A zigzag varint/varlong at the cursor that must end before `end`, as a safe integer. */
function readVarint(buffer: Buffer, cursor: Cursor, end: number): number {
  try {
    return readZigzag(buffer, cursor, end, MAX_VARLONG_BYTES);
  } catch (error) {
    if (error instanceof CohortError) throw invalid(error.message);
    throw error;
  }
}

function readNullableBytes(buffer: Buffer, cursor: Cursor, end: number, what: string): Buffer | null {
  const length = readVarint(buffer, cursor, end);
  if (length === -1) return null;
  if (length < -1) throw invalid(`${what} length ${length} is negative`);
  if (length > end - cursor.position) throw invalid(`${what} of ${length} bytes runs past its record`);
  const start = cursor.position;
  cursor.position = start + length;
  return buffer.subarray(start, start + length);
}

function decodeRecords(
  buffer: Buffer,
  count: number,
  baseTimestampMs: number,
  logAppendTimeMs: number,
): KafkaRecord[] {
  const end = buffer.length;
  const records = new Array<KafkaRecord>(count);
  const cursor: Cursor = { position: 0 };
  for (let i = 0; i < count; i++) {
    const length = readVarint(buffer, cursor, end);
    if (length < MIN_RECORD_BYTES - 1 || length > end - cursor.position) {
      throw invalid(`record ${i} of ${length} bytes does not fit its batch`);
    }
    const recordEnd = cursor.position + length;
    cursor.position++; // attributes: unused
    const timestampDelta = readVarint(buffer, cursor, recordEnd);
    const offsetDelta = readVarint(buffer, cursor, recordEnd);
    const key = readNullableBytes(buffer, cursor, recordEnd, 'key');
    const value = readNullableBytes(buffer, cursor, recordEnd, 'value');
    const headerCount = readVarint(buffer, cursor, recordEnd);
    if (headerCount < 0 || headerCount * MIN_HEADER_BYTES > recordEnd - cursor.position) {
      throw invalid(`header count ${headerCount} does not fit its record`);
    }
    let headers = NO_HEADERS;
    if (headerCount > 0) {
      const list = new Array<KafkaRecordHeader>(headerCount);
      for (let h = 0; h < headerCount; h++) {
        const keyLength = readVarint(buffer, cursor, recordEnd);
        if (keyLength < 0 || keyLength > recordEnd - cursor.position) {
          throw invalid(`header key length ${keyLength} does not fit its record`);
        }
        const headerKey = buffer.toString('utf8', cursor.position, cursor.position + keyLength);
        cursor.position += keyLength;
        list[h] = { key: headerKey, value: readNullableBytes(buffer, cursor, recordEnd, 'header value') };
      }
      headers = list;
    }
    if (cursor.position !== recordEnd) throw invalid(`record ${i}'s length does not match its fields`);
    const timestampMs = logAppendTimeMs >= 0 ? logAppendTimeMs : baseTimestampMs + timestampDelta;
    if (!Number.isSafeInteger(timestampMs)) throw invalid('record timestamp is beyond 2^53');
    records[i] = { offsetDelta, timestampMs, key, value, headers };
  }
  if (cursor.position !== end) throw invalid(`${end - cursor.position} bytes follow the last record`);
  return records;
}

// --- Encoding ---

/** A record to put in a batch: cohort's LogRecord fits (its header values are never null). */
export interface KafkaRecordInput {
  readonly offset: number;
  readonly timestampMs: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly { readonly key: string; readonly value: Buffer | null }[];
}

export interface EncodeOptions {
  /** The first record's offset; every record's offsetDelta is taken from it. */
  readonly baseOffset: number;
  readonly partitionLeaderEpoch: number;
  /** CompressionCodec.NONE unless given. */
  readonly compression?: CompressionCodec;
}

function zigzag(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

function varintSize(value: number): number {
  let unsigned = zigzag(value);
  let size = 1;
  while (unsigned >= 0x80) {
    unsigned = Math.floor(unsigned / 0x80);
    size++;
  }
  return size;
}

function writeVarint(buffer: Buffer, position: number, value: number): number {
  let unsigned = zigzag(value);
  while (unsigned >= 0x80) {
    buffer[position++] = (unsigned % 0x80) | 0x80;
    unsigned = Math.floor(unsigned / 0x80);
  }
  buffer[position++] = unsigned;
  return position;
}

function nullableBytesSize(bytes: Buffer | null): number {
  return bytes === null ? 1 : varintSize(bytes.length) + bytes.length;
}

function writeNullableBytes(buffer: Buffer, position: number, bytes: Buffer | null): number {
  if (bytes === null) return writeVarint(buffer, position, -1);
  position = writeVarint(buffer, position, bytes.length);
  bytes.copy(buffer, position);
  return position + bytes.length;
}

/** The bytes of a record after its length varint. */
function recordBodySize(record: KafkaRecordInput, offsetDelta: number, timestampDelta: number): number {
  let size = 1 + varintSize(timestampDelta) + varintSize(offsetDelta);
  size += nullableBytesSize(record.key) + nullableBytesSize(record.value);
  const headers = record.headers;
  size += varintSize(headers.length);
  for (let h = 0; h < headers.length; h++) {
    const header = headers[h]!;
    const keyBytes = Buffer.byteLength(header.key, 'utf8');
    size += varintSize(keyBytes) + keyBytes + nullableBytesSize(header.value);
  }
  return size;
}

/** A record's whole size in a batch whose base offset and timestamp are given. */
export function kafkaRecordSize(
  record: KafkaRecordInput,
  baseOffset: number,
  baseTimestampMs: number,
): number {
  const body = recordBodySize(record, record.offset - baseOffset, record.timestampMs - baseTimestampMs);
  return varintSize(body) + body;
}

function writeRecord(
  buffer: Buffer,
  position: number,
  record: KafkaRecordInput,
  offsetDelta: number,
  timestampDelta: number,
): number {
  position = writeVarint(buffer, position, recordBodySize(record, offsetDelta, timestampDelta));
  buffer[position++] = 0;
  position = writeVarint(buffer, position, timestampDelta);
  position = writeVarint(buffer, position, offsetDelta);
  position = writeNullableBytes(buffer, position, record.key);
  position = writeNullableBytes(buffer, position, record.value);
  const headers = record.headers;
  position = writeVarint(buffer, position, headers.length);
  for (let h = 0; h < headers.length; h++) {
    const header = headers[h]!;
    const keyBytes = Buffer.byteLength(header.key, 'utf8');
    position = writeVarint(buffer, position, keyBytes);
    position += buffer.write(header.key, position, keyBytes, 'utf8');
    position = writeNullableBytes(buffer, position, header.value);
  }
  return position;
}

/**
 * One batch holding `records` (at least one, offsets increasing from `baseOffset` and within 2^31 of
 * it), as a Fetch response carries it: producerId, producerEpoch and baseSequence -1, CreateTime,
 * CRC-32C over attributes..end. Uncompressed, the batch is written straight into one buffer of its exact
 * size; compressed, the records are written into one buffer of their exact size and compressed after.
 */
export function encodeKafkaRecordBatch(records: readonly KafkaRecordInput[], options: EncodeOptions): Buffer {
  const codec = options.compression ?? CompressionCodec.NONE;
  const recordsBytes = checkedRecordsBytes(records, 0, records.length, options.baseOffset);
  if (codec !== CompressionCodec.NONE) {
    return encodeCompressedBatch(
      records,
      0,
      records.length,
      options.baseOffset,
      options.partitionLeaderEpoch,
      codec,
      recordsBytes,
    );
  }
  const buffer = Buffer.allocUnsafe(KAFKA_RECORD_BATCH_HEADER_BYTES + recordsBytes);
  writeBatch(buffer, 0, records, 0, records.length, options.baseOffset, options.partitionLeaderEpoch);
  return buffer;
}

/**
 * The size of records[from, to) in a batch at `baseOffset` (whose base timestamp is the first record's),
 * after checking that there is at least one and that offsets increase within 2^31 of `baseOffset`.
 */
export function checkedRecordsBytes(
  records: readonly KafkaRecordInput[],
  from: number,
  to: number,
  baseOffset: number,
): number {
  if (to <= from) throw new RangeError('a record batch needs at least one record');
  const baseTimestampMs = records[from]!.timestampMs;
  let bytes = 0;
  let previousOffset = baseOffset - 1;
  for (let i = from; i < to; i++) {
    const record = records[i]!;
    if (!(record.offset > previousOffset) || record.offset - baseOffset > MAX_OFFSET_DELTA) {
      throw new RangeError(
        `record offsets must increase from ${baseOffset} within 2^31; got ${record.offset}`,
      );
    }
    previousOffset = record.offset;
    bytes += kafkaRecordSize(record, baseOffset, baseTimestampMs);
  }
  return bytes;
}

/**
 * Writes the uncompressed batch of records[from, to) at `at` in `buffer`, which has room for it (the
 * header and `checkedRecordsBytes`), and returns the position after it.
 */
export function writeBatch(
  buffer: Buffer,
  at: number,
  records: readonly KafkaRecordInput[],
  from: number,
  to: number,
  baseOffset: number,
  partitionLeaderEpoch: number,
): number {
  const baseTimestampMs = records[from]!.timestampMs;
  let position = at + KAFKA_RECORD_BATCH_HEADER_BYTES;
  let maxTimestampMs = baseTimestampMs;
  for (let i = from; i < to; i++) {
    const record = records[i]!;
    if (record.timestampMs > maxTimestampMs) maxTimestampMs = record.timestampMs;
    position = writeRecord(
      buffer,
      position,
      record,
      record.offset - baseOffset,
      record.timestampMs - baseTimestampMs,
    );
  }
  const batch = buffer.subarray(at, position);
  writeHeader(
    batch,
    records,
    from,
    to,
    baseOffset,
    partitionLeaderEpoch,
    CompressionCodec.NONE,
    maxTimestampMs,
  );
  return position;
}

/** The batch of records[from, to), its records compressed by `codec` (`recordsBytes` uncompressed). */
export function encodeCompressedBatch(
  records: readonly KafkaRecordInput[],
  from: number,
  to: number,
  baseOffset: number,
  partitionLeaderEpoch: number,
  codec: CompressionCodec,
  recordsBytes: number,
): Buffer {
  const baseTimestampMs = records[from]!.timestampMs;
  const plain = Buffer.allocUnsafe(recordsBytes);
  let position = 0;
  let maxTimestampMs = baseTimestampMs;
  for (let i = from; i < to; i++) {
    const record = records[i]!;
    if (record.timestampMs > maxTimestampMs) maxTimestampMs = record.timestampMs;
    position = writeRecord(
      plain,
      position,
      record,
      record.offset - baseOffset,
      record.timestampMs - baseTimestampMs,
    );
  }
  const compressed = compress(codec, plain);
  const batch = Buffer.allocUnsafe(KAFKA_RECORD_BATCH_HEADER_BYTES + compressed.length);
  compressed.copy(batch, KAFKA_RECORD_BATCH_HEADER_BYTES);
  writeHeader(batch, records, from, to, baseOffset, partitionLeaderEpoch, codec, maxTimestampMs);
  return batch;
}

/** Fills the header of `batch` (exactly the batch's bytes, records in place) and its CRC. */
function writeHeader(
  batch: Buffer,
  records: readonly KafkaRecordInput[],
  from: number,
  to: number,
  baseOffset: number,
  partitionLeaderEpoch: number,
  codec: CompressionCodec,
  maxTimestampMs: number,
): void {
  writeInt64(batch, 0, baseOffset);
  batch.writeInt32BE(batch.length - KAFKA_LOG_OVERHEAD, 8);
  batch.writeInt32BE(partitionLeaderEpoch, KafkaLayout.PARTITION_LEADER_EPOCH_AT);
  batch[KafkaLayout.MAGIC_AT] = KAFKA_RECORD_BATCH_MAGIC;
  batch.writeInt16BE(codec, KafkaLayout.ATTRIBUTES_AT);
  batch.writeInt32BE(records[to - 1]!.offset - baseOffset, KafkaLayout.LAST_OFFSET_DELTA_AT);
  writeInt64(batch, KafkaLayout.BASE_TIMESTAMP_AT, records[from]!.timestampMs);
  writeInt64(batch, KafkaLayout.MAX_TIMESTAMP_AT, maxTimestampMs);
  writeInt64(batch, KafkaLayout.PRODUCER_ID_AT, NO_PRODUCER_ID);
  batch.writeInt16BE(NO_PRODUCER_EPOCH, KafkaLayout.PRODUCER_EPOCH_AT);
  batch.writeInt32BE(NO_SEQUENCE, KafkaLayout.BASE_SEQUENCE_AT);
  batch.writeInt32BE(to - from, KafkaLayout.RECORD_COUNT_AT);
  batch.writeUInt32BE(kafkaBatchCrc(batch), KafkaLayout.CRC_AT);
}
