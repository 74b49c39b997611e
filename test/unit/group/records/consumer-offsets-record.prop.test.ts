import fc from 'fast-check';
import { CohortError, ErrorCode } from '../../../../src/errors';
import {
  decodeGroupMetadataValue,
  decodeKey,
  decodeOffsetCommitValue,
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
  GROUP_METADATA_KEY_TYPE,
  type GroupMetadataValue,
  OFFSET_COMMIT_KEY_TYPE,
  type OffsetCommitValue,
} from '../../../../src/group/records/consumer-offsets-record';

const text = fc.string({ unit: 'grapheme', maxLength: 12 });
const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
const safeInt = fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
const bytes = fc.uint8Array({ maxLength: 24 }).map((array) => Buffer.from(array));

const offsetCommitValue: fc.Arbitrary<OffsetCommitValue> = fc.record({
  committedOffset: safeInt,
  committedLeaderEpoch: int32,
  metadata: text,
  commitTimestampMs: safeInt,
});

const groupMetadataValue: fc.Arbitrary<GroupMetadataValue> = fc.record({
  protocolType: text,
  generationId: int32,
  protocolName: text,
  leaderId: text,
  currentStateTimestampMs: safeInt,
  members: fc.array(
    fc.record({
      memberId: text,
      groupInstanceId: text,
      clientId: text,
      clientHost: text,
      rebalanceTimeoutMs: int32,
      sessionTimeoutMs: int32,
      protocols: fc.array(fc.record({ name: text, metadata: bytes }), { maxLength: 3 }),
      assignment: bytes,
    }),
    { maxLength: 4 },
  ),
});

function corruption(fn: () => unknown): CohortError {
  try {
    fn();
  } catch (error) {
    if (error instanceof CohortError && error.code === ErrorCode.CORRUPT_MESSAGE) return error;
    throw error;
  }
  throw new Error('decoded without complaint');
}

describe('__consumer_offsets record schema', () => {
  test('an offset commit key decodes to the group, topic and partition it was made from', () => {
    fc.assert(
      fc.property(text, text, int32, (groupId, topic, partition) => {
        expect(decodeKey(encodeOffsetCommitKey(groupId, topic, partition))).toEqual({
          type: OFFSET_COMMIT_KEY_TYPE,
          groupId,
          topic,
          partition,
        });
      }),
    );
  });

  test('a group metadata key decodes to its group id', () => {
    fc.assert(
      fc.property(text, (groupId) => {
        expect(decodeKey(encodeGroupMetadataKey(groupId))).toEqual({
          type: GROUP_METADATA_KEY_TYPE,
          groupId,
        });
      }),
    );
  });

  test('two keys have the same bytes exactly when they name the same thing (what compaction compares)', () => {
    const key = fc.oneof(
      fc.tuple(fc.constant('offset'), fc.constantFrom('g', 'gt', ''), fc.constantFrom('t', 'tt', ''), int32),
      fc.tuple(fc.constant('group'), fc.constantFrom('g', 'gt', ''), fc.constant(''), fc.constant(0)),
    );
    const encode = ([kind, group, topic, partition]: [string, string, string, number]): Buffer =>
      kind === 'group' ? encodeGroupMetadataKey(group) : encodeOffsetCommitKey(group, topic, partition);
    fc.assert(
      fc.property(key, key, (a, b) => {
        expect(encode(a).equals(encode(b))).toBe(JSON.stringify(a) === JSON.stringify(b));
      }),
    );
  });

  test('an offset commit value round-trips, int64 fields included', () => {
    fc.assert(
      fc.property(offsetCommitValue, (value) => {
        expect(decodeOffsetCommitValue(encodeOffsetCommitValue(value))).toEqual(value);
      }),
    );
  });

  test('a group metadata value round-trips with every member, protocol and assignment', () => {
    fc.assert(
      fc.property(groupMetadataValue, (value) => {
        expect(decodeGroupMetadataValue(encodeGroupMetadataValue(value))).toEqual(value);
      }),
    );
  });

  test('every truncation of a value or key is refused as corrupt, never misread', () => {
    fc.assert(
      fc.property(groupMetadataValue, offsetCommitValue, text, (group, offset, groupId) => {
        const encodings: [Buffer, (b: Buffer) => unknown][] = [
          [encodeGroupMetadataValue(group), decodeGroupMetadataValue],
          [encodeOffsetCommitValue(offset), decodeOffsetCommitValue],
          [encodeOffsetCommitKey(groupId, 't', 1), decodeKey],
        ];
        for (const [encoded, decode] of encodings) {
          for (let length = 0; length < encoded.length; length++) {
            corruption(() => decode(encoded.subarray(0, length)));
          }
          corruption(() => decode(Buffer.concat([encoded, Buffer.from([0])])));
        }
      }),
    );
  });

  test('the key bytes are as documented: type, then length-prefixed UTF-8 strings, then the partition', () => {
    expect(encodeOffsetCommitKey('g', 't', 0).toString('hex')).toBe(
      '01' + '0000000167' + '0000000174' + '00000000',
    );
    expect(encodeGroupMetadataKey('g').toString('hex')).toBe('02' + '0000000167');
  });

  test('an unknown key type or value version is refused rather than guessed at', () => {
    expect(corruption(() => decodeKey(Buffer.from('030000000167', 'hex'))).message).toContain(
      'unknown key type 3',
    );
    const value = encodeOffsetCommitValue({
      committedOffset: 1,
      committedLeaderEpoch: -1,
      metadata: '',
      commitTimestampMs: 0,
    });
    value[0] = 1;
    expect(corruption(() => decodeOffsetCommitValue(value)).message).toContain('unknown version 1');
    const group = encodeGroupMetadataValue({
      protocolType: '',
      generationId: 0,
      protocolName: '',
      leaderId: '',
      currentStateTimestampMs: 0,
      members: [],
    });
    group[0] = 7;
    expect(corruption(() => decodeGroupMetadataValue(group)).message).toContain('unknown version 7');
  });

  test('a member count larger than the bytes could hold is corrupt and allocates nothing', () => {
    const empty = encodeGroupMetadataValue({
      protocolType: 'consumer',
      generationId: 1,
      protocolName: '',
      leaderId: '',
      currentStateTimestampMs: 0,
      members: [],
    });
    empty.writeUInt32BE(0xffffffff, empty.length - 4);
    expect(corruption(() => decodeGroupMetadataValue(empty)).message).toContain('cannot fit');
  });

  test('an int64 outside the safe integers is corrupt, not rounded', () => {
    const value = encodeOffsetCommitValue({
      committedOffset: 0,
      committedLeaderEpoch: 0,
      metadata: '',
      commitTimestampMs: 0,
    });
    value.writeBigInt64BE(2n ** 62n, 1);
    expect(corruption(() => decodeOffsetCommitValue(value)).message).toContain('not a safe integer');
  });
});
