// The SDK's partitions are the protocol layer's, shared with the server (its admin page decodes assignments).
export { compareTopicPartitions, topicPartitionKey } from '../protocol/topic-partition';
export type { TopicPartition } from '../protocol/topic-partition';
