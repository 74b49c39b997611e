/**
 * cohort's public entry point: `import { CohortClient, startServer } from 'cohort'`.
 *
 * - The SDK: `CohortClient` makes `Consumer`s (a group member plus a long-poll Fetch loop, committing
 *   processed offsets fenced by generation), `Producer`s (batching, per-record promises) and a
 *   `CohortAdmin` (topics, offsets, groups and their lag). Bare `GroupMember`s run join → sync →
 *   heartbeat, emit `assigned` / `revoked` / `lost`, commit offsets, and leave on `close()`.
 * - The assignors (`range`, `roundrobin`, `cooperative-sticky`) and the consumer-protocol encoding, for
 *   writing your own assignor.
 * - Errors: every failure the SDK reports is a `CohortError` whose `code` is an `ErrorCode` (Kafka's numbers).
 * - `startServer`: a cohort server inside your own test suite, optionally on a manual clock.
 *
 * This list is curated: what is not exported here is internal and may change, and package.json's `exports`
 * lets no other module of the package be imported. docs/sdk.md has examples (`examples/`).
 */

// The client and its members.
export { CohortClient } from './client/cohort-client';
export type { ClientTransport, CohortClientOptions, JoinOptions } from './client/cohort-client';

// Consumers.
export { Consumer } from './client/consumer';
export type { ConsumerDependencies } from './client/consumer';
export { CONSUMER_DEFAULTS } from './client/consumer-options';
export type { AutoOffsetReset, ConsumerOptions, ResolvedConsumerSettings } from './client/consumer-options';
export type {
  ConsumerBatch,
  ConsumerRecord,
  EachBatchPayload,
  EachMessagePayload,
  RunHandlers,
} from './client/consumer-handlers';
export type { CommittedEvent, ConsumerEvents } from './client/consumer-events';

// Producers.
export { Producer } from './client/producer';
export type { ProducerDependencies, ProducerRecord, RecordMetadata } from './client/producer';
export { PRODUCER_DEFAULTS } from './client/producer-options';
export type { Acks, ProducerOptions, ResolvedProducerOptions } from './client/producer-options';
export { createDefaultPartitioner } from './client/partitioner';
export type { Partitioner } from './client/partitioner';

// Administration: topics, offsets, groups and their lag.
export { COHORT_ADMIN_DEFAULTS, CohortAdmin } from './client/cohort-admin';
export type {
  BrokerDescription,
  ClusterDescription,
  ClusterLayout,
  CohortAdminDependencies,
  CohortAdminOptions,
  ConsumerGroupDescription,
  GroupCommittedOffset,
  GroupDeletion,
  GroupDescription,
  GroupListing,
  GroupMemberDescription,
  ListedOffset,
  NewTopic,
  OffsetSpec,
  OffsetsPartitionDescription,
  PartitionDescription,
  PartitionLag,
  TopicCreation,
  TopicDescription,
} from './client/cohort-admin';
// The node coordinating a group (`CohortClient.findCoordinator`).
export type { CoordinatorNode } from './client/coordinator-cache';
// Watching groups: a snapshot, then one event per change.
export type { GroupWatch, GroupWatchEvent, WatchGroupsOptions } from './client/group-watch';
export { GROUP_EVENT_REASONS } from './protocol/group-event-reason';
export type { GroupEventReason } from './protocol/group-event-reason';
export { GroupMember } from './client/group-member';
export type {
  CommittedOffset,
  GroupMemberDependencies,
  GroupMemberState,
  OffsetToCommit,
} from './client/group-member';
export { GROUP_MEMBER_DEFAULTS } from './client/group-member-options';
export type {
  GroupMemberOptions,
  PartitionCounts,
  ResolvedGroupMemberOptions,
} from './client/group-member-options';
export type {
  AssignedEvent,
  GroupMemberEvents,
  LostEvent,
  LostReason,
  RevokedEvent,
  RevokeReason,
} from './client/group-member-events';
export { compareTopicPartitions, topicPartitionKey } from './client/topic-partition';
export type { TopicPartition } from './client/topic-partition';

// Assignors: plain functions, replaceable by your own.
export {
  COOPERATIVE_STICKY_ASSIGNOR,
  cooperativeStickyAssign,
  RANGE_ASSIGNOR,
  rangeAssign,
  ROUND_ROBIN_ASSIGNOR,
  roundRobinAssign,
} from './client/assignors';
export type {
  Assignor,
  AssignorMember,
  PartitionAssignor,
  RebalanceProtocol,
  Subscription,
} from './client/assignors';

// The consumer protocol: what JoinGroup metadata and SyncGroup assignments hold.
export {
  CONSUMER_PROTOCOL_TYPE,
  CONSUMER_PROTOCOL_VERSION,
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
} from './client/consumer-protocol';
export type { ConsumerAssignment, DecodedAssignment, DecodedSubscription } from './client/consumer-protocol';
export { ConsumerProtocolError } from './client/consumer-protocol-error';

// Transports: gRPC by default; implement them to drive the SDK another way (tests).
export { GrpcTransport } from './client/grpc-transport';
export type { GrpcTransportOptions, TlsOptions } from './client/grpc-transport';
export type { CallOptions, GroupTransport, HeartbeatStream } from './client/group-transport';
export type { GroupAdminTransport } from './client/group-admin-transport';
export type { GroupWatchCall, GroupWatchTransport } from './client/group-watch';
export type { BrokerTransport } from './client/broker-transport';
export type * from './protocol/group-messages';
export type * from './client/broker-messages';

// Errors.
export { CohortError, ErrorCode } from './errors';
export { ServerUnreachableError } from './client/server-unreachable-error';
export type { UnreachableReason } from './client/server-unreachable-error';

// Clocks: a ManualTime lets unit tests drive a GroupMember's heartbeats and deadlines by hand.
export { ManualTime } from './time';
export type { Time } from './time';

// An embedded server for users' integration tests.
export { startServer } from './server/start-server';
export type { EmbeddedServer, ManualClockServer, StartServerOptions } from './server/start-server';
