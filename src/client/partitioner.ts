import { murmur2, toPositive } from './murmur2';

/**
 * Chooses the partition of a record that names none: a number in [0, partitionCount). Pure apart from any
 * state it keeps for keyless records; the producer calls it once per record.
 */
export type Partitioner = (
  record: { readonly topic: string; readonly key: Buffer | null },
  partitionCount: number,
) => number;

/**
 * Kafka's default choice for keyed records — `toPositive(murmur2(key)) % partitionCount`, so the same key
 * always lands on the same partition (and on the one Kafka's producer would choose) — and round robin per
 * topic for records without a key.
 */
export function createDefaultPartitioner(): Partitioner {
  const next = new Map<string, number>();
  return (record, partitionCount) => {
    if (record.key !== null && record.key.length > 0) return toPositive(murmur2(record.key)) % partitionCount;
    const counter = next.get(record.topic) ?? 0;
    next.set(record.topic, (counter + 1) % 0x7fffffff);
    return counter % partitionCount;
  };
}
