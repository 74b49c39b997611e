import type { Logger } from 'pino';
import type { CohortConfig } from '../config';
import type { GroupCoordinatorService } from '../group/group-protocol';
import { ErrorCode } from '../errors';
import { ClusterBoard } from '../live/cluster-board';
import { GroupBoard } from '../live/group-board';
import type { ReplicaManager } from '../log';
import type { Time } from '../time';
import { SYSTEM_TIME } from '../time';
import { AdminServer } from './admin-server';
import { ClusterGroupFeed } from './cluster-group-feed';
import type { ClusterWiring } from './cluster-wiring';
import { GROUP_METADATA_TOPIC } from './find-coordinator';
import type { ServerMetrics } from './metrics/server-metrics';
import type { ConsumerLagSources } from './metrics/consumer-lag-metrics';
import type { ServerSecurity } from './server-security';
import type { GroupWatches } from './watch-groups';

export interface AdminPartsOptions {
  readonly config: CohortConfig;
  readonly time: Time;
  readonly logger: Logger;
  readonly security: ServerSecurity;
  readonly metrics: ServerMetrics;
  /** Cluster mode's wiring; undefined on a single node. */
  readonly cluster: ClusterWiring | undefined;
  readonly coordinator: GroupCoordinatorService;
  readonly replicaManager: ReplicaManager;
  /** The committed offsets of the groups this node coordinates; undefined with a coordinator of its own. */
  readonly offsets: ConsumerLagSources['offsets'] | undefined;
  readonly groupWatches: GroupWatches;
  /** Why the server is not ready, as /readyz says it (undefined: ready). */
  readonly readinessProblem: () => string | undefined;
}

/** The admin listener and the live page's models it serves; each undefined when not wanted. */
export interface AdminParts {
  readonly admin: AdminServer | undefined;
  /** The live page's groups (undefined without an admin listener or with a coordinator that cannot be watched). */
  readonly board: GroupBoard | undefined;
  /** Cluster mode: the groups the other nodes coordinate, for the board. */
  readonly groupFeed: ClusterGroupFeed | undefined;
  /** The live page's Cluster panel. */
  readonly clusterBoard: ClusterBoard | undefined;
}

/**
 * Builds the admin listener (`adminListen`; undefined: none) with what it serves: /readyz, /metrics,
 * metadata recovery in cluster mode, and the live page with its models. Nothing listens until the server
 * starts the admin listener; the models watch nothing until a page opens.
 */
export function adminPartsOf(adminListen: string | undefined, options: AdminPartsOptions): AdminParts {
  const {
    config,
    time,
    logger,
    security,
    metrics,
    cluster,
    coordinator,
    replicaManager,
    offsets,
    groupWatches,
    readinessProblem,
  } = options;
  // The live page's model of the groups: it subscribes to the coordinator's changes once the first page
  // opens (nothing is watched before), and reads lag as the CLI does, from committed offsets and HWs.
  // Cluster mode: the groups the other nodes coordinate, watched on each of them, so that this node's page
  // shows every group of the cluster (each node's coordinator tells only of its own).
  const groupFeed =
    adminListen === undefined || cluster === undefined
      ? undefined
      : new ClusterGroupFeed({
          localNodeId: config.nodeId,
          liveNodes: () => cluster.liveNodes,
          credentials: security.leaderCredentials,
          ...(security.token === undefined ? {} : { token: security.token }),
          time: SYSTEM_TIME,
          onWatchEnded: (nodeId, error) =>
            logger.debug({ node: nodeId, reason: error?.message }, "the live page's watch of a node ended"),
        });
  const board =
    adminListen === undefined || coordinator.watchGroups === undefined
      ? undefined
      : new GroupBoard({
          localNodeId: config.nodeId,
          ...(groupFeed === undefined ? {} : { remoteGroups: (listener) => groupFeed.subscribe(listener) }),
          watchGroups: coordinator.watchGroups.bind(coordinator),
          lastHeartbeats: coordinator.lastHeartbeats?.bind(coordinator),
          lag:
            offsets === undefined
              ? undefined
              : {
                  offsets,
                  highWatermark: (key) => replicaManager.getPartition(key)?.highWatermark,
                },
          time,
        });
  // The page's Cluster panel: this node's own view (its Metadata, its cluster view's controller), read
  // after each change while a page is open; never etcd.
  const clusterBoard =
    board === undefined
      ? undefined
      : new ClusterBoard({
          localNodeId: config.nodeId,
          // Every topic (Metadata leaves the internal ones out unless named) and `__consumer_offsets`, named:
          // its partitions' leaders are the groups' coordinators, and a failover shows there first.
          metadata: async () => {
            const all = await replicaManager.metadata({ topics: [] });
            const offsets = await replicaManager.metadata({ topics: [GROUP_METADATA_TOPIC] });
            const hosted = offsets.topics.filter((t) => t.errorCode === ErrorCode.NONE);
            return { ...all, topics: [...all.topics, ...hosted] };
          },
          ...(cluster === undefined ? {} : { controllerId: () => cluster.controllerId }),
          time,
          onError: (error) => logger.warn({ err: error }, 'the live page could not read the cluster view'),
        });
  const admin =
    adminListen === undefined
      ? undefined
      : new AdminServer({
          listen: adminListen,
          readiness: readinessProblem,
          scrape: () => metrics.scrape(),
          contentType: metrics.contentType,
          logger,
          ...(security.tokenCheck === undefined ? {} : { tokenCheck: security.tokenCheck }),
          ...(cluster === undefined ? {} : { recoverMetadata: (nodes) => cluster.recoverMetadata(nodes) }),
          ...(board === undefined
            ? {}
            : {
                page: {
                  board,
                  ...(clusterBoard === undefined ? {} : { cluster: clusterBoard }),
                  limits: groupWatches.limits,
                  time,
                  // Paced on the machine's clock even on --manual-clock: the page stays live without the
                  // clock being moved (what it shows still carries the server's clock).
                  flushTime: SYSTEM_TIME,
                },
              }),
        });
  return { admin, board, groupFeed, clusterBoard };
}
