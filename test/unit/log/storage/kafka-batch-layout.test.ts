import { crc32c } from '@node-rs/crc32';
import fc from 'fast-check';
import { CohortError, ErrorCode } from '../../../../src/errors';
import { CompressionCodec } from '../../../../src/kafka/records/compression';
import {
  decodeKafkaRecordBatches,
  encodeKafkaRecordBatch,
  type KafkaRecordInput,
} from '../../../../src/kafka/records/kafka-record-batch';
import { RecordBatch, type LogRecord } from '../../../../src/log/storage';
import { MAX_KAFKA_LAYOUT_EPOCH } from '../../../../src/log/storage/kafka-batch-layout';
import { CORRUPT_BATCH, checkBatchAt } from '../../../../src/log/storage/record-batch';
import { LogFixture, readAll, text, values } from './log-fixture';

/**
 * Batches kept in Kafka's RecordBatch v2 layout, as a Kafka client produced them: which a log takes as
 * they come, how they read back (header fields, records, CRC-32C), how they live next to cohort's own
 * layout in one log, and what damage to them does.
 */
const T0 = 1_700_000_000_000;

function expectCode(fn: () => unknown, code: ErrorCode): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(CohortError);
  expect(ErrorCode[(thrown as CohortError).code]).toBe(ErrorCode[code]);
}

function clientRecord(i: number, overrides: Partial<KafkaRecordInput> = {}): KafkaRecordInput {
  return {
    offset: i,
    timestampMs: T0 + i,
    key: i % 2 === 0 ? null : text(`key-${i}`),
    value: text(`value-${i}`),
    headers: i % 3 === 0 ? [{ key: 'h', value: text(`x${i}`) }] : [],
    ...overrides,
  };
}

/** A client's batch of `count` records (the door's encoder writes what clients write: no producer id). */
function clientBatch(
  count: number,
  overrides: (i: number) => Partial<KafkaRecordInput> = () => ({}),
): Buffer {
  const records = Array.from({ length: count }, (_, i) => clientRecord(i, overrides(i)));
  return encodeKafkaRecordBatch(records, { baseOffset: 0, partitionLeaderEpoch: -1 });
}

/** `bytes` with its CRC-32C made right again after a change, so that only the change is refused. */
function withCrc(bytes: Buffer): Buffer {
  bytes.writeUInt32BE(crc32c(bytes.subarray(21)), 17);
  return bytes;
}

/** What the log reads back for clientRecord(i) at offset base + i. */
function expected(base: number, count: number, leaderEpoch: number): LogRecord[] {
  return Array.from({ length: count }, (_, i) => {
    const record = clientRecord(i);
    return {
      offset: base + i,
      timestampMs: record.timestampMs,
      key: record.key,
      value: record.value,
      headers: record.headers.map((h) => ({ key: h.key, value: h.value! })),
      leaderEpoch,
    };
  });
}

/** A one-record batch whose record length is written as a 6-byte varint (Java's reader takes 5). */
function overlongVarintBatch(): Buffer {
  const bytes = clientBatch(1);
  const length = bytes[61]!; // one byte: the record is short
  const padded = Buffer.concat([
    bytes.subarray(0, 61),
    Buffer.from([length | 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]),
    bytes.subarray(62),
  ]);
  padded.writeInt32BE(padded.length - 12, 8);
  return withCrc(padded);
}

describe('a client batch kept in Kafka layout', () => {
  test('takes its offsets and leader epoch in place and reads back its header, records and CRC-32C', () => {
    const bytes = clientBatch(5);
    const batch = RecordBatch.fromClientBatch(bytes)!;
    expect(batch).not.toBeNull();
    expect(batch.isKafkaLayout).toBe(true);
    batch.assignOffsets(1_000, 7);
    expect({
      baseOffset: batch.baseOffset,
      lastOffset: batch.lastOffset,
      recordCount: batch.recordCount,
      maxTimestampMs: batch.maxTimestampMs,
      partitionLeaderEpoch: batch.partitionLeaderEpoch,
      magic: batch.magic,
    }).toEqual({
      baseOffset: 1_000,
      lastOffset: 1_004,
      recordCount: 5,
      maxTimestampMs: T0 + 4,
      partitionLeaderEpoch: 7,
      magic: 2,
    });
    expect(batch.records()).toEqual(expected(1_000, 5, 7));
    // The client's CRC still holds: a Kafka client reading these bytes accepts them.
    const [decoded] = decodeKafkaRecordBatches(batch.buffer);
    expect([decoded!.baseOffset, decoded!.partitionLeaderEpoch, decoded!.records.length]).toEqual([
      1_000, 7, 5,
    ]);
    expect(checkBatchAt(batch.buffer, 0, batch.buffer.length)).toBe(batch.sizeInBytes);
  });

  test('any records a client can send round-trip through the layout', () => {
    const header = fc.record({
      key: fc.string({ maxLength: 8 }),
      value: fc.uint8Array({ maxLength: 8 }),
    });
    const record = fc.record({
      timestampMs: fc.integer({ min: 1, max: 2 ** 45 }),
      key: fc.option(fc.uint8Array({ minLength: 1, maxLength: 16 }), { nil: null }),
      value: fc.option(fc.uint8Array({ maxLength: 64 }), { nil: null }),
      headers: fc.array(header, { maxLength: 3 }),
    });
    fc.assert(
      fc.property(
        fc.array(record, { minLength: 1, maxLength: 20 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: -1, max: MAX_KAFKA_LAYOUT_EPOCH }),
        (records, baseOffset, epoch) => {
          const inputs: KafkaRecordInput[] = records.map((r, i) => ({
            offset: i,
            timestampMs: r.timestampMs,
            key: r.key === null ? null : Buffer.from(r.key),
            value: r.value === null ? null : Buffer.from(r.value),
            headers: r.headers.map((h) => ({
              key: h.key,
              value: Buffer.from(h.value),
            })),
          }));
          const bytes = encodeKafkaRecordBatch(inputs, { baseOffset: 0, partitionLeaderEpoch: -1 });
          const batch = RecordBatch.fromClientBatch(bytes)!;
          expect(batch).not.toBeNull();
          batch.assignOffsets(baseOffset, epoch);
          const again = RecordBatch.fromBuffer(Buffer.from(batch.buffer));
          expect(again.isKafkaLayout).toBe(true);
          expect(again.partitionLeaderEpoch).toBe(epoch);
          expect(again.maxTimestampMs).toBe(Math.max(...inputs.map((r) => r.timestampMs)));
          expect(again.records()).toEqual(
            inputs.map((r, i) => ({
              offset: baseOffset + i,
              timestampMs: r.timestampMs,
              key: r.key,
              value: r.value,
              headers: r.headers.map((h) => ({ key: h.key, value: h.value! })),
              leaderEpoch: epoch,
            })),
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  test.each([
    [
      'compressed',
      () =>
        encodeKafkaRecordBatch([clientRecord(0)], {
          baseOffset: 0,
          partitionLeaderEpoch: -1,
          compression: CompressionCodec.GZIP,
        }),
    ],
    ['a record without a timestamp', () => clientBatch(3, (i) => (i === 1 ? { timestampMs: -1 } : {}))],
    [
      'a record stamped 0 (the log gives it the append time)',
      () => clientBatch(2, (i) => (i === 1 ? { timestampMs: 0 } : {})),
    ],
    [
      'idempotent (a producer id)',
      () => {
        const bytes = clientBatch(2);
        bytes.writeInt32BE(0, 43);
        bytes.writeInt32BE(42, 47);
        return withCrc(bytes);
      },
    ],
    [
      'transactional',
      () => {
        const bytes = clientBatch(2);
        bytes.writeUInt16BE(0x10, 21);
        return withCrc(bytes);
      },
    ],
    [
      'maxTimestamp not the largest',
      () => {
        const bytes = clientBatch(2);
        bytes.writeUInt32BE(0, 39);
        return withCrc(bytes);
      },
    ],
    [
      'a wrong CRC-32C',
      () => {
        const bytes = clientBatch(2);
        bytes[bytes.length - 1] ^= 0xff;
        return bytes;
      },
    ],
    [
      'offsets that skip',
      () => {
        const records = [clientRecord(0), clientRecord(2, { offset: 2 })];
        const bytes = encodeKafkaRecordBatch(records, { baseOffset: 0, partitionLeaderEpoch: -1 });
        return bytes;
      },
    ],
    ['two batches', () => Buffer.concat([clientBatch(1), clientBatch(1)])],
    [
      'an empty key (cohort stores it as none)',
      () => clientBatch(2, (i) => (i === 1 ? { key: Buffer.alloc(0) } : {})),
    ],
    [
      'a null header value (cohort stores it as empty)',
      () => clientBatch(2, (i) => (i === 1 ? { headers: [{ key: 'h', value: null }] } : {})),
    ],
    [
      'a header key that is not UTF-8',
      () => {
        const bytes = clientBatch(1, () => ({ headers: [{ key: 'hh', value: text('v') }] }));
        const at = bytes.indexOf('hh');
        bytes[at] = 0xff;
        return withCrc(bytes);
      },
    ],
    ['a varint longer than Java reads', overlongVarintBatch],
    ['truncated', () => clientBatch(3).subarray(0, 80)],
  ])('is not taken as it came when %s (the door decodes it instead)', (_what, make) => {
    expect(RecordBatch.fromClientBatch(make())).toBeNull();
  });

  test('fuzz: damaged or random bytes are refused or taken whole, never thrown on, and what is taken decodes as the door decodes it', () => {
    const valid = clientBatch(4);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
          // A valid batch with bytes overwritten and its CRC made right again, so that the record walk
          // itself meets the damage rather than the CRC check.
          fc
            .array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), {
              minLength: 1,
              maxLength: 4,
            })
            .map((edits) => {
              const bytes = Buffer.from(valid);
              for (const [at, value] of edits) if (at >= 21) bytes[at] = value;
              return withCrc(bytes);
            }),
          fc.nat(valid.length).map((cut) => Buffer.from(valid.subarray(0, cut))),
        ),
        (bytes) => {
          const batch = RecordBatch.fromClientBatch(Buffer.from(bytes));
          if (batch === null) return;
          batch.assignOffsets(0, 0);
          const [decoded] = decodeKafkaRecordBatches(Buffer.from(batch.buffer));
          expect(batch.records().map((r) => [r.offset, r.timestampMs, r.key, r.value])).toEqual(
            decoded!.records.map((r) => [r.offsetDelta, r.timestampMs, r.key, r.value]),
          );
        },
      ),
      { numRuns: 2_000 },
    );
  });

  test('whatever leader epoch its client wrote, it reads as Kafka layout until the append gives its own', () => {
    const bytes = clientBatch(1);
    bytes.writeInt32BE(0x0100_0005, 12); // byte 12 would read as cohort's magic 1
    const batch = RecordBatch.fromClientBatch(bytes)!;
    expect([batch.isKafkaLayout, batch.partitionLeaderEpoch]).toEqual([true, -1]);
    expectCode(() => batch.assignOffsets(0, MAX_KAFKA_LAYOUT_EPOCH + 1), ErrorCode.INVALID_RECORD);
  });

  test('damage past its header fails the CRC-32C check and the decode, not a read that hands it on', () => {
    const batch = RecordBatch.fromClientBatch(clientBatch(3))!;
    batch.assignOffsets(0, 0);
    const damaged = Buffer.from(batch.buffer);
    damaged[damaged.length - 2] ^= 0x01;
    expect(checkBatchAt(damaged, 0, damaged.length)).toBe(CORRUPT_BATCH);
    expect(checkBatchAt(damaged, 0, damaged.length, false)).toBe(damaged.length);
    expectCode(() => RecordBatch.wrap(damaged).records(), ErrorCode.CORRUPT_MESSAGE);
  });
});

describe('a log holding both layouts', () => {
  let fixture: LogFixture;
  beforeEach(() => {
    fixture = new LogFixture();
  });
  afterEach(() => fixture.cleanup());

  test('appends client batches among its own, reads them in offset order, and finds them again after a reopen', async () => {
    const log = fixture.open();
    log.append([{ value: text('own-0') }], true, 3);
    const info = log.appendClientBatch(RecordBatch.fromClientBatch(clientBatch(4))!, true, 3);
    log.append([{ value: text('own-5') }], true, 4);
    expect([info.firstOffset, info.lastOffset, info.recordCount, log.logEndOffset]).toEqual([1, 4, 4, 6]);
    const read = log.read(0, 1 << 20);
    expect(read.batches.map((b) => b.isKafkaLayout)).toEqual([false, true, false]);
    expect(values(read.records)).toEqual([
      [0, 'own-0'],
      ...expected(1, 4, 3).map((r): [number, string] => [r.offset, r.value!.toString()]),
      [5, 'own-5'],
    ]);
    expect(read.records.slice(1, 5)).toEqual(expected(1, 4, 3));
    expect(log.epochEntries()).toEqual([
      { epoch: 3, startOffset: 0 },
      { epoch: 4, startOffset: 5 },
    ]);
    // A reader that hands batches on gets them undecoded, the client's bytes as they were stored.
    const handedOn = log.read(2, 1 << 20, { isDecoded: false });
    expect([handedOn.records.length, handedOn.batches[0]!.baseOffset]).toEqual([0, 1]);
    expect(decodeKafkaRecordBatches(handedOn.batches[0]!.buffer)[0]!.records).toHaveLength(4);
    await log.close();

    const reopened = fixture.open();
    expect(values(readAll(reopened))).toEqual(values(read.records));
    expect(reopened.logEndOffset).toBe(6);
    // From the file (no batch is in memory after an open): found by its header from an offset inside it.
    expect(values(reopened.read(3, 1 << 20).records)).toEqual(values(read.records.slice(3)));
    expect(reopened.read(3, 1 << 20, { isDecoded: false }).batches[0]!.baseOffset).toBe(1);
  });

  test('takes its limits, its fencing and a compacted log’s keys as for records', () => {
    const log = fixture.open({ maxMessageBytes: 200 });
    log.append([{ value: text('x') }], true, 5);
    expectCode(
      () => log.appendClientBatch(RecordBatch.fromClientBatch(clientBatch(1))!, true, 4),
      ErrorCode.FENCED_LEADER_EPOCH,
    );
    expectCode(
      () => log.appendClientBatch(RecordBatch.fromClientBatch(clientBatch(10))!, true, 5),
      ErrorCode.MESSAGE_TOO_LARGE,
    );
    expect(log.logEndOffset).toBe(1);
    const compacted = fixture.open({ cleanupPolicy: 'compact' }, `${fixture.dir}/compacted-0`);
    expectCode(
      () => compacted.appendClientBatch(RecordBatch.fromClientBatch(clientBatch(2))!, true, 0),
      ErrorCode.INVALID_RECORD,
    );
  });

  test('stores the records in its own layout under an epoch Kafka layout cannot carry', () => {
    const log = fixture.open();
    const epoch = MAX_KAFKA_LAYOUT_EPOCH + 1;
    log.appendClientBatch(RecordBatch.fromClientBatch(clientBatch(3))!, true, epoch);
    const read = log.read(0, 1 << 20);
    expect(read.batches.map((b) => [b.isKafkaLayout, b.partitionLeaderEpoch])).toEqual([[false, epoch]]);
    expect(read.records).toEqual(expected(0, 3, epoch));
  });

  test('a small client batch kept in memory as the last one written does not keep its whole request alive', () => {
    const log = fixture.open();
    const request = Buffer.concat([Buffer.alloc(10_000), clientBatch(2), Buffer.alloc(10_000)]);
    const bytes = request.subarray(10_000, request.length - 10_000);
    log.appendClientBatch(RecordBatch.fromClientBatch(bytes)!, true, 0);
    const [kept] = log.read(0, 1 << 20, { isDecoded: false }).batches;
    expect(kept!.buffer.buffer.byteLength).toBe(bytes.length);
    expect(kept!.records()).toEqual(expected(0, 2, 0));
  });

  test('a damaged client batch on disk is refused by a decoding read and cut by recovery after a crash', async () => {
    const log = fixture.open();
    log.appendClientBatch(RecordBatch.fromClientBatch(clientBatch(3))!, true, 0);
    log.appendClientBatch(RecordBatch.fromClientBatch(clientBatch(2))!, true, 0);
    const crashed = fixture.crashCopy();
    await log.close();
    // Flip a byte in the second batch's last record.
    const fs = await import('node:fs');
    const file = `${crashed}/${fs.readdirSync(crashed).find((f) => f.endsWith('.log'))!}`;
    const content = fs.readFileSync(file);
    content[content.length - 2] ^= 0x01;
    fs.writeFileSync(file, content);
    fs.rmSync(`${crashed}/recovery-point-offset-checkpoint`, { force: true });
    const recovered = fixture.open({}, crashed);
    expect(recovered.logEndOffset).toBe(3);
    expect(values(readAll(recovered)).map(([offset]) => offset)).toEqual([0, 1, 2]);
  });
});
