/**
 * The SDK's modules, for code inside this repository (benchmarks, tests). It exports internals too
 * (`RetryingCaller`, `TimeScheduler`, `murmur2`, ...); the package's public entry point is `src/index.ts`,
 * the only one its `exports` field lets other projects import (docs/sdk.md, "What is public").
 */
export { CohortClient } from './cohort-client';
export type { ClientTransport, CohortClientOptions, JoinOptions } from './cohort-client';
export { Consumer } from './consumer';
export type { ConsumerDependencies } from './consumer';
export { CONSUMER_DEFAULTS, resolveConsumerSettings } from './consumer-options';
export type { AutoOffsetReset, ConsumerOptions, ResolvedConsumerSettings } from './consumer-options';
export type {
  ConsumerBatch,
  ConsumerRecord,
  EachBatchPayload,
  EachMessagePayload,
  RunHandlers,
} from './consumer-handlers';
export type { CommittedEvent, ConsumerEvents } from './consumer-events';
export { Producer } from './producer';
export type { ProducerDependencies, ProducerRecord, RecordMetadata } from './producer';
export { PRODUCER_DEFAULTS, resolveProducerOptions } from './producer-options';
export type { Acks, ProducerOptions, ResolvedProducerOptions } from './producer-options';
export { createDefaultPartitioner } from './partitioner';
export type { Partitioner } from './partitioner';
export { murmur2, toPositive } from './murmur2';
export { COHORT_ADMIN_DEFAULTS, CohortAdmin } from './cohort-admin';
export type * from './cohort-admin';
export { GroupMember } from './group-member';
export type {
  CommittedOffset,
  GroupMemberDependencies,
  GroupMemberState,
  OffsetToCommit,
} from './group-member';
export { GROUP_MEMBER_DEFAULTS, resolveGroupMemberOptions } from './group-member-options';
export type { GroupMemberOptions, PartitionCounts, ResolvedGroupMemberOptions } from './group-member-options';
export type {
  AssignedEvent,
  GroupMemberEvents,
  LostEvent,
  LostReason,
  RevokedEvent,
  RevokeReason,
} from './group-member-events';
export * from './assignors';
export {
  CONSUMER_PROTOCOL_TYPE,
  CONSUMER_PROTOCOL_VERSION,
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
} from './consumer-protocol';
export type { ConsumerAssignment, DecodedAssignment, DecodedSubscription } from './consumer-protocol';
export { ConsumerProtocolError } from './consumer-protocol-error';
export { compareTopicPartitions, topicPartitionKey } from './topic-partition';
export type { TopicPartition } from './topic-partition';
export type { CallOptions, GroupTransport, HeartbeatStream } from './group-transport';
export type { GroupAdminTransport } from './group-admin-transport';
export { GroupWatch } from './group-watch';
export type { GroupWatchCall, GroupWatchEvent, GroupWatchTransport, WatchGroupsOptions } from './group-watch';
export { GROUP_EVENT_REASONS } from '../protocol/group-event-reason';
export type { GroupEventReason } from '../protocol/group-event-reason';
export type { BrokerTransport } from './broker-transport';
export type * from '../protocol/group-messages';
export type * from './broker-messages';
export { RetryingCaller } from './retrying-caller';
export type { CallOutcome } from './retrying-caller';
export { GrpcTransport } from './grpc-transport';
export { ServerUnreachableError } from './server-unreachable-error';
export type { UnreachableReason } from './server-unreachable-error';
export type { GrpcTransportOptions, TlsOptions } from './grpc-transport';
export { codeForStatus } from './error-from-status';
export { ExponentialBackoff } from './exponential-backoff';
export type { ExponentialBackoffOptions } from './exponential-backoff';
export type { Scheduler, ScheduledTask } from './scheduler';
export { TimeScheduler } from './time-scheduler';
export { CohortError, ErrorCode } from '../errors';
export { ClusterTransport } from './cluster-transport';
export type { ClusterTransportOptions, NodeTransport } from './cluster-transport';
export type { CoordinatorNode } from './coordinator-cache';
export { PartitionLeaders } from './partition-leaders';
export type * from '../protocol/find-coordinator-messages';
