/**
 * Which `__consumer_offsets` partition a group belongs to, computed exactly as Kafka computes it
 * (GroupMetadataManager.partitionFor: `Utils.abs(groupId.hashCode) % groupMetadataTopicPartitionCount`), so
 * a group lands on the same partition number in cohort as in Kafka. The partition's leader is the group's
 * coordinator.
 */

/**
 * Java's `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over the string's UTF-16 code units, in 32-bit
 * two's-complement arithmetic. JavaScript strings are UTF-16 too, so `charCodeAt` gives Java's `char`s
 * (a character outside the BMP counts as its two surrogates, as in Java).
 */
export function javaStringHashCode(value: string): number {
  let hash = 0;
  for (let i = 0; i < value.length; i++) hash = (Math.imul(hash, 31) + value.charCodeAt(i)) | 0;
  return hash;
}

/**
 * Kafka's `Utils.abs`: `n & 0x7fffffff`. Unlike `Math.abs` it maps Integer.MIN_VALUE to 0, not to a
 * negative number, so the modulo below is never negative.
 */
export function kafkaAbs(value: number): number {
  return value & 0x7fffffff;
}

/** The `__consumer_offsets` partition of `groupId` among `numPartitions` (>= 1). */
export function groupPartitionFor(groupId: string, numPartitions: number): number {
  if (!(Number.isInteger(numPartitions) && numPartitions >= 1)) {
    throw new RangeError(`numPartitions must be a positive integer, got ${numPartitions}`);
  }
  return kafkaAbs(javaStringHashCode(groupId)) % numPartitions;
}
