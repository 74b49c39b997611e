import fc from 'fast-check';
import { CohortError, ErrorCode } from '../../../../src/errors';
import {
  CORRUPT_BATCH,
  INCOMPLETE_BATCH,
  RECORD_BATCH_HEADER_BYTES,
  RecordBatch,
  checkBatchAt,
} from '../../../../src/log/storage/record-batch';
import { readUvarint, uvarintSize, writeUvarint } from '../../../../src/log/storage/varint';

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
  })
  .map(({ baseOffset, gaps, trailingGap, bodies }) => {
    let offset = baseOffset - 1;
    const records = gaps.map((gap, i) => {
      offset += 1 + gap;
      return { offset, ...bodies[i]! };
    });
    return { baseOffset, lastOffset: offset + trailingGap, records };
  });

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
      fc.property(batchInput, ({ baseOffset, lastOffset, records }) => {
        const encoded = RecordBatch.encode(records, { baseOffset, lastOffset });
        const batch = RecordBatch.fromBuffer(Buffer.from(encoded.buffer));
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

  test('the worked example in the format comment is 52 bytes', () => {
    const batch = RecordBatch.encode(
      [{ offset: 7, timestampMs: 1000, key: Buffer.from('k'), value: Buffer.from('v') }],
      {
        baseOffset: 7,
      },
    );
    expect(batch.sizeInBytes).toBe(52);
    expect(batch.buffer.readInt32BE(8)).toBe(40);
    expect(batch.buffer.subarray(RECORD_BATCH_HEADER_BYTES).toString('hex')).toBe('08000000026b027600');
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
