import fc from 'fast-check';
import { RecordBatch, type LogRecord } from '../../../../src/log/storage';
import { CompressionCodec } from '../../../../src/kafka/records/compression';
import {
  decodeKafkaRecordBatches,
  encodeKafkaRecordBatch,
  KAFKA_RECORD_BATCH_HEADER_BYTES,
  type KafkaRecordBatch,
} from '../../../../src/kafka/records/kafka-record-batch';
import {
  fromFetchedBatches,
  fromFetchedRecords,
  toProduceRecords,
} from '../../../../src/kafka/records/record-conversion';

function logRecord(offset: number, leaderEpoch: number, value = `value-${offset}`): LogRecord {
  return {
    offset,
    timestampMs: 1_700_000_000_000 + offset,
    key: offset % 2 === 0 ? null : Buffer.from(`key-${offset}`),
    value: Buffer.from(value),
    headers: offset % 3 === 0 ? [{ key: 'h', value: Buffer.from([offset & 0xff]) }] : [],
    leaderEpoch,
  };
}

/** Decoded batches back to the log's records, to compare with what was fetched. */
function asLogRecords(batches: readonly KafkaRecordBatch[]): LogRecord[] {
  return batches.flatMap((batch) =>
    batch.records.map((record) => ({
      offset: batch.baseOffset + record.offsetDelta,
      timestampMs: record.timestampMs,
      key: record.key,
      value: record.value,
      headers: record.headers.map((header) => ({ key: header.key, value: header.value! })),
      leaderEpoch: batch.partitionLeaderEpoch,
    })),
  );
}

describe('toProduceRecords', () => {
  test('keeps a null value, turns a null key or header value into empty bytes and no timestamp into the append time, and keeps batch order', () => {
    const first = encodeKafkaRecordBatch(
      [
        { offset: 0, timestampMs: -1, key: null, value: null, headers: [{ key: 'h', value: null }] },
        { offset: 1, timestampMs: 5_000, key: Buffer.from('k'), value: Buffer.from('v'), headers: [] },
      ],
      { baseOffset: 0, partitionLeaderEpoch: -1 },
    );
    const second = encodeKafkaRecordBatch(
      [{ offset: 0, timestampMs: 7_000, key: null, value: Buffer.from('w'), headers: [] }],
      { baseOffset: 0, partitionLeaderEpoch: -1, compression: CompressionCodec.GZIP },
    );
    const records = toProduceRecords(decodeKafkaRecordBatches(Buffer.concat([first, second])));
    expect(records).toEqual([
      {
        timestampMs: 0,
        key: Buffer.alloc(0),
        value: null,
        headers: [{ key: 'h', value: Buffer.alloc(0) }],
      },
      { timestampMs: 5_000, key: Buffer.from('k'), value: Buffer.from('v'), headers: [] },
      { timestampMs: 7_000, key: Buffer.alloc(0), value: Buffer.from('w'), headers: [] },
    ]);
  });

  test('passes other negative timestamps on, for the log to refuse', () => {
    const batch = encodeKafkaRecordBatch(
      [{ offset: 0, timestampMs: -5, key: null, value: Buffer.from('v'), headers: [] }],
      { baseOffset: 0, partitionLeaderEpoch: -1 },
    );
    expect(toProduceRecords(decodeKafkaRecordBatches(batch))[0]!.timestampMs).toBe(-5);
  });
});

describe('fromFetchedRecords', () => {
  test('no records make no bytes', () => {
    expect(fromFetchedRecords({ records: [] }, { maxBytes: 1_000 })).toHaveLength(0);
  });

  test('one batch per run of records that share a leader epoch, gaps included', () => {
    const records = [
      logRecord(10, 3),
      logRecord(11, 3),
      logRecord(14, 3),
      logRecord(15, 4),
      logRecord(16, 5),
    ];
    const batches = decodeKafkaRecordBatches(fromFetchedRecords({ records }, { maxBytes: 1 << 20 }));
    expect(
      batches.map((batch) => [batch.baseOffset, batch.partitionLeaderEpoch, batch.records.length]),
    ).toEqual([
      [10, 3, 3],
      [15, 4, 1],
      [16, 5, 1],
    ]);
    expect(batches[0]!.lastOffsetDelta).toBe(4);
    expect(asLogRecords(batches)).toEqual(records);
  });

  test('compressed batches carry the same records', () => {
    const records = [logRecord(0, 1), logRecord(1, 1), logRecord(2, 2)];
    for (const compression of [CompressionCodec.GZIP, CompressionCodec.SNAPPY, CompressionCodec.LZ4]) {
      const bytes = fromFetchedRecords({ records }, { maxBytes: 1 << 20, compression });
      const batches = decodeKafkaRecordBatches(bytes);
      expect(batches.map((batch) => batch.compression)).toEqual([compression, compression]);
      expect(asLogRecords(batches)).toEqual(records);
    }
  });

  test('a first record larger than the budget is still returned, whole and alone', () => {
    const records = [logRecord(0, 1, 'x'.repeat(5_000)), logRecord(1, 1)];
    const bytes = fromFetchedRecords({ records }, { maxBytes: 100 });
    expect(bytes.length).toBeGreaterThan(5_000);
    expect(asLogRecords(decodeKafkaRecordBatches(bytes))).toEqual([records[0]]);
  });

  test('the budget counts each batch header: a record that would need a new batch past it ends the response', () => {
    const records = [logRecord(0, 1), logRecord(1, 2)];
    const firstBatch = fromFetchedRecords({ records: [records[0]!] }, { maxBytes: 1 << 20 }).length;
    const both = fromFetchedRecords({ records }, { maxBytes: 1 << 20 }).length;
    expect(fromFetchedRecords({ records }, { maxBytes: both }).length).toBe(both);
    expect(fromFetchedRecords({ records }, { maxBytes: both - 1 }).length).toBe(firstBatch);
    expect(both - firstBatch).toBeGreaterThan(KAFKA_RECORD_BATCH_HEADER_BYTES);
  });

  test('any records and budget: a prefix of the records, within the budget unless it is the first record alone', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ gap: fc.integer({ min: 1, max: 5 }), epochStep: fc.nat(1), size: fc.nat(300) }),
          {
            minLength: 1,
            maxLength: 30,
          },
        ),
        fc.integer({ min: 0, max: 5_000 }),
        (specs, maxBytes) => {
          let offset = 99;
          let epoch = 0;
          const records = specs.map((spec) =>
            logRecord((offset += spec.gap), (epoch += spec.epochStep), 'v'.repeat(spec.size)),
          );
          const bytes = fromFetchedRecords({ records }, { maxBytes });
          const returned = asLogRecords(decodeKafkaRecordBatches(bytes));
          expect(returned.length).toBeGreaterThanOrEqual(1);
          expect(returned).toEqual(records.slice(0, returned.length));
          if (returned.length > 1) expect(bytes.length).toBeLessThanOrEqual(maxBytes);
          if (returned.length < records.length) {
            // the next record would not have fitted
            const more = fromFetchedRecords(
              { records: records.slice(0, returned.length + 1) },
              { maxBytes: 1 << 30 },
            );
            expect(more.length).toBeGreaterThan(maxBytes);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('fromFetchedBatches', () => {
  /** A client's batch of `count` records, stored at `baseOffset` by the leader of `epoch`. */
  function storedClientBatch(baseOffset: number, count: number, epoch: number): RecordBatch {
    const bytes = encodeKafkaRecordBatch(
      Array.from({ length: count }, (_, i) => {
        const record = logRecord(baseOffset + i, epoch);
        return { ...record, offset: i };
      }),
      { baseOffset: 0, partitionLeaderEpoch: -1 },
    );
    const batch = RecordBatch.fromClientBatch(bytes)!;
    batch.assignOffsets(baseOffset, epoch);
    return batch;
  }

  /** A batch in cohort's own layout. */
  function ownBatch(baseOffset: number, count: number, epoch: number): RecordBatch {
    const records = Array.from({ length: count }, (_, i) => logRecord(baseOffset + i, epoch));
    return RecordBatch.encode(records, { baseOffset, partitionLeaderEpoch: epoch });
  }

  const served = (bytes: Buffer): LogRecord[] => asLogRecords(decodeKafkaRecordBatches(bytes));
  const offsets = (bytes: Buffer): number[] => served(bytes).map((record) => record.offset);

  test('serves a batch kept in Kafka layout as it is stored, records below the fetch offset included', () => {
    const batch = storedClientBatch(10, 5, 2);
    const bytes = fromFetchedBatches([batch], 12, 100, { maxBytes: 1 << 20 });
    expect(bytes.equals(batch.buffer)).toBe(true);
    expect(served(bytes)).toEqual(Array.from({ length: 5 }, (_, i) => logRecord(10 + i, 2)));
  });

  test('encodes anew, from the fetch offset to the high watermark, a batch reaching past the high watermark and batches of cohort layout', () => {
    const batches = [ownBatch(0, 3, 1), storedClientBatch(3, 4, 1), storedClientBatch(7, 4, 2)];
    const bytes = fromFetchedBatches(batches, 1, 9, { maxBytes: 1 << 20 });
    expect(offsets(bytes)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(served(bytes)).toEqual(
      [1, 2, 3, 4, 5, 6].map((o) => logRecord(o, 1)).concat([7, 8].map((o) => logRecord(o, 2))),
    );
    // The batch wholly below the high watermark went out as it is.
    expect(bytes.includes(batches[1]!.buffer)).toBe(true);
  });

  test('the first batch goes out whatever its size; a later one only within the budget', () => {
    const first = storedClientBatch(0, 3, 0);
    const second = storedClientBatch(3, 3, 0);
    expect(offsets(fromFetchedBatches([first, second], 0, 100, { maxBytes: 10 }))).toEqual([0, 1, 2]);
    const both = first.sizeInBytes + second.sizeInBytes;
    expect(offsets(fromFetchedBatches([first, second], 0, 100, { maxBytes: both }))).toEqual([
      0, 1, 2, 3, 4, 5,
    ]);
    expect(offsets(fromFetchedBatches([first, second], 0, 100, { maxBytes: both - 1 }))).toEqual([0, 1, 2]);
    // Records encoded anew after a stored batch count against what it left of the budget.
    const own = ownBatch(6, 3, 0);
    expect(offsets(fromFetchedBatches([first, own], 0, 100, { maxBytes: first.sizeInBytes + 1 }))).toEqual([
      0, 1, 2,
    ]);
    // And a stored batch after records encoded anew.
    const after = fromFetchedBatches([own, storedClientBatch(9, 2, 0)], 6, 100, { maxBytes: 1 << 20 });
    expect(offsets(after)).toEqual([6, 7, 8, 9, 10]);
  });

  test('stored batches that lie one after the other in one read go out as one view of it, not a copy', () => {
    const first = storedClientBatch(0, 2, 0);
    const second = storedClientBatch(2, 3, 0);
    const read = Buffer.concat([first.buffer, second.buffer]);
    const batches = [
      RecordBatch.wrap(read.subarray(0, first.sizeInBytes)),
      RecordBatch.wrap(read.subarray(first.sizeInBytes)),
    ];
    const bytes = fromFetchedBatches(batches, 0, 100, { maxBytes: 1 << 20 });
    expect(bytes.buffer).toBe(read.buffer);
    expect([bytes.byteOffset, bytes.length]).toEqual([read.byteOffset, read.length]);
    expect(offsets(bytes)).toEqual([0, 1, 2, 3, 4]);
  });

  test('nothing read, nothing served', () => {
    expect(fromFetchedBatches([], 0, 0, { maxBytes: 100 })).toHaveLength(0);
    expect(fromFetchedBatches([storedClientBatch(5, 2, 0)], 5, 5, { maxBytes: 100 })).toHaveLength(0);
  });
});
