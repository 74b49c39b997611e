import type { Logger } from 'pino';
import {
  ClusterIdentityError,
  clusterIdentityKey,
  establishClusterIdentity,
} from '../cluster/cluster-identity';
import { ClusterNode, type ClusterCreateTopicOutcome, type LeadershipChange } from '../cluster/cluster-node';
import { EtcdMetadataStore, type EtcdClientTls, type EtcdCredentials } from '../cluster/etcd-metadata-store';
import { MetadataStoreError, type MetadataStore } from '../cluster/metadata-store';
import {
  encodeRecoveryReport,
  MetadataRecoveryConflictError,
  planMetadataRecovery,
  readRecoveryReports,
  recoveryReportKey,
  writeMetadataRecovery,
} from '../cluster/metadata-recovery';
import type { CohortConfig } from '../config';
import { ErrorCode } from '../errors';
import { CONSUMER_OFFSETS_TOPIC } from '../log/consumer-offsets';
import {
  DEFAULT_NUM_PARTITIONS,
  DEFAULT_REPLICATION_FACTOR,
  DEFAULT_TOPIC_SETTING,
  MAX_PARTITIONS_PER_TOPIC,
  RESERVED_TOPIC_NAMES,
  type BrokerService,
  type CreatableTopic,
  type CreatableTopicResult,
  type CreateTopicsRequest,
  type CreateTopicsResponse,
} from '../log';
import type {
  IsrChangeProposer,
  LocalReplicaState,
  IsrChangeResult,
  LeadershipGuard,
  PartitionLeadership,
  PartitionRoleTarget,
} from '../log/partition-roles';
import { newClusterUuid, type DataDirIdentity } from '../log/storage';
import type { Time } from '../time';
import { SystemTimer, TimerAction } from '../timer';

/**
 * `ensureOffsetsTopic`'s answer: the topic was in this node's view (`exists`; also when another node
 * created it first), this node created it (`created`), or it could not be created now (`unavailable`: no
 * session or view yet, etcd did not answer, no live node; retried by the next caller).
 */
export type OffsetsTopicOutcome = 'exists' | 'created' | 'unavailable';

/** How many partition names one leadership log line lists per kind, at most. */
const LOGGED_PARTITIONS_MAX = 5;

/** Why a new node waits: etcd lost its cluster's metadata, and the others are waiting for a recovery. */
const RECOVERING =
  "etcd has lost this cluster's metadata and its nodes are waiting for a recovery: this node, new (its " +
  'data directory has no identity), waits with them rather than create a new cluster (docs/operations.md, ' +
  '"When etcd loses the cluster\'s metadata")';

/** The first wait before asking etcd for the cluster's identity again; it doubles up to the maximum. */
const IDENTITY_RETRY_MS = 500;
const IDENTITY_RETRY_MAX_MS = 8_000;

export interface ClusterWiringOptions {
  readonly time: Time;
  readonly logger: Logger;
  /** Called when the node's readiness may have changed (registered, first view applied, session lost). */
  readonly onReadinessChange?: () => void;
  /**
   * Called right after each cluster view is applied to the log layer, and after the session is lost
   * (the live page's cluster panel reads the view again). Must be cheap: it runs inside the change.
   */
  readonly onViewApplied?: () => void;
  /** The metadata store; an EtcdMetadataStore on `config.etcdEndpoints` by default (tests give a fake). */
  readonly store?: MetadataStore;
  /**
   * Called once when the node must not go on: etcd's cluster is another one than its data directory's
   * (ClusterIdentityError). The server stops; main.ts exits with 1.
   */
  readonly onFatalError?: (error: Error) => void;
  /**
   * Writes the data directory's identity, durably, once etcd confirmed the cluster's uuid for a directory
   * that had none (create-server writes `meta.properties`). Throwing is fatal.
   */
  readonly writeDataDirIdentity?: (identity: DataDirIdentity) => void;
  /**
   * Every partition replica the data directory holds (ReplicaManager.describeLocalReplicas), reported to
   * etcd while it has lost the cluster's metadata, for `recoverMetadata`. None by default.
   */
  readonly localReplicas?: () => Promise<LocalReplicaState[]>;
  /** The cluster uuid of a cluster created by this node; random by default (tests fix it). */
  readonly newClusterUuid?: () => string;
  /** What that EtcdMetadataStore reaches a locked-down etcd with, read from the configuration's files. */
  readonly etcd?: { readonly tls?: EtcdClientTls; readonly credentials?: EtcdCredentials };
}

/**
 * The server's side of cluster mode (`--etcd-endpoints`): one `ClusterNode`, created once the gRPC port
 * is bound (the advertised address defaults to the listen host and the bound port), driving the log
 * layer's `PartitionRoleTarget`; `CreateTopics` written to etcd through it; `/readyz` not ready until
 * the node's session is registered and its first view applied; logs for the session, the controller
 * role and this node's leadership, one line per applied view, not one per partition.
 *
 * `guard` and `isrChangeProposer` exist from construction, before the node does (the log layer is built
 * first): until `start()`, the guard says inactive and proposals fail without a request.
 */
export class ClusterWiring {
  readonly guard: LeadershipGuard;
  readonly isrChangeProposer: IsrChangeProposer;
  private readonly config: CohortConfig;
  private readonly time: Time;
  private readonly logger: Logger;
  private readonly onReadinessChange: () => void;
  private readonly onViewApplied: () => void;
  private readonly onFatalError: (error: Error) => void;
  private readonly newClusterUuid: () => string;
  private readonly writeDataDirIdentity: (identity: DataDirIdentity) => void;
  private readonly store: MetadataStore;
  private readonly timer: SystemTimer;
  private node: ClusterNode | undefined;
  private isStarted = false;
  /**
   * Why etcd's cluster identity does not let the node in, while it does not: etcd unreachable at start,
   * or etcd without the cluster's metadata. Undefined once confirmed and while it holds.
   */
  private identityProblem: string | undefined;
  /** The identity retry under way (etcd unreachable, or etcd lost the metadata), cancelled on close. */
  private identityRetry: TimerAction | undefined;
  private readonly localReplicas: () => Promise<LocalReplicaState[]>;
  /**
   * The failures of etcd logged at warn since it last answered: while it stays down, the same failure
   * every retry goes to debug (with its stack), not a warn line every half second.
   */
  private readonly loggedStoreFailures = new Set<string>();
  /** The report of this node's replicas for a recovery: written once per loss of the metadata. */
  private recoveryReport: 'none' | 'writing' | 'written' = 'none';
  private closing: Promise<void> | undefined;
  /** The creation of __consumer_offsets under way: concurrent callers share it. */
  private ensuringOffsetsTopic: Promise<OffsetsTopicOutcome> | undefined;
  /** The live-node count last logged as too few for __consumer_offsets, so the warning is not repeated. */
  private offsetsTopicWaitLoggedFor: number | undefined;

  constructor(config: CohortConfig, options: ClusterWiringOptions) {
    this.config = config;
    this.time = options.time;
    this.logger = options.logger.child({ clusterId: config.clusterId, nodeId: config.nodeId });
    this.onReadinessChange = options.onReadinessChange ?? (() => undefined);
    this.onViewApplied = options.onViewApplied ?? (() => undefined);
    this.onFatalError = options.onFatalError ?? (() => undefined);
    this.newClusterUuid = options.newClusterUuid ?? newClusterUuid;
    this.writeDataDirIdentity = options.writeDataDirIdentity ?? (() => undefined);
    this.localReplicas = options.localReplicas ?? (() => Promise.resolve([]));
    this.store = options.store ?? this.etcdStore(options.etcd ?? {});
    this.timer = new SystemTimer({ name: 'cluster', time: options.time });
    this.guard = { isActive: () => this.node?.guard.isActive() ?? false };
    this.isrChangeProposer = {
      proposeIsr: (topic, partitionIndex, leaderEpoch, partitionEpoch, isr): Promise<IsrChangeResult> =>
        this.node === undefined || this.closing !== undefined
          ? Promise.resolve({ kind: 'failed', error: new Error('the cluster node is not running') })
          : this.node.isrChangeProposer.proposeIsr(topic, partitionIndex, leaderEpoch, partitionEpoch, isr),
    };
  }

  /**
   * The etcd client, with its TLS and user when the configuration has them. Each new token is logged
   * (after the first, etcd stopped accepting the last one: it expired, etcd restarted; with etcd's default
   * TTL, at most a line per node every five minutes). etcd without authentication, while cohort has a user
   * for it, is a warning: the user protects nothing there.
   */
  private etcdStore(security: NonNullable<ClusterWiringOptions['etcd']>): MetadataStore {
    let tokens = 0;
    const etcdUsername = security.credentials?.username;
    return new EtcdMetadataStore({
      endpoints: this.config.etcdEndpoints,
      time: this.time,
      ...(security.tls === undefined ? {} : { tls: security.tls }),
      ...(security.credentials === undefined ? {} : { credentials: security.credentials }),
      onAuthentication: (outcome) => {
        if (outcome === 'authDisabled') {
          this.logger.warn(
            { etcdUsername },
            'etcd has authentication disabled: cohort calls it without a token, and anyone who reaches ' +
              'etcd can rewrite the cluster (docs/operations.md, "Locking etcd down")',
          );
        } else if (++tokens === 1) {
          this.logger.info({ etcdUsername }, 'authenticated to etcd');
        } else {
          this.logger.info({ etcdUsername, tokens }, 'etcd refused the last token: authenticated again');
        }
      },
    });
  }

  /** The address this node registers: `--advertised-address`, else the listen host with the bound port. */
  advertisedAddressOf(bound: { readonly host: string; readonly port: number }): string {
    return this.config.advertisedAddress !== ''
      ? this.config.advertisedAddress
      : `${bound.host}:${bound.port}`;
  }

  /**
   * Joins the cluster: confirms the cluster's identity with etcd (`establishClusterIdentity`, against
   * `localIdentity`, the data directory's, undefined when it has none yet), writes the directory's
   * identity if it had none, then registers the session, campaigns for controller and starts applying
   * the view. etcd unreachable: asks again with a backoff. etcd without the cluster's metadata while the
   * directory names a cluster: waits unready, asking again, and says why. etcd's cluster another one than
   * the directory's: `onFatalError`.
   */
  start(
    target: PartitionRoleTarget,
    bound: { readonly host: string; readonly port: number },
    localIdentity?: DataDirIdentity,
  ): void {
    if (this.isStarted) throw new Error('ClusterWiring.start: already started');
    this.isStarted = true;
    if (this.closing !== undefined) return;
    this.identityProblem = 'not yet registered in the cluster: confirming the cluster identity with etcd';
    let retryMs = IDENTITY_RETRY_MS;
    const attempt = (): void => {
      this.identityRetry = undefined;
      if (this.closing !== undefined) return;
      establishClusterIdentity(
        this.store,
        this.config.clusterId,
        localIdentity?.clusterUuid,
        this.newClusterUuid,
      )
        .then(
          (outcome) => {
            if (this.closing !== undefined) return;
            switch (outcome.outcome) {
              case 'confirmed':
                if (localIdentity === undefined) {
                  try {
                    this.writeDataDirIdentity({
                      mode: 'cluster',
                      clusterId: this.config.clusterId,
                      clusterUuid: outcome.clusterUuid,
                      nodeId: this.config.nodeId,
                    });
                  } catch (error) {
                    this.fail(
                      new Error('the data directory identity could not be written', { cause: error }),
                    );
                    return;
                  }
                }
                this.logger.info(
                  { clusterUuid: outcome.clusterUuid, created: outcome.isCreated },
                  outcome.isCreated ? 'cluster identity created in etcd' : 'cluster identity confirmed',
                );
                this.identityProblem = undefined;
                this.startNode(target, bound, outcome.clusterUuid);
                return;
              case 'missing':
                this.noteIdentityError(
                  new ClusterIdentityError(this.config.clusterId, outcome.localUuid, undefined),
                );
                break;
              case 'recovering':
                if (this.identityProblem !== RECOVERING) {
                  this.identityProblem = RECOVERING;
                  this.logger.error(RECOVERING);
                  this.onReadinessChange();
                }
                break;
              case 'foreign':
                this.noteIdentityError(
                  new ClusterIdentityError(this.config.clusterId, outcome.localUuid, outcome.etcdUuid),
                );
                return;
            }
            retryAfter();
          },
          (error: unknown) => {
            if (this.closing !== undefined) return;
            if (!(error instanceof MetadataStoreError)) {
              this.fail(error instanceof Error ? error : new Error(String(error)));
              return;
            }
            this.noteStoreFailure(error, 'cluster: etcd did not answer for the cluster identity; retrying');
            retryAfter();
          },
        )
        // A bug above must not pass silently as a node that never joins.
        .catch((error: unknown) => this.fail(error instanceof Error ? error : new Error(String(error))));
    };
    const retryAfter = (): void => {
      const retry = new TimerAction(attempt);
      retry.delayMs = retryMs;
      retryMs = Math.min(retryMs * 2, IDENTITY_RETRY_MAX_MS);
      this.identityRetry = retry;
      this.timer.add(retry);
    };
    attempt();
  }

  /**
   * A failed etcd call the node recovers from by retrying: one warn line (its message, no stack) for each
   * kind of failure until etcd answers again, debug (with the stack) while it lasts.
   */
  private noteStoreFailure(error: unknown, what: string): void {
    const message = error instanceof Error ? error.message : String(error);
    if (this.loggedStoreFailures.has(message)) {
      this.logger.debug({ err: error }, what);
      return;
    }
    this.loggedStoreFailures.add(message);
    this.logger.warn({ error: message }, `${what} (logged again when it changes or etcd answers)`);
  }

  /**
   * etcd's identity does not let the node in. Lost metadata: logged at error once until it comes back,
   * readiness says why, the node keeps asking. Another cluster's: fatal.
   */
  private noteIdentityError(error: ClusterIdentityError): void {
    if (error.foundUuid !== undefined) {
      this.fail(error);
      return;
    }
    if (this.identityProblem !== error.message) {
      this.identityProblem = error.message;
      this.logger.error({ clusterUuid: error.expectedUuid }, error.message);
      this.onReadinessChange();
    }
    this.reportForRecovery(error.expectedUuid);
  }

  /**
   * Writes `recovery/<node-id>`: every replica this node holds, with its last leader epoch and log end
   * offset, for `recoverMetadata` (on any node) to rebuild the metadata from. Once per loss; a write that
   * fails is tried again with the next retry of the identity.
   */
  private reportForRecovery(clusterUuid: string): void {
    if (this.recoveryReport !== 'none' || this.closing !== undefined) return;
    this.recoveryReport = 'writing';
    const nodeId = this.config.nodeId;
    this.localReplicas()
      .then((replicas) =>
        this.store
          .put(
            recoveryReportKey(this.config.clusterId, nodeId),
            encodeRecoveryReport({ nodeId, clusterUuid, replicas }),
          )
          .then(() => replicas.length),
      )
      .then(
        (replicaCount) => {
          if (this.recoveryReport !== 'writing') return;
          this.recoveryReport = 'written';
          this.logger.info(
            { replicas: replicaCount },
            "reported this node's replicas for a metadata recovery",
          );
        },
        (error: unknown) => {
          if (this.recoveryReport === 'writing') this.recoveryReport = 'none';
          this.logger.warn(
            { err: error },
            "could not report this node's replicas for a metadata recovery; retrying",
          );
        },
      );
  }

  /**
   * Rebuilds the cluster's metadata in etcd from the nodes' reports, after etcd lost it
   * (`metadata-recovery.ts`): only while etcd has no identity for the cluster, only once every node in
   * `nodes` (the whole cluster, as the operator knows it) has reported, and only if no other node did.
   * Any node can run it; the nodes then register and the controller elects leaders one epoch up.
   */
  async recoverMetadata(
    nodes: readonly number[],
  ): Promise<
    | { readonly outcome: 'recovered'; readonly topics: number; readonly partitions: number }
    | { readonly outcome: 'refused'; readonly problems: readonly string[] }
  > {
    const clusterId = this.config.clusterId;
    const { kv } = await this.store.get(clusterIdentityKey(clusterId));
    if (kv !== undefined) {
      return {
        outcome: 'refused',
        problems: [`etcd holds cluster ${clusterId}'s identity: nothing to recover`],
      };
    }
    const { reports, problems, readAs } = await readRecoveryReports(this.store, clusterId);
    if (problems.length > 0) return { outcome: 'refused', problems };
    const planned = planMetadataRecovery(reports, nodes);
    if ('problems' in planned) return { outcome: 'refused', problems: planned.problems };
    const { plan } = planned;
    try {
      await writeMetadataRecovery(this.store, clusterId, plan, readAs);
    } catch (error) {
      if (error instanceof MetadataRecoveryConflictError)
        return { outcome: 'refused', problems: [error.message] };
      throw error;
    }
    this.logger.warn(
      { nodes, topics: plan.topics.size, partitions: plan.states.size, clusterUuid: plan.clusterUuid },
      "cluster metadata recovered from the nodes' logs",
    );
    return { outcome: 'recovered', topics: plan.topics.size, partitions: plan.states.size };
  }

  private fail(error: Error): void {
    if (this.closing !== undefined) return;
    this.identityProblem = error.message;
    this.logger.fatal({ err: error }, 'cluster: this node cannot join the cluster');
    this.onReadinessChange();
    this.onFatalError(error);
  }

  private startNode(
    target: PartitionRoleTarget,
    bound: { readonly host: string; readonly port: number },
    clusterUuid: string,
  ): void {
    const advertisedAddress = this.advertisedAddressOf(bound);
    const onViewApplied = this.onViewApplied;
    const node = new ClusterNode({
      store: this.store,
      time: this.time,
      timer: this.timer,
      clusterId: this.config.clusterId,
      clusterUuid,
      nodeId: this.config.nodeId,
      advertisedAddress,
      // The target as is, told afterwards that its view moved.
      target: {
        applyClusterMetadata: (update) => {
          // etcd answered (a view comes from a read or a watch): its next failure is news again.
          this.loggedStoreFailures.clear();
          target.applyClusterMetadata(update);
          onViewApplied();
        },
        resignLeadership: () => {
          target.resignLeadership();
          onViewApplied();
        },
      },
      sessionTimeoutMs: this.config.nodeSessionTimeoutMs,
      uncleanLeaderElection: this.config.uncleanLeaderElection,
      onError: (error) => {
        if (error instanceof ClusterIdentityError) this.noteIdentityError(error);
        else this.noteStoreFailure(error, 'cluster: a metadata store call failed; retrying');
      },
    });
    this.node = node;
    node.on('sessionRegistered', ({ leaseId, incarnation }) => {
      if (this.identityProblem !== undefined) {
        this.logger.info("etcd holds the cluster's metadata again: the node is registered");
        this.identityProblem = undefined;
      }
      this.recoveryReport = 'none';
      this.loggedStoreFailures.clear();
      this.logger.info({ leaseId, incarnation, advertisedAddress }, 'cluster session registered');
    });
    node.on('sessionLost', ({ reason, incarnation }) => {
      this.logger.warn(
        { reason, incarnation },
        'cluster session lost: leading nothing until the node is registered again',
      );
      this.onReadinessChange();
    });
    node.on('ready', () => {
      this.logger.info({ liveNodes: node.metadata?.liveNodes.length }, 'cluster view applied');
      this.onReadinessChange();
    });
    node.on('becameController', ({ controllerEpoch }) =>
      this.logger.info({ controllerEpoch }, 'became the cluster controller'),
    );
    node.on('resignedController', ({ controllerEpoch, reason }) =>
      this.logger.info({ controllerEpoch, reason }, 'resigned as the cluster controller'),
    );
    node.on('leadershipChanged', (change) => this.logLeadership(change));
    node.start();
  }

  /** The controller's node id as this node's last cluster view names it (NO_LEADER_ID: none); undefined before. */
  get controllerId(): number | undefined {
    return this.node?.metadata?.controllerId;
  }

  /** The live nodes (id, host, port) of this node's last cluster view; none before its first. */
  get liveNodes(): readonly { readonly nodeId: number; readonly host: string; readonly port: number }[] {
    return this.node?.metadata?.liveNodes ?? [];
  }

  /** Why the node is not ready, or undefined once registered with its view applied. */
  readinessProblem(): string | undefined {
    if (this.identityProblem !== undefined) return this.identityProblem;
    const node = this.node;
    if (node === undefined) return 'not yet registered in the cluster';
    if (node.isReady()) return undefined;
    return node.guard.isActive()
      ? 'waiting for the first cluster view'
      : 'not registered in the cluster (etcd cannot be reached, or the session is being renewed)';
  }

  /** The Broker service with CreateTopics going to the cluster; everything else to the log layer as is. */
  brokerWithClusterTopics(broker: BrokerService): BrokerService {
    return {
      createTopics: (request) => this.createTopics(request),
      metadata: broker.metadata.bind(broker),
      produce: broker.produce.bind(broker),
      fetch: broker.fetch.bind(broker),
      listOffsets: broker.listOffsets.bind(broker),
      offsetForLeaderEpoch: broker.offsetForLeaderEpoch.bind(broker),
    };
  }

  /**
   * Kafka's CreateTopics on a ZooKeeper-era broker: each topic's assignment written to etcd (by any
   * node; the controller writes the partition states), answered once written. The replicas' local logs
   * are created by the log layer when the view names them.
   */
  async createTopics(request: CreateTopicsRequest): Promise<CreateTopicsResponse> {
    const counts = new Map<string, number>();
    for (const topic of request.topics) counts.set(topic.name, (counts.get(topic.name) ?? 0) + 1);
    const topics: CreatableTopicResult[] = [];
    // One after the other, in the request's order, as the single-node path does.
    for (const topic of request.topics) {
      topics.push(
        (counts.get(topic.name) ?? 0) > 1
          ? result(topic.name, ErrorCode.INVALID_REQUEST, `topic ${topic.name} appears more than once`)
          : await this.createTopic(topic),
      );
    }
    return { topics };
  }

  private async createTopic(topic: CreatableTopic): Promise<CreatableTopicResult> {
    const { name } = topic;
    const node = this.node;
    if (node === undefined || this.closing !== undefined) {
      return result(
        name,
        ErrorCode.REQUEST_TIMED_OUT,
        'this node is not in the cluster yet, or shutting down',
      );
    }
    if (RESERVED_TOPIC_NAMES.has(name)) {
      return result(name, ErrorCode.INVALID_TOPIC_EXCEPTION, `${name} is reserved for the server's own use`);
    }
    const partitions =
      topic.numPartitions === DEFAULT_TOPIC_SETTING ? DEFAULT_NUM_PARTITIONS : topic.numPartitions;
    if (Number.isSafeInteger(partitions) && partitions > MAX_PARTITIONS_PER_TOPIC) {
      return result(
        name,
        ErrorCode.INVALID_PARTITIONS,
        `at most ${MAX_PARTITIONS_PER_TOPIC} partitions per topic, got ${partitions}`,
      );
    }
    const replicationFactor =
      topic.replicationFactor === DEFAULT_TOPIC_SETTING
        ? DEFAULT_REPLICATION_FACTOR
        : topic.replicationFactor;
    return resultOf(name, await node.createTopic(name, partitions, replicationFactor));
  }

  /**
   * Creates the internal topic `__consumer_offsets` if this node's view of the cluster does not have it,
   * as Kafka creates its offsets topic on the first FindCoordinator that needs it:
   * `--offsets-topic-num-partitions` partitions of `--offsets-topic-replication-factor` replicas, through
   * the same fenced creation as CreateTopics (only the reserved-name check is skipped: this is the
   * server's own creation). While fewer nodes are live than that factor the topic is not created and the
   * caller answers COORDINATOR_NOT_AVAILABLE, as Kafka does: a topic created with fewer replicas would keep
   * them after the other nodes start, and the groups' offsets would have less redundancy than configured
   * for the life of the cluster. Once created, the topic's count and replicas are the cluster's, whatever a
   * later node is configured with. Concurrent calls share one creation. The new partitions reach this
   * node's ReplicaManager with the next view; until then the caller answers COORDINATOR_NOT_AVAILABLE and
   * clients retry.
   */
  ensureOffsetsTopic(): Promise<OffsetsTopicOutcome> {
    const node = this.node;
    if (node === undefined || this.closing !== undefined) return Promise.resolve('unavailable');
    if (node.metadata?.partitions.some((p) => p.topic === CONSUMER_OFFSETS_TOPIC) === true) {
      return Promise.resolve('exists');
    }
    this.ensuringOffsetsTopic ??= this.createOffsetsTopic(node).finally(() => {
      this.ensuringOffsetsTopic = undefined;
    });
    return this.ensuringOffsetsTopic;
  }

  private async createOffsetsTopic(node: ClusterNode): Promise<OffsetsTopicOutcome> {
    const liveNodes = node.metadata?.liveNodes.length ?? 0;
    if (liveNodes === 0) return 'unavailable';
    const numPartitions = this.config.offsetsTopicNumPartitions;
    const replicationFactor = this.config.offsetsTopicReplicationFactor;
    if (liveNodes < replicationFactor) {
      this.warnTooFewNodesForOffsetsTopic(liveNodes, replicationFactor);
      return 'unavailable';
    }
    const outcome = await node.createTopic(CONSUMER_OFFSETS_TOPIC, numPartitions, replicationFactor);
    switch (outcome.outcome) {
      case 'created':
        this.logger.info({ numPartitions, replicationFactor }, `${CONSUMER_OFFSETS_TOPIC} created`);
        return 'created';
      case 'exists':
        return 'exists';
      case 'unavailable':
        this.logger.debug({ reason: outcome.reason }, `${CONSUMER_OFFSETS_TOPIC} could not be created now`);
        return 'unavailable';
      default:
        // The configuration was validated: a refusal here is a broken invariant, not a retriable state.
        this.logger.error(
          { outcome: outcome.outcome, reason: outcome.reason, numPartitions, replicationFactor },
          `${CONSUMER_OFFSETS_TOPIC} cannot be created`,
        );
        return 'unavailable';
    }
  }

  /**
   * Why a missing `__consumer_offsets` cannot be created now, for FindCoordinator's error message: fewer
   * live nodes than its replication factor. Undefined when that is not the reason. Asked only while the
   * topic is missing (once it exists, its replicas are fixed and a node down is the ISR's business).
   */
  offsetsTopicWait(): string | undefined {
    const liveNodes = this.node?.metadata?.liveNodes.length ?? 0;
    const replicationFactor = this.config.offsetsTopicReplicationFactor;
    if (liveNodes === 0 || liveNodes >= replicationFactor) return undefined;
    return (
      `${liveNodes} live ${liveNodes === 1 ? 'node' : 'nodes'}, fewer than --offsets-topic-replication-factor ` +
      `${replicationFactor}: groups have no coordinator until enough nodes are up`
    );
  }

  /**
   * Says once per live-node count, not on every FindCoordinator a retrying client sends, why the groups
   * have no coordinator yet: while a cluster starts this is expected, and it stops when enough nodes are up.
   */
  private warnTooFewNodesForOffsetsTopic(liveNodes: number, replicationFactor: number): void {
    if (this.offsetsTopicWaitLoggedFor === liveNodes) return;
    this.offsetsTopicWaitLoggedFor = liveNodes;
    this.logger.warn(
      { liveNodes, replicationFactor },
      `${CONSUMER_OFFSETS_TOPIC} not created: ${this.offsetsTopicWait() ?? ''} ` +
        '(expected while a cluster starts; a smaller cluster needs a lower factor)',
    );
  }

  /** Resigns the controller role, revokes the lease, stops the watches and closes the store. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.identityRetry?.cancel();
      await this.node?.close();
      this.store.close();
      this.timer.shutdown();
    })();
    return this.closing;
  }

  private logLeadership(change: LeadershipChange): void {
    const names = (partitions: readonly PartitionLeadership[]): string[] =>
      partitions
        .slice(0, LOGGED_PARTITIONS_MAX)
        .map((p) => `${p.topic}-${p.partitionIndex}@${p.leaderEpoch}`);
    this.logger.info(
      {
        leading: change.leaderCount,
        following: change.followerCount,
        becameLeader: change.becameLeader.length,
        becameFollower: change.becameFollower.length,
        offline: change.offline.length,
        ...(change.becameLeader.length > 0 ? { leaderOf: names(change.becameLeader) } : {}),
        ...(change.becameFollower.length > 0 ? { followerOf: names(change.becameFollower) } : {}),
        ...(change.offline.length > 0 ? { offlinePartitions: names(change.offline) } : {}),
      },
      'partition leadership changed',
    );
  }
}

function result(name: string, errorCode: ErrorCode, errorMessage: string): CreatableTopicResult {
  return { name, errorCode, errorMessage };
}

function resultOf(name: string, outcome: ClusterCreateTopicOutcome): CreatableTopicResult {
  switch (outcome.outcome) {
    case 'created':
      return result(name, ErrorCode.NONE, '');
    case 'exists':
      return result(name, ErrorCode.TOPIC_ALREADY_EXISTS, `topic ${name} already exists`);
    case 'invalidTopic':
      return result(name, ErrorCode.INVALID_TOPIC_EXCEPTION, outcome.reason);
    case 'invalidPartitions':
      return result(name, ErrorCode.INVALID_PARTITIONS, outcome.reason);
    case 'invalidReplicationFactor':
      return result(name, ErrorCode.INVALID_REPLICATION_FACTOR, outcome.reason);
    case 'unavailable':
      // Retriable: etcd did not answer, or the node has no session yet; nothing may be assumed written.
      return result(name, ErrorCode.REQUEST_TIMED_OUT, outcome.reason);
    case 'refused':
      // Not retriable: etcd refused the write itself and would refuse it again (the server logged why).
      return result(
        name,
        ErrorCode.INVALID_REQUEST,
        `topic ${name} cannot be created: ${outcome.reason} (see the server log)`,
      );
  }
}
