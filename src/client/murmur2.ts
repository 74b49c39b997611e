/**
 * Kafka's `Utils.murmur2`: the 32-bit MurmurHash2 its default partitioner applies to a record's key, so a
 * key lands on the same partition number from cohort's producer as from Kafka's (given the same partition
 * count). Signed 32-bit result, as in Java.
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const m = 0x5bd1e995;
  const r = 24;
  let h = (0x9747b28c ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  // Kafka's switch falls through from 3 to 1: the tail bytes, highest first, then one multiplication.
  const tail = length & ~3;
  const rest = length % 4;
  if (rest === 3) h ^= data[tail + 2] << 16;
  if (rest >= 2) h ^= data[tail + 1] << 8;
  if (rest >= 1) {
    h ^= data[tail];
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's `Utils.toPositive`: clears the sign bit (not `Math.abs`, which overflows on -2^31). */
export function toPositive(n: number): number {
  return n & 0x7fffffff;
}
