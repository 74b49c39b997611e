import fc from 'fast-check';
import { CohortError, ErrorCode } from '../../../../src/errors';
import {
  CORRUPT_BATCH,
  INCOMPLETE_BATCH,
  NO_PARTITION_LEADER_EPOCH,
  RECORD_BATCH_HEADER_BYTES,
  RECORD_BATCH_MAGIC,
  RECORD_BATCH_V1_HEADER_BYTES,
  RecordBatch,
  checkBatchAt,
} from '../../../../src/log/storage/record-batch';
import { readUvarint, uvarintSize, writeUvarint } from '../../../../src/log/storage/varint';
import { toMagic1 } from './magic-1';

const bytes = fc.uint8Array({ maxLength: 64 }).map((array) => Buffer.from(array));
const header = fc.record({ key: fc.string({ unit: 'grapheme', maxLength: 8 }), value: bytes });
const recordBody = fc.record({
  timestampMs: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  key: fc.option(bytes, { nil: null }),
  value: fc.option(bytes, { nil: null }),
  headers: fc.array(header, { maxLength: 3 }),
});

/** Records with strictly increasing offsets (gaps included) from a base offset. */
const batchInput = fc
  .record({
    baseOffset: fc.integer({ min: 0, max: 2 ** 52 }),
    gaps: fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 20 }),
    trailingGap: fc.integer({ min: 0, max: 1000 }),
    bodies: fc.array(recordBody, { minLength: 20, maxLength: 20 }),
    partitionLeaderEpoch: fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: 0x7fffffff })),
  })
  .map(({ baseOffset, gaps, trailingGap, bodies, partitionLeaderEpoch }) => {
    let offset = baseOffset - 1;
    const records = gaps.map((gap, i) => {
      offset += 1 + gap;
      return { offset, ...bodies[i]! };
    });
    return { baseOffset, lastOffset: offset + trailingGap, records, partitionLeaderEpoch };
  });

/**
 * Batches as cohort wrote them before leader epochs (magic 1, 43-byte header), captured from that
 * version's encoder: the worked example, and records 10 {k a, v 1, header h=x, ts 5} and 12 {null key,
 * null value, ts 9} in a batch covering 10..13.
 */
const MAGIC_1_WORKED_EXAMPLE =
  '00000000000000070000002801dddf918800000000000000000000000003e800000000000003e80000000108000000026b027600';
const MAGIC_1_WITH_GAPS =
  '000000000000000a00000033014f1c067600000000000300000000000000050000000000000009000000020c0000000261023101' +
  '0168017806000402000000';

function expectCode(fn: () => unknown, code: ErrorCode): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CohortError);
    expect((error as CohortError).code).toBe(code);
    return;
  }
  throw new Error(`expected CohortError ${ErrorCode[code]}`);
}

describe('RecordBatch encoding', () => {
  test('every batch decodes to the records, offsets and timestamps it was built from', () => {
    fc.assert(
      fc.property(batchInput, ({ baseOffset, lastOffset, records, partitionLeaderEpoch }) => {
        const encoded = RecordBatch.encode(records, { baseOffset, lastOffset, partitionLeaderEpoch });
        const batch = RecordBatch.fromBuffer(Buffer.from(encoded.buffer));
        expect(batch.magic).toBe(RECORD_BATCH_MAGIC);
        expect(batch.partitionLeaderEpoch).toBe(partitionLeaderEpoch);
        expect(batch.baseOffset).toBe(baseOffset);
        expect(batch.lastOffset).toBe(lastOffset);
        expect(batch.recordCount).toBe(records.length);
        const timestamps = records.map((record) => record.timestampMs);
        expect(batch.baseTimestampMs).toBe(Math.min(...timestamps));
        expect(batch.maxTimestampMs).toBe(Math.max(...timestamps));
        const decoded = batch.records();
        expect(decoded).toHaveLength(records.length);
        decoded.forEach((record, i) => {
          const input = records[i]!;
          expect(record.offset).toBe(input.offset);
          expect(record.leaderEpoch).toBe(partitionLeaderEpoch);
          expect(record.timestampMs).toBe(input.timestampMs);
          expect(record.key === null ? null : Buffer.from(record.key)).toEqual(input.key);
          expect(record.value === null ? null : Buffer.from(record.value)).toEqual(input.value);
          expect(record.headers.map((h) => ({ key: h.key, value: Buffer.from(h.value) }))).toEqual(
            input.headers,
          );
        });
      }),
    );
  });

  test('changing any single byte of a batch makes it fail its checks', () => {
    fc.assert(
      fc.property(batchInput, fc.nat(), fc.integer({ min: 1, max: 255 }), (input, at, flip) => {
        const buffer = Buffer.from(RecordBatch.encode(input.records, input).buffer);
        const position = at % buffer.length;
        buffer[position] = buffer[position]! ^ flip;
        expect([CORRUPT_BATCH, INCOMPLETE_BATCH]).toContain(checkBatchAt(buffer, 0, buffer.length));
        expectCode(() => RecordBatch.fromBuffer(buffer), ErrorCode.CORRUPT_MESSAGE);
      }),
    );
  });

  test('a batch cut short anywhere reads as incomplete, never as a batch', () => {
    fc.assert(
      fc.property(batchInput, fc.nat(), (input, at) => {
        const buffer = RecordBatch.encode(input.records, input).buffer;
        const cut = at % buffer.length;
        expect(checkBatchAt(buffer.subarray(0, cut), 0, cut)).toBe(INCOMPLETE_BATCH);
      }),
    );
  });

  test('leader records without offsets or timestamps get baseOffset + index and the default time', () => {
    const batch = RecordBatch.encode([{ value: Buffer.from('a') }, { value: Buffer.from('b') }], {
      baseOffset: 40,
      defaultTimestampMs: 1234,
    });
    expect(batch.records().map((r) => [r.offset, r.timestampMs, r.key])).toEqual([
      [40, 1234, null],
      [41, 1234, null],
    ]);
  });

  test('the worked example in the format comment is 56 bytes with the epoch at byte 43', () => {
    const batch = RecordBatch.encode(
      [{ offset: 7, timestampMs: 1000, key: Buffer.from('k'), value: Buffer.from('v') }],
      { baseOffset: 7, partitionLeaderEpoch: 5 },
    );
    expect(batch.sizeInBytes).toBe(56);
    expect(batch.buffer.readInt32BE(8)).toBe(44);
    expect(batch.buffer[12]).toBe(2);
    expect(batch.buffer.readInt32BE(43)).toBe(5);
    expect(batch.buffer.subarray(RECORD_BATCH_HEADER_BYTES).toString('hex')).toBe('08000000026b027600');
    // Every field both versions share sits where magic 1 had it.
    const v1 = Buffer.from(MAGIC_1_WORKED_EXAMPLE, 'hex');
    expect(batch.buffer.subarray(17, 43)).toEqual(v1.subarray(17, 43));
    expect(batch.buffer.subarray(0, 8)).toEqual(v1.subarray(0, 8));
  });

  test('a batch written before leader epochs (magic 1) reads with its records, as epoch -1', () => {
    const example = RecordBatch.fromBuffer(Buffer.from(MAGIC_1_WORKED_EXAMPLE, 'hex'));
    expect([example.magic, example.sizeInBytes, example.partitionLeaderEpoch]).toEqual([1, 52, -1]);
    expect(example.records()).toEqual([
      {
        offset: 7,
        timestampMs: 1000,
        key: Buffer.from('k'),
        value: Buffer.from('v'),
        headers: [],
        leaderEpoch: -1,
      },
    ]);
    const gaps = RecordBatch.fromBuffer(Buffer.from(MAGIC_1_WITH_GAPS, 'hex'));
    expect([gaps.baseOffset, gaps.lastOffset, gaps.recordCount, gaps.maxTimestampMs]).toEqual([10, 13, 2, 9]);
    expect(gaps.records()).toEqual([
      {
        offset: 10,
        timestampMs: 5,
        key: Buffer.from('a'),
        value: Buffer.from('1'),
        headers: [{ key: 'h', value: Buffer.from('x') }],
        leaderEpoch: NO_PARTITION_LEADER_EPOCH,
      },
      {
        offset: 12,
        timestampMs: 9,
        key: null,
        value: null,
        headers: [],
        leaderEpoch: NO_PARTITION_LEADER_EPOCH,
      },
    ]);
  });

  test('the test helper that writes magic 1 produces what the magic 1 encoder did', () => {
    const example = RecordBatch.encode(
      [{ offset: 7, timestampMs: 1000, key: Buffer.from('k'), value: Buffer.from('v') }],
      { baseOffset: 7, partitionLeaderEpoch: 5 },
    );
    expect(toMagic1(example).toString('hex')).toBe(MAGIC_1_WORKED_EXAMPLE);
  });

  test('a magic 1 batch still fails its checks when any byte changes', () => {
    const pristine = Buffer.from(MAGIC_1_WITH_GAPS, 'hex');
    expect(checkBatchAt(pristine, 0, pristine.length)).toBe(pristine.length);
    for (let at = 0; at < pristine.length; at++) {
      const buffer = Buffer.from(pristine);
      buffer[at] = buffer[at]! ^ 0x10;
      expect([CORRUPT_BATCH, INCOMPLETE_BATCH]).toContain(checkBatchAt(buffer, 0, buffer.length));
    }
  });

  test('the CRC covers the leader epoch: any change to it is caught, and an impossible one even under a valid CRC', () => {
    const batch = RecordBatch.encode([{ value: Buffer.from('abc') }], {
      baseOffset: 3,
      defaultTimestampMs: 1,
      partitionLeaderEpoch: 9,
    });
    for (let at = RECORD_BATCH_V1_HEADER_BYTES; at < RECORD_BATCH_HEADER_BYTES; at++) {
      for (const flip of [0x01, 0x80, 0xff]) {
        const buffer = Buffer.from(batch.buffer);
        buffer[at] = buffer[at]! ^ flip;
        expect(checkBatchAt(buffer, 0, buffer.length)).toBe(CORRUPT_BATCH);
      }
    }
    // Magic 2 relabelled as magic 1 (the epoch then reads as record bytes): caught by the CRC over magic.
    const relabelled = Buffer.from(batch.buffer);
    relabelled[12] = 1;
    expect(checkBatchAt(relabelled, 0, relabelled.length)).toBe(CORRUPT_BATCH);
    // An epoch below -1 is no epoch: refused by the header check with or without the CRC check.
    const impossible = Buffer.from(batch.buffer);
    impossible.writeInt32BE(-2, RECORD_BATCH_V1_HEADER_BYTES);
    expect(checkBatchAt(impossible, 0, impossible.length, false)).toBe(CORRUPT_BATCH);
  });

  test('an epoch that is not -1 or a non-negative int32 is rejected as INVALID_RECORD', () => {
    for (const partitionLeaderEpoch of [-2, 1.5, 2 ** 31]) {
      expectCode(
        () => RecordBatch.encode([{ timestampMs: 0, value: null }], { baseOffset: 0, partitionLeaderEpoch }),
        ErrorCode.INVALID_RECORD,
      );
    }
  });

  test('an empty batch marks an offset range without records', () => {
    const batch = RecordBatch.encode([], { baseOffset: 10, lastOffset: 19, defaultTimestampMs: 5 });
    const decoded = RecordBatch.fromBuffer(batch.buffer);
    expect([decoded.baseOffset, decoded.lastOffset, decoded.recordCount]).toEqual([10, 19, 0]);
    expect(decoded.records()).toEqual([]);
  });

  test('offsets that do not increase are rejected as INVALID_RECORD', () => {
    expectCode(
      () =>
        RecordBatch.encode(
          [
            { offset: 5, timestampMs: 0, value: null },
            { offset: 5, timestampMs: 0, value: null },
          ],
          { baseOffset: 5 },
        ),
      ErrorCode.INVALID_RECORD,
    );
    expectCode(
      () => RecordBatch.encode([{ offset: 4, timestampMs: 0, value: null }], { baseOffset: 5 }),
      ErrorCode.INVALID_RECORD,
    );
  });

  test('a batch spanning more than 2^31 offsets is rejected as INVALID_RECORD', () => {
    expectCode(
      () => RecordBatch.encode([{ offset: 2 ** 31, timestampMs: 0, value: null }], { baseOffset: 0 }),
      ErrorCode.INVALID_RECORD,
    );
  });

  test('negative, fractional or missing timestamps are rejected as INVALID_TIMESTAMP', () => {
    for (const timestampMs of [-1, 1.5, undefined]) {
      expectCode(
        () => RecordBatch.encode([{ timestampMs, value: null }], { baseOffset: 0 }),
        ErrorCode.INVALID_TIMESTAMP,
      );
    }
  });

  test('a record area that contradicts its header is CORRUPT_MESSAGE on decode even with a valid CRC', () => {
    const batch = RecordBatch.encode([{ value: Buffer.from('abc') }], {
      baseOffset: 0,
      defaultTimestampMs: 1,
    });
    const tampered = Buffer.from(batch.buffer);
    tampered.writeInt32BE(2, 39); // recordCount 2, but only one record follows
    expectCode(() => RecordBatch.wrap(tampered).records(), ErrorCode.CORRUPT_MESSAGE);
  });
});

describe('unsigned varints', () => {
  test('every safe integer round-trips in uvarintSize bytes', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), (value) => {
        const buffer = Buffer.alloc(8);
        const end = writeUvarint(buffer, 0, value);
        expect(end).toBe(uvarintSize(value));
        const cursor = { position: 0 };
        expect(readUvarint(buffer, cursor, end)).toBe(value);
        expect(cursor.position).toBe(end);
      }),
    );
  });

  test('a varint longer than eight bytes or past its end is CORRUPT_MESSAGE', () => {
    expectCode(() => readUvarint(Buffer.alloc(9, 0xff), { position: 0 }, 9), ErrorCode.CORRUPT_MESSAGE);
    expectCode(() => readUvarint(Buffer.from([0x80]), { position: 0 }, 1), ErrorCode.CORRUPT_MESSAGE);
  });
});
