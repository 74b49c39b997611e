export * from './broker-protocol';
export type { BrokerConfig } from './broker-config';
export {
  DEFAULT_NUM_PARTITIONS,
  DEFAULT_REPLICATION_FACTOR,
  DEFAULT_RETENTION_CHECK_INTERVAL_MS,
  MAX_PARTITIONS_PER_TOPIC,
} from './broker-config';
export { DelayedFetch } from './delayed-fetch';
export type { FetchParams, FetchPartitionStatus } from './delayed-fetch';
export { DelayedProduce } from './delayed-produce';
export type { ProducePartitionStatus } from './delayed-produce';
export type { LeaderEndpoint } from './leader-endpoint';
export { LeaderRefusedCall } from './leader-endpoint';
export { LogManager } from './log-manager';
export type { TopicAssignment } from './log-manager';
export { checkLeaderEpoch, Partition, UNKNOWN_OFFSET } from './partition';
export type {
  FollowerState,
  IsrProposal,
  PartitionOptions,
  PartitionState,
  ReplicationCheck,
} from './partition';
export type { PartitionLookup } from './partition-lookup';
export {
  DEFAULT_OFFSETS_COMMIT_TIMEOUT_MS,
  DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS,
  OffsetsTopicLeadership,
} from './offsets-topic';
export type { OffsetsTopicListener, OffsetsTopicOptions, OffsetsTopicStartup } from './offsets-topic';
export { PeriodicTask } from './periodic-task';
export {
  DEFAULT_IDLE_INTERVAL_MS,
  DEFAULT_REPLICA_FETCH_BACKOFF_MS,
  DEFAULT_REPLICA_FETCH_MAX_BYTES,
  DEFAULT_REPLICA_FETCH_RESPONSE_MAX_BYTES,
  DEFAULT_REPLICA_FETCH_WAIT_MAX_MS,
  LEADER_FAILURE_REPORT_MAX_INTERVAL_MS,
  ReplicaFetcher,
} from './replica-fetcher';
export type { LeaderFailure, LeaderLinkStatus, ReplicaFetcherOptions } from './replica-fetcher';
export { replicaAuthorizationError } from './replica-authorization';
export { ReplicaFetcherManager } from './replica-fetcher-manager';
export type { LeaderEndpointFactory } from './replica-fetcher-manager';
export { DEFAULT_ISR_PROPOSAL_RETRY_BACKOFF_MS, ReplicaManager } from './replica-manager';
export type { ReplicaManagerListener, ReplicaManagerOptions } from './replica-manager';
export type {
  EpochBoundaryOutcome,
  EpochBoundaryTarget,
  FetchedPartitionOutcome,
  FollowerFetchTarget,
} from './follower-replicas';
export {
  MAX_TOPIC_NAME_LENGTH,
  RESERVED_TOPIC_NAMES,
  topicNameProblem,
  topicPartitionKey,
} from './topic-partition';
export { NO_LEADER_ID } from './partition-roles';
export type {
  ClusterMetadataUpdate,
  ClusterNodeAddress,
  IsrChangeProposer,
  IsrChangeResult,
  LeadershipGuard,
  PartitionLeadership,
  PartitionRoleTarget,
} from './partition-roles';
