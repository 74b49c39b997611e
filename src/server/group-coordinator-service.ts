import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { GroupCoordinatorService, OffsetCommitRequest } from '../group/group-protocol';
import { decodeInt64 } from './int64';
import { unaryHandler } from './unary-handler';

/** OffsetCommitRequest as decoded: int64 arrives as a decimal string (see load-protos.ts). */
type OffsetCommitWire = Omit<OffsetCommitRequest, 'topics'> & {
  topics: {
    name: string;
    partitions: (Omit<OffsetCommitRequest['topics'][number]['partitions'][number], 'committedOffset'> & {
      committedOffset: string;
    })[];
  }[];
};

function decodeOffsetCommit(wire: OffsetCommitWire): OffsetCommitRequest {
  return {
    ...wire,
    topics: wire.topics.map((topic, t) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition, p) => ({
        ...partition,
        committedOffset: decodeInt64(
          partition.committedOffset,
          `topics[${t}].partitions[${p}].committed_offset`,
        ),
      })),
    })),
  };
}

/**
 * cohort.v1.GroupCoordinator over grpc-js: decode → coordinator → encode. Decoded messages already have
 * the domain's shapes (group-protocol.ts mirrors the proto), so only OffsetCommit's int64 offsets need
 * converting; responses are encoded as they are.
 */
export function groupCoordinatorService(
  coordinator: GroupCoordinatorService,
  logger: Logger,
): UntypedServiceImplementation {
  const path = (method: string): string => `/cohort.v1.GroupCoordinator/${method}`;
  return {
    JoinGroup: unaryHandler(path('JoinGroup'), logger, coordinator.joinGroup.bind(coordinator)),
    SyncGroup: unaryHandler(path('SyncGroup'), logger, coordinator.syncGroup.bind(coordinator)),
    Heartbeat: unaryHandler(path('Heartbeat'), logger, coordinator.heartbeat.bind(coordinator)),
    LeaveGroup: unaryHandler(path('LeaveGroup'), logger, coordinator.leaveGroup.bind(coordinator)),
    OffsetCommit: unaryHandler(path('OffsetCommit'), logger, async (rq: OffsetCommitWire, ctx) =>
      coordinator.offsetCommit(decodeOffsetCommit(rq), ctx),
    ),
    OffsetFetch: unaryHandler(path('OffsetFetch'), logger, coordinator.offsetFetch.bind(coordinator)),
    DescribeGroups: unaryHandler(
      path('DescribeGroups'),
      logger,
      coordinator.describeGroups.bind(coordinator),
    ),
    ListGroups: unaryHandler(path('ListGroups'), logger, coordinator.listGroups.bind(coordinator)),
    DeleteGroups: unaryHandler(path('DeleteGroups'), logger, coordinator.deleteGroups.bind(coordinator)),
  };
}
