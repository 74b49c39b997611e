import type { FetchPartitionData, ProduceRecord, RecordHeader } from '../../log';
import type { LogRecord, RecordBatch } from '../../log/storage';
import { CompressionCodec } from './compression';
import {
  encodeCompressedBatch,
  KAFKA_RECORD_BATCH_HEADER_BYTES,
  kafkaRecordSize,
  NO_TIMESTAMP,
  writeBatch,
  type KafkaRecordBatch,
} from './kafka-record-batch';

/**
 * Between Kafka's record batches and cohort's log API, in both directions, for what the log does not
 * keep in Kafka's layout (the usual client batch is stored and served as it came: see
 * `fromFetchedBatches` and src/log/storage/kafka-batch-layout.ts).
 *
 * Produce: `toProduceRecords` turns decoded batches into the log's ProduceRecords. A null value stays
 * null (a tombstone, which a consumer reads back as null); a null key becomes empty, which the log stores
 * as null again; a null header value becomes empty bytes (RecordHeader has no null). A record without a timestamp (-1) gets the append time, as in Kafka;
 * so does a record stamped exactly 0, which ProduceRecord cannot tell apart. Other negative timestamps
 * go through, and the log refuses them (INVALID_TIMESTAMP).
 *
 * Fetch: `fromFetchedRecords` encodes what the log returned for one partition as Kafka batches: one per
 * run of records that share a leader epoch (Kafka's batches carry the epoch that wrote them, and clients
 * use it to detect truncation, KIP-320). Offsets may skip inside a run (a cleaned log has gaps), as in
 * a Kafka batch after compaction. At most `maxBytes` in all, except that the first batch always holds
 * at least the first record (KIP-74: a consumer must always make progress); a record past the budget
 * ends the response, and the client fetches again from its offset.
 *
 * Example: records at offsets 10, 11 (epoch 3) and 12 (epoch 4), each of 20 encoded bytes, with a
 * budget of 200 make two batches, 61 + 40 and 61 + 20 bytes; with a budget of 150 the third record
 * would bring the total to 182, so only the first batch (101 bytes) is returned.
 */
const EMPTY = Buffer.alloc(0);
const NO_HEADERS: readonly RecordHeader[] = Object.freeze([]);
const MAX_OFFSET_DELTA = 0x7fffffff;

export function toProduceRecords(batches: readonly KafkaRecordBatch[]): ProduceRecord[] {
  let count = 0;
  for (const batch of batches) count += batch.records.length;
  const out = new Array<ProduceRecord>(count);
  let i = 0;
  for (const batch of batches) {
    for (const record of batch.records) {
      out[i++] = {
        timestampMs: record.timestampMs === NO_TIMESTAMP ? 0 : record.timestampMs,
        key: record.key ?? EMPTY,
        value: record.value,
        headers:
          record.headers.length === 0
            ? NO_HEADERS
            : record.headers.map((header) => ({ key: header.key, value: header.value ?? EMPTY })),
      };
    }
  }
  return out;
}

export interface FetchEncodeOptions {
  /** The partition's byte budget (Kafka's partition_max_bytes, or what remains of the response's). */
  readonly maxBytes: number;
  /** CompressionCodec.NONE unless given; the budget counts uncompressed bytes. */
  readonly compression?: CompressionCodec;
  /**
   * Whether these batches open the partition's answer, so that the first record goes out whatever the
   * budget (KIP-74); default true. False: nothing beyond the budget.
   */
  readonly isFirst?: boolean;
}

/**
 * The Kafka batches for one partition of a Fetch response (its `records` field); empty when the log
 * returned no records.
 */
export function fromFetchedRecords(
  partition: Pick<FetchPartitionData, 'records'>,
  options: FetchEncodeOptions,
): Buffer {
  return encodeFetchedRecords(partition.records, options).bytes;
}

/** `fromFetchedRecords`, also saying whether every record fitted the budget. */
function encodeFetchedRecords(
  records: readonly LogRecord[],
  options: FetchEncodeOptions,
): { bytes: Buffer; isBudgetSpent: boolean } {
  const codec = options.compression ?? CompressionCodec.NONE;
  // Plan the batches first (starts, ends, records' bytes), so the output is one buffer of its exact size.
  const starts: number[] = [];
  const ends: number[] = [];
  const recordsBytes: number[] = [];
  let total = 0;
  let i = 0;
  let isBudgetSpent = false;
  while (i < records.length && !isBudgetSpent) {
    const start = i;
    const first = records[start]!;
    let bytes = 0;
    let previousOffset = first.offset - 1;
    for (; i < records.length; i++) {
      const record = records[i]!;
      if (record.leaderEpoch !== first.leaderEpoch || record.offset - first.offset > MAX_OFFSET_DELTA) break;
      if (!(record.offset > previousOffset)) {
        throw new RangeError(`fetched offsets must increase: ${record.offset} after ${previousOffset}`);
      }
      previousOffset = record.offset;
      const size = kafkaRecordSize(record, first.offset, first.timestampMs);
      const isFirstRecord = options.isFirst !== false && starts.length === 0 && i === start;
      if (!isFirstRecord && total + KAFKA_RECORD_BATCH_HEADER_BYTES + bytes + size > options.maxBytes) {
        isBudgetSpent = true;
        break;
      }
      bytes += size;
    }
    if (i > start) {
      starts.push(start);
      ends.push(i);
      recordsBytes.push(bytes);
      total += KAFKA_RECORD_BATCH_HEADER_BYTES + bytes;
    }
  }
  if (starts.length === 0) return { bytes: EMPTY, isBudgetSpent };

  if (codec !== CompressionCodec.NONE) {
    const batches = starts.map((start, b) =>
      encodeCompressedBatch(
        records,
        start,
        ends[b]!,
        records[start]!.offset,
        records[start]!.leaderEpoch,
        codec,
        recordsBytes[b]!,
      ),
    );
    return { bytes: batches.length === 1 ? batches[0]! : Buffer.concat(batches), isBudgetSpent };
  }
  const out = Buffer.allocUnsafe(total);
  let position = 0;
  for (let b = 0; b < starts.length; b++) {
    const start = starts[b]!;
    const first = records[start]!;
    position = writeBatch(out, position, records, start, ends[b]!, first.offset, first.leaderEpoch);
  }
  return { bytes: out, isBudgetSpent };
}

/**
 * The Kafka batches for one partition of a Fetch response from the stored batches the log read
 * (FetchRequest.servesBatches). A batch kept in Kafka's layout and wholly below the high watermark goes
 * out as it is stored, its producer's CRC-32C with it, as a Kafka broker serves it: it may start below
 * the fetch offset, and the client skips what it did not ask for. Any other batch (cohort's layout, or
 * one that reaches past the high watermark) is encoded anew from its records at or after the fetch
 * offset and below the high watermark, as `fromFetchedRecords` does. The budget is `fromFetchedRecords`'s:
 * the first record always, nothing after it beyond `maxBytes`.
 */
export function fromFetchedBatches(
  batches: readonly RecordBatch[],
  fetchOffset: number,
  highWatermark: number,
  options: FetchEncodeOptions,
): Buffer {
  const parts: Buffer[] = [];
  /** Whether each part was encoded here (a new buffer no stored batch may be joined to). */
  const isEncoded: boolean[] = [];
  let total = 0;
  let pending: LogRecord[] = [];
  /** Encodes the records of the converted batches so far; false once the budget is spent. */
  const flushPending = (): boolean => {
    if (pending.length === 0) return true;
    const { bytes, isBudgetSpent } = encodeFetchedRecords(pending, {
      ...options,
      maxBytes: options.maxBytes - total,
      isFirst: parts.length === 0,
    });
    pending = [];
    if (bytes.length > 0) {
      parts.push(bytes);
      isEncoded.push(true);
      total += bytes.length;
    }
    return !isBudgetSpent;
  };
  for (const batch of batches) {
    if (batch.isKafkaLayout && batch.lastOffset < highWatermark) {
      if (!flushPending()) break;
      if (parts.length > 0 && total + batch.sizeInBytes > options.maxBytes) break;
      const bytes = batch.buffer;
      const previous =
        parts.length === 0 || isEncoded[parts.length - 1] ? undefined : parts[parts.length - 1]!;
      if (
        previous !== undefined &&
        previous.buffer === bytes.buffer &&
        previous.byteOffset + previous.length === bytes.byteOffset
      ) {
        // The next batch of the same file read: one view over both, so nothing is copied to join them.
        parts[parts.length - 1] = Buffer.from(
          bytes.buffer,
          previous.byteOffset,
          previous.length + bytes.length,
        );
      } else {
        parts.push(bytes);
        isEncoded.push(false);
      }
      total += batch.sizeInBytes;
      continue;
    }
    for (const record of batch.records()) {
      if (record.offset >= fetchOffset && record.offset < highWatermark) pending.push(record);
    }
  }
  flushPending();
  if (parts.length === 0) return EMPTY;
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
}
