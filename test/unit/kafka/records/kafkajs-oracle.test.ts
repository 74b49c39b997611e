import fc from 'fast-check';
import { CompressionCodec } from '../../../../src/kafka/records/compression';
import {
  decodeKafkaRecordBatches,
  encodeKafkaRecordBatch,
  type KafkaRecordInput,
} from '../../../../src/kafka/records/kafka-record-batch';
import { fromFetchedRecords } from '../../../../src/kafka/records/record-conversion';

/**
 * KafkaJS 2.2.4 (the client version the Kafka door serves) as an independent oracle: its own record
 * batch encoder writes batches that cohort must decode, and its decoder must read what cohort encodes.
 * Its internal modules have no types; the shapes used are declared here.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0') as {
  RecordBatch: (options: Record<string, unknown>) => Promise<{ buffer: Buffer }>;
};
const KafkaJSRecord = require('kafkajs/src/protocol/recordBatch/record/v0') as (options: {
  offsetDelta: number;
  timestampDelta: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
}) => unknown;
const decodeKafkaJSBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder') as (
  decoder: unknown,
) => Promise<KafkaJSBatch>;
const KafkaJSDecoder = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => unknown;
const Long = require('kafkajs/src/utils/long') as { fromValue(value: number | string): unknown };
const kafkaJSCrc32C = require('kafkajs/src/protocol/recordBatch/crc32C') as (buffer: Buffer) => number;
const decodeKafkaJSFetchRecords = require('kafkajs/src/protocol/requests/fetch/v4/decodeMessages') as (
  decoder: unknown,
) => Promise<KafkaJSBatch['records']>;
/* eslint-enable @typescript-eslint/no-require-imports */

interface KafkaJSBatch {
  readonly firstOffset: string;
  readonly partitionLeaderEpoch: number;
  readonly records: {
    readonly offset: string;
    readonly timestamp: string;
    readonly key: Buffer | null;
    readonly value: Buffer | null;
    readonly headers: Record<string, Buffer | null>;
  }[];
}

const KAFKAJS_GZIP = 1;

const optionalBytes = fc.option(
  fc.uint8Array({ maxLength: 30 }).map((bytes) => Buffer.from(bytes)),
  { nil: null },
);
/**
 * KafkaJS keeps headers in an object by key, so keys are unique here and never integer-like (an object
 * lists those first, whatever their order on the wire).
 */
const headersArbitrary = fc.uniqueArray(
  fc.record({
    key: fc.string({ maxLength: 6 }).map((key) => `h-${key}`),
    value: fc.uint8Array({ maxLength: 10 }).map((bytes) => Buffer.from(bytes)),
  }),
  { selector: (header) => header.key, maxLength: 3 },
);
const recordsArbitrary = fc.array(
  fc.record({
    gap: fc.integer({ min: 1, max: 50 }),
    timestampMs: fc.integer({ min: 0, max: 2 ** 42 }),
    key: optionalBytes,
    value: optionalBytes,
    headers: headersArbitrary,
  }),
  { minLength: 1, maxLength: 15 },
);

describe('KafkaJS as an oracle', () => {
  test('cohort computes the same CRC-32C as KafkaJS', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 500 }), (bytes) => {
        const buffer = Buffer.from(bytes);
        expect(require('@node-rs/crc32').crc32c(buffer)).toBe(kafkaJSCrc32C(buffer)); // eslint-disable-line @typescript-eslint/no-require-imports
      }),
    );
  });

  test.each([CompressionCodec.NONE, CompressionCodec.GZIP])(
    "batches KafkaJS's encoder writes (codec %i) decode to the same records",
    async (compression) => {
      await fc.assert(
        fc.asyncProperty(
          recordsArbitrary,
          fc.integer({ min: 0, max: 2 ** 40 }),
          async (specs, baseOffset) => {
            const firstTimestamp = specs[0]!.timestampMs;
            let offsetDelta = -1;
            const records = specs.map((spec) => ({ ...spec, offsetDelta: (offsetDelta += spec.gap) }));
            const batch = await RecordBatch({
              compression: compression === CompressionCodec.GZIP ? KAFKAJS_GZIP : 0,
              firstOffset: Long.fromValue(baseOffset),
              firstTimestamp,
              maxTimestamp: Math.max(...records.map((record) => record.timestampMs)),
              partitionLeaderEpoch: 3,
              lastOffsetDelta: offsetDelta,
              records: records.map((record) =>
                KafkaJSRecord({
                  offsetDelta: record.offsetDelta,
                  timestampDelta: record.timestampMs - firstTimestamp,
                  key: record.key,
                  value: record.value,
                  headers: Object.fromEntries(record.headers.map((header) => [header.key, header.value])),
                }),
              ),
            });
            const [decoded, ...rest] = decodeKafkaRecordBatches(batch.buffer);
            expect(rest).toHaveLength(0);
            expect(decoded!.baseOffset).toBe(baseOffset);
            expect(decoded!.partitionLeaderEpoch).toBe(3);
            expect(decoded!.compression).toBe(compression);
            expect(decoded!.lastOffsetDelta).toBe(offsetDelta);
            expect(decoded!.records).toEqual(
              records.map((record) => ({
                offsetDelta: record.offsetDelta,
                timestampMs: record.timestampMs,
                key: record.key,
                value: record.value,
                headers: record.headers,
              })),
            );
          },
        ),
        { numRuns: 60 },
      );
    },
  );

  test.each([CompressionCodec.NONE, CompressionCodec.GZIP])(
    "KafkaJS's decoder reads the batches cohort encodes (codec %i)",
    async (compression) => {
      await fc.assert(
        fc.asyncProperty(
          recordsArbitrary,
          fc.integer({ min: 0, max: 2 ** 40 }),
          async (specs, baseOffset) => {
            let offset = baseOffset - 1;
            const records: KafkaRecordInput[] = specs.map(({ gap, ...rest }) => ({
              offset: (offset += gap),
              ...rest,
            }));
            const bytes = encodeKafkaRecordBatch(records, {
              baseOffset: records[0]!.offset,
              partitionLeaderEpoch: 7,
              compression,
            });
            const decoded = await decodeKafkaJSBatch(new KafkaJSDecoder(bytes));
            expect(decoded.firstOffset).toBe(String(records[0]!.offset));
            expect(decoded.partitionLeaderEpoch).toBe(7);
            expect(
              decoded.records.map((record) => ({
                offset: record.offset,
                timestamp: record.timestamp,
                key: record.key,
                value: record.value,
                headers: record.headers,
              })),
            ).toEqual(
              records.map((record) => ({
                offset: String(record.offset),
                timestamp: String(record.timestampMs),
                key: record.key,
                value: record.value,
                headers: Object.fromEntries(record.headers.map((header) => [header.key, header.value])),
              })),
            );
          },
        ),
        { numRuns: 60 },
      );
    },
  );

  test("KafkaJS's Fetch v4 decoding reads a partition's batches from fromFetchedRecords, across epochs and codecs", async () => {
    const records = Array.from({ length: 9 }, (_, i) => ({
      offset: 100 + i * 2,
      timestampMs: 1_700_000_000_000 + i,
      key: i % 2 === 0 ? null : Buffer.from(`k${i}`),
      value: Buffer.from(`v${i}`),
      headers: [{ key: 'h-trace', value: Buffer.from([i]) }],
      leaderEpoch: Math.floor(i / 4),
    }));
    for (const compression of [CompressionCodec.NONE, CompressionCodec.GZIP]) {
      const batches = fromFetchedRecords({ records }, { maxBytes: 1 << 20, compression });
      const field = Buffer.alloc(4 + batches.length);
      field.writeInt32BE(batches.length, 0);
      batches.copy(field, 4);
      const decoded = await decodeKafkaJSFetchRecords(new KafkaJSDecoder(field));
      expect(
        decoded.map((record) => [record.offset, record.timestamp, record.key, record.value, record.headers]),
      ).toEqual(
        records.map((record) => [
          String(record.offset),
          String(record.timestampMs),
          record.key,
          record.value,
          { 'h-trace': record.headers[0]!.value },
        ]),
      );
    }
  });
});
