import { groupPartitionFor, javaStringHashCode, kafkaAbs } from '../../../src/protocol/group-placement';

describe('group placement', () => {
  // Values of java.lang.String#hashCode and Kafka's partitionFor with 50 partitions (offsets.topic.num.partitions).
  it.each([
    ['', 0, 0],
    ['a', 97, 47],
    ['group-1', 293427299, 49],
    ['my-consumer-group', 1513705513, 13],
    ['payments', 1382682413, 13],
    // The one well-known string whose hashCode is Integer.MIN_VALUE: Math.abs would stay negative.
    ['polygenelubricants', -2147483648, 0],
    // Outside the BMP: two UTF-16 code units, as Java counts them.
    ['\u{1F600} emoji', -1572615351, 47],
    // Java's classic collision: equal hashes, equal partitions.
    ['Aa', 2112, 12],
    ['BB', 2112, 12],
  ])('%j hashes to %d and lands on partition %d of 50', (groupId, hash, partition) => {
    expect(javaStringHashCode(groupId)).toBe(hash);
    expect(groupPartitionFor(groupId, 50)).toBe(partition);
  });

  it('maps Integer.MIN_VALUE to 0 as Utils.abs does', () => {
    expect(kafkaAbs(-2147483648)).toBe(0);
    expect(kafkaAbs(-1)).toBe(2147483647);
    expect(kafkaAbs(5)).toBe(5);
  });

  it('puts every group on partition 0 of a one-partition topic', () => {
    expect(groupPartitionFor('anything', 1)).toBe(0);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses %p partitions', (count) => {
    expect(() => groupPartitionFor('g', count)).toThrow(RangeError);
  });
});
