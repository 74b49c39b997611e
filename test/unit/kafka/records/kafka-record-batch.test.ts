import { crc32c } from '@node-rs/crc32';
import fc from 'fast-check';
import { gzipSync } from 'node:zlib';
import { CompressionCodec } from '../../../../src/kafka/records/compression';
import {
  decodeKafkaRecordBatches,
  encodeKafkaRecordBatch,
  type KafkaRecordInput,
} from '../../../../src/kafka/records/kafka-record-batch';
import {
  KafkaRecordsError,
  type KafkaRecordsReason,
} from '../../../../src/kafka/records/kafka-records-error';
import { ErrorCode } from '../../../../src/errors';

const CODECS = [
  CompressionCodec.NONE,
  CompressionCodec.GZIP,
  CompressionCodec.SNAPPY,
  CompressionCodec.LZ4,
  CompressionCodec.ZSTD,
] as const;

function refusal(run: () => unknown): KafkaRecordsError {
  try {
    run();
  } catch (error) {
    if (!(error instanceof KafkaRecordsError)) throw error;
    return error;
  }
  throw new Error('expected a KafkaRecordsError');
}

function expectRefused(bytes: Buffer, reason: KafkaRecordsReason, options = {}): KafkaRecordsError {
  const error = refusal(() => decodeKafkaRecordBatches(bytes, options));
  expect(error.reason).toBe(reason);
  return error;
}

/** Sets the CRC of the batch at the start of `batch` to match its bytes (after an edit). */
function fixCrc(batch: Buffer): Buffer {
  batch.writeUInt32BE(crc32c(batch.subarray(21, 12 + batch.readInt32BE(8))), 17);
  return batch;
}

const optionalBytes = fc.option(
  fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
  { nil: null },
);
const header = fc.record({ key: fc.string({ unit: 'grapheme', maxLength: 8 }), value: optionalBytes });

/** Records with increasing (sometimes gapped) offsets and timestamps in any order. */
const recordsArbitrary = fc
  .tuple(
    fc.integer({ min: 0, max: 2 ** 40 }),
    fc.array(
      fc.record({
        gap: fc.integer({ min: 1, max: 1000 }),
        timestampMs: fc.oneof(fc.integer({ min: 0, max: 2 ** 42 }), fc.constant(1_700_000_000_000)),
        key: optionalBytes,
        value: optionalBytes,
        headers: fc.array(header, { maxLength: 3 }),
      }),
      { minLength: 1, maxLength: 20 },
    ),
  )
  .map(([baseOffset, specs]) => {
    let offset = baseOffset - 1;
    const records: KafkaRecordInput[] = specs.map(({ gap, ...rest }) => ({
      offset: (offset += gap),
      ...rest,
    }));
    return { baseOffset: records[0]!.offset, records };
  });

function validBatch(compression: CompressionCodec = CompressionCodec.NONE): Buffer {
  const records: KafkaRecordInput[] = [
    { offset: 0, timestampMs: 1_000, key: Buffer.from('k'), value: Buffer.from('v'), headers: [] },
    { offset: 1, timestampMs: 900, key: null, value: null, headers: [{ key: 'h', value: null }] },
    {
      offset: 2,
      timestampMs: 1_200,
      key: Buffer.from('key'),
      value: Buffer.from('value'.repeat(20)),
      headers: [{ key: 'trace', value: Buffer.from('x') }],
    },
  ];
  return encodeKafkaRecordBatch(records, { baseOffset: 0, partitionLeaderEpoch: 0, compression });
}

describe('CRC-32C', () => {
  test('matches the check value of the Castagnoli polynomial', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });
});

describe('encodeKafkaRecordBatch and decodeKafkaRecordBatches', () => {
  test('the worked example encodes to the hand-computed bytes', () => {
    const batch = encodeKafkaRecordBatch(
      [{ offset: 7, timestampMs: 1000, key: Buffer.from('k'), value: Buffer.from('v'), headers: [] }],
      { baseOffset: 7, partitionLeaderEpoch: 5 },
    );
    const expected =
      '0000000000000007' + // baseOffset
      '0000003a' + // batchLength 58
      '00000005' + // partitionLeaderEpoch
      '02' + // magic
      'CRC.....' +
      '0000' + // attributes
      '00000000' + // lastOffsetDelta
      '00000000000003e8' + // baseTimestamp 1000
      '00000000000003e8' + // maxTimestamp
      'ffffffffffffffff' + // producerId -1
      'ffff' + // producerEpoch -1
      'ffffffff' + // baseSequence -1
      '00000001' + // recordsCount
      '10' + // record length 8 (zigzag 16)
      '00' + // attributes
      '00' + // timestampDelta 0
      '00' + // offsetDelta 0
      '02' +
      '6b' + // key length 1, 'k'
      '02' +
      '76' + // value length 1, 'v'
      '00'; // no headers
    const hex = batch.toString('hex');
    expect(hex.slice(0, 34) + 'CRC.....' + hex.slice(42)).toBe(expected);
    expect(batch.length).toBe(70);
    expect(batch.readUInt32BE(17)).toBe(crc32c(batch.subarray(21)));
  });

  test.each(CODECS)('any records round-trip with codec %i', (compression) => {
    fc.assert(
      fc.property(recordsArbitrary, fc.integer({ min: -1, max: 1000 }), ({ baseOffset, records }, epoch) => {
        const bytes = encodeKafkaRecordBatch(records, {
          baseOffset,
          partitionLeaderEpoch: epoch,
          compression,
        });
        const [batch, ...rest] = decodeKafkaRecordBatches(bytes);
        expect(rest).toHaveLength(0);
        expect(batch!.baseOffset).toBe(baseOffset);
        expect(batch!.partitionLeaderEpoch).toBe(epoch);
        expect(batch!.compression).toBe(compression);
        expect(batch!.producerId).toBe(-1);
        expect(batch!.producerEpoch).toBe(-1);
        expect(batch!.baseSequence).toBe(-1);
        expect(batch!.lastOffsetDelta).toBe(records[records.length - 1]!.offset - baseOffset);
        expect(batch!.baseTimestampMs).toBe(records[0]!.timestampMs);
        expect(batch!.maxTimestampMs).toBe(Math.max(...records.map((record) => record.timestampMs)));
        expect(batch!.sizeInBytes).toBe(bytes.length);
        expect(batch!.records).toEqual(
          records.map((record) => ({
            offsetDelta: record.offset - baseOffset,
            timestampMs: record.timestampMs,
            key: record.key,
            value: record.value,
            headers: record.headers,
          })),
        );
      }),
      { numRuns: 60 },
    );
  });

  test('several batches in one records field all decode, in order', () => {
    const bytes = Buffer.concat([validBatch(), validBatch(CompressionCodec.LZ4)]);
    const batches = decodeKafkaRecordBatches(bytes);
    expect(batches.map((batch) => batch.records.length)).toEqual([3, 3]);
    expect(batches[1]!.records).toEqual(batches[0]!.records);
  });

  test('LogAppendTime gives every record the batch maxTimestamp', () => {
    const bytes = validBatch();
    bytes.writeInt16BE(0x08, 21);
    const [batch] = decodeKafkaRecordBatches(fixCrc(bytes));
    expect(batch!.isLogAppendTime).toBe(true);
    expect(batch!.records.map((record) => record.timestampMs)).toEqual([1_200, 1_200, 1_200]);
  });

  test('baseOffset and partitionLeaderEpoch lie outside the CRC: rewriting them keeps the batch valid', () => {
    const bytes = validBatch();
    bytes.writeUInt32BE(99, 4);
    bytes.writeInt32BE(42, 12);
    const [batch] = decodeKafkaRecordBatches(bytes);
    expect(batch!.baseOffset).toBe(99);
    expect(batch!.partitionLeaderEpoch).toBe(42);
  });
});

describe('refusals', () => {
  test.each(CODECS)('every truncation of a valid batch (codec %i) is refused as truncated', (codec) => {
    const bytes = validBatch(codec);
    for (let end = 0; end < bytes.length; end++) {
      expectRefused(bytes.subarray(0, end), 'truncated');
    }
  });

  test('a flipped bit anywhere from the CRC to the end is a crc-mismatch (CORRUPT_MESSAGE)', () => {
    const bytes = validBatch(CompressionCodec.GZIP);
    for (let at = 17; at < bytes.length; at++) {
      const copy = Buffer.from(bytes);
      copy[at]! ^= 0x10;
      expect(expectRefused(copy, 'crc-mismatch').code).toBe(ErrorCode.CORRUPT_MESSAGE);
    }
  });

  test('a batchLength claiming more than remains is refused before anything is read past it', () => {
    const bytes = validBatch();
    bytes.writeInt32BE(0x7fffffff, 8);
    expectRefused(bytes, 'truncated');
    bytes.writeInt32BE(48, 8);
    expectRefused(bytes, 'invalid-length');
    bytes.writeInt32BE(-5, 8);
    expectRefused(bytes, 'invalid-length');
  });

  test('bytes left after a batch are refused as a truncated second batch', () => {
    expectRefused(Buffer.concat([validBatch(), Buffer.from([0, 0, 0])]), 'truncated');
  });

  test('magic 0 and 1 MessageSets are unsupported-magic, answered INVALID_RECORD; other magics are invalid', () => {
    for (const magic of [0, 1]) {
      const messageSet = Buffer.alloc(40);
      messageSet.writeInt32BE(28, 8); // size
      messageSet[16] = magic;
      const error = expectRefused(messageSet, 'unsupported-magic');
      expect(error.code).toBe(ErrorCode.INVALID_RECORD);
      expect(error.retriable).toBe(false);
    }
    const bytes = validBatch();
    bytes[16] = 3;
    expectRefused(bytes, 'invalid-record');
  });

  test('transactional and control batches are refused', () => {
    const transactional = validBatch();
    transactional.writeInt16BE(0x10, 21);
    expectRefused(fixCrc(transactional), 'transactional');
    const control = validBatch();
    control.writeInt16BE(0x20, 21);
    expectRefused(fixCrc(control), 'control');
  });

  test('a records count that cannot fit is refused before records are allocated', () => {
    const bytes = validBatch();
    bytes.writeInt32BE(0x7fffffff, 57);
    expectRefused(fixCrc(bytes), 'invalid-record');
    bytes.writeInt32BE(0, 57);
    expectRefused(fixCrc(bytes), 'invalid-record');
    bytes.writeInt32BE(2, 57);
    expectRefused(fixCrc(bytes), 'invalid-record'); // bytes follow the last record
  });

  test('a key length past its record is refused', () => {
    const bytes = encodeKafkaRecordBatch(
      [{ offset: 0, timestampMs: 0, key: Buffer.from('k'), value: null, headers: [] }],
      { baseOffset: 0, partitionLeaderEpoch: 0 },
    );
    bytes[61 + 4] = 0x7e; // key length 63
    expectRefused(fixCrc(bytes), 'invalid-record');
  });

  test('records that decompress past the limit are refused (a decompression bomb)', () => {
    for (const codec of [
      CompressionCodec.GZIP,
      CompressionCodec.SNAPPY,
      CompressionCodec.LZ4,
      CompressionCodec.ZSTD,
    ]) {
      const bomb = encodeKafkaRecordBatch(
        [{ offset: 0, timestampMs: 0, key: null, value: Buffer.alloc(8 << 20), headers: [] }],
        { baseOffset: 0, partitionLeaderEpoch: 0, compression: codec },
      );
      expect(bomb.length).toBeLessThan(500_000);
      const error = expectRefused(bomb, 'too-large', { maxDecompressedBytes: 1 << 20 });
      expect(error.code).toBe(ErrorCode.MESSAGE_TOO_LARGE);
    }
  });

  test('the decompression limit counts all the batches of a records field together', () => {
    const one = encodeKafkaRecordBatch(
      [{ offset: 0, timestampMs: 0, key: null, value: Buffer.alloc(600_000), headers: [] }],
      { baseOffset: 0, partitionLeaderEpoch: 0, compression: CompressionCodec.GZIP },
    );
    expect(decodeKafkaRecordBatches(one, { maxDecompressedBytes: 1 << 20 })).toHaveLength(1);
    expectRefused(Buffer.concat([one, one]), 'too-large', { maxDecompressedBytes: 1 << 20 });
  });

  test('random bytes are refused with KafkaRecordsError, never another error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        refusal(() => decodeKafkaRecordBatches(Buffer.from(bytes)));
      }),
      { numRuns: 1000 },
    );
  });

  test.each([CompressionCodec.NONE, CompressionCodec.GZIP])(
    'random records behind a valid header and CRC (codec %i) decode or are refused with KafkaRecordsError',
    (codec) => {
      const header = validBatch().subarray(0, 61);
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 200 }), fc.integer({ min: 1, max: 30 }), (bytes, count) => {
          const records = codec === CompressionCodec.GZIP ? gzipSync(bytes) : Buffer.from(bytes);
          const batch = Buffer.concat([header, records]);
          batch.writeInt32BE(batch.length - 12, 8);
          batch.writeInt16BE(codec, 21);
          batch.writeInt32BE(count, 57);
          try {
            decodeKafkaRecordBatches(fixCrc(batch));
          } catch (error) {
            expect(error).toBeInstanceOf(KafkaRecordsError);
          }
        }),
        { numRuns: 1000 },
      );
    },
  );
});
