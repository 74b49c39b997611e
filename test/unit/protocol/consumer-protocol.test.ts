import fc from 'fast-check';
import {
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
} from '../../../src/protocol/consumer-protocol';
import { ConsumerProtocolError } from '../../../src/protocol/consumer-protocol-error';
import {
  compareTopicPartitions,
  topicPartitionKey,
  type TopicPartition,
} from '../../../src/protocol/topic-partition';

const topicArb = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 });
const partitionsArb = fc
  .uniqueArray(fc.record({ topic: topicArb, partition: fc.integer({ min: 0, max: 0x7fffffff }) }), {
    selector: topicPartitionKey,
    maxLength: 30,
  })
  .map((list) => list as TopicPartition[]);
const userDataArb = fc.option(
  fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
  { nil: null },
);

describe('consumer protocol', () => {
  it('round-trips any subscription, with owned partitions sorted', () => {
    fc.assert(
      fc.property(
        fc.array(topicArb, { maxLength: 10 }),
        partitionsArb,
        userDataArb,
        fc.integer({ min: -1, max: 2 ** 31 - 1 }),
        (topics, owned, userData, generationId) => {
          const decoded = decodeSubscription(
            encodeSubscription({ topics, ownedPartitions: owned, userData, generationId }),
          );
          expect(decoded).toEqual({
            topics,
            ownedPartitions: [...owned].sort(compareTopicPartitions),
            userData,
            generationId,
          });
        },
      ),
    );
  });

  it('round-trips any assignment', () => {
    fc.assert(
      fc.property(partitionsArb, userDataArb, (partitions, userData) => {
        expect(decodeAssignment(encodeAssignment({ partitions, userData }))).toEqual({
          partitions: [...partitions].sort(compareTopicPartitions),
          userData,
        });
      }),
    );
  });

  it('decodes corrupted bytes to a well-formed message or rejects them with ConsumerProtocolError, never anything else', () => {
    const validArb = fc.oneof(
      fc
        .tuple(fc.array(topicArb, { maxLength: 4 }), partitionsArb, userDataArb)
        .map(([topics, owned, userData]) => encodeSubscription({ topics, ownedPartitions: owned, userData })),
      fc
        .tuple(partitionsArb, userDataArb)
        .map(([partitions, userData]) => encodeAssignment({ partitions, userData })),
      fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
    );
    const corruptionArb = fc.record({
      cut: fc.nat(),
      flips: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }),
    });
    fc.assert(
      fc.property(validArb, corruptionArb, (valid, { cut, flips }) => {
        const bytes = Buffer.from(valid.subarray(0, valid.length === 0 ? 0 : cut % (valid.length + 1)));
        for (const [at, value] of flips) if (bytes.length > 0) bytes[at % bytes.length] = value;
        for (const [decode, encode] of [
          [decodeSubscription, encodeSubscription],
          [decodeAssignment, encodeAssignment],
        ] as const) {
          let decoded: unknown;
          try {
            decoded = decode(bytes);
          } catch (error) {
            expect(error).toBeInstanceOf(ConsumerProtocolError);
            continue;
          }
          // Whatever was accepted is a message this SDK can write again and read back unchanged.
          expect(decode((encode as (m: unknown) => Buffer)(decoded))).toEqual(decoded);
        }
      }),
    );
  });

  it('treats an empty assignment as no partitions, but an empty subscription as garbage', () => {
    expect(decodeAssignment(Buffer.alloc(0))).toEqual({ partitions: [], userData: null });
    expect(() => decodeSubscription(Buffer.alloc(0))).toThrow(/subscription: version is cut short at byte 0/);
  });

  it('rejects version 0 and below', () => {
    const bytes = encodeAssignment({ partitions: [] });
    bytes.writeInt16BE(0, 0);
    expect(() => decodeAssignment(bytes)).toThrow(/version 0/);
  });

  it('names the field that is cut short', () => {
    const bytes = encodeSubscription({
      topics: ['orders'],
      ownedPartitions: [{ topic: 'orders', partition: 3 }],
    });
    expect(() => decodeSubscription(bytes.subarray(0, bytes.length - 2))).toThrow(
      /generationId is cut short/,
    );
    expect(() => decodeSubscription(bytes.subarray(0, 9))).toThrow(/topic is cut short/);
  });

  it('rejects trailing bytes at version 1 but ignores fields appended by a newer version', () => {
    const bytes = encodeSubscription({ topics: ['a'], generationId: 7 });
    const longer = Buffer.concat([bytes, Buffer.from([1, 2, 3])]);
    expect(() => decodeSubscription(longer)).toThrow(/3 unexpected trailing bytes/);
    longer.writeInt16BE(2, 0);
    expect(decodeSubscription(longer)).toMatchObject({ topics: ['a'], generationId: 7 });
  });

  it('rejects counts that cannot fit, negative or repeated partitions, and invalid UTF-8', () => {
    const huge = encodeAssignment({ partitions: [] });
    huge.writeInt32BE(1_000_000, 2);
    expect(() => decodeAssignment(huge)).toThrow(/topic count 1000000 does not fit/);

    const negative = encodeAssignment({ partitions: [{ topic: 't', partition: 5 }] });
    negative.writeInt32BE(-5, negative.length - 8);
    expect(() => decodeAssignment(negative)).toThrow(/partition -5 of "t" is negative/);

    const twice = encodeAssignment({
      partitions: [
        { topic: 't', partition: 1 },
        { topic: 't', partition: 2 },
      ],
    });
    twice.writeInt32BE(1, twice.length - 8);
    expect(() => decodeAssignment(twice)).toThrow(/appears twice/);

    const badText = encodeSubscription({ topics: ['ab'] });
    badText[8] = 0xff;
    expect(() => decodeSubscription(badText)).toThrow(/topic is not valid UTF-8/);
  });

  it('refuses to encode a partition twice or a negative partition', () => {
    expect(() =>
      encodeAssignment({
        partitions: [
          { topic: 't', partition: 1 },
          { topic: 't', partition: 1 },
        ],
      }),
    ).toThrow(/listed twice/);
    expect(() =>
      encodeSubscription({ topics: [], ownedPartitions: [{ topic: 't', partition: -1 }] }),
    ).toThrow(/non-negative int32/);
  });
});
