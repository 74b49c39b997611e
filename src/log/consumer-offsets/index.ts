export {
  CONSUMER_OFFSETS_LOG_CONFIG,
  CONSUMER_OFFSETS_PARTITION_DIR,
  CONSUMER_OFFSETS_SEGMENT_BYTES,
  CONSUMER_OFFSETS_TOPIC,
  ConsumerOffsetsStore,
  DEFAULT_MIN_CLEANABLE_DIRTY_RATIO,
} from './consumer-offsets-store';
export type { OffsetsPartition } from './offsets-partition';
export type {
  ConsumerOffsetsLoadResult,
  ConsumerOffsetsStoreOptions,
  StoredGroupRecord,
  TopicPartitionOffsetRecord,
} from './consumer-offsets-store';
export {
  decodeGroupMetadataValue,
  decodeKey,
  decodeOffsetCommitValue,
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
  GROUP_METADATA_KEY_TYPE,
  GROUP_METADATA_VALUE_VERSION,
  OFFSET_COMMIT_KEY_TYPE,
  OFFSET_COMMIT_VALUE_VERSION,
} from './consumer-offsets-record';
export type {
  ConsumerOffsetsKey,
  GroupMetadataKey,
  GroupMetadataValue,
  MemberMetadataValue,
  MemberProtocolValue,
  OffsetCommitKey,
  OffsetCommitValue,
} from './consumer-offsets-record';
export { DEFAULT_LOAD_STEP_BYTES, replayLog } from './replay-log';
export type { ReplayOptions, ReplayResult } from './replay-log';
