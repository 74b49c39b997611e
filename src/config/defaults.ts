/**
 * Every default of cohort's configuration, as named constants. This layer imports nothing from `src`, so
 * the group defaults are repeated here rather than imported from `src/group/group-config.ts`; a unit test
 * asserts the two sets are equal, so they cannot drift. The group defaults are Kafka's broker defaults.
 */

/** The largest Java `int`: Kafka's group settings are ints, and session timeouts travel as int32. */
export const INT32_MAX = 2_147_483_647;

export const DEFAULT_LISTEN = '127.0.0.1:7070';
export const DEFAULT_DATA_DIR = './data';
export const DEFAULT_MANUAL_CLOCK = false;
export const DEFAULT_LOG_LEVEL = 'info';
/**
 * The admin HTTP listener: loopback only, like the gRPC listener, on the port beside it. Not 9090, which is
 * Prometheus's own: a cohort on the same host as its scraper would fail to start.
 */
export const DEFAULT_ADMIN_LISTEN = '127.0.0.1:7071';
/** The value of `adminListen` that turns the admin listener off ('' does too). */
export const ADMIN_LISTEN_OFF = 'off';
/** The Kafka listener: loopback, on Kafka's own port, so that `kcat -b 127.0.0.1:9092` finds it. */
export const DEFAULT_KAFKA_LISTEN = '127.0.0.1:9092';
/** The value of `kafkaListen` that turns the Kafka listener off ('' does too). */
export const KAFKA_LISTEN_OFF = 'off';
/** `createConfig`'s default (embedded servers, tests): a free loopback port, so servers never collide. */
export const EMBEDDED_KAFKA_LISTEN = '127.0.0.1:0';
/** '' = the Kafka listen address with its bound port. */
export const DEFAULT_KAFKA_ADVERTISED_ADDRESS = '';
/** Kafka's auto.create.topics.enable default: a Metadata request naming an unknown topic creates it. */
export const DEFAULT_KAFKA_AUTO_CREATE_TOPICS = true;
/**
 * Kafka's socket.request.max.bytes default, 100 MiB: a Produce of many partitions' batches fits, while each
 * batch is still held to the log's max.message.bytes.
 */
export const DEFAULT_KAFKA_MAX_REQUEST_BYTES = 104_857_600;
/** Kafka's connections.max.idle.ms (10 minutes). */
export const DEFAULT_KAFKA_CONNECTIONS_MAX_IDLE_MS = 600_000;
/** Kubernetes gives a pod 30 s between SIGTERM and SIGKILL; 10 s leaves room for the flush after the drain. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;
/** No bearer token, no TLS: safe only on loopback or a Unix socket, which validation enforces. */
export const DEFAULT_TOKEN_FILE = '';
export const DEFAULT_TOKEN = '';
/** No cluster secret: no node can prove it is one, so no replica fetch is authenticated. */
export const DEFAULT_CLUSTER_SECRET_FILE = '';
export const DEFAULT_CLUSTER_SECRET = '';
export const DEFAULT_TLS_CERT = '';
export const DEFAULT_TLS_KEY = '';
export const DEFAULT_TLS_CLIENT_CA = '';
export const DEFAULT_INSECURE = false;
/** The shortest bearer token accepted: 16 printable characters leave no room for guessing. */
export const MIN_TOKEN_LENGTH = 16;
/** gRPC's own default receive limit, 4 MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4_194_304;
/** The smallest message limit accepted: every request of the contract fits in it with room to spare. */
export const MIN_MAX_MESSAGE_BYTES = 1_024;
/**
 * Calls read per event-loop turn before every connection stops reading until the next turn. With 128 a
 * 1,000-member rebalance completed sooner than with 256, and the heartbeat bench lost nothing; see
 * docs/performance.md (G5, G8).
 */
export const DEFAULT_MAX_CALLS_PER_LOOP_TURN = 128;
/**
 * Streaming calls (health Watch, reflection) one client connection may hold open: enough for a client that
 * watches the whole server and each of its services, and reflection besides.
 */
export const DEFAULT_MAX_STREAMING_CALLS_PER_CONNECTION = 8;
/** Streaming calls the whole server holds open: far above what probes and load balancers need. */
export const DEFAULT_MAX_STREAMING_CALLS = 1_000;
/**
 * Groups a WatchGroups call may lag on: events of one group coalesce, so this bounds a slow watcher's
 * queue whatever the rate of change; a watch of every group on a server with more groups needs it raised.
 */
export const DEFAULT_WATCH_MAX_PENDING_GROUPS = 10_000;
/** How long a watcher may leave events unread: a minute, far beyond any reader that keeps up. */
export const DEFAULT_WATCH_MAX_LAG_MS = 60_000;
/** V8's heap growth cap for the server process, in percent: 100 = 2× (src/heap-growth.ts; docs/performance.md, G11). */
export const DEFAULT_HEAP_GROWING_PERCENT = 100;
/** V8's own largest growing factor is 4×. */
export const MAX_HEAP_GROWING_PERCENT = 300;

/** group.min.session.timeout.ms */
export const DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS = 6_000;
/** group.max.session.timeout.ms */
export const DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS = 1_800_000;
/** group.initial.rebalance.delay.ms (KIP-134) */
export const DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS = 3_000;
/** group.max.size (KIP-389): Kafka's Integer.MAX_VALUE, i.e. unlimited. */
export const DEFAULT_GROUP_MAX_SIZE = INT32_MAX;
/** offset.metadata.max.bytes */
export const DEFAULT_OFFSET_METADATA_MAX_BYTES = 4_096;
/** No limit on the number of groups (Kafka has none). */
export const DEFAULT_MAX_GROUPS = INT32_MAX;
/**
 * Protocol metadata of one JoinGroup: 1 MiB, far above a consumer subscription with its owned partitions,
 * and low enough that a group of members cannot hold the coordinator's memory hostage.
 */
export const DEFAULT_MEMBER_METADATA_MAX_BYTES = 1_048_576;
/**
 * The protocol metadata of every member of one group together: 32 MiB. A group's metadata record holds
 * each member's protocols and assignment, and must fit one record of `__consumer_offsets` (100 MiB): 32 MiB
 * of subscriptions, the assignments (one SyncGroup, at most maxMessageBytes) and the member ids leave a
 * margin of more than half. Kafka has no such limit (its record limit is 1 MiB, and such groups fail there).
 */
export const DEFAULT_GROUP_MAX_METADATA_BYTES = 33_554_432;
/** The largest groupMaxMetadataBytes accepted: with 4 MiB of assignments the record stays under 100 MiB. */
export const MAX_GROUP_MAX_METADATA_BYTES = 67_108_864;
/**
 * Partitions one group may hold committed offsets for: 100,000 (a consumer of 1,000 topics of 100
 * partitions). Every committed partition is kept in memory and replayed at start-up. Kafka has no limit.
 */
export const DEFAULT_GROUP_MAX_COMMITTED_PARTITIONS = 100_000;
/** offsets.retention.minutes: seven days, Kafka's default since 2.0 (KIP-186). */
export const DEFAULT_OFFSETS_RETENTION_MINUTES = 10_080;
/** offsets.retention.check.interval.ms */
export const DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS = 600_000;

/** The log's defaults are Kafka's broker defaults except where noted; they equal src/log/storage's (a test checks). */
/** No etcd: one node on its own, exactly as without a cluster. */
export const DEFAULT_ETCD_ENDPOINTS: readonly string[] = Object.freeze([]);
/** Without a CA file, https:// endpoints are checked against Node's built-in (public) CAs. */
export const DEFAULT_ETCD_TLS_CA = '';
/** No client certificate: etcd without --client-cert-auth. */
export const DEFAULT_ETCD_TLS_CERT = '';
export const DEFAULT_ETCD_TLS_KEY = '';
/** No etcd user: etcd without authentication. */
export const DEFAULT_ETCD_USERNAME = '';
export const DEFAULT_ETCD_PASSWORD_FILE = '';
export const DEFAULT_ETCD_PASSWORD = '';
export const DEFAULT_CLUSTER_ID = 'cohort';
/** node.id */
export const DEFAULT_NODE_ID = 0;
/** The listen address (when it names a host other nodes can reach). */
export const DEFAULT_ADVERTISED_ADDRESS = '';
/** Kafka's ZooKeeper-era zookeeper.session.timeout.ms was 18 s; cohort's node lease is 10 s. */
export const DEFAULT_NODE_SESSION_TIMEOUT_MS = 10_000;
/** etcd's smallest lease TTL (with its default election timeout) is 2 s. */
export const MIN_NODE_SESSION_TIMEOUT_MS = 2_000;
/** offsets.topic.num.partitions: Kafka's 50. */
export const DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS = 50;
/** offsets.topic.replication.factor: Kafka's 3 (the topic waits until that many nodes are live). */
export const DEFAULT_OFFSETS_TOPIC_REPLICATION_FACTOR = 3;
/** The most partitions a topic may have (the log layer's MAX_PARTITIONS_PER_TOPIC). */
export const MAX_OFFSETS_TOPIC_NUM_PARTITIONS = 10_000;
/** unclean.leader.election.enable */
export const DEFAULT_UNCLEAN_LEADER_ELECTION = false;
/** min.insync.replicas */
export const DEFAULT_MIN_INSYNC_REPLICAS = 1;
/** replica.lag.time.max.ms */
export const DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000;
/** log.flush.interval.ms: Kafka's default is "never by time" (Long.MAX_VALUE); -1 says so here. */
export const DEFAULT_LOG_FLUSH_INTERVAL_MS = -1;
/** log.flush.interval.messages: cohort fsyncs every append before acknowledging acks >= 1 (Kafka: never). */
export const DEFAULT_LOG_FLUSH_MESSAGES = 1;
/** log.retention.ms: 7 days. */
export const DEFAULT_LOG_RETENTION_MS = 604_800_000;
/** log.retention.bytes: no limit. */
export const DEFAULT_LOG_RETENTION_BYTES = -1;
/** log.segment.bytes: 1 GiB. */
export const DEFAULT_LOG_SEGMENT_BYTES = 1_073_741_824;
/** A damaged log stops the start-up unless the operator says to cut the damage (docs/operations.md). */
export const DEFAULT_TRUNCATE_CORRUPT_LOGS = false;
/** Read the process's open-file limit from the system (/proc/self/limits; 1024 where it cannot be read). */
export const DEFAULT_MAX_OPEN_FILES = 0;
/** The smallest segment cohort accepts: small enough for tests that roll segments, large enough for a batch. */
export const MIN_LOG_SEGMENT_BYTES = 1_024;
