export { DEFAULT_MIN_CLEANABLE_DIRTY_RATIO, DirtyRatioCompaction } from './dirty-ratio-compaction';
export type { DirtyRatioCompactionOptions } from './dirty-ratio-compaction';
export { PartitionLog, RECOVERY_POINT_CHECKPOINT_INTERVAL_MS } from './partition-log';
export { CorruptLogError } from './log-recovery';
export type {
  LeaderEpochCacheRebuildEvent,
  LogFileRemovalReason,
  LogIndexRebuildEvent,
  LogRecoveryListener,
  LogRecoveryOptions,
  LogTruncationEvent,
  LogTruncationKind,
} from './log-recovery';
export { RECOVERY_CHECKPOINT_FILE } from './recovery-checkpoint';
export {
  LeaderEpochCache,
  LEADER_EPOCH_CHECKPOINT_FILE,
  UNDEFINED_EPOCH,
  UNDEFINED_EPOCH_OFFSET,
} from './leader-epoch-cache';
export type { EpochEndOffset, EpochEntry } from './leader-epoch-cache';
export {
  checkpointHighWatermarks,
  HIGH_WATERMARK_CHECKPOINT_CONCURRENCY,
  HIGH_WATERMARK_CHECKPOINT_FILE,
  HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
} from './high-watermark-checkpoint';
export type { HighWatermarkSource } from './high-watermark-checkpoint';
export type {
  CompactionResult,
  LogAppendInfo,
  LogReadInfo,
  PartitionLogOptions,
  ReadOptions,
} from './partition-log';
export {
  createLogConfig,
  DEFAULT_LOG_CONFIG,
  DEFAULT_CLEANUP_POLICY,
  DEFAULT_FLUSH_INTERVAL_MS,
  DEFAULT_FLUSH_MESSAGES,
  DEFAULT_INDEX_INTERVAL_BYTES,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_RETENTION_BYTES,
  DEFAULT_RETENTION_MS,
  DEFAULT_SEGMENT_BYTES,
  DEFAULT_SEGMENT_MS,
} from './log-config';
export type { LogConfig } from './log-config';
export { isTombstone, NO_HEADERS } from './log-record';
export type { LogRecord, RecordHeader, SimpleRecord } from './log-record';
export { positionDiff } from './log-offset-metadata';
export type { LogOffsetMetadata } from './log-offset-metadata';
export type { CorruptRegion, TimestampAndOffset } from './log-segment';
export {
  RecordBatch,
  RECORD_BATCH_MAGIC,
  LOG_OVERHEAD,
  NO_PARTITION_LEADER_EPOCH,
  RECORD_BATCH_HEADER_BYTES,
} from './record-batch';
export { DataDirInUseError, DataDirLock, DATA_DIR_LOCK_FILE } from './data-dir-lock';
export {
  checkDataDirIdentity,
  DATA_DIR_IDENTITY_FILE,
  ForeignDataDirError,
  newClusterUuid,
  readDataDirIdentity,
  UnreadableDataDirIdentityError,
  writeDataDirIdentity,
} from './data-dir-identity';
export type { DataDirIdentity, DataDirMode, ExpectedIdentity } from './data-dir-identity';
