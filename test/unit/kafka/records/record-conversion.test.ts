import fc from 'fast-check';
import type { LogRecord } from '../../../../src/log/storage';
import { CompressionCodec } from '../../../../src/kafka/records/compression';
import {
  decodeKafkaRecordBatches,
  encodeKafkaRecordBatch,
  KAFKA_RECORD_BATCH_HEADER_BYTES,
  type KafkaRecordBatch,
} from '../../../../src/kafka/records/kafka-record-batch';
import { fromFetchedRecords, toProduceRecords } from '../../../../src/kafka/records/record-conversion';

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
