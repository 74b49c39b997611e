import type { LogConfig } from './storage';

/**
 * What the log layer needs of cohort's configuration. The server builds it from the validated
 * CohortConfig (this layer may not import src/config).
 */
export interface BrokerConfig {
  /** This process: the leader id of its partitions, or the replica id it fetches with as a follower. */
  readonly nodeId: number;
  readonly minInsyncReplicas: number;
  readonly replicaLagTimeMaxMs: number;
  /** Partitions live in `<dataDir>/<topic>-<partition>/`, the topic registry in `<dataDir>/topics/`. */
  readonly dataDir: string;
  /** Settings every partition's log is opened with (segment size, retention, flush policy). */
  readonly logConfig: Partial<LogConfig>;
  /**
   * The process's open-file limit, which CreateTopics checks its partitions against before it touches the
   * disk (POLICY_VIOLATION past it). Undefined: read it from the system (/proc/self/limits), else
   * FALLBACK_OPEN_FILE_LIMIT.
   */
  readonly maxOpenFiles?: number;
  /**
   * Replication (Fetch with `replica_id` >= 0, OffsetForLeaderEpoch from a follower) is served only when
   * the caller authenticated as the node it names (BrokerRequestContext.authenticatedNodeId); others get
   * CLUSTER_AUTHORIZATION_FAILED. Undefined: required in cluster mode (ReplicaManager given an
   * IsrChangeProposer), not on a single node.
   */
  readonly requireAuthenticatedReplicas?: boolean;
}

/** Kafka's `num.partitions` and `default.replication.factor`: what CreateTopics' -1 asks for. */
export const DEFAULT_NUM_PARTITIONS = 1;
export const DEFAULT_REPLICATION_FACTOR = 1;
/**
 * More partitions than this in one topic are refused (INVALID_PARTITIONS): each partition holds open
 * files, and a request for two billion of them must get an error, not exhaust the process.
 */
export const MAX_PARTITIONS_PER_TOPIC = 10_000;
/**
 * Partitions CreateTopics creates in one event-loop turn before it yields, at most: a directory and two
 * files each, no fsync (the data directory is fsynced once, off the loop, at the end). A slice also ends
 * once it has taken CREATE_SLICE_MAX_MS, for a disk that is slow to create files. A 10,000-partition create
 * then leaves heartbeats and every other call a turn every few ms instead of holding the loop for seconds
 * (`npm run bench:group -- --only=create-topics`; docs/performance.md).
 */
export const CREATE_PARTITIONS_PER_TURN = 32;
export const CREATE_SLICE_MAX_MS = 10;
/** Kafka's log.retention.check.interval.ms. */
export const DEFAULT_RETENTION_CHECK_INTERVAL_MS = 300_000;
