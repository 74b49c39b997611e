/** pino's levels, most to least severe; `silent` logs nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The validated, frozen configuration of one cohort server. The group settings (`group*`, `maxGroups`,
 * `offsetMetadataMaxBytes`, `memberMetadataMaxBytes`, `groupMax*`, `offsetsRetention*`) carry the field names of the group layer's
 * `GroupConfig`, so this object satisfies it structurally without importing it.
 */
/** `--manual-clock`'s values: off, a frozen clock (true), or a clock that runs on wall time and jumps. */
export type ManualClockMode = boolean | 'running';

/** The value of `--manual-clock=running`. */
export const MANUAL_CLOCK_RUNNING = 'running';

export interface CohortConfig {
  /** HOST:PORT the gRPC server binds (port 0 picks a free port), or `unix:PATH` for a Unix socket. */
  readonly listen: string;
  /** HOST:PORT of the admin HTTP listener (/healthz, /readyz, /metrics); `off` or '' = none. */
  readonly adminListen: string;
  /** HOST:PORT of the Kafka wire-protocol listener (port 0 picks a free port); `off` or '' = none. */
  readonly kafkaListen: string;
  /** HOST:PORT Kafka clients are told to connect to (Metadata, FindCoordinator); '' = the bound listen address. */
  readonly kafkaAdvertisedAddress: string;
  /** A Kafka Metadata request naming an unknown topic creates it with the default settings. */
  readonly kafkaAutoCreateTopics: boolean;
  /** The largest Kafka request frame read; a larger one ends its connection (socket.request.max.bytes). */
  readonly kafkaMaxRequestBytes: number;
  /** A Kafka connection idle this long (nothing read or written, nothing parked) is ended. */
  readonly kafkaConnectionsMaxIdleMs: number;
  /** Where durable state lives: one directory per partition, and the topic registry. */
  readonly dataDir: string;
  /**
   * A clock tests move through the TestClock service: `true`, it stands still between advances; `'running'`,
   * it follows wall time and advances jump it ahead; `false`, the real clock and no TestClock. Truthy
   * exactly when there is a TestClock.
   */
  readonly manualClock: ManualClockMode;
  readonly logLevel: LogLevel;
  /** How long a stop lets calls in flight finish before it cuts their connections. */
  readonly shutdownTimeoutMs: number;
  /** A file holding the bearer token every call must carry; '' = none. */
  readonly tokenFile: string;
  /** The bearer token itself (COHORT_TOKEN only: never a flag); '' = none. */
  readonly token: string;
  /**
   * A file holding the cluster secret: nodes prove to each other who they are with it (replication),
   * distinct from client tokens; '' = none.
   */
  readonly clusterSecretFile: string;
  /** The cluster secret itself (COHORT_CLUSTER_SECRET only: never a flag); '' = none. */
  readonly clusterSecret: string;
  /** PEM certificate chain and private key: serve TLS. '' = plaintext. */
  readonly tlsCert: string;
  readonly tlsKey: string;
  /** PEM CA bundle: require and verify a client certificate (mutual TLS). '' = no client certificates. */
  readonly tlsClientCa: string;
  /** Accept a non-loopback `listen` without TLS and without a token. */
  readonly insecure: boolean;
  /** The largest gRPC request message the server decodes; larger ones get RESOURCE_EXHAUSTED. */
  readonly maxMessageBytes: number;
  /** Calls read per event-loop turn before connections pause reading until the next turn; 0 = no cap. */
  readonly maxCallsPerLoopTurn: number;
  /** Streaming calls (health Watch, reflection) open at once on one connection; more get RESOURCE_EXHAUSTED. */
  readonly maxStreamingCallsPerConnection: number;
  /** Streaming calls open at once on the whole server; more get RESOURCE_EXHAUSTED. */
  readonly maxStreamingCalls: number;
  /** Groups a WatchGroups call may have events waiting for (one each) before it ends with RESOURCE_EXHAUSTED. */
  readonly watchMaxPendingGroups: number;
  /** How long events may wait for a WatchGroups call's reader before it ends with RESOURCE_EXHAUSTED. */
  readonly watchMaxLagMs: number;
  /**
   * Caps V8's heap growing factor for the server process, in percent (0 = V8's own heuristic); see
   * src/heap-growth.ts. Process-wide, so the server program (src/main.ts) applies it; `createServer`, which
   * may run inside someone else's process, leaves V8 alone.
   */
  readonly heapGrowingPercent: number;
  /** The most groups this server holds; a request that would create one more is refused. */
  readonly maxGroups: number;
  readonly groupMinSessionTimeoutMs: number;
  readonly groupMaxSessionTimeoutMs: number;
  readonly groupInitialRebalanceDelayMs: number;
  readonly groupMaxSize: number;
  readonly offsetMetadataMaxBytes: number;
  /** The most protocol metadata bytes (all protocols together) one JoinGroup may carry. */
  readonly memberMetadataMaxBytes: number;
  /** The most protocol metadata bytes all members of one group may hold together. */
  readonly groupMaxMetadataBytes: number;
  /** The most partitions one group may hold committed offsets for. */
  readonly groupMaxCommittedPartitions: number;
  /** How long an Empty group's offsets, and offsets committed outside membership, are kept (KIP-211). */
  readonly offsetsRetentionMinutes: number;
  /** How often expired offsets and Empty groups without offsets are removed. */
  readonly offsetsRetentionCheckIntervalMs: number;
  /** etcd client URLs (`http://host:port`); none = one node on its own, without a cluster. */
  readonly etcdEndpoints: readonly string[];
  /** PEM CA bundle that signed etcd's server certificate (https:// endpoints); '' = Node's built-in CAs. */
  readonly etcdTlsCa: string;
  /** PEM client certificate chain and key presented to etcd (its --client-cert-auth); '' = none. */
  readonly etcdTlsCert: string;
  readonly etcdTlsKey: string;
  /** etcd's user cohort authenticates as; '' = etcd without authentication. */
  readonly etcdUsername: string;
  /** A file holding that user's password; '' = none. */
  readonly etcdPasswordFile: string;
  /** The password itself (COHORT_ETCD_PASSWORD only: never a flag); '' = none. */
  readonly etcdPassword: string;
  /** The cluster's name: its keys live under `/<clusterId>/` in etcd. */
  readonly clusterId: string;
  /** This process's node id: a partition's leader id, a follower's replica id in its Fetch requests. */
  readonly nodeId: number;
  /** HOST:PORT peers and clients reach this node at, in cluster mode; '' = the listen address. */
  readonly advertisedAddress: string;
  /** The node's lease TTL in etcd: a node that cannot renew for this long stops leading on its own. */
  readonly nodeSessionTimeoutMs: number;
  /** Elect a live replica outside the ISR when no in-sync one is alive (losing what it lacks). */
  readonly uncleanLeaderElection: boolean;
  /** Partitions of `__consumer_offsets` when it is first created (a data directory or cluster keeps its own). */
  readonly offsetsTopicNumPartitions: number;
  /** Replicas per `__consumer_offsets` partition in a cluster; the topic waits until that many nodes are live. */
  readonly offsetsTopicReplicationFactor: number;
  readonly minInsyncReplicas: number;
  readonly replicaLagTimeMaxMs: number;
  /** -1 = never by time. */
  readonly logFlushIntervalMs: number;
  readonly logFlushMessages: number;
  readonly logRetentionMs: number;
  readonly logRetentionBytes: number;
  readonly logSegmentBytes: number;
  /** Start even if a log holds damaged data below its recovery point, cutting that data. */
  readonly truncateCorruptLogs: boolean;
  /** The open-file limit CreateTopics budgets partitions against; 0 = the process's own (read at start). */
  readonly maxOpenFiles: number;
}

export type ConfigKey = keyof CohortConfig;
