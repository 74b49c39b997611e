import type { CohortConfig } from '../config';
import { ADMIN_LISTEN_OFF } from '../config';
import type { GroupConfig } from '../group/group-config';
import type { BrokerConfig } from '../log';
import { DEFAULT_FLUSH_INTERVAL_MS } from '../log/storage';

/**
 * The parts of a server's configuration each layer is built with: the group coordinator's, the log's and
 * the admin listener's address, read once from the validated CohortConfig and frozen.
 */

/** The group coordinator's settings. */
export function groupConfigOf(config: CohortConfig): GroupConfig {
  return Object.freeze({
    groupMinSessionTimeoutMs: config.groupMinSessionTimeoutMs,
    groupMaxSessionTimeoutMs: config.groupMaxSessionTimeoutMs,
    groupInitialRebalanceDelayMs: config.groupInitialRebalanceDelayMs,
    groupMaxSize: config.groupMaxSize,
    offsetMetadataMaxBytes: config.offsetMetadataMaxBytes,
    maxGroups: config.maxGroups,
    memberMetadataMaxBytes: config.memberMetadataMaxBytes,
    groupMaxMetadataBytes: config.groupMaxMetadataBytes,
    groupMaxCommittedPartitions: config.groupMaxCommittedPartitions,
    offsetsRetentionMinutes: config.offsetsRetentionMinutes,
    offsetsRetentionCheckIntervalMs: config.offsetsRetentionCheckIntervalMs,
  });
}

export function brokerConfigOf(config: CohortConfig): BrokerConfig {
  return Object.freeze({
    nodeId: config.nodeId,
    minInsyncReplicas: config.minInsyncReplicas,
    replicaLagTimeMaxMs: config.replicaLagTimeMaxMs,
    // Replication counts only from the node it names, in every mode: a client's Fetch with a follower's
    // replica_id would otherwise acknowledge acks=-1 writes and keep a dead follower in the ISR. Cluster
    // mode, the only one with followers, has a cluster secret (validation), so nodes can prove who they are.
    requireAuthenticatedReplicas: true,
    dataDir: config.dataDir,
    logConfig: Object.freeze({
      segmentBytes: config.logSegmentBytes,
      retentionMs: config.logRetentionMs,
      retentionBytes: config.logRetentionBytes,
      flushMessages: config.logFlushMessages,
      flushIntervalMs:
        config.logFlushIntervalMs === -1 ? DEFAULT_FLUSH_INTERVAL_MS : config.logFlushIntervalMs,
    }),
    // 0: the log layer reads the process's own limit.
    ...(config.maxOpenFiles > 0 ? { maxOpenFiles: config.maxOpenFiles } : {}),
  });
}

/** Whether the admin listener is wanted, and where. */
export function adminListenOf(config: CohortConfig): string | undefined {
  return config.adminListen === '' || config.adminListen === ADMIN_LISTEN_OFF
    ? undefined
    : config.adminListen;
}
