import { Server } from '@grpc/grpc-js';
import type { ServerInterceptor, ServerOptions } from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import pino from 'pino';
import type { Logger } from 'pino';
import type { CohortConfig } from '../config';
import { MANUAL_CLOCK_RUNNING, parseListenAddress, parseUnixSocket } from '../config';
import type { KafkaBoundAddress, WireTraceEntry } from '../kafka';
import type { GroupConfig } from '../group/group-config';
import { GroupCoordinatorRouter } from '../group/group-coordinator-router';
import type { GroupCoordinatorService } from '../group/group-protocol';
import type { BrokerNode } from '../log';
import type { ClusterNodeAddress, LocalReplicaState } from '../log/partition-roles';
import { ReplicaManager } from '../log';
import type { ConsumerOffsetsWriter } from '../log/consumer-offsets';
import {
  checkDataDirIdentity,
  DataDirLock,
  newClusterUuid,
  readDataDirIdentity,
  writeDataDirIdentity,
  type DataDirIdentity,
} from '../log/storage';
import type { Time } from '../time';
import { ManualTime, RunningManualTime, SYSTEM_TIME } from '../time';
import { adminPartsOf } from './admin-parts';
import type { AdminAddress } from './admin-server';
import { bearerTokenInterceptor, keepEveryAuthorizationHeader } from './bearer-token-interceptor';
import { BrokerLeaderEndpoint } from './broker-leader-endpoint';
import { brokerService } from './broker-service';
import { budgetServerAt, CallReadBudget } from './call-read-budget';
import { ClusterWiring } from './cluster-wiring';
import { fanOutListener } from './fan-out-listener';
import { groupCoordinatorService } from './group-coordinator-service';
import { HeartbeatStreams } from './heartbeat-stream';
import { GroupWatches } from './watch-groups';
import { groupEventLog } from './group-event-log';
import { HealthService } from './health-service';
import { kafkaDoorOf } from './kafka-door';
import { loadCohortProtos } from './load-protos';
import type { Stopwatch } from './metrics/call-metrics';
import { ServerMetrics } from './metrics/server-metrics';
import { adminListenOf, brokerConfigOf, groupConfigOf } from './server-parts-config';
import { ServerConnections } from './server-connections';
import { logSecurityWarnings } from './security-warnings';
import { loadServerSecurity } from './server-security';
import { StreamingCalls } from './streaming-calls';
import { testClockService } from './test-clock-service';
import { storageRecoveryLog } from './storage-recovery-log';
import { guardServiceDefinition } from './undecodable-request';
import { findCoordinatorHandler } from './find-coordinator';

export const GROUP_COORDINATOR_SERVICE = 'cohort.v1.GroupCoordinator';
/** Member streams: bounded by the groups' members and ended by HeartbeatStreams, not StreamingCalls. */
const HEARTBEAT_STREAM_PATH = `/${GROUP_COORDINATOR_SERVICE}/HeartbeatStream`;
/** Watches: counted by StreamingCalls like any stream, but ended with OK by GroupWatches on a drain. */
const WATCH_GROUPS_PATH = `/${GROUP_COORDINATOR_SERVICE}/WatchGroups`;
export const TEST_CLOCK_SERVICE = 'cohort.v1.TestClock';
export const BROKER_SERVICE = 'cohort.v1.Broker';
export const HEALTH_SERVICE = 'grpc.health.v1.Health';
export { KAFKA_SERVICE_LABEL } from './kafka-door';
/** How long `close()` lets in-flight calls finish before cutting every connection, unless configured. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 5_000;

export type CoordinatorFactory = (config: GroupConfig, time: Time) => GroupCoordinatorService;

export interface CreateServerOptions {
  /** The server's clock. Default: a fresh ManualTime with `manualClock`, else the system clock. */
  readonly time?: Time;
  /** Default: the real GroupCoordinator, logging failures of its timer tasks. Tests inject fakes here. */
  readonly coordinatorFactory?: CoordinatorFactory;
  /** Default: pino to stdout at `config.logLevel`. */
  readonly logger?: Logger;
  /** How long in-flight calls may finish on close. Default: `config.shutdownTimeoutMs`. */
  readonly shutdownGraceMs?: number;
  /**
   * Told when the server must stop on its own, after it logged why at fatal: a cluster node whose data
   * directory belongs to another cluster than etcd's. Default: the server closes itself (main.ts then
   * exits with 1).
   */
  readonly onFatalError?: (error: Error) => void;
  /** The clock of call latency metrics. Default: the real one, also under --manual-clock. */
  readonly metricsStopwatch?: Stopwatch;
  /** Record the (client id, api key, version) of every Kafka request (`kafkaWireTrace`). Default false. */
  readonly isKafkaWireTraced?: boolean;
}

export interface BoundAddress {
  /** The host as `listen` gave it, or `unix:PATH` for a Unix socket. */
  readonly host: string;
  /** The real port, also when `listen` asked for port 0; 0 for a Unix socket. */
  readonly port: number;
  /** What a client dials: `HOST:PORT` or `unix:PATH`. */
  readonly address: string;
}

/**
 * Where the server is in its life, as /readyz and health report it: `starting` until bound, `loading`
 * while group state is replayed, `serving`, `draining` from the first close() until every call is done,
 * `closed`. `failed` when group state could not be loaded: the server runs but is never ready.
 */
export type ServerPhase = 'new' | 'starting' | 'loading' | 'serving' | 'failed' | 'draining' | 'closed';

/** One cohort server. Tests, main.ts and embedders all build it with `createServer`. */
export interface CohortServer {
  /**
   * Binds `config.listen` (and the admin listener) and starts serving. Resolves once bound; group state may
   * still be loading then (GroupCoordinator answers COORDINATOR_LOAD_IN_PROGRESS): `ready()` says when it
   * is done.
   */
  start(): Promise<BoundAddress>;
  /**
   * Resolves once the server serves everything: bound, and group state loaded. Health is then SERVING and
   * /readyz 200. Rejects if group state cannot be loaded or the server closes first.
   */
  ready(): Promise<void>;
  /**
   * Why the server is not ready, as /readyz says it (undefined: ready). Once `ready()` resolved, a cluster
   * node is still not ready until it is registered in the cluster with its first view applied.
   */
  readinessProblem(): string | undefined;
  /** `listener` is told when readiness may have changed after `ready()`; returns its removal. */
  onReadinessChange(listener: () => void): () => void;
  /**
   * Drains and stops: health turns NOT_SERVING and /readyz 503, new calls are refused, every parked call is
   * answered (`coordinator.shutdown()`, `replicaManager.shutdown()`), every streaming call (health Watch,
   * reflection) ends with UNAVAILABLE, every member stream and group watch with OK, each connection closes once its last call is done, in-flight calls
   * get `shutdownGraceMs` to finish before connections are cut, then every log is fsynced and closed and the admin listener
   * stops. Idempotent: every call returns the same promise.
   */
  close(): Promise<void>;
  readonly phase: ServerPhase;
  readonly config: CohortConfig;
  readonly time: Time;
  /**
   * The clock TestClock moves when `config.manualClock` is `true` (it stands still between advances); tests
   * may also advance it directly. Undefined with `manualClock: 'running'`: see `testClock`.
   */
  readonly manualTime: ManualTime | undefined;
  /** The clock TestClock moves, in either mode of `config.manualClock` (frozen or running); else undefined. */
  readonly testClock: ManualTime | RunningManualTime | undefined;
  readonly coordinator: GroupCoordinatorService;
  /** The log: topics, Produce, Fetch and replication. */
  readonly replicaManager: ReplicaManager;
  readonly logger: Logger;
  /** This server's metrics (its own registry: embedders may merge it into theirs). */
  readonly metrics: ServerMetrics;
  /** The admin listener's address once started; undefined when `adminListen` is off. */
  readonly adminAddress: AdminAddress | undefined;
  /** Live pages open on the admin listener now (0 without one). */
  readonly openPages: number;
  /** The Kafka listener's bound address once started; undefined when `kafkaListen` is off. */
  readonly kafkaAddress: KafkaBoundAddress | undefined;
  /** The Kafka requests served so far, with `isKafkaWireTraced` (empty otherwise). */
  readonly kafkaWireTrace: readonly WireTraceEntry[];
  /** The open WatchGroups calls: how many, and how many events wait for their readers. */
  readonly groupWatches: Pick<GroupWatches, 'size' | 'pendingEvents'>;
}

/**
 * Builds a server from a validated configuration. Reads the token and TLS files the configuration names
 * and throws an InvalidConfigError listing every problem with them (main.ts exits 2); nothing is bound
 * until `start()`.
 */
export function createServer(config: CohortConfig, options: CreateServerOptions = {}): CohortServer {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const isRunningClock = config.manualClock === MANUAL_CLOCK_RUNNING;
  const time =
    options.time ??
    (isRunningClock ? new RunningManualTime() : config.manualClock ? new ManualTime() : SYSTEM_TIME);
  if (isRunningClock && !(time instanceof RunningManualTime)) {
    throw new TypeError(
      "manualClock 'running' needs a RunningManualTime: a clock that follows wall time and jumps on Advance",
    );
  }
  if (config.manualClock === true && !(time instanceof ManualTime)) {
    throw new TypeError('manualClock needs a ManualTime: TestClock can only move a clock that moves by hand');
  }
  const testClock =
    config.manualClock !== false && (time instanceof ManualTime || time instanceof RunningManualTime)
      ? time
      : undefined;
  const manualTime = testClock instanceof ManualTime ? testClock : undefined;
  const unixSocket = parseUnixSocket(config.listen);
  const address = unixSocket === undefined ? parseListenAddress(config.listen) : undefined;
  if (unixSocket === undefined && address === undefined) {
    throw new TypeError(`listen (${config.listen}) is neither HOST:PORT nor unix:PATH`);
  }
  const shutdownGraceMs = options.shutdownGraceMs ?? config.shutdownTimeoutMs;
  const security = loadServerSecurity(config);
  const adminListen = adminListenOf(config);
  logSecurityWarnings(config, security, adminListen, logger);

  const metrics = new ServerMetrics({
    time,
    nodeId: config.nodeId,
    ...(options.metricsStopwatch ? { stopwatch: options.metricsStopwatch } : {}),
  });
  // Every cut, rebuilt index and skipped record of a log's recovery is logged and counted.
  const recoveryLog = storageRecoveryLog(logger, metrics.recovery);
  const groupListener = fanOutListener([
    groupEventLog(logger, time),
    metrics.groupListener,
    { onCorruptRecord: (_partitionIndex, offset, error) => recoveryLog.onCorruptRecord(offset, error) },
  ]);
  const recovery = { truncateCorruptLogs: config.truncateCorruptLogs, listener: recoveryLog.listener };

  // Cluster mode (--etcd-endpoints): a ClusterNode drives the log's partition roles (docs/cluster.md). Its
  // guard and ISR proposer exist before the node does (it starts once the port is bound), for the log.
  const cluster: ClusterWiring | undefined =
    config.etcdEndpoints.length === 0
      ? undefined
      : new ClusterWiring(config, {
          time,
          logger,
          etcd: {
            ...(security.etcd.tls === undefined ? {} : { tls: security.etcd.tls }),
            ...(security.etcd.credentials === undefined ? {} : { credentials: security.etcd.credentials }),
          },
          onReadinessChange: () => refreshWholeServerHealth(),
          onViewApplied: () => {
            clusterBoard?.changed();
            groupFeed?.sync();
          },
          writeDataDirIdentity: (identity) => writeDataDirIdentity(config.dataDir, identity),
          localReplicas: (): Promise<LocalReplicaState[]> => replicaManager.describeLocalReplicas(),
          onFatalError: (error) => {
            // Not ready, and never will be: readiness says why until the server is stopped.
            fatalError = error;
            refreshWholeServerHealth();
            if (options.onFatalError !== undefined) options.onFatalError(error);
            else void close();
          },
        });
  // Group state is durable, as Kafka keeps it: offsets and group metadata are records of the compacted,
  // replicated __consumer_offsets topic (docs/storage.md, "Durable group state"), hosted by the
  // ReplicaManager. The coordinator is a router over one shard per partition this node leads: the
  // ReplicaManager elects a partition's store here (single-node mode: every partition, at start()) and the
  // router loads it; a resignation unloads it (docs/cluster.md, "Groups").
  let groupState: { readonly router: GroupCoordinatorRouter } | undefined;
  // A timer task that throws has broken an invariant of one group; log it with its stack and keep
  // serving the others, as Kafka's timer threads do, rather than let the timer rethrow it into the loop.
  const defaultFactory: CoordinatorFactory = (groupConfig, clock) => {
    const router = new GroupCoordinatorRouter(groupConfig, clock, {
      onTimerError: (error) => logger.error({ err: error }, 'a group timer task failed'),
      onWatchListenerError: (error) => logger.error({ err: error }, 'a group watch listener failed'),
      listener: groupListener,
      // Cluster mode: no group request is served once the node's session may be gone (its clock says so).
      ...(cluster === undefined ? {} : { leadershipGuard: cluster.guard }),
    });
    groupState = { router };
    return router;
  };
  const coordinator = (options.coordinatorFactory ?? defaultFactory)(groupConfigOf(config), time);
  const replicaManager = new ReplicaManager(brokerConfigOf(config), {
    time,
    recovery,
    ...(groupState === undefined
      ? {}
      : {
          offsetsTopic: {
            listener: {
              // The router loads a shard for the partition by replaying its records, in the background:
              // its groups answer COORDINATOR_LOAD_IN_PROGRESS until then, and nothing else waits.
              onElection: (partitionIndex: number, leaderEpoch: number, writer: ConsumerOffsetsWriter) =>
                void groupState?.router.onElection(
                  partitionIndex,
                  leaderEpoch,
                  writer,
                  replicaManager.offsetsTopicPartitionCount(),
                ),
              onResignation: (partitionIndex: number, leaderEpoch: number) => {
                groupState?.router.onResignation(partitionIndex, leaderEpoch);
              },
            },
            // Used when the topic is first created: a data directory (single-node mode) or the cluster
            // keeps the count its topic was created with.
            numPartitions: config.offsetsTopicNumPartitions,
            writer: {
              onCompactionError: (error: unknown) =>
                logger.warn({ err: error }, '__consumer_offsets compaction failed'),
              onCorruptRegion: recoveryLog.onCorruptRegion,
            },
            onStartup: ({ outcome, numPartitions, configuredNumPartitions }) => {
              if (outcome === 'kept' && numPartitions !== configuredNumPartitions) {
                logger.info(
                  { numPartitions, configuredNumPartitions },
                  '__consumer_offsets keeps the partition count it was created with',
                );
              } else if (outcome === 'adopted') {
                logger.info(
                  '__consumer_offsets-0 of an earlier cohort registered as a topic of one partition',
                );
              }
            },
          },
        }),
    listener: {
      onIsrChange: (topic, partition, isr, previousIsr) => {
        logger.info({ topic, partition, isr, previousIsr }, 'ISR changed');
        metrics.logListener.onIsrChange(topic, partition, isr, previousIsr);
        clusterBoard?.changed();
      },
      onError: (error, what) => logger.error({ err: error }, what),
    },
    ...(cluster === undefined
      ? {}
      : {
          // Cluster mode: roles from the ClusterNode, ISR changes committed through etcd, the leader's
          // guard its session, and fetchers to the leader nodes proving this node by the cluster secret.
          isrChangeProposer: cluster.isrChangeProposer,
          leadershipGuard: cluster.guard,
          // A fetcher retries every second; its failures are told once as a run begins, then at a
          // backoff up to once a minute, and once more when the leader answers again. The follower stays
          // ready: the controller, not a probe, moves leadership away from a dead leader.
          replicaFetcherOptions: {
            onLeaderFailure: ({ leaderId, error, kind, failedRounds, failingForMs }) => {
              logger.warn(
                {
                  leader: leaderId,
                  reason: error instanceof Error ? error.message : String(error),
                  failedRounds,
                  failingForMs,
                },
                kind === 'unreachable'
                  ? 'the leader cannot be reached; replication is paused and retried every second'
                  : 'the leader refuses to be fetched from; replication is paused and retried every second',
              );
            },
            onLeaderRecovered: ({ leaderId, failedRounds, failingForMs }) => {
              logger.info(
                { leader: leaderId, failedRounds, failingForMs },
                'the leader answers again; replication resumes',
              );
            },
          },
          leaderEndpointFactory: (leader: ClusterNodeAddress) =>
            new BrokerLeaderEndpoint(`${leader.host}:${leader.port}`, {
              credentials: security.leaderCredentials,
              ...(security.nodeCredentials === undefined
                ? {}
                : { nodeCredentials: security.nodeCredentials }),
            }),
        }),
  });
  metrics.setSources({
    ...(coordinator instanceof GroupCoordinatorRouter ? { coordinator } : {}),
    log: replicaManager,
    ...(groupState === undefined
      ? {}
      : {
          consumerLag: {
            offsets: groupState.router.committedOffsets,
            partition: (key: string) => replicaManager.getPartition(key),
          },
        }),
  });
  const protos = loadCohortProtos();
  const onEncodeFailure = (error: unknown, method: string): void => {
    logger.error({ err: error, method }, 'a response could not be encoded');
  };

  // First: it tells connections apart through the call grpc-js hands the first interceptor.
  const streamingCalls = new StreamingCalls(
    { maxPerConnection: config.maxStreamingCallsPerConnection, maxTotal: config.maxStreamingCalls },
    (method, reason, peer) => logger.debug({ method, peer, reason }, 'streaming call refused'),
    new Set([HEARTBEAT_STREAM_PATH]),
    new Set([WATCH_GROUPS_PATH]),
  );
  const interceptors: ServerInterceptor[] = [streamingCalls.interceptor];
  if (security.tokenCheck !== undefined) {
    interceptors.push(
      bearerTokenInterceptor(
        security.tokenCheck,
        (method, reason, peer) => {
          metrics.onUnauthenticatedCall();
          logger.debug({ method, peer, reason }, 'call refused: no valid bearer token');
        },
        security.nodeAuthenticator,
      ),
    );
  }
  // Every Broker call has its node credentials checked (node-credentials.ts): a replica fetch is a node's
  // only when the cluster secret proves it. The token interceptor has already checked them when there is
  // a token (once: the check remembers the call), and let the node through without one.
  const nodeAuthentication = {
    authenticator: security.nodeAuthenticator,
    onRefused: (method: string, reason: string, peer: string) => {
      metrics.onUnauthenticatedCall();
      logger.debug({ method, peer, reason }, 'call refused: node credentials not accepted');
    },
  };
  const serverOptions: ServerOptions = {
    // A larger request ends with RESOURCE_EXHAUSTED before it is decoded; nothing else is disturbed.
    'grpc.max_receive_message_length': config.maxMessageBytes,
    ...(interceptors.length > 0 ? { interceptors } : {}),
  };
  const server = new Server(serverOptions);
  // Every call counts against the per-turn read budget (docs/configuration.md), from the bind on.
  const readBudget = new CallReadBudget(config.maxCallsPerLoopTurn, { onPause: () => metrics.onReadPause() });
  let stopBudgeting: (() => void) | undefined;
  let connections: ServerConnections | undefined;
  const services = [GROUP_COORDINATOR_SERVICE, BROKER_SERVICE];
  /** This node's address as clients reach it, once bound (FindCoordinator, Metadata). */
  let localBroker: BrokerNode | undefined;
  // Open HeartbeatStreams never end by themselves: close() ends them, or tryShutdown would wait out the grace.
  const heartbeatStreams = new HeartbeatStreams();
  // Nor do watches: close() ends them with OK.
  const groupWatches = new GroupWatches(
    { maxPendingGroups: config.watchMaxPendingGroups, maxLagMs: config.watchMaxLagMs },
    time,
  );
  // The group's __consumer_offsets partition leader, from this node's view. Cluster mode creates the
  // topic on the first lookup that finds none, as Kafka does; a server with a coordinator of its own
  // (coordinatorFactory) hosts no topic and names itself. Both doors ask it.
  const findCoordinator = findCoordinatorHandler({
    metadata: (topics) => replicaManager.metadata({ topics: [...topics] }),
    ...(cluster !== undefined
      ? {
          onMissingTopic: () => {
            void ensureOffsetsTopic(cluster);
            return cluster.offsetsTopicWait();
          },
          isViewCurrent: () => cluster.guard.isActive(),
        }
      : groupState === undefined
        ? { localNode: () => localBroker }
        : {}),
  });
  const broker = cluster === undefined ? replicaManager : cluster.brokerWithClusterTopics(replicaManager);
  server.addService(
    guardServiceDefinition(protos.groupCoordinator, onEncodeFailure),
    groupCoordinatorService(
      coordinator,
      logger,
      metrics.callObservers,
      heartbeatStreams,
      groupWatches,
      findCoordinator,
    ),
  );
  server.addService(
    guardServiceDefinition(protos.broker, onEncodeFailure),
    brokerService(broker, logger, metrics.callObservers, nodeAuthentication),
  );

  // The Kafka door: the same coordinator, log and coordinator lookup, behind Kafka's wire protocol.
  const kafka = kafkaDoorOf(config, {
    time,
    logger,
    metrics,
    isWireTraced: options.isKafkaWireTraced === true,
    core: {
      broker,
      coordinator,
      findCoordinator,
      controllerId: () => cluster?.controllerId ?? config.nodeId,
    },
    isClusterNode: cluster !== undefined,
  });
  if (testClock !== undefined) {
    services.push(TEST_CLOCK_SERVICE);
    server.addService(
      guardServiceDefinition(protos.testClock, onEncodeFailure),
      testClockService(testClock, logger, metrics.callObservers),
    );
  }

  // '' is the whole server, as grpc-health-probe and Kubernetes ask by default. It and GroupCoordinator turn
  // SERVING only once group state is loaded; the Broker and TestClock serve as soon as the port is bound.
  const statusMap: Record<string, 'SERVING' | 'NOT_SERVING'> = { '': 'NOT_SERVING' };
  for (const name of services) statusMap[name] = 'NOT_SERVING';
  const health = new HealthService(statusMap);
  health.addToServer(server, onEncodeFailure);
  const setHealth = (names: readonly string[], status: 'SERVING' | 'NOT_SERVING'): void => {
    for (const name of names) health.setStatus(name, status);
  };
  // Reflection describes only what this server serves (no TestClock without --manual-clock), health included,
  // so that grpcurl can call grpc.health.v1.Health/Check by reflection alone.
  new ReflectionService(
    { ...protos.packageDefinition, ...protos.healthPackageDefinition },
    { services: [...services, HEALTH_SERVICE] },
  ).addToServer(server);

  // The admin listener (/metrics, /readyz, the live page and its models); none without `adminListen`.
  const { admin, board, groupFeed, clusterBoard } = adminPartsOf(adminListen, {
    config,
    time,
    logger,
    security,
    metrics,
    cluster,
    coordinator,
    replicaManager,
    offsets: groupState?.router.committedOffsets,
    groupWatches,
    readinessProblem: () => readinessProblem(),
  });

  let phase: ServerPhase = 'new';
  /** Set when the server must stop on its own (see `onFatalError`). */
  let fatalError: Error | undefined;
  let isBound = false;
  // Cluster mode has nothing to load before partition 0 is elected here (if ever).
  let isGroupStateLoaded = groupState === undefined || cluster !== undefined;
  let starting: Promise<BoundAddress> | undefined;
  let closing: Promise<void> | undefined;
  let resolveReady!: () => void;
  let rejectReady!: (error: Error) => void;
  const readyPromise = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  // Nobody has to ask: a rejection nobody awaits must not be reported as unhandled.
  readyPromise.catch(() => undefined);

  /** Told when readiness may have changed once serving (cluster registration, a lost session). */
  const readinessListeners = new Set<() => void>();

  const readinessProblem = (): string | undefined => {
    if (fatalError !== undefined) return fatalError.message;
    switch (phase) {
      case 'serving':
        return cluster?.readinessProblem();
      case 'new':
      case 'starting':
        return 'starting';
      case 'loading':
        return 'loading group state';
      case 'failed':
        return 'group state could not be loaded';
      case 'draining':
      case 'closed':
        return 'shutting down';
    }
  };

  /** Serving once bound and loaded, whichever comes last; never again once draining. */
  const maybeServe = (): void => {
    if (!isBound || !isGroupStateLoaded || (phase !== 'starting' && phase !== 'loading')) return;
    phase = 'serving';
    setHealth(Object.keys(statusMap), 'SERVING');
    refreshWholeServerHealth();
    resolveReady();
  };

  /**
   * The whole server ('') follows /readyz once serving: in cluster mode NOT_SERVING until the node is
   * registered with its first view applied. Its services keep their own status.
   */
  function refreshWholeServerHealth(): void {
    if (phase !== 'serving') return;
    const problem = fatalError?.message ?? cluster?.readinessProblem();
    health.setStatus('', problem === undefined ? 'SERVING' : 'NOT_SERVING');
    for (const listener of readinessListeners) listener();
  }

  /**
   * Creates __consumer_offsets in etcd (one creation at a time). The wiring logs why one could not be
   * done now (once, not per lookup: clients retry FindCoordinator every few hundred ms); a failure it did
   * not expect is logged here.
   */
  async function ensureOffsetsTopic(wiring: ClusterWiring): Promise<void> {
    try {
      await wiring.ensureOffsetsTopic();
    } catch (error) {
      logger.warn({ err: error }, '__consumer_offsets could not be created; retried on the next lookup');
    }
  }

  /**
   * Single-node mode: ready once every partition start() elected has loaded into its shard; readiness
   * fails if one cannot.
   */
  const awaitStartupLoads = (): void => {
    if (isGroupStateLoaded || groupState === undefined) return;
    groupState.router.whenLoaded().then(
      () => {
        isGroupStateLoaded = true;
        if (phase === 'loading') maybeServe();
      },
      (error: unknown) => {
        logger.error({ err: error }, 'group state could not be loaded; groups are unavailable');
        if (phase === 'starting' || phase === 'loading') phase = 'failed';
        rejectReady(new Error('group state could not be loaded', { cause: error }));
      },
    );
  };
  let dataDirLock: DataDirLock | undefined;

  const bind = (): Promise<BoundAddress> =>
    new Promise<BoundAddress>((resolve, reject) => {
      server.bindAsync(config.listen, security.credentials, (error, port) => {
        if (error !== null) {
          // grpc-js says only "No address added out of total 1 resolved errors": say which setting
          // moves it, as the admin listener does.
          reject(
            new Error(
              `the gRPC listener cannot listen on ${config.listen} (${error.message}): the address is in ` +
                "use or not this machine's; set --listen (COHORT_LISTEN) to a free HOST:PORT",
              { cause: error },
            ),
          );
          return;
        }
        const listener = unixSocket !== undefined ? { path: unixSocket } : { port };
        stopBudgeting = budgetServerAt(readBudget, listener);
        connections = new ServerConnections(listener, {
          ...(security.tokenCheck === undefined ? {} : { onServer: keepEveryAuthorizationHeader }),
        });
        resolve(
          unixSocket !== undefined
            ? { host: config.listen, port: 0, address: config.listen }
            : { host: address!.host, port, address: `${address!.host}:${port}` },
        );
      });
    });

  /**
   * The data directory's identity, held against this server's settings (ForeignDataDirError when it is
   * another's). A single server writes one at its first start; a cluster node once etcd has confirmed the
   * cluster's uuid (ClusterWiring), so undefined is returned for a cluster node's new directory.
   */
  const checkedDataDirIdentity = (): DataDirIdentity | undefined => {
    const mode = cluster === undefined ? 'single' : 'cluster';
    const expected = {
      mode,
      clusterId: mode === 'cluster' ? config.clusterId : '',
      nodeId: config.nodeId,
    } as const;
    const found = readDataDirIdentity(config.dataDir);
    if (found !== undefined) {
      checkDataDirIdentity(config.dataDir, found, expected);
      return found;
    }
    if (cluster !== undefined) return undefined;
    const created: DataDirIdentity = { ...expected, clusterUuid: newClusterUuid() };
    writeDataDirIdentity(config.dataDir, created);
    return created;
  };

  const start = (): Promise<BoundAddress> => {
    if (closing !== undefined) return Promise.reject(new Error('the server is closed'));
    if (starting !== undefined) return starting;
    phase = 'starting';
    starting = (async () => {
      // First: one process per data directory (a second one appending to the same segments corrupts them).
      dataDirLock = DataDirLock.acquire(config.dataDir);
      // Then: whose data it holds. A directory of another cluster, node or mode is refused before any log
      // opens (docs/operations.md, "Cluster identity").
      const dataDirIdentity = checkedDataDirIdentity();
      // Recover every partition before accepting a call: a Fetch must never see a half-opened log. In
      // single-node mode this elects every __consumer_offsets partition here, which starts their loads.
      replicaManager.startup();
      awaitStartupLoads();
      const bound = await bind();
      localBroker = { nodeId: config.nodeId, host: bound.host, port: bound.port };
      replicaManager.setLocalBroker(localBroker);
      // Joins the cluster once the port is bound: the advertised address defaults to the bound one.
      cluster?.start(replicaManager, bound, dataDirIdentity);
      await admin?.start();
      // The page shows what happened before it was opened: the board keeps each group's recent history
      // (rebalances, departed members, lag samples; bounded) from now on (docs/live-page.md).
      board?.keepHistory();
      await kafka?.start();
      metrics.start();
      isBound = true;
      if (phase === 'starting') phase = 'loading';
      // The Broker (and TestClock) serve now; GroupCoordinator and the whole server once groups are loaded.
      setHealth(
        Object.keys(statusMap).filter((name) => name !== '' && name !== GROUP_COORDINATOR_SERVICE),
        'SERVING',
      );
      maybeServe();
      return bound;
    })();
    starting.catch((error: unknown) =>
      rejectReady(new Error('the server could not start', { cause: error })),
    );
    return starting;
  };

  let kafkaClosing: Promise<void> | undefined;
  const shutdown = (): Promise<void> =>
    new Promise<void>((resolve) => {
      setHealth(Object.keys(statusMap), 'NOT_SERVING');
      // Refuse new calls first (GOAWAY), so none reaches the coordinator after it has shut down; calls
      // already in flight keep their streams and get the answers shutdown() gives them.
      const grace = setTimeout(() => {
        logger.warn(
          { shutdownGraceMs },
          'calls still open after the grace period; closing their connections',
        );
        server.forceShutdown();
        resolve();
      }, shutdownGraceMs);
      server.tryShutdown(() => {
        clearTimeout(grace);
        resolve();
      });
      // Streams stay open as long as their clients like: end them (Watch streams have just been told
      // NOT_SERVING), and close each connection once its last call is done, without waiting for the
      // client to close its side.
      health.endWatches();
      streamingCalls.endAll();
      connections?.closeWhenDone();
      stopBudgeting?.();
      // Kafka connections end: whatever they had parked is released, nothing more is read from them.
      kafkaClosing = kafka?.close();
      coordinator.shutdown();
      heartbeatStreams.endAll();
      groupWatches.endAll();
      board?.close();
      groupFeed?.close();
      clusterBoard?.close();
      // Parked Fetches and Produces are answered now, so tryShutdown is not left waiting for them.
      replicaManager.shutdown();
    }).then(async () => {
      connections?.stop();
      await kafkaClosing;
      // Drained: leave the cluster (resign, revoke the lease: others take over now, not a TTL later).
      await cluster?.close();
      // Every log is fsynced and closed: a clean stop loses nothing, even with a relaxed flush policy.
      await replicaManager.close();
    });

  const close = (): Promise<void> => {
    if (closing !== undefined) return closing;
    phase = 'draining';
    rejectReady(new Error('the server closed before it was ready'));
    // A close during start waits for the bind to settle, so the port is released rather than orphaned.
    closing = (starting ?? Promise.resolve())
      .then(shutdown, shutdown)
      // Only once every log is closed: the next server may open the directory from here on.
      .finally(() => dataDirLock?.release())
      .finally(async () => {
        metrics.stop();
        // Last: /readyz keeps answering 503 and /metrics keeps working while the server drains.
        await admin?.close();
        phase = 'closed';
      });
    return closing;
  };

  return {
    start,
    ready: () => readyPromise,
    readinessProblem: () => readinessProblem(),
    onReadinessChange: (listener: () => void) => {
      readinessListeners.add(listener);
      return () => readinessListeners.delete(listener);
    },
    close,
    get phase() {
      return phase;
    },
    config,
    time,
    manualTime,
    testClock,
    coordinator,
    replicaManager,
    logger,
    metrics,
    get adminAddress() {
      return admin?.address;
    },
    get openPages() {
      return admin?.openPages ?? 0;
    },
    get kafkaAddress() {
      return kafka?.address;
    },
    get kafkaWireTrace() {
      return kafka?.wireTrace ?? [];
    },
    groupWatches,
  };
}
