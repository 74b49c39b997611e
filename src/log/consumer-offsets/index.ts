export {
  CONSUMER_OFFSETS_LOG_CONFIG,
  CONSUMER_OFFSETS_PARTITION_DIR,
  CONSUMER_OFFSETS_SEGMENT_BYTES,
  CONSUMER_OFFSETS_TOPIC,
  ConsumerOffsetsWriter,
  DEFAULT_MIN_CLEANABLE_DIRTY_RATIO,
} from './consumer-offsets-writer';
export type { OffsetsPartition } from './offsets-partition';
export type { ConsumerOffsetsWriterOptions } from './consumer-offsets-writer';
export { DEFAULT_LOAD_STEP_BYTES, replayLog } from './replay-log';
export type { ReplayOptions, ReplayResult } from './replay-log';
