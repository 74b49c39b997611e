/** The group layer's public surface: what the server and embedders use. */
export {
  GroupCoordinator,
  NEW_MEMBER_JOIN_TIMEOUT_MS,
  DEFAULT_REPLY_SLICE_SIZE,
  INVALID_OFFSET,
} from './group-coordinator';
export type {
  GroupCoordinatorOptions,
  GroupCoordinatorListener,
  GroupCoordinatorRuntimeOptions,
} from './group-coordinator';
export { GroupCoordinatorRouter } from './group-coordinator-router';
export type { GroupCoordinatorRouterOptions } from './group-coordinator-router';
export type { OffsetRetentionCheckSummary } from './offset-retention-check';
export type { GroupConfig } from './group-config';
export {
  DEFAULT_GROUP_CONFIG,
  DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS,
  DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS,
  DEFAULT_GROUP_MAX_SIZE,
  DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS,
  DEFAULT_OFFSET_METADATA_MAX_BYTES,
  DEFAULT_MAX_GROUPS,
  DEFAULT_MEMBER_METADATA_MAX_BYTES,
  DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS,
  DEFAULT_OFFSETS_RETENTION_MINUTES,
} from './group-config';
export type * from './group-protocol';
export type { GroupState } from './group-state';
export type { GroupStateCount, GroupStats } from './group-stats';
export type { RebalanceReason } from './rebalance-reason';
export type { GroupChange, GroupChangeListener } from './group-events';
export type { GroupEventReason } from '../protocol/group-event-reason';
export { GROUP_EVENT_REASONS } from '../protocol/group-event-reason';
export { REBALANCE_REASONS } from './rebalance-reason';
export { GROUP_STATES, isLegalTransition } from './group-state';
export type {
  CommittedOffset,
  CommittedOffsetsReader,
  TopicPartition,
  TopicPartitionOffset,
} from './committed-offsets';
export type { StoredGroup, StoredMember } from './stored-group';
export { InMemoryPartitionWriter } from './in-memory-partition-writer';
export type {
  CoordinatorLoadResult,
  CoordinatorLoadSummary,
  CoordinatorLogRecord,
  CoordinatorPartitionWriter,
  CoordinatorRecordToWrite,
} from './coordinator-partition-writer';
