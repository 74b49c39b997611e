import * as path from 'node:path';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation } from 'grpc-health-check';
import type { ServingStatusMap } from 'grpc-health-check';
import pino from 'pino';
import type { Logger } from 'pino';
import type { CohortConfig } from '../config';
import { parseListenAddress } from '../config';
import type { GroupConfig } from '../group/group-config';
import { GroupCoordinator } from '../group/group-coordinator';
import type { GroupCoordinatorService } from '../group/group-protocol';
import type { BrokerConfig } from '../log';
import { ReplicaFetcher, ReplicaManager } from '../log';
import { CONSUMER_OFFSETS_PARTITION_DIR, ConsumerOffsetsStore } from '../log/consumer-offsets';
import { DEFAULT_FLUSH_INTERVAL_MS } from '../log/storage';
import type { Time } from '../time';
import { ManualTime, SYSTEM_TIME } from '../time';
import { SystemTimer } from '../timer';
import { BrokerLeaderEndpoint } from './broker-leader-endpoint';
import { brokerService } from './broker-service';
import { groupCoordinatorService } from './group-coordinator-service';
import { loadCohortProtos } from './load-protos';
import { testClockService } from './test-clock-service';
import { guardServiceDefinition } from './undecodable-request';

export const GROUP_COORDINATOR_SERVICE = 'cohort.v1.GroupCoordinator';
export const TEST_CLOCK_SERVICE = 'cohort.v1.TestClock';
export const BROKER_SERVICE = 'cohort.v1.Broker';
/** Kafka's replica.fetch.wait.max.ms and the follower's metadata refresh, before the lag time caps them. */
const FOLLOWER_FETCH_WAIT_MAX_MS = 500;
const FOLLOWER_METADATA_REFRESH_MS = 1_000;
/** How long `close()` lets in-flight calls finish before cutting every connection. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 5_000;

export type CoordinatorFactory = (config: GroupConfig, time: Time) => GroupCoordinatorService;

export interface CreateServerOptions {
  /** The server's clock. Default: a fresh ManualTime with `manualClock`, else the system clock. */
  readonly time?: Time;
  /** Default: the real GroupCoordinator, logging failures of its timer tasks. Tests inject fakes here. */
  readonly coordinatorFactory?: CoordinatorFactory;
  /** Default: pino to stdout at `config.logLevel`. */
  readonly logger?: Logger;
  readonly shutdownGraceMs?: number;
}

export interface BoundAddress {
  readonly host: string;
  /** The real port, also when `listen` asked for port 0. */
  readonly port: number;
}

/** One cohort server. Tests, main.ts and embedders all build it with `createServer`. */
export interface CohortServer {
  /** Binds `config.listen` and starts serving; health turns SERVING. */
  start(): Promise<BoundAddress>;
  /**
   * Health turns NOT_SERVING, new calls are refused, every parked call is answered
   * (`coordinator.shutdown()`), and in-flight calls get `shutdownGraceMs` to finish before connections
   * are cut. Idempotent: every call returns the same promise.
   */
  close(): Promise<void>;
  readonly config: CohortConfig;
  readonly time: Time;
  /** The clock TestClock moves, when `config.manualClock`; tests may also advance it directly. */
  readonly manualTime: ManualTime | undefined;
  readonly coordinator: GroupCoordinatorService;
  /** The log: topics, Produce, Fetch and replication. */
  readonly replicaManager: ReplicaManager;
  readonly logger: Logger;
}

function groupConfigOf(config: CohortConfig): GroupConfig {
  return Object.freeze({
    groupMinSessionTimeoutMs: config.groupMinSessionTimeoutMs,
    groupMaxSessionTimeoutMs: config.groupMaxSessionTimeoutMs,
    groupInitialRebalanceDelayMs: config.groupInitialRebalanceDelayMs,
    groupMaxSize: config.groupMaxSize,
    offsetMetadataMaxBytes: config.offsetMetadataMaxBytes,
    maxGroups: config.maxGroups,
    memberMetadataMaxBytes: config.memberMetadataMaxBytes,
  });
}

function brokerConfigOf(config: CohortConfig): BrokerConfig {
  return Object.freeze({
    nodeId: config.nodeId,
    isFollower: config.replicaOf !== '',
    followers: config.followers,
    minInsyncReplicas: config.minInsyncReplicas,
    replicaLagTimeMaxMs: config.replicaLagTimeMaxMs,
    dataDir: config.dataDir,
    logConfig: Object.freeze({
      segmentBytes: config.logSegmentBytes,
      retentionMs: config.logRetentionMs,
      retentionBytes: config.logRetentionBytes,
      flushMessages: config.logFlushMessages,
      flushIntervalMs:
        config.logFlushIntervalMs === -1 ? DEFAULT_FLUSH_INTERVAL_MS : config.logFlushIntervalMs,
    }),
  });
}

export function createServer(config: CohortConfig, options: CreateServerOptions = {}): CohortServer {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const time = options.time ?? (config.manualClock ? new ManualTime() : SYSTEM_TIME);
  const manualTime = config.manualClock ? time : undefined;
  if (manualTime !== undefined && !(manualTime instanceof ManualTime)) {
    throw new TypeError('manualClock needs a ManualTime: TestClock can only move a clock that moves by hand');
  }
  const address = parseListenAddress(config.listen);
  if (address === undefined) throw new TypeError(`listen (${config.listen}) is not HOST:PORT`);
  const shutdownGraceMs = options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;

  // Group state is durable, as Kafka keeps it: offsets and group metadata are records of the compacted
  // __consumer_offsets-0 under dataDir (docs/storage.md, "Durable group state"), which start() replays.
  let groupState:
    { readonly store: ConsumerOffsetsStore; readonly coordinator: GroupCoordinator } | undefined;
  // A timer task that throws has broken an invariant of one group; log it with its stack and keep
  // serving the others, as Kafka's timer threads do, rather than let the timer rethrow it into the loop.
  const defaultFactory: CoordinatorFactory = (groupConfig, clock) => {
    const store = new ConsumerOffsetsStore(path.join(config.dataDir, CONSUMER_OFFSETS_PARTITION_DIR), {
      time: clock,
      onCompactionError: (error) => logger.warn({ err: error }, '__consumer_offsets compaction failed'),
    });
    const groupCoordinator = new GroupCoordinator(groupConfig, clock, {
      offsetStore: store,
      metadataStore: store,
      onTimerError: (error) => logger.error({ err: error }, 'a group timer task failed'),
      listener: {
        onGroupStoreFailed: (groupId, generationId, error) =>
          logger.warn({ err: error, groupId, generationId }, 'group metadata could not be stored'),
      },
    });
    groupState = { store, coordinator: groupCoordinator };
    return groupCoordinator;
  };
  const coordinator = (options.coordinatorFactory ?? defaultFactory)(groupConfigOf(config), time);
  const replicaManager = new ReplicaManager(brokerConfigOf(config), {
    time,
    listener: {
      onIsrChange: (topic, partition, isr) => logger.info({ topic, partition, isr }, 'ISR changed'),
      onError: (error, what) => logger.error({ err: error }, what),
    },
  });
  // A follower's waits must stay well inside the lag time, or it would leave the ISR while idle.
  const followerWaitCapMs = Math.max(1, Math.floor(config.replicaLagTimeMaxMs / 2));
  let fetcher: ReplicaFetcher | undefined;
  let fetcherTimer: SystemTimer | undefined;
  const protos = loadCohortProtos();
  const onEncodeFailure = (error: unknown, method: string): void => {
    logger.error({ err: error, method }, 'a response could not be encoded');
  };

  const server = new Server();
  const services = [GROUP_COORDINATOR_SERVICE, BROKER_SERVICE];
  server.addService(
    guardServiceDefinition(protos.groupCoordinator, onEncodeFailure),
    groupCoordinatorService(coordinator, logger),
  );
  server.addService(
    guardServiceDefinition(protos.broker, onEncodeFailure),
    brokerService(replicaManager, logger),
  );
  if (manualTime !== undefined) {
    services.push(TEST_CLOCK_SERVICE);
    server.addService(
      guardServiceDefinition(protos.testClock, onEncodeFailure),
      testClockService(manualTime, logger),
    );
  }

  // '' is the whole server, as grpc-health-probe and Kubernetes ask by default.
  const statusMap: ServingStatusMap = { '': 'NOT_SERVING' };
  for (const name of services) statusMap[name] = 'NOT_SERVING';
  const health = new HealthImplementation(statusMap);
  health.addToServer(server);
  const setHealth = (status: 'SERVING' | 'NOT_SERVING'): void => {
    for (const name of Object.keys(statusMap)) health.setStatus(name, status);
  };
  // Reflection describes only what this server serves (no TestClock without --manual-clock).
  new ReflectionService(protos.packageDefinition, { services }).addToServer(server);

  let starting: Promise<BoundAddress> | undefined;
  let closing: Promise<void> | undefined;

  /**
   * Opens __consumer_offsets-0 (a data directory that cannot be used fails start()) and replays it in the
   * background: the coordinator answers COORDINATOR_LOAD_IN_PROGRESS until it is done, so a large log delays
   * no health check and no other service.
   */
  const startGroupState = (): void => {
    if (groupState === undefined) return;
    groupState.store.open();
    const loading = groupState.store.load();
    groupState.coordinator.load(loading).then(
      async () => logger.debug({ ...(await loading) }, 'group state loaded'),
      (error: unknown) =>
        logger.error({ err: error }, 'group state could not be loaded; groups are unavailable'),
    );
  };
  const closeGroupState = (): Promise<void> => groupState?.store.close() ?? Promise.resolve();

  const start = (): Promise<BoundAddress> => {
    if (closing !== undefined) return Promise.reject(new Error('the server is closed'));
    if (starting === undefined) {
      try {
        startGroupState();
      } catch (error) {
        starting = Promise.reject(error);
      }
    }
    starting ??= new Promise<BoundAddress>((resolve, reject) => {
      // Recover every partition before accepting a call: a Fetch must never see a half-opened log.
      replicaManager.startup();
      server.bindAsync(config.listen, ServerCredentials.createInsecure(), (error, port) => {
        if (error !== null) {
          reject(error);
          return;
        }
        replicaManager.setLocalBroker({ nodeId: config.nodeId, host: address.host, port });
        if (config.replicaOf !== '') {
          fetcherTimer = new SystemTimer({ name: 'replica-fetcher', time });
          fetcher = new ReplicaFetcher(
            config.nodeId,
            replicaManager,
            new BrokerLeaderEndpoint(config.replicaOf),
            {
              time,
              timer: fetcherTimer,
              fetchMaxWaitMs: Math.min(FOLLOWER_FETCH_WAIT_MAX_MS, followerWaitCapMs),
              metadataRefreshIntervalMs: Math.min(FOLLOWER_METADATA_REFRESH_MS, followerWaitCapMs),
              onError: (err, what) => logger.warn({ err, leader: config.replicaOf }, what),
            },
          );
          fetcher.start();
        }
        setHealth('SERVING');
        resolve({ host: address.host, port });
      });
    });
    return starting;
  };

  const shutdown = (): Promise<void> =>
    new Promise<void>((resolve) => {
      setHealth('NOT_SERVING');
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
      coordinator.shutdown();
      // Parked Fetches and Produces are answered now, so tryShutdown is not left waiting for them.
      replicaManager.shutdown();
      void fetcher?.stop();
    }).then(async () => {
      await fetcher?.stop();
      fetcherTimer?.shutdown();
      // Every log is fsynced and closed: a clean stop loses nothing, even with a relaxed flush policy.
      await replicaManager.close();
    });

  const close = (): Promise<void> => {
    // A close during start waits for the bind to settle, so the port is released rather than orphaned.
    closing ??= (starting ?? Promise.resolve()).then(shutdown, shutdown).finally(closeGroupState);
    return closing;
  };

  return { start, close, config, time, manualTime, coordinator, replicaManager, logger };
}
