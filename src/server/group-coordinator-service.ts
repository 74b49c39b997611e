import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { GroupCoordinatorService, OffsetCommitRequest } from '../group/group-protocol';
import { type HeartbeatStreams, heartbeatStreamHandler } from './heartbeat-stream';
import type { FindCoordinatorRequest, FindCoordinatorResponse } from './find-coordinator';
import { decodeInt64 } from './int64';
import { type CallObservers, unaryHandler, type UnaryMethod } from './unary-handler';
import { type GroupWatches, watchGroupsHandler } from './watch-groups';

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
 * converting; responses are encoded as they are. HeartbeatStream is served when the server hands over the
 * registry that ends its streams on close (create-server.ts); without it the method is UNIMPLEMENTED. So is
 * WatchGroups, served when the server hands over its GroupWatches and the coordinator can be watched, and
 * FindCoordinator, served from the node's view of the cluster (find-coordinator.ts).
 */
export function groupCoordinatorService(
  coordinator: GroupCoordinatorService,
  logger: Logger,
  observers?: CallObservers,
  heartbeatStreams?: HeartbeatStreams,
  groupWatches?: GroupWatches,
  findCoordinator?: (request: FindCoordinatorRequest) => Promise<FindCoordinatorResponse>,
): UntypedServiceImplementation {
  const service = 'cohort.v1.GroupCoordinator';
  const handler = <Req, Res>(method: string, handle: UnaryMethod<Req, Res>) =>
    unaryHandler(`/${service}/${method}`, logger, handle, observers?.(service, method));
  return {
    JoinGroup: handler('JoinGroup', coordinator.joinGroup.bind(coordinator)),
    SyncGroup: handler('SyncGroup', coordinator.syncGroup.bind(coordinator)),
    Heartbeat: handler('Heartbeat', coordinator.heartbeat.bind(coordinator)),
    LeaveGroup: handler('LeaveGroup', coordinator.leaveGroup.bind(coordinator)),
    OffsetCommit: handler('OffsetCommit', async (rq: OffsetCommitWire, ctx) =>
      coordinator.offsetCommit(decodeOffsetCommit(rq), ctx),
    ),
    OffsetFetch: handler('OffsetFetch', coordinator.offsetFetch.bind(coordinator)),
    DescribeGroups: handler('DescribeGroups', coordinator.describeGroups.bind(coordinator)),
    ListGroups: handler('ListGroups', coordinator.listGroups.bind(coordinator)),
    DeleteGroups: handler('DeleteGroups', coordinator.deleteGroups.bind(coordinator)),
    ...(findCoordinator === undefined
      ? {}
      : { FindCoordinator: handler('FindCoordinator', findCoordinator) }),
    ...(heartbeatStreams === undefined
      ? {}
      : {
          HeartbeatStream: heartbeatStreamHandler(
            `/${service}/HeartbeatStream`,
            coordinator,
            heartbeatStreams,
            logger,
            observers?.(service, 'HeartbeatStream'),
          ),
        }),
    ...(groupWatches === undefined || coordinator.watchGroups === undefined
      ? {}
      : {
          WatchGroups: watchGroupsHandler(
            `/${service}/WatchGroups`,
            coordinator.watchGroups.bind(coordinator),
            groupWatches,
            logger,
          ),
        }),
  };
}
