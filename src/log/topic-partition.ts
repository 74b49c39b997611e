/**
 * Topic names and partition keys. A partition is keyed "<topic>-<partition>" everywhere: in the
 * purgatories (the keys DelayedFetch and DelayedProduce are watched under), in the partition map and as
 * its directory under --data-dir, as in Kafka. The key is unambiguous because a partition index has no
 * '-' and a topic name is checked before use.
 */
export function topicPartitionKey(topic: string, partitionIndex: number): string {
  return `${topic}-${partitionIndex}`;
}

/** Kafka's limit: a partition directory name (topic, '-', index) must fit in 255 bytes. */
export const MAX_TOPIC_NAME_LENGTH = 249;
const LEGAL_TOPIC_NAME = /^[a-zA-Z0-9._-]+$/;

/**
 * Names the server keeps for itself: `__consumer_offsets` holds committed group offsets in its own
 * directory under --data-dir, so no user topic may take its name (or its partition directories).
 */
export const RESERVED_TOPIC_NAMES: ReadonlySet<string> = new Set(['__consumer_offsets']);

/** Why `name` cannot be a topic (Kafka's rules: ASCII letters, digits, '.', '_', '-'), or null if it can. */
export function topicNameProblem(name: string): string | null {
  if (name === '') return 'the topic name is empty';
  if (name === '.' || name === '..') return `the topic name cannot be '${name}'`;
  if (name.length > MAX_TOPIC_NAME_LENGTH) {
    return `the topic name is ${name.length} characters long; the limit is ${MAX_TOPIC_NAME_LENGTH}`;
  }
  if (!LEGAL_TOPIC_NAME.test(name)) {
    return `the topic name '${name}' may contain only ASCII letters, digits, '.', '_' and '-'`;
  }
  return null;
}
