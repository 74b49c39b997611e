import type { CohortConfig, ConfigKey } from './cohort-config';
import { LOG_LEVELS } from './cohort-config';
import {
  ADMIN_LISTEN_OFF,
  DEFAULT_ADMIN_LISTEN,
  DEFAULT_KAFKA_ADVERTISED_ADDRESS,
  DEFAULT_KAFKA_AUTO_CREATE_TOPICS,
  DEFAULT_KAFKA_MAX_REQUEST_BYTES,
  DEFAULT_KAFKA_CONNECTIONS_MAX_IDLE_MS,
  DEFAULT_KAFKA_LISTEN,
  KAFKA_LISTEN_OFF,
  DEFAULT_DATA_DIR,
  DEFAULT_INSECURE,
  DEFAULT_MAX_GROUPS,
  DEFAULT_MAX_CALLS_PER_LOOP_TURN,
  DEFAULT_MAX_STREAMING_CALLS,
  DEFAULT_MAX_STREAMING_CALLS_PER_CONNECTION,
  DEFAULT_WATCH_MAX_LAG_MS,
  DEFAULT_WATCH_MAX_PENDING_GROUPS,
  DEFAULT_HEAP_GROWING_PERCENT,
  MAX_HEAP_GROWING_PERCENT,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_MEMBER_METADATA_MAX_BYTES,
  DEFAULT_GROUP_MAX_METADATA_BYTES,
  DEFAULT_GROUP_MAX_COMMITTED_PARTITIONS,
  DEFAULT_MAX_OPEN_FILES,
  MAX_GROUP_MAX_METADATA_BYTES,
  DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS,
  DEFAULT_OFFSETS_RETENTION_MINUTES,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  DEFAULT_TLS_CERT,
  DEFAULT_TLS_CLIENT_CA,
  DEFAULT_TLS_KEY,
  DEFAULT_TOKEN,
  DEFAULT_TOKEN_FILE,
  DEFAULT_CLUSTER_SECRET,
  DEFAULT_CLUSTER_SECRET_FILE,
  MIN_MAX_MESSAGE_BYTES,
  MIN_TOKEN_LENGTH,
  DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS,
  DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS,
  DEFAULT_GROUP_MAX_SIZE,
  DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS,
  DEFAULT_LISTEN,
  DEFAULT_LOG_LEVEL,
  DEFAULT_MANUAL_CLOCK,
  DEFAULT_OFFSET_METADATA_MAX_BYTES,
  DEFAULT_LOG_FLUSH_INTERVAL_MS,
  DEFAULT_LOG_FLUSH_MESSAGES,
  DEFAULT_LOG_RETENTION_BYTES,
  DEFAULT_LOG_RETENTION_MS,
  DEFAULT_LOG_SEGMENT_BYTES,
  DEFAULT_TRUNCATE_CORRUPT_LOGS,
  DEFAULT_MIN_INSYNC_REPLICAS,
  DEFAULT_NODE_ID,
  DEFAULT_ETCD_ENDPOINTS,
  DEFAULT_ETCD_TLS_CA,
  DEFAULT_ETCD_TLS_CERT,
  DEFAULT_ETCD_TLS_KEY,
  DEFAULT_ETCD_USERNAME,
  DEFAULT_ETCD_PASSWORD_FILE,
  DEFAULT_ETCD_PASSWORD,
  DEFAULT_CLUSTER_ID,
  DEFAULT_ADVERTISED_ADDRESS,
  DEFAULT_NODE_SESSION_TIMEOUT_MS,
  MIN_NODE_SESSION_TIMEOUT_MS,
  DEFAULT_UNCLEAN_LEADER_ELECTION,
  DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS,
  DEFAULT_OFFSETS_TOPIC_REPLICATION_FACTOR,
  MAX_OFFSETS_TOPIC_NUM_PARTITIONS,
  DEFAULT_REPLICA_LAG_TIME_MAX_MS,
  INT32_MAX,
  MIN_LOG_SEGMENT_BYTES,
} from './defaults';

/**
 * How a setting's text (flag or env value) is read. `address` is HOST:PORT or `unix:PATH`; `adminAddress`
 * HOST:PORT or `off`; `file` a file to read at start-up, or '' for none; `secret` a token of cohort's own
 * that no message, help text or log ever shows; `password` another system's password (etcd's), hidden
 * the same way but held to that system's rules, not cohort's; `text` any text without control
 * characters, '' for none; `urls` comma-separated etcd client URLs, '' for none; `name` a cluster name
 * (letters, digits, `.`, `_`, `-`); `advertisedAddress` HOST:PORT others connect to, or ''; `clockMode` a
 * boolean that also takes `running` (`--manual-clock`).
 */
export type SettingKind =
  | 'address'
  | 'adminAddress'
  | 'urls'
  | 'name'
  | 'advertisedAddress'
  | 'path'
  | 'file'
  | 'secret'
  | 'password'
  | 'text'
  | 'boolean'
  | 'clockMode'
  | 'integer'
  | 'logLevel';

export interface SettingSpec<K extends ConfigKey = ConfigKey> {
  readonly key: K;
  /** `--kebab-case` of the key. */
  readonly flag: string;
  /** `COHORT_SNAKE_CASE` of the key. */
  readonly env: string;
  readonly kind: SettingKind;
  /** Placeholder for the value in `--help`, e.g. `HOST:PORT`, `MS`. */
  readonly valueName: string;
  readonly defaultValue: CohortConfig[K];
  /** Inclusive bounds, for integers. */
  readonly min?: number;
  readonly max?: number;
  /** The Kafka broker config of the same meaning, when there is one. */
  readonly kafkaName?: string;
  /**
   * Read from the environment only: `flag` is not accepted. For secrets, which a command line would show to
   * every user of the machine (`ps`).
   */
  readonly isEnvOnly?: boolean;
  readonly description: string;
}

/** `groupMaxSize` → `--group-max-size`. */
export function flagOf(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** `groupMaxSize` → `COHORT_GROUP_MAX_SIZE`. */
export function envOf(key: string): string {
  return `COHORT_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

function setting<K extends ConfigKey>(
  key: K,
  spec: Omit<SettingSpec<K>, 'key' | 'flag' | 'env'>,
): SettingSpec<K> {
  return Object.freeze({ key, flag: flagOf(key), env: envOf(key), ...spec });
}

/**
 * The one schema: every key, how it is read, its default and its bounds. A mapped type over
 * `CohortConfig` makes a key without a row a compile error. `--help`, `docs/configuration.md` (checked by a
 * test) and validation are all driven by it.
 */
export const CONFIG_SCHEMA: { readonly [K in ConfigKey]: SettingSpec<K> } = Object.freeze({
  listen: setting('listen', {
    kind: 'address',
    valueName: 'HOST:PORT',
    defaultValue: DEFAULT_LISTEN,
    description:
      'Address the gRPC server binds: HOST:PORT (port 0 picks a free port; the log line shows which) or ' +
      'unix:PATH for a Unix socket. A non-loopback address needs TLS or a token, or --insecure.',
  }),
  adminListen: setting('adminListen', {
    kind: 'adminAddress',
    valueName: 'HOST:PORT|off',
    defaultValue: DEFAULT_ADMIN_LISTEN,
    description:
      'Address of the admin HTTP listener: /healthz, /readyz, /metrics (Prometheus), the live page (/, ' +
      `/api/stream) and, in a cluster, POST /recover-metadata. ${ADMIN_LISTEN_OFF} (or empty) turns it off. ` +
      "With a token (--token or --token-file) everything but /healthz, /readyz and the page's static files " +
      'need it; without one, keep it on loopback or a private network.',
  }),
  kafkaListen: setting('kafkaListen', {
    kind: 'adminAddress',
    valueName: 'HOST:PORT|off',
    defaultValue: DEFAULT_KAFKA_LISTEN,
    kafkaName: 'listeners',
    description:
      'Address of the Kafka wire-protocol listener, for unmodified Kafka clients (KafkaJS, librdkafka, kcat). ' +
      `${KAFKA_LISTEN_OFF} (or empty) turns it off. It has no TLS and no authentication: a non-loopback ` +
      'address needs --insecure.',
  }),
  kafkaAdvertisedAddress: setting('kafkaAdvertisedAddress', {
    kind: 'advertisedAddress',
    valueName: 'HOST:PORT',
    defaultValue: DEFAULT_KAFKA_ADVERTISED_ADDRESS,
    kafkaName: 'advertised.listeners',
    description:
      'Where Kafka clients reach this node, as Metadata and FindCoordinator name it. Empty (the default): ' +
      'the Kafka listen address with its bound port, which must then name a host, not 0.0.0.0 or ::.',
  }),
  kafkaAutoCreateTopics: setting('kafkaAutoCreateTopics', {
    kind: 'boolean',
    valueName: 'BOOL',
    defaultValue: DEFAULT_KAFKA_AUTO_CREATE_TOPICS,
    kafkaName: 'auto.create.topics.enable',
    description:
      "A Kafka client's Metadata request naming a topic that does not exist creates it with the default " +
      'partition count and replication factor, as Kafka does by default (v4+ requests may opt out).',
  }),
  kafkaMaxRequestBytes: setting('kafkaMaxRequestBytes', {
    kind: 'integer',
    valueName: 'BYTES',
    defaultValue: DEFAULT_KAFKA_MAX_REQUEST_BYTES,
    min: MIN_MAX_MESSAGE_BYTES,
    max: INT32_MAX,
    kafkaName: 'socket.request.max.bytes',
    description:
      'Largest request a Kafka client may send; a larger one ends its connection. Each record batch in it ' +
      "is still held to the log's limit (MESSAGE_TOO_LARGE). The gRPC door has --max-message-bytes.",
  }),
  kafkaConnectionsMaxIdleMs: setting('kafkaConnectionsMaxIdleMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_KAFKA_CONNECTIONS_MAX_IDLE_MS,
    min: 1_000,
    max: INT32_MAX,
    kafkaName: 'connections.max.idle.ms',
    description:
      'A Kafka connection that neither reads nor writes for this long, with no request of its own parked, ' +
      'is closed: a client that stalls, even halfway through a request, holds nothing for ever.',
  }),
  dataDir: setting('dataDir', {
    kind: 'path',
    valueName: 'PATH',
    defaultValue: DEFAULT_DATA_DIR,
    description:
      'Directory for durable state: one directory of log segments per partition and the topic registry ' +
      '(topics/). Created when the first topic is; recovered at start-up.',
  }),
  manualClock: setting('manualClock', {
    kind: 'clockMode',
    valueName: 'true|false|running',
    defaultValue: DEFAULT_MANUAL_CLOCK,
    description:
      'Time moves only through the TestClock service (registered only in this mode), so tests drive ' +
      "rebalances and expiries without sleeping. `running`: the clock follows wall time (real clients' " +
      'long polls end) and TestClock.Advance jumps it ahead. Never use it in production. Only on a ' +
      'loopback or unix:PATH --listen address, unless --insecure.',
  }),
  logLevel: setting('logLevel', {
    kind: 'logLevel',
    valueName: 'LEVEL',
    defaultValue: DEFAULT_LOG_LEVEL,
    description: `Least severe level logged: ${LOG_LEVELS.join(', ')}.`,
  }),
  shutdownTimeoutMs: setting('shutdownTimeoutMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_SHUTDOWN_TIMEOUT_MS,
    min: 0,
    max: INT32_MAX,
    description:
      'On SIGTERM or SIGINT, how long calls still in flight may take to finish (parked calls are answered ' +
      'at once) before their connections are cut; storage is flushed after. A second signal exits at once.',
  }),
  tokenFile: setting('tokenFile', {
    kind: 'file',
    valueName: 'PATH',
    defaultValue: DEFAULT_TOKEN_FILE,
    description:
      'File holding the bearer token every call must carry (`authorization: Bearer TOKEN`), read at ' +
      'start-up; a trailing newline is ignored. Health and reflection need none.',
  }),
  token: setting('token', {
    kind: 'secret',
    valueName: 'TOKEN',
    defaultValue: DEFAULT_TOKEN,
    isEnvOnly: true,
    description:
      `The bearer token itself, at least ${MIN_TOKEN_LENGTH} printable characters without spaces. ` +
      'Environment only: a flag would show it to every user of the machine.',
  }),
  clusterSecretFile: setting('clusterSecretFile', {
    kind: 'file',
    valueName: 'PATH',
    defaultValue: DEFAULT_CLUSTER_SECRET_FILE,
    description:
      'File holding the cluster secret, read at start-up (a trailing newline is ignored): nodes prove who ' +
      'they are to each other with it, so that only a node replicates. Must differ from the bearer token. ' +
      'Needed by --etcd-endpoints.',
  }),
  clusterSecret: setting('clusterSecret', {
    kind: 'secret',
    valueName: 'SECRET',
    defaultValue: DEFAULT_CLUSTER_SECRET,
    isEnvOnly: true,
    description:
      `The cluster secret itself, at least ${MIN_TOKEN_LENGTH} printable characters without spaces. ` +
      'Environment only: a flag would show it to every user of the machine.',
  }),
  tlsCert: setting('tlsCert', {
    kind: 'file',
    valueName: 'PATH',
    defaultValue: DEFAULT_TLS_CERT,
    description: 'PEM certificate chain: serve TLS. Needs --tls-key.',
  }),
  tlsKey: setting('tlsKey', {
    kind: 'file',
    valueName: 'PATH',
    defaultValue: DEFAULT_TLS_KEY,
    description: 'PEM private key of --tls-cert.',
  }),
  tlsClientCa: setting('tlsClientCa', {
    kind: 'file',
    valueName: 'PATH',
    defaultValue: DEFAULT_TLS_CLIENT_CA,
    description:
      'PEM CA certificates: require every client to present a certificate they signed (mutual TLS). ' +
      'Needs --tls-cert and --tls-key.',
  }),
  insecure: setting('insecure', {
    kind: 'boolean',
    valueName: 'BOOL',
    defaultValue: DEFAULT_INSECURE,
    description:
      'Serve a non-loopback --listen address without TLS and without a token, or with --manual-clock. ' +
      'Without it cohort refuses to start that way.',
  }),
  maxMessageBytes: setting('maxMessageBytes', {
    kind: 'integer',
    valueName: 'BYTES',
    defaultValue: DEFAULT_MAX_MESSAGE_BYTES,
    min: MIN_MAX_MESSAGE_BYTES,
    max: INT32_MAX,
    description:
      'Largest gRPC request message decoded; a larger one ends with RESOURCE_EXHAUSTED. The Kafka door ' +
      'has --kafka-max-request-bytes.',
  }),
  maxCallsPerLoopTurn: setting('maxCallsPerLoopTurn', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_MAX_CALLS_PER_LOOP_TURN,
    min: 0,
    max: INT32_MAX,
    description:
      'Calls read in one event-loop turn before every connection pauses reading until the next turn, so a ' +
      'burst of calls cannot hold the loop (the rest waits in TCP and HTTP/2 flow control). 0 = no cap.',
  }),
  maxStreamingCallsPerConnection: setting('maxStreamingCallsPerConnection', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_MAX_STREAMING_CALLS_PER_CONNECTION,
    min: 1,
    max: INT32_MAX,
    description:
      'Streaming calls (health Watch, reflection: no token needed) one client connection may hold open; ' +
      'one more ends with RESOURCE_EXHAUSTED. A drain ends them all with UNAVAILABLE.',
  }),
  maxStreamingCalls: setting('maxStreamingCalls', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_MAX_STREAMING_CALLS,
    min: 1,
    max: INT32_MAX,
    description:
      'Streaming calls the whole server holds open, over every connection; one more ends with ' +
      'RESOURCE_EXHAUSTED.',
  }),
  watchMaxPendingGroups: setting('watchMaxPendingGroups', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_WATCH_MAX_PENDING_GROUPS,
    min: 1,
    max: INT32_MAX,
    description:
      'Groups a WatchGroups call may have an event waiting for while its client reads slower than groups ' +
      'change (events of one group coalesce into its latest state); one more ends it with RESOURCE_EXHAUSTED.',
  }),
  watchMaxLagMs: setting('watchMaxLagMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_WATCH_MAX_LAG_MS,
    min: 1,
    max: INT32_MAX,
    description:
      'How long events may wait for a WatchGroups client that does not read; the next change after that ' +
      'ends the watch with RESOURCE_EXHAUSTED.',
  }),
  heapGrowingPercent: setting('heapGrowingPercent', {
    kind: 'integer',
    valueName: 'PERCENT',
    defaultValue: DEFAULT_HEAP_GROWING_PERCENT,
    min: 0,
    max: MAX_HEAP_GROWING_PERCENT,
    description:
      "How far V8's heap may grow past what its last full collection kept before the next one (V8's " +
      '--heap-growing-percent), on heaps of 2 GiB or more, where V8 would grow it up to 4x: shorter ' +
      'collection pauses. 0 = V8 decides; the flag on the node command line wins.',
  }),
  maxGroups: setting('maxGroups', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_MAX_GROUPS,
    min: 1,
    max: INT32_MAX,
    description:
      'Most groups the server holds; a JoinGroup or OffsetCommit that would create one more gets ' +
      `GROUP_MAX_SIZE_REACHED. ${INT32_MAX} = unlimited.`,
  }),
  groupMinSessionTimeoutMs: setting('groupMinSessionTimeoutMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS,
    min: 0,
    max: INT32_MAX,
    kafkaName: 'group.min.session.timeout.ms',
    description: 'Smallest session timeout a member may ask for (else INVALID_SESSION_TIMEOUT).',
  }),
  groupMaxSessionTimeoutMs: setting('groupMaxSessionTimeoutMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS,
    min: 0,
    max: INT32_MAX,
    kafkaName: 'group.max.session.timeout.ms',
    description: 'Largest session timeout a member may ask for (else INVALID_SESSION_TIMEOUT).',
  }),
  groupInitialRebalanceDelayMs: setting('groupInitialRebalanceDelayMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS,
    min: 0,
    max: INT32_MAX,
    kafkaName: 'group.initial.rebalance.delay.ms',
    description:
      'How long an Empty group waits for more members before its first rebalance completes; each new ' +
      'member extends the wait, up to the rebalance timeout (KIP-134).',
  }),
  groupMaxSize: setting('groupMaxSize', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_GROUP_MAX_SIZE,
    min: 1,
    max: INT32_MAX,
    kafkaName: 'group.max.size',
    description: `Most members one group may hold (else GROUP_MAX_SIZE_REACHED). ${INT32_MAX} = unlimited.`,
  }),
  offsetMetadataMaxBytes: setting('offsetMetadataMaxBytes', {
    kind: 'integer',
    valueName: 'BYTES',
    defaultValue: DEFAULT_OFFSET_METADATA_MAX_BYTES,
    min: 0,
    max: INT32_MAX,
    kafkaName: 'offset.metadata.max.bytes',
    description: 'Longest metadata string an offset commit may carry (else OFFSET_METADATA_TOO_LARGE).',
  }),
  memberMetadataMaxBytes: setting('memberMetadataMaxBytes', {
    kind: 'integer',
    valueName: 'BYTES',
    defaultValue: DEFAULT_MEMBER_METADATA_MAX_BYTES,
    min: 0,
    max: INT32_MAX,
    description:
      'Most protocol metadata bytes (all protocols together) one JoinGroup may carry (else ' +
      'MESSAGE_TOO_LARGE).',
  }),
  groupMaxMetadataBytes: setting('groupMaxMetadataBytes', {
    kind: 'integer',
    valueName: 'BYTES',
    defaultValue: DEFAULT_GROUP_MAX_METADATA_BYTES,
    min: 0,
    max: MAX_GROUP_MAX_METADATA_BYTES,
    description:
      'Most protocol metadata bytes all members of one group may hold together; a JoinGroup that would ' +
      "take the group past it gets GROUP_MAX_SIZE_REACHED, before the rebalance starts. Keeps a group's " +
      "metadata record, and the leader's JoinGroup answer, within what can be stored and sent.",
  }),
  groupMaxCommittedPartitions: setting('groupMaxCommittedPartitions', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_GROUP_MAX_COMMITTED_PARTITIONS,
    min: 1,
    max: INT32_MAX,
    description:
      'Most partitions one group may hold committed offsets for; an OffsetCommit partition past it gets ' +
      'INVALID_COMMIT_OFFSET_SIZE (partitions already committed can always be committed again).',
  }),
  offsetsRetentionMinutes: setting('offsetsRetentionMinutes', {
    kind: 'integer',
    valueName: 'MINUTES',
    defaultValue: DEFAULT_OFFSETS_RETENTION_MINUTES,
    min: 1,
    max: INT32_MAX,
    kafkaName: 'offsets.retention.minutes',
    description:
      "How long committed offsets outlive their use: an Empty group's expire this long after it became " +
      'Empty, offsets committed outside any membership this long after their commit; then the group goes.',
  }),
  offsetsRetentionCheckIntervalMs: setting('offsetsRetentionCheckIntervalMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS,
    min: 1,
    max: INT32_MAX,
    kafkaName: 'offsets.retention.check.interval.ms',
    description: 'How often expired offsets, and Empty groups left without offsets, are removed.',
  }),
  etcdEndpoints: setting('etcdEndpoints', {
    kind: 'urls',
    valueName: 'URL[,URL...]',
    defaultValue: DEFAULT_ETCD_ENDPOINTS,
    description:
      "etcd's client URLs (http://host:port, or https://host:port for TLS; one scheme for all; several " +
      'must be IPv4 addresses): run as a node of the cluster whose membership, leaders and ISRs etcd ' +
      'holds. None (the default): one node on its own.',
  }),
  etcdTlsCa: setting('etcdTlsCa', {
    kind: 'file',
    valueName: 'PATH',
    defaultValue: DEFAULT_ETCD_TLS_CA,
    description:
      "PEM CA certificates that signed etcd's server certificate (https:// endpoints). Without it, " +
      "Node's built-in public CAs, which sign no private address or name.",
  }),
  etcdTlsCert: setting('etcdTlsCert', {
    kind: 'file',
    valueName: 'PATH',
    defaultValue: DEFAULT_ETCD_TLS_CERT,
    description:
      "PEM client certificate chain presented to etcd, for etcd's --client-cert-auth. Needs " +
      '--etcd-tls-key and https:// endpoints.',
  }),
  etcdTlsKey: setting('etcdTlsKey', {
    kind: 'file',
    valueName: 'PATH',
    defaultValue: DEFAULT_ETCD_TLS_KEY,
    description: 'PEM private key of --etcd-tls-cert.',
  }),
  etcdUsername: setting('etcdUsername', {
    kind: 'text',
    valueName: 'NAME',
    defaultValue: DEFAULT_ETCD_USERNAME,
    description:
      "The etcd user cohort authenticates as, when etcd's authentication is enabled; its role needs " +
      'readwrite on /<cluster-id>/. Needs its password: --etcd-password-file or COHORT_ETCD_PASSWORD.',
  }),
  etcdPasswordFile: setting('etcdPasswordFile', {
    kind: 'file',
    valueName: 'PATH',
    defaultValue: DEFAULT_ETCD_PASSWORD_FILE,
    description:
      'File holding the password of --etcd-username, read at start-up (a trailing newline is ignored).',
  }),
  etcdPassword: setting('etcdPassword', {
    kind: 'password',
    valueName: 'PASSWORD',
    defaultValue: DEFAULT_ETCD_PASSWORD,
    isEnvOnly: true,
    description:
      'The password of --etcd-username itself. Environment only: a flag would show it to every user of ' +
      'the machine.',
  }),
  clusterId: setting('clusterId', {
    kind: 'name',
    valueName: 'NAME',
    defaultValue: DEFAULT_CLUSTER_ID,
    description: "The cluster's name: its keys live under /<cluster-id>/ in etcd, so clusters can share one.",
  }),
  nodeId: setting('nodeId', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_NODE_ID,
    min: 0,
    max: INT32_MAX,
    kafkaName: 'node.id',
    description:
      "This process's node id: the leader id of its partitions, or the replica id a follower fetches with. " +
      'Required, and unique in the cluster, with --etcd-endpoints.',
  }),
  advertisedAddress: setting('advertisedAddress', {
    kind: 'advertisedAddress',
    valueName: 'HOST:PORT',
    defaultValue: DEFAULT_ADVERTISED_ADDRESS,
    kafkaName: 'advertised.listeners',
    description:
      'Where other nodes and clients reach this node, registered in etcd. Empty (the default): the ' +
      'listen address (its bound port), which must then name a host, not 0.0.0.0 or ::.',
  }),
  nodeSessionTimeoutMs: setting('nodeSessionTimeoutMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_NODE_SESSION_TIMEOUT_MS,
    min: MIN_NODE_SESSION_TIMEOUT_MS,
    max: INT32_MAX,
    kafkaName: 'zookeeper.session.timeout.ms',
    description:
      "The node's lease TTL in etcd. A node that cannot renew it stops leading on its own clock a tenth " +
      "before it runs out; then the controller moves its partitions. At least 2000 (etcd's minimum TTL).",
  }),
  uncleanLeaderElection: setting('uncleanLeaderElection', {
    kind: 'boolean',
    valueName: 'BOOL',
    defaultValue: DEFAULT_UNCLEAN_LEADER_ELECTION,
    kafkaName: 'unclean.leader.election.enable',
    description:
      'When no in-sync replica of a partition is alive, elect a live out-of-sync one (losing the records ' +
      'it lacks) instead of leaving the partition offline.',
  }),
  offsetsTopicNumPartitions: setting('offsetsTopicNumPartitions', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS,
    min: 1,
    max: MAX_OFFSETS_TOPIC_NUM_PARTITIONS,
    kafkaName: 'offsets.topic.num.partitions',
    description:
      'Partitions of the internal __consumer_offsets topic when it is first created; groups are spread ' +
      'over them by a hash of the group id. A data directory or cluster keeps the count its topic was ' +
      'created with (a different value later is logged and ignored).',
  }),
  offsetsTopicReplicationFactor: setting('offsetsTopicReplicationFactor', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_OFFSETS_TOPIC_REPLICATION_FACTOR,
    min: 1,
    max: INT32_MAX,
    kafkaName: 'offsets.topic.replication.factor',
    description:
      'Replicas of each __consumer_offsets partition when the topic is first created in a cluster. It is ' +
      'not created while fewer nodes are live (groups get COORDINATOR_NOT_AVAILABLE until then, as in ' +
      'Kafka): a cluster of fewer nodes needs a lower value. Single-node mode has one replica.',
  }),
  minInsyncReplicas: setting('minInsyncReplicas', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_MIN_INSYNC_REPLICAS,
    min: 1,
    max: INT32_MAX,
    kafkaName: 'min.insync.replicas',
    description: 'A Produce with acks=-1 needs this many in-sync replicas (else NOT_ENOUGH_REPLICAS).',
  }),
  replicaLagTimeMaxMs: setting('replicaLagTimeMaxMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_REPLICA_LAG_TIME_MAX_MS,
    min: 1,
    max: INT32_MAX,
    kafkaName: 'replica.lag.time.max.ms',
    description:
      'A follower that has not caught up with the leader for this long leaves the ISR; it rejoins once ' +
      'it reaches the high watermark.',
  }),
  logFlushIntervalMs: setting('logFlushIntervalMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_LOG_FLUSH_INTERVAL_MS,
    min: -1,
    max: INT32_MAX,
    kafkaName: 'log.flush.interval.ms',
    description: 'Also fsync a partition whose unflushed data is this old. -1 = never by time.',
  }),
  logFlushMessages: setting('logFlushMessages', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_LOG_FLUSH_MESSAGES,
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    kafkaName: 'log.flush.interval.messages',
    description:
      'fsync once this many messages are unflushed. 1 (the default) fsyncs every append before acks >= 1 ' +
      'is acknowledged; larger values acknowledge from the page cache in between.',
  }),
  logRetentionMs: setting('logRetentionMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_LOG_RETENTION_MS,
    min: -1,
    max: Number.MAX_SAFE_INTEGER,
    kafkaName: 'log.retention.ms',
    description: 'Delete a segment once its newest record is older than this. -1 = keep forever.',
  }),
  logRetentionBytes: setting('logRetentionBytes', {
    kind: 'integer',
    valueName: 'BYTES',
    defaultValue: DEFAULT_LOG_RETENTION_BYTES,
    min: -1,
    max: Number.MAX_SAFE_INTEGER,
    kafkaName: 'log.retention.bytes',
    description: 'Delete the oldest segments while a partition is larger than this. -1 = no limit.',
  }),
  logSegmentBytes: setting('logSegmentBytes', {
    kind: 'integer',
    valueName: 'BYTES',
    defaultValue: DEFAULT_LOG_SEGMENT_BYTES,
    min: MIN_LOG_SEGMENT_BYTES,
    max: INT32_MAX,
    kafkaName: 'log.segment.bytes',
    description: 'Roll to a new segment before one would grow past this size.',
  }),
  truncateCorruptLogs: setting('truncateCorruptLogs', {
    kind: 'boolean',
    valueName: 'BOOL',
    defaultValue: DEFAULT_TRUNCATE_CORRUPT_LOGS,
    description:
      'Start even when a partition holds damaged data below its recovery point (fsynced data that fails ' +
      'its checks), removing the damaged bytes (logged at error). Without it such a log stops the start.',
  }),
  maxOpenFiles: setting('maxOpenFiles', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_MAX_OPEN_FILES,
    min: 0,
    max: INT32_MAX,
    description:
      'The open-file limit CreateTopics checks new partitions against before it creates any (else ' +
      "POLICY_VIOLATION): a tenth of it is kept for connections and segments. 0 = the process's own " +
      'limit (ulimit -n), read at start-up.',
  }),
});

/** The schema's rows in declaration order (the order of `--help` and the docs). */
export const CONFIG_SETTINGS: readonly SettingSpec[] = Object.freeze(Object.values(CONFIG_SCHEMA));
