import type { Logger } from 'pino';
import { ClusterNode, type ClusterCreateTopicOutcome, type LeadershipChange } from '../cluster/cluster-node';
import { EtcdMetadataStore, type EtcdClientTls, type EtcdCredentials } from '../cluster/etcd-metadata-store';
import type { MetadataStore } from '../cluster/metadata-store';
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
  IsrChangeResult,
  LeadershipGuard,
  PartitionLeadership,
  PartitionRoleTarget,
} from '../log/partition-roles';
import type { Time } from '../time';
import { SystemTimer } from '../timer';

/**
 * `ensureOffsetsTopic`'s answer: the topic was in this node's view (`exists`; also when another node
 * created it first), this node created it (`created`), or it could not be created now (`unavailable`: no
 * session or view yet, etcd did not answer, no live node; retried by the next caller).
 */
export type OffsetsTopicOutcome = 'exists' | 'created' | 'unavailable';

/** How many partition names one leadership log line lists per kind, at most. */
const LOGGED_PARTITIONS_MAX = 5;

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
  private readonly store: MetadataStore;
  private readonly timer: SystemTimer;
  private node: ClusterNode | undefined;
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

  /** Joins the cluster: registers the session, campaigns for controller, starts applying the view. */
  start(target: PartitionRoleTarget, bound: { readonly host: string; readonly port: number }): void {
    if (this.node !== undefined) throw new Error('ClusterWiring.start: already started');
    if (this.closing !== undefined) return;
    const advertisedAddress = this.advertisedAddressOf(bound);
    const onViewApplied = this.onViewApplied;
    const node = new ClusterNode({
      store: this.store,
      time: this.time,
      timer: this.timer,
      clusterId: this.config.clusterId,
      nodeId: this.config.nodeId,
      advertisedAddress,
      // The target as is, told afterwards that its view moved.
      target: {
        applyClusterMetadata: (update) => {
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
      onError: (error) => this.logger.warn({ err: error }, 'cluster: a metadata store call failed; retrying'),
    });
    this.node = node;
    node.on('sessionRegistered', ({ leaseId, incarnation }) => {
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

  /** Why the node is not ready, or undefined once registered with its view applied. */
  readinessProblem(): string | undefined {
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
  }
}
