import type { PurgatoryStats } from '../purgatory';
import type { Time } from '../time';
import { BrokerApis } from './broker-apis';
import { DEFAULT_RETENTION_CHECK_INTERVAL_MS } from './broker-config';
import type { BrokerConfig } from './broker-config';
import type {
  BrokerNode,
  BrokerRequestContext,
  BrokerService,
  CreateTopicsRequest,
  CreateTopicsResponse,
  EpochEndOffset,
  FetchPartitionData,
  FetchRequest,
  FetchResponse,
  ListOffsetsRequest,
  ListOffsetsResponse,
  MetadataRequest,
  MetadataResponse,
  OffsetForLeaderEpochRequest,
  OffsetForLeaderEpochResponse,
  ProduceRequest,
  ProduceResponse,
} from './broker-protocol';
import { CONSUMER_OFFSETS_LOG_CONFIG, CONSUMER_OFFSETS_TOPIC } from './consumer-offsets';
import { OffsetsTopicPartitions } from './offsets-topic-partitions';
import type {
  EpochBoundaryOutcome,
  EpochBoundaryTarget,
  FetchedPartitionOutcome,
  FollowerFetchTarget,
  FollowerReplicas,
} from './follower-replicas';
import { HostedReplicas } from './hosted-replicas';
import { LogMaintenance } from './log-maintenance';
import { LogManager } from './log-manager';
import type { TopicAssignment } from './log-manager';
import type { OffsetsTopicOptions } from './offsets-topic';
import { ParkedOperations } from './parked-operations';
import { type Partition, sameIds } from './partition';
import type { IsrProposal } from './partition';
import { PartitionFetchStates } from './partition-fetch-state';
import type { PartitionLookup } from './partition-lookup';
import { NO_LEADER_ID } from './partition-roles';
import type {
  ClusterMetadataUpdate,
  IsrChangeProposer,
  LocalReplicaState,
  IsrChangeResult,
  LeadershipGuard,
  PartitionLeadership,
  PartitionRoleTarget,
} from './partition-roles';
import type { LeaderLinkStatus, ReplicaFetcherOptions } from './replica-fetcher';
import { ReplicaFetcherManager } from './replica-fetcher-manager';
import type { LeaderEndpointFactory } from './replica-fetcher-manager';
import type { LogRecoveryOptions } from './storage';
import { topicNameProblem, topicPartitionKey } from './topic-partition';
import { TopicCreator } from './topic-creator';
import { TopicRegistry } from './topic-registry';

/** Notable events, for the server's log and for tests. */
export interface ReplicaManagerListener {
  /** A partition's ISR changed on this leader: from `previousIsr` to `isr` (shrinks and expansions). */
  onIsrChange?(
    topic: string,
    partitionIndex: number,
    isr: readonly number[],
    previousIsr: readonly number[],
  ): void;
  /** A periodic task (ISR expiry, retention, flush) or a flush failed unexpectedly. */
  onError?(error: unknown, what: string): void;
}

export interface ReplicaManagerOptions {
  readonly time: Time;
  readonly listener?: ReplicaManagerListener;
  /** How often retention runs; Kafka's log.retention.check.interval.ms (5 minutes). */
  readonly retentionCheckIntervalMs?: number;
  /** What recovery may cut when a partition's log opens, and whom it tells (see PartitionLog). */
  readonly recovery?: LogRecoveryOptions;
  /** Partitions CreateTopics creates per event-loop turn; default CREATE_PARTITIONS_PER_TURN. */
  readonly createPartitionsPerTurn?: number;
  /**
   * Descriptors the process has open, for the CreateTopics budget; default /proc/self/fd, or where that
   * cannot be read, two per segment of the hosted partitions.
   */
  readonly countOpenFiles?: () => number | undefined;
  /**
   * Cluster mode: how this leader's ISR changes are committed (Kafka's AlterPartition). With it, shrinks
   * and expansions are proposed, and act only once committed; without it (a single node) the leader
   * changes its ISR itself.
   */
  readonly isrChangeProposer?: IsrChangeProposer;
  /** How long a partition waits after a proposal that 'failed' before it proposes again. */
  readonly isrProposalRetryBackoffMs?: number;
  /**
   * Cluster mode: whether this node may act as a leader now (its session with the metadata store). Read
   * on every Produce and before every HW advance; absent, always.
   */
  readonly leadershipGuard?: LeadershipGuard;
  /**
   * Cluster mode: how to reach a leader node. With it, applyClusterMetadata keeps one ReplicaFetcher per
   * leader this node follows (ReplicaFetcherManager), at the addresses of the update's live nodes.
   */
  readonly leaderEndpointFactory?: LeaderEndpointFactory;
  /** The fetchers' settings (wait, backoff, reports); they run on this manager's time and timer. */
  readonly replicaFetcherOptions?: Omit<ReplicaFetcherOptions, 'time' | 'timer' | 'leaderId'>;
  /**
   * Hosts the internal topic `__consumer_offsets` for the group layer: a ConsumerOffsetsWriter per
   * partition led here, announced to `offsetsTopic.listener` (see OffsetsTopicOptions). Single-node mode
   * creates the topic at `startup()` (replicas [this node], epoch 0); cluster mode takes it from the
   * cluster's metadata like any topic. Absent: the topic is still hosted (compacted) if the cluster
   * assigns it, but nobody is told of its leadership.
   */
  readonly offsetsTopic?: OffsetsTopicOptions;
}

/** Kafka's AlterPartition retry: a partition whose ISR proposal got no answer proposes again after this. */
export const DEFAULT_ISR_PROPOSAL_RETRY_BACKOFF_MS = 1_000;

/**
 * The partitions of this process, after Kafka's ReplicaManager: each hosted replica's role (leader or
 * follower, at its epoch, from the cluster's view or, on a single node, leader of everything), the ISR
 * changes a leader proposes, and the start and shutdown of it all. The jobs around that are parts of
 * their own, which this wires together and the server reaches through it:
 *
 * - HostedReplicas: which replicas are open here (data directory, CreateTopics, the cluster's view);
 * - the requests: BrokerApis (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch), TopicRegistry
 *   (Metadata), TopicCreator (CreateTopics);
 * - ParkedOperations: the Produce and Fetch purgatories;
 * - PartitionFetchStates: what each follower partition fetches, for the ReplicaFetchers;
 * - OffsetsTopicPartitions: the group layer's writes to `__consumer_offsets`, and who is told it leads them;
 * - LogMaintenance: ISR expiry, retention, flush and HW checkpoints.
 *
 * All of this runs on one event loop (see BrokerApis).
 */
export class ReplicaManager implements BrokerService, FollowerReplicas, PartitionLookup, PartitionRoleTarget {
  readonly config: BrokerConfig;
  private readonly time: Time;
  private readonly listener: ReplicaManagerListener;
  private readonly logManager: LogManager;
  /** The topics, the partitions hosted here and the cluster's nodes (Kafka's MetadataCache). */
  private readonly registry: TopicRegistry;
  /** The replicas hosted here, as their logs open and close. */
  private readonly hosted: HostedReplicas;
  /** Cluster mode: the last view applied, applied again when a log that held a topic back has closed. */
  private lastClusterUpdate: ClusterMetadataUpdate | undefined;
  private isReapplyScheduled = false;
  /** The Produce and Fetch purgatories and what is parked in them. */
  private readonly parked: ParkedOperations;
  /** The periodic tasks (ISR expiry, retention, flush, HW checkpoint) and follower compaction. */
  private readonly maintenance: LogMaintenance;
  /** Produce, Fetch, ListOffsets and OffsetForLeaderEpoch (Kafka's KafkaApis). */
  private readonly apis: BrokerApis;
  /** CreateTopics, and the file-descriptor budget cluster mode checks too. */
  private readonly creator: TopicCreator;
  private readonly isrChangeProposer: IsrChangeProposer | undefined;
  private readonly isrProposalRetryBackoffMs: number;
  private readonly leadershipGuard: LeadershipGuard | undefined;
  /** Replication must come from the node it names (BrokerConfig.requireAuthenticatedReplicas). */
  private readonly requireAuthenticatedReplicas: boolean;
  /** resignLeadership was called and no update has named this node live since. */
  private isResigned = false;
  /** Cluster mode: what each follower partition is doing about its leader; the fetchers work on it. */
  private readonly fetchStates: PartitionFetchStates;
  /** Cluster mode with a leaderEndpointFactory: the fetchers, one per leader node. */
  readonly replicaFetcherManager: ReplicaFetcherManager | undefined;
  private readonly isLeadershipActive = (): boolean =>
    !this.isResigned && (this.leadershipGuard === undefined || this.leadershipGuard.isActive());
  private readonly proposeIsr = (partition: Partition, proposal: IsrProposal): void =>
    this.sendIsrProposal(partition, proposal);
  private isStarted = false;
  private isShutdown = false;
  private closing: Promise<void> | null = null;
  private stoppingFetchers: Promise<void> | null = null;
  private readonly offsetsTopic: OffsetsTopicOptions | undefined;
  /** The `__consumer_offsets` partitions led here: who is told, and how the group layer writes them. */
  private readonly offsets: OffsetsTopicPartitions;
  /** shutdown() has begun: a store write answered from here on was cut by it, not timed out. */
  private isShuttingDown = false;

  constructor(config: BrokerConfig, options: ReplicaManagerOptions) {
    this.config = config;
    this.time = options.time;
    this.listener = options.listener ?? {};
    this.isrChangeProposer = options.isrChangeProposer;
    this.isrProposalRetryBackoffMs =
      options.isrProposalRetryBackoffMs ?? DEFAULT_ISR_PROPOSAL_RETRY_BACKOFF_MS;
    this.leadershipGuard = options.leadershipGuard;
    this.requireAuthenticatedReplicas = config.requireAuthenticatedReplicas ?? this.isClusterMode;
    this.logManager = new LogManager(config.dataDir, config.logConfig, this.time, options.recovery);
    this.registry = new TopicRegistry(config.nodeId, this.isClusterMode);
    this.hosted = new HostedReplicas({
      time: this.time,
      config,
      isClusterMode: this.isClusterMode,
      logManager: this.logManager,
      registry: this.registry,
      proposeIsr: this.proposeIsr,
      isLeadershipActive: this.isLeadershipActive,
      fileDescriptorProblem: (partitions, descriptors) =>
        this.creator.fileDescriptorProblem(partitions, descriptors),
      onTopicForgotten: (state) => {
        for (const info of state.partitions) {
          this.fetchStates.unfollow(topicPartitionKey(state.name, info.partitionIndex));
        }
      },
      onUnassigned: (partition) => {
        this.offsets.resign(partition);
        this.fetchStates.unfollow(partition.key);
        this.apis.clearSharedReads();
        this.parked.checkAndComplete(partition.key);
      },
      onLogClosed: () => this.scheduleReapply(),
      reportError: (error, what) => this.reportError(error, what),
    });
    this.creator = new TopicCreator(
      {
        time: this.time,
        nodeId: config.nodeId,
        isClusterMode: this.isClusterMode,
        logManager: this.logManager,
        registry: this.registry,
        isShutdown: () => this.isShutdown,
        createPartition: (topic, partitionIndex, replicas, nowMs, topicId) =>
          this.hosted.newPartition(topic, partitionIndex, replicas, nowMs, true, topicId),
        reportError: (error, what) => this.reportError(error, what),
      },
      {
        createPartitionsPerTurn: options.createPartitionsPerTurn,
        maxOpenFiles: config.maxOpenFiles,
        countOpenFiles: options.countOpenFiles,
      },
    );
    this.offsetsTopic = options.offsetsTopic;
    // The internal topic's own settings (not the server's --log-* flags), on every replica. Its logs
    // always open with truncateCorruptLogs: one damaged batch costs one group write, where refusing the
    // partition would cost every group on it (docs/operations.md).
    this.logManager.setTopicConfig(
      CONSUMER_OFFSETS_TOPIC,
      { ...CONSUMER_OFFSETS_LOG_CONFIG, ...options.offsetsTopic?.logConfig, cleanupPolicy: 'compact' },
      { truncateCorruptLogs: true },
    );
    const onTaskError = (error: unknown): void => this.reportError(error, 'a delayed operation failed');
    // The purgatories' timers before the maintenance timer: a manual clock runs them in that order.
    this.parked = new ParkedOperations(this.time, onTaskError);
    this.apis = new BrokerApis({
      time: this.time,
      partitions: this.registry,
      parked: this.parked,
      requireAuthenticatedReplicas: this.requireAuthenticatedReplicas,
      isShutdown: () => this.isShutdown,
      isLeadershipActive: this.isLeadershipActive,
      afterIsrChange: (partition, isrBefore, isHwIncreased) =>
        this.afterIsrChange(partition, isrBefore, isHwIncreased),
    });
    this.offsets = new OffsetsTopicPartitions(
      {
        time: this.time,
        nodeId: config.nodeId,
        partitions: this.registry,
        parked: this.parked,
        isShuttingDown: () => this.isShuttingDown,
        isLeadershipActive: this.isLeadershipActive,
        reportError: (error, what) => this.reportError(error, what),
      },
      options.offsetsTopic,
    );
    this.maintenance = new LogMaintenance(
      {
        time: this.time,
        partitions: this.registry,
        isShuttingDown: () => this.isShuttingDown,
        afterIsrChange: (partition, isrBefore) => this.afterIsrChange(partition, isrBefore),
        onSegmentsDeleted: () => this.apis.clearSharedReads(),
        reportError: (error, what) => this.reportError(error, what),
      },
      {
        replicaLagTimeMaxMs: config.replicaLagTimeMaxMs,
        retentionCheckIntervalMs: options.retentionCheckIntervalMs ?? DEFAULT_RETENTION_CHECK_INTERVAL_MS,
        flushIntervalMs: this.logManager.logConfig.flushIntervalMs,
        minCleanableDirtyRatio: options.offsetsTopic?.writer?.minCleanableDirtyRatio,
        onTaskError,
      },
    );
    this.fetchStates = new PartitionFetchStates({
      partitions: this.registry,
      isShutdown: () => this.isShutdown,
      onTruncated: () => this.apis.clearSharedReads(),
      onHighWatermarkIncreased: (key) => this.parked.checkFetches(key),
      onRecordsFetched: (partition) => this.maintenance.maybeCompactFollower(partition),
    });
    this.replicaFetcherManager =
      options.leaderEndpointFactory === undefined
        ? undefined
        : new ReplicaFetcherManager(config.nodeId, this.fetchStates, options.leaderEndpointFactory, {
            onError: (error, what) => this.reportError(error, what),
            ...options.replicaFetcherOptions,
            time: this.time,
            timer: this.maintenance.timer,
          });
  }

  /** Operations that expired, by kind (Kafka's ExpiresPerSec meters, as counts). */
  get expired(): BrokerApis['expired'] {
    return this.apis.expired;
  }

  /** Leadership and ISR come from the cluster (applyClusterMetadata), ISR changes go through the proposer. */
  get isClusterMode(): boolean {
    return this.isrChangeProposer !== undefined;
  }

  /**
   * Parked Produces (acks=-1), with the stores' writes and their loads' waits for the HW (one per
   * `__consumer_offsets` partition whose load waits), and parked Fetches.
   */
  get numDelayedProduce(): number {
    return this.parked.numDelayedProduce;
  }

  get numDelayedFetch(): number {
    return this.parked.numDelayedFetch;
  }

  /** Kafka's gauges of the Produce and Fetch purgatories, for metrics read on scrape. */
  purgatoryStats(): PurgatoryStats[] {
    return this.parked.stats();
  }

  /**
   * The partitions this process hosts, led or followed, each with its LEO, HW and ISR: for metrics read on
   * scrape. A live view: do not hold it across an await.
   */
  hostedPartitions(): IterableIterator<Partition> {
    return this.registry.hostedPartitions();
  }

  /** Each leader this node fetches from, and whether its fetches succeed: for metrics read on scrape. */
  followedLeaderLinks(): { leaderId: number; status: LeaderLinkStatus }[] {
    return this.replicaFetcherManager?.leaderLinks() ?? [];
  }

  /**
   * Opens and recovers every partition of every registered topic, then starts the periodic tasks: ISR
   * expiry every half of replicaLagTimeMaxMs (leader), retention, the time-based flush if set, and the
   * HW checkpoint (LogMaintenance).
   */
  startup(): void {
    if (this.isStarted) return;
    this.isStarted = true;
    this.hosted.loadTopics();
    if (this.offsetsTopic !== undefined && !this.isClusterMode) {
      for (const partition of this.hosted.hostLocalOffsetsTopic(this.offsetsTopic)) {
        this.offsets.updateLeadership(partition);
      }
    }
    this.maintenance.start();
  }

  /** This process's address, for Metadata's broker list (known once the server is bound). */
  setLocalBroker(node: BrokerNode): void {
    this.registry.setLocalBroker(node);
  }

  getPartition(key: string): Partition | undefined {
    return this.registry.getPartition(key);
  }

  /**
   * The partition count of `__consumer_offsets` as this node knows the topic (the data directory's
   * registry in single-node mode, the cluster's metadata in cluster mode), or undefined until the topic
   * is known here. The group layer places groups over this count, never over the configured one.
   */
  offsetsTopicPartitionCount(): number | undefined {
    return this.registry.partitionCount(CONSUMER_OFFSETS_TOPIC);
  }

  /** Topic names, in creation (or load) order. */
  topicNames(): string[] {
    return this.registry.topicNames();
  }

  // --- requests (BrokerService), answered by TopicCreator, TopicRegistry and BrokerApis ---

  createTopics(request: CreateTopicsRequest): Promise<CreateTopicsResponse> {
    return this.creator.createTopics(request);
  }

  metadata(request: MetadataRequest): Promise<MetadataResponse> {
    return Promise.resolve(this.registry.metadata(request));
  }

  produce(request: ProduceRequest, context?: BrokerRequestContext): Promise<ProduceResponse> {
    return this.apis.produce(request, context);
  }

  fetch(request: FetchRequest, context?: BrokerRequestContext): Promise<FetchResponse> {
    return this.apis.fetch(request, context);
  }

  listOffsets(request: ListOffsetsRequest): Promise<ListOffsetsResponse> {
    return this.apis.listOffsets(request);
  }

  offsetForLeaderEpoch(
    request: OffsetForLeaderEpochRequest,
    context?: BrokerRequestContext,
  ): Promise<OffsetForLeaderEpochResponse> {
    return this.apis.offsetForLeaderEpoch(request, context);
  }

  /**
   * A leader's ISR changed (a follower caught up, the expiry shrank it, a proposal was committed): the
   * listener is told, then what the change may complete is woken. A higher HW completes acks=-1 Produces
   * and consumer Fetches; without one, a waiting acks=-1 may now be answered
   * NOT_ENOUGH_REPLICAS_AFTER_APPEND (below the minimum the HW stays). `isHwIncreased`: whether the HW
   * already moved with the change (a follower's fetch moves it); absent, it is moved here.
   */
  private afterIsrChange(partition: Partition, isrBefore: readonly number[], isHwIncreased?: boolean): void {
    this.listener.onIsrChange?.(partition.topic, partition.partitionIndex, partition.isr, isrBefore);
    if (isHwIncreased ?? partition.maybeIncrementLeaderHW()) this.parked.checkAndComplete(partition.key);
    else this.parked.checkProduces(partition.key);
  }

  // --- cluster roles (PartitionRoleTarget) ---

  /**
   * Applies the cluster's view (see PartitionRoleTarget): registers each topic with its assignment,
   * opens the local replicas of partitions assigned to this node (closing those no longer assigned, whose
   * files stay), makes each the leader or a follower at its epoch, and forgets topics the update no longer
   * has. A topic whose new replicas would take more file descriptors than the process has free is
   * reported (onError) and left as it was; the next update tries again.
   */
  applyClusterMetadata(update: ClusterMetadataUpdate): void {
    if (this.isShutdown) return;
    const nodeId = this.config.nodeId;
    this.registry.setClusterNodes(update.liveNodes, update.controllerId);
    if (update.liveNodes.some((node) => node.nodeId === nodeId)) this.isResigned = false;
    const byTopic = new Map<string, PartitionLeadership[]>();
    for (const state of update.partitions) {
      let states = byTopic.get(state.topic);
      if (states === undefined) byTopic.set(state.topic, (states = []));
      states.push(state);
    }
    const nowMs = this.time.monotonicMs();
    this.lastClusterUpdate = update;
    for (const [name, states] of byTopic) {
      if (topicNameProblem(name) !== null) continue;
      states.sort((a, b) => a.partitionIndex - b.partitionIndex);
      if (states.some((state, i) => state.partitionIndex !== i)) continue;
      const topicId = states[0]!.topicId;
      const known = this.registry.topic(name);
      if (known?.topicId !== undefined && topicId !== undefined && known.topicId !== topicId) {
        // Another topic of the same name (deleted and created again): the earlier one's logs close, and
        // the new one opens once they have (its directories are then moved aside, see LogManager).
        this.hosted.dropTopic(known);
        continue;
      }
      // A log of this topic's still closing: its directory is not to be opened again until it is.
      if (states.some((state) => this.hosted.isClosing(topicPartitionKey(name, state.partitionIndex))))
        continue;
      const assignment: TopicAssignment = {
        name,
        ...(topicId === undefined ? {} : { topicId }),
        partitions: states.map((state) => ({
          partitionIndex: state.partitionIndex,
          replicas: [...state.replicas],
        })),
      };
      try {
        if (!this.hosted.applyAssignment(assignment)) continue;
      } catch (error) {
        this.reportError(error, `opening the replicas of topic ${name} failed`);
        continue;
      }
      const current = this.registry.topic(name)!;
      for (const state of states) {
        const info = current.partitions[state.partitionIndex]!;
        info.leaderId = state.leader;
        info.leaderEpoch = state.leaderEpoch;
        info.isr = Object.freeze([...state.isr]);
        if (info.partition !== undefined) {
          this.applyPartitionState(info.partition, state, nowMs);
          this.offsets.updateLeadership(info.partition);
        }
      }
    }
    for (const state of [...this.registry.topicStates()]) {
      if (byTopic.has(state.name) || this.creator.isCreating(state.name)) continue;
      this.hosted.dropTopic(state);
    }
    this.replicaFetcherManager?.update(update.liveNodes);
  }

  /**
   * The node's session is gone: it stops acting as leader at once. Produce answers
   * NOT_LEADER_OR_FOLLOWER, parked acks=-1 produces complete with it, and no HW advances, until an update
   * lists this node live again.
   */
  resignLeadership(): void {
    this.isResigned = true;
    // Never applied again on our own (see closeUnassigned): only a view from a new session may.
    this.lastClusterUpdate = undefined;
    this.offsets.resignAll();
    for (const partition of this.registry.hostedPartitions()) {
      if (partition.isLeader) this.parked.checkProduces(partition.key);
    }
  }

  /** One hosted partition's state from the cluster: leader or follower (of a leader, or of nobody). */
  private applyPartitionState(partition: Partition, state: PartitionLeadership, nowMs: number): void {
    const key = partition.key;
    if (state.leader === this.config.nodeId) {
      const isrBefore = partition.isr;
      const isSameLeadership = partition.isLeader && partition.leaderEpoch === state.leaderEpoch;
      if (!partition.makeLeader(state, nowMs)) return;
      this.fetchStates.unfollow(key);
      // An ISR change of this leader's, committed (the store's view may arrive before the proposer's
      // answer, which is then ignored). A new leadership's ISR is the cluster's, not a change.
      if (isSameLeadership && !sameIds(partition.isr, isrBefore)) {
        this.listener.onIsrChange?.(partition.topic, partition.partitionIndex, partition.isr, isrBefore);
      }
      partition.maybeIncrementLeaderHW();
    } else {
      if (!partition.makeFollower(state)) return;
      if (state.leader === NO_LEADER_ID) this.fetchStates.unfollow(key);
      else this.fetchStates.follow(key, state.leader);
    }
    // Parked acks=-1 produces answer (NOT_LEADER_OR_FOLLOWER on a former leader), parked follower fetches
    // of a former leader answer, consumers see a new HW.
    this.parked.checkAndComplete(key);
  }

  /** Sends a partition's ISR proposal to the store; the answer is applied when it comes (never awaited). */
  private sendIsrProposal(partition: Partition, proposal: IsrProposal): void {
    const proposer = this.isrChangeProposer!;
    const settle = (result: IsrChangeResult): void => {
      if (this.isShutdown || this.registry.getPartition(partition.key) !== partition) return;
      const isrBefore = partition.isr;
      const isChanged = partition.completeIsrProposal(
        proposal,
        result,
        this.time.monotonicMs(),
        this.isrProposalRetryBackoffMs,
      );
      if (isChanged) this.afterIsrChange(partition, isrBefore);
    };
    let proposed: Promise<IsrChangeResult>;
    try {
      proposed = proposer.proposeIsr(
        partition.topic,
        partition.partitionIndex,
        proposal.leaderEpoch,
        proposal.partitionEpoch,
        proposal.isr,
      );
    } catch (error) {
      proposed = Promise.resolve({ kind: 'failed', error });
    }
    proposed.then(settle, (error: unknown) => settle({ kind: 'failed', error }));
  }

  // --- the follower side (FollowerReplicas), kept by PartitionFetchStates for the fetchers ---

  followedLeaders(): Set<number> {
    return this.fetchStates.followedLeaders();
  }

  followerFetchTargets(leaderId: number): FollowerFetchTarget[] {
    return this.fetchStates.followerFetchTargets(leaderId);
  }

  hasPendingTruncation(leaderId: number, isDue: (key: string) => boolean): boolean {
    return this.fetchStates.hasPendingTruncation(leaderId, isDue);
  }

  epochBoundaryTargets(leaderId: number): EpochBoundaryTarget[] {
    return this.fetchStates.epochBoundaryTargets(leaderId);
  }

  applyEpochEndOffset(key: string, data: EpochEndOffset, sentLeaderEpoch?: number): EpochBoundaryOutcome {
    return this.fetchStates.applyEpochEndOffset(key, data, sentLeaderEpoch);
  }

  applyFetchedPartition(
    key: string,
    data: FetchPartitionData,
    sentLeaderEpoch?: number,
  ): FetchedPartitionOutcome {
    return this.fetchStates.applyFetchedPartition(key, data, sentLeaderEpoch);
  }

  // --- shutdown ---

  /**
   * Stops the periodic tasks and answers every parked call: a DelayedFetch with what is there, a
   * DelayedProduce with REQUEST_TIMED_OUT for what is not yet replicated. Later requests are refused
   * with NOT_LEADER_OR_FOLLOWER. Idempotent.
   */
  shutdown(): void {
    if (this.isShutdown) return;
    this.isShuttingDown = true;
    // First: the stores stop acknowledging before their parked writes are cut below.
    this.offsets.resignAll();
    this.stoppingFetchers = this.replicaFetcherManager?.shutdown() ?? null;
    this.maintenance.cancelTasks();
    this.parked.answerAll();
    this.isShutdown = true;
    this.parked.shutdown();
    this.maintenance.shutdown();
  }

  /** `shutdown()`, then fsyncs and closes every log. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.shutdown();
      await this.stoppingFetchers;
      // A create in flight sees the shutdown at its next slice and removes what it made.
      await this.creator.settled();
      // The last HWs, so a restart starts from them; a failure (reported) must not keep the logs open.
      await this.maintenance.checkpointLastHighWatermarks();
      // The resigned stores' compactions end before their logs close (a close would abort them anyway).
      await this.offsets.settled();
      await Promise.all([...this.registry.hostedPartitions()].map((partition) => partition.log.close()));
    })();
    return this.closing;
  }

  /** Every partition replica this node's data directory holds (HostedReplicas.describeLocalReplicas). */
  describeLocalReplicas(): Promise<LocalReplicaState[]> {
    return this.hosted.describeLocalReplicas();
  }

  // --- internals ---

  private reportError(error: unknown, what: string): void {
    if (this.listener.onError !== undefined) this.listener.onError(error, what);
    else throw error;
  }

  /**
   * A topic that waited for a directory to close opens from the cluster's last view: applied again once
   * for all the closes of one turn (thousands of logs closing must not apply the view thousands of times).
   */
  private scheduleReapply(): void {
    if (this.isReapplyScheduled) return;
    this.isReapplyScheduled = true;
    setImmediate(() => {
      this.isReapplyScheduled = false;
      const update = this.lastClusterUpdate;
      if (update === undefined || this.isShutdown || this.hosted.hasClosingLogs) return;
      try {
        this.applyClusterMetadata(update);
      } catch (error) {
        this.reportError(error, 'applying the cluster view again after logs closed failed');
      }
    });
  }
}
