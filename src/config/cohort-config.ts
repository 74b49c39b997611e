/** pino's levels, most to least severe; `silent` logs nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The validated, frozen configuration of one cohort server. The five group settings carry the field names
 * of the group layer's `GroupConfig`, so this object satisfies it structurally without importing it.
 */
export interface CohortConfig {
  /** HOST:PORT the gRPC server binds; port 0 picks a free port. */
  readonly listen: string;
  /** Where durable state lives: one directory per partition, and the topic registry. */
  readonly dataDir: string;
  /** Time moves only through the TestClock service. */
  readonly manualClock: boolean;
  readonly logLevel: LogLevel;
  readonly groupMinSessionTimeoutMs: number;
  readonly groupMaxSessionTimeoutMs: number;
  readonly groupInitialRebalanceDelayMs: number;
  readonly groupMaxSize: number;
  readonly offsetMetadataMaxBytes: number;
  /** This process's node id: a partition's leader id, a follower's replica id in its Fetch requests. */
  readonly nodeId: number;
  /** HOST:PORT of the leader this process follows; '' = this process is a leader. */
  readonly replicaOf: string;
  /** Node ids of the leader's followers, in the order partitions take them as replicas. */
  readonly followers: readonly number[];
  readonly minInsyncReplicas: number;
  readonly replicaLagTimeMaxMs: number;
  /** -1 = never by time. */
  readonly logFlushIntervalMs: number;
  readonly logFlushMessages: number;
  readonly logRetentionMs: number;
  readonly logRetentionBytes: number;
  readonly logSegmentBytes: number;
}

export type ConfigKey = keyof CohortConfig;
