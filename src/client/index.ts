/**
 * cohort's TypeScript SDK. Start with `CohortClient`; everything else here is what its members speak.
 * Consumers and producers (Fetch/Produce) are not part of the SDK yet: they come with the log service.
 */
export { CohortClient } from './cohort-client';
export type { CohortClientOptions, JoinOptions } from './cohort-client';
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
export type { CallOptions, GroupTransport } from './group-transport';
export type * from './coordinator-messages';
export { GrpcTransport } from './grpc-transport';
export type { GrpcTransportOptions, TlsOptions } from './grpc-transport';
export { codeForStatus } from './error-from-status';
export { ExponentialBackoff } from './exponential-backoff';
export type { ExponentialBackoffOptions } from './exponential-backoff';
export type { Scheduler, ScheduledTask } from './scheduler';
export { TimeScheduler } from './time-scheduler';
export { CohortError, ErrorCode } from '../errors';
