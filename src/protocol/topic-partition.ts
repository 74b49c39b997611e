/** One partition of one topic. Plain data: compare with `compareTopicPartitions`, key maps with `topicPartitionKey`. */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** Orders by topic name (UTF-16 code units, as Java's `String.compareTo`), then by partition number. */
export function compareTopicPartitions(a: TopicPartition, b: TopicPartition): number {
  if (a.topic !== b.topic) return a.topic < b.topic ? -1 : 1;
  return a.partition - b.partition;
}

/**
 * A string that identifies a partition, for Map and Set keys. NUL cannot appear in a topic name that any
 * Kafka-compatible system accepts, so the key is unambiguous.
 */
export function topicPartitionKey(tp: TopicPartition): string {
  return `${tp.topic}\u0000${tp.partition}`;
}
