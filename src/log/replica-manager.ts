import { CohortError, ErrorCode } from '../errors';
import type { PurgatoryStats } from '../purgatory';
import type { Time } from '../time';
import { DEFAULT_RETENTION_CHECK_INTERVAL_MS } from './broker-config';
import type { BrokerConfig } from './broker-config';
import {
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  NO_LEADER_EPOCH,
  UNDEFINED_EPOCH_OFFSET,
} from './broker-protocol';
import type {
  BrokerNode,
  BrokerRequestContext,
  BrokerService,
  CreateTopicsRequest,
  CreateTopicsResponse,
  EpochEndOffset,
  FetchableTopicResponse,
  FetchPartitionData,
  FetchRequest,
  FetchResponse,
  FetchTopic,
  ListOffsetsPartitionResponse,
  ListOffsetsRequest,
  ListOffsetsResponse,
  MetadataRequest,
  MetadataResponse,
  OffsetForLeaderEpochRequest,
  OffsetForLeaderEpochResponse,
  ProducePartitionData,
  ProducePartitionResponse,
  ProduceRecord,
  ProduceRequest,
  ProduceResponse,
} from './broker-protocol';
import { CONSUMER_OFFSETS_LOG_CONFIG, CONSUMER_OFFSETS_TOPIC } from './consumer-offsets';
import { DelayedFetch } from './delayed-fetch';
import type { FetchParams, FetchPartitionStatus } from './delayed-fetch';
import { DelayedProduce, flushErrorCode } from './delayed-produce';
import type { ProducePartitionStatus } from './delayed-produce';
import { CoordinatorPartitionWriter } from './coordinator-partition-writer';
import { LogMaintenance } from './log-maintenance';
import { LogManager } from './log-manager';
import type { TopicAssignment } from './log-manager';
import { FILE_DESCRIPTORS_PER_NEW_PARTITION } from './open-files';
import { epochEndOffset } from './leader-epochs';
import { Partition, sameIds } from './partition';
import type { IsrProposal } from './partition';
import type {
  EpochBoundaryOutcome,
  EpochBoundaryTarget,
  FetchedPartitionOutcome,
  FollowerFetchTarget,
  FollowerReplicas,
} from './follower-replicas';
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
import { DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS, type OffsetsTopicOptions } from './offsets-topic';
import { ParkedOperations } from './parked-operations';
import { PartitionFetchStates } from './partition-fetch-state';
import { replicaAuthorizationError } from './replica-authorization';
import type { LeaderLinkStatus, ReplicaFetcherOptions } from './replica-fetcher';
import { ReplicaFetcherManager } from './replica-fetcher-manager';
import type { LeaderEndpointFactory } from './replica-fetcher-manager';
import {
  type LogAppendInfo,
  type LogReadInfo,
  type LogRecord,
  type LogRecoveryOptions,
  type SimpleRecord,
} from './storage';
import { RESERVED_TOPIC_NAMES, topicNameProblem, topicPartitionKey } from './topic-partition';
import { TopicCreator } from './topic-creator';
import { TopicRegistry, type TopicState } from './topic-registry';

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
   * Hosts the internal topic `__consumer_offsets` for the group layer: a ConsumerOffsetsStore per
   * partition led here, announced to `offsetsTopic.listener` (see OffsetsTopicOptions). Single-node mode
   * creates the topic at `startup()` (replicas [this node], epoch 0); cluster mode takes it from the
   * cluster's metadata like any topic. Absent: the topic is still hosted (compacted) if the cluster
   * assigns it, but nobody is told of its leadership.
   */
  readonly offsetsTopic?: OffsetsTopicOptions;
}

/** Kafka's AlterPartition retry: a partition whose ISR proposal got no answer proposes again after this. */
export const DEFAULT_ISR_PROPOSAL_RETRY_BACKOFF_MS = 1_000;

/** A partition's part of a Produce, as processed. */
interface ProduceEntry {
  readonly response: { -readonly [K in keyof ProducePartitionResponse]: ProducePartitionResponse[K] };
  readonly key: string;
  readonly info: LogAppendInfo | null;
}

const NO_RECORDS: readonly LogRecord[] = Object.freeze([]);

/**
 * The partitions of this process and the requests on them, after Kafka's ReplicaManager
 * (`appendRecords`, `fetchMessages`) with the parts of KafkaApis that turn requests into responses.
 *
 * Produce (`appendRecords`): acks must be 0, 1 or -1 (else INVALID_REQUIRED_ACKS everywhere). Each
 * partition appends on its leader (Partition.appendRecordsToLeader); the append wakes parked follower
 * Fetches of that partition and, if the HW moved (an ISR of one), consumer Fetches and DelayedProduces.
 * - acks=0 answers at once with what happened;
 * - acks=1 answers once the leader's fsync covers the records (the flush policy's promise);
 * - acks=-1 parks a DelayedProduce on every appended partition until the ISR has the records and the
 *   leader has fsynced them, or `timeoutMs` passes (REQUEST_TIMED_OUT).
 *
 * Fetch (`fetchMessages`): reads every partition (a consumer below the HW, a follower below the LEO, at
 * most `maxBytes` in all but always the first record found, KIP-74). A follower's fetch offset also
 * updates the leader's view of it, which may grow the ISR and move the HW, completing DelayedProduces
 * and consumer DelayedFetches. If fewer than `minBytes` were found, no partition failed and `maxWaitMs`
 * > 0, a DelayedFetch parks on every partition.
 *
 * Every parked call is released when its caller goes away (the context's onCancel) and answered at
 * `shutdown()`. All of this runs on one event loop: an append, a read and the wake-ups it causes happen
 * without interleaving; re-entrancy (a completion that triggers another) is the purgatory's business.
 */
export class ReplicaManager implements BrokerService, FollowerReplicas, PartitionLookup, PartitionRoleTarget {
  readonly config: BrokerConfig;
  private readonly time: Time;
  private readonly listener: ReplicaManagerListener;
  private readonly logManager: LogManager;
  /** The topics, the partitions hosted here and the cluster's nodes (Kafka's MetadataCache). */
  private readonly registry: TopicRegistry;
  /**
   * Logs being closed, by partition key (a replica no longer hosted, or of a topic deleted and created
   * again): their directories are not opened again until the close is done.
   */
  private readonly closingLogs = new Map<string, Promise<void>>();
  /** Cluster mode: the last view applied, applied again when a log that held a topic back has closed. */
  private lastClusterUpdate: ClusterMetadataUpdate | undefined;
  private isReapplyScheduled = false;
  /** The Produce and Fetch purgatories and what is parked in them. */
  private readonly parked: ParkedOperations;
  /** The periodic tasks (ISR expiry, retention, flush, HW checkpoint) and follower compaction. */
  private readonly maintenance: LogMaintenance;
  /** Reads shared by the DelayedFetches one event completes (see `sharedRead`). */
  private readonly completionReads = new Map<string, LogReadInfo>();
  private readonly clearCompletionReads = (): void => this.completionReads.clear();
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
  /** Operations that expired, by kind (Kafka's ExpiresPerSec meters, as counts). */
  readonly expired = { produce: 0, consumerFetch: 0, followerFetch: 0 };
  private readonly offsetsTopic: OffsetsTopicOptions | undefined;
  /** The `__consumer_offsets` partitions led here: who is told, and how the group layer writes them. */
  private readonly offsets: CoordinatorPartitionWriter;
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
    this.creator = new TopicCreator(
      {
        time: this.time,
        nodeId: config.nodeId,
        isClusterMode: this.isClusterMode,
        logManager: this.logManager,
        registry: this.registry,
        isShutdown: () => this.isShutdown,
        createPartition: (topic, partitionIndex, replicas, nowMs, topicId) =>
          this.newPartition(topic, partitionIndex, replicas, nowMs, true, topicId),
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
    this.offsets = new CoordinatorPartitionWriter(
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
        onSegmentsDeleted: () => this.completionReads.clear(),
        reportError: (error, what) => this.reportError(error, what),
      },
      {
        replicaLagTimeMaxMs: config.replicaLagTimeMaxMs,
        retentionCheckIntervalMs: options.retentionCheckIntervalMs ?? DEFAULT_RETENTION_CHECK_INTERVAL_MS,
        flushIntervalMs: this.logManager.logConfig.flushIntervalMs,
        minCleanableDirtyRatio: options.offsetsTopic?.store?.minCleanableDirtyRatio,
        onTaskError,
      },
    );
    this.fetchStates = new PartitionFetchStates({
      partitions: this.registry,
      isShutdown: () => this.isShutdown,
      onTruncated: () => this.completionReads.clear(),
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
    for (const assignment of this.logManager.loadTopics()) this.registerTopic(assignment);
    if (this.offsetsTopic !== undefined && !this.isClusterMode) {
      this.createLocalOffsetsTopic(this.offsetsTopic);
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

  /** CreateTopics, in slices (TopicCreator.createTopics). */
  createTopics(request: CreateTopicsRequest): Promise<CreateTopicsResponse> {
    return this.creator.createTopics(request);
  }

  // --- Metadata ---

  /** Metadata, from the registry (TopicRegistry.metadata). */
  metadata(request: MetadataRequest): Promise<MetadataResponse> {
    return Promise.resolve(this.registry.metadata(request));
  }

  // --- Produce ---

  produce(request: ProduceRequest, context: BrokerRequestContext = {}): Promise<ProduceResponse> {
    const { acks, timeoutMs } = request;
    let requestError = ErrorCode.NONE;
    if (acks !== 0 && acks !== 1 && acks !== -1) requestError = ErrorCode.INVALID_REQUIRED_ACKS;
    else if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) requestError = ErrorCode.INVALID_REQUEST;
    const entries: ProduceEntry[] = [];
    const response: ProduceResponse = {
      topics: request.topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map((data) => {
          const entry = this.appendToLocalLog(topic.name, data, acks, requestError);
          entries.push(entry);
          return entry.response;
        }),
      })),
    };
    if (acks === 0 || requestError !== ErrorCode.NONE) return Promise.resolve(response);
    if (acks === 1) return this.awaitFlushes(entries).then(() => response);
    return this.delayProduce(timeoutMs, entries, response, context);
  }

  private appendToLocalLog(
    topic: string,
    data: ProducePartitionData,
    acks: number,
    requestError: ErrorCode,
  ): ProduceEntry {
    const { partitionIndex, records } = data;
    const key = topicPartitionKey(topic, partitionIndex);
    const failed = (errorCode: ErrorCode): ProduceEntry => ({
      response: { partitionIndex, errorCode, baseOffset: -1, logAppendTimeMs: -1, logStartOffset: -1 },
      key,
      info: null,
    });
    if (requestError !== ErrorCode.NONE) return failed(requestError);
    if (this.isShutdown) return failed(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    // Only the group layer writes the internal topic (through its stores), as in Kafka.
    if (RESERVED_TOPIC_NAMES.has(topic)) return failed(ErrorCode.INVALID_TOPIC_EXCEPTION);
    const partition = this.registry.getPartition(key);
    if (partition === undefined) {
      return failed(this.registry.unhostedPartitionError(topic, partitionIndex));
    }
    // A leader whose session is gone may already have been replaced: it must not take writes.
    if (partition.isLeader && !this.isLeadershipActive()) return failed(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    let info: LogAppendInfo;
    try {
      info = partition.appendRecordsToLeader(records.map(toSimpleRecord), acks, data.receivedBatchBytes);
    } catch (error) {
      if (!(error instanceof CohortError)) throw error;
      const entry = failed(error.code);
      entry.response.logStartOffset = partition.logStartOffset;
      return entry;
    }
    // The HW moves on append only with an ISR of one.
    this.parked.afterLeaderAppend(key, partition.maybeIncrementLeaderHW());
    return {
      response: {
        partitionIndex,
        errorCode: ErrorCode.NONE,
        baseOffset: info.firstOffset,
        logAppendTimeMs: info.logAppendTimeMs,
        logStartOffset: info.logStartOffset,
      },
      key,
      info,
    };
  }

  /** acks=1: every appended partition is answered once the leader's fsync covers it. */
  private async awaitFlushes(entries: readonly ProduceEntry[]): Promise<void> {
    await Promise.all(
      entries.map(async (entry) => {
        const flushed = entry.info === null ? null : entry.info.flushed;
        if (flushed === null) return;
        try {
          await flushed;
        } catch (error) {
          entry.response.errorCode = flushErrorCode(error);
        }
      }),
    );
  }

  private delayProduce(
    timeoutMs: number,
    entries: readonly ProduceEntry[],
    response: ProduceResponse,
    context: BrokerRequestContext,
  ): Promise<ProduceResponse> {
    const appended = entries.filter((entry) => entry.info !== null);
    if (appended.length === 0) return Promise.resolve(response);
    const statuses: ProducePartitionStatus[] = appended.map((entry) => ({
      key: entry.key,
      requiredOffset: entry.info!.lastOffset + 1,
      acksPending: true,
      isFlushed: entry.info!.flushed === null,
      errorCode: ErrorCode.REQUEST_TIMED_OUT,
    }));
    return this.parked.park<DelayedProduce, ProduceResponse>(
      statuses.map((status) => status.key),
      (respond) => {
        const op = new DelayedProduce(timeoutMs, statuses, this, respond, () => {
          this.expired.produce++;
        });
        for (let i = 0; i < appended.length; i++) {
          const flushed = appended[i]!.info!.flushed;
          if (flushed !== null) op.awaitFlush(statuses[i]!, flushed);
        }
        return op;
      },
      (_op, resolve) => {
        for (let i = 0; i < appended.length; i++) appended[i]!.response.errorCode = statuses[i]!.errorCode;
        resolve(response);
      },
      context,
    );
  }

  // --- Fetch ---

  fetch(request: FetchRequest, context: BrokerRequestContext = {}): Promise<FetchResponse> {
    const { replicaId, maxWaitMs, minBytes, maxBytes } = request;
    if (
      ![replicaId, maxWaitMs, minBytes, maxBytes].every(Number.isSafeInteger) ||
      maxWaitMs < 0 ||
      minBytes < 0 ||
      maxBytes < 0
    ) {
      return Promise.resolve({ errorCode: ErrorCode.INVALID_REQUEST, responses: [] });
    }
    const authorizationError = replicaAuthorizationError(
      replicaId,
      context,
      this.requireAuthenticatedReplicas,
    );
    if (authorizationError !== ErrorCode.NONE) {
      return Promise.resolve({ errorCode: authorizationError, responses: [] });
    }
    const params: FetchParams = { replicaId, isFromFollower: replicaId >= 0, minBytes, maxBytes };
    const statuses: FetchPartitionStatus[] = [];
    const read = this.readFromLocalLog(params, request.topics, statuses);
    if (maxWaitMs === 0 || statuses.length === 0 || read.bytesReadable >= minBytes || read.hasError) {
      return Promise.resolve(read.response);
    }
    return this.parked.park<DelayedFetch, FetchResponse>(
      statuses.map((status) => status.key),
      (respond) =>
        new DelayedFetch(maxWaitMs, params, statuses, this, respond, () => {
          if (params.isFromFollower) this.expired.followerFetch++;
          else this.expired.consumerFetch++;
        }),
      (_op, resolve) => resolve(this.readFromLocalLog(params, request.topics, null).response),
      context,
    );
  }

  /**
   * Reads every requested partition (Kafka's readFromLocalLog). With `statuses` (the first read of a
   * Fetch) it also records where each fetch offset sits, for a DelayedFetch, and applies a follower's
   * fetch offsets to the leader's replication state; the re-read at completion passes null.
   */
  private readFromLocalLog(
    params: FetchParams,
    topics: readonly FetchTopic[],
    statuses: FetchPartitionStatus[] | null,
  ): { response: FetchResponse; bytesReadable: number; hasError: boolean } {
    let bytesRemaining = params.maxBytes;
    let bytesReadable = 0;
    let minOneMessage = true;
    let hasError = false;
    const nowMs = this.time.monotonicMs();
    const responses = topics.map((topic): FetchableTopicResponse => ({
      name: topic.name,
      partitions: topic.partitions.map((request): FetchPartitionData => {
        const key = topicPartitionKey(topic.name, request.partitionIndex);
        const partition = this.registry.getPartition(key);
        const failed = (errorCode: ErrorCode): FetchPartitionData => {
          hasError = true;
          return {
            partitionIndex: request.partitionIndex,
            errorCode,
            highWatermark: partition?.highWatermark ?? -1,
            logStartOffset: partition?.logStartOffset ?? -1,
            records: NO_RECORDS,
          };
        };
        if (this.isShutdown) return failed(ErrorCode.NOT_LEADER_OR_FOLLOWER);
        if (partition === undefined) {
          return failed(this.registry.unhostedPartitionError(topic.name, request.partitionIndex));
        }
        const epochError = partition.checkCurrentLeaderEpoch(request.currentLeaderEpoch);
        if (epochError !== ErrorCode.NONE) return failed(epochError);
        if (params.isFromFollower && !partition.isFollowerReplica(params.replicaId)) {
          return failed(ErrorCode.NOT_LEADER_OR_FOLLOWER);
        }
        if (!Number.isSafeInteger(request.partitionMaxBytes) || request.partitionMaxBytes < 0) {
          return failed(ErrorCode.INVALID_FETCH_SIZE);
        }
        let records: readonly LogRecord[];
        try {
          const maxBytes = Math.min(request.partitionMaxBytes, bytesRemaining);
          const info =
            statuses === null
              ? this.sharedRead(
                  partition,
                  request.fetchOffset,
                  maxBytes,
                  params.isFromFollower,
                  minOneMessage,
                )
              : partition.read(request.fetchOffset, maxBytes, params.isFromFollower, minOneMessage);
          records = info.records;
          bytesRemaining = Math.max(0, bytesRemaining - info.sizeInBytes);
          bytesReadable += info.sizeInBytes;
          if (info.sizeInBytes > 0) minOneMessage = false;
          if (statuses !== null) {
            statuses.push({
              key,
              partitionMaxBytes: request.partitionMaxBytes,
              startOffsetMetadata: info.fetchOffsetMetadata,
            });
          }
        } catch (error) {
          if (!(error instanceof CohortError)) throw error;
          return failed(error.code);
        }
        if (statuses !== null && params.isFromFollower) {
          this.updateFollowerFetchState(partition, params.replicaId, request.fetchOffset, nowMs);
        }
        return {
          partitionIndex: request.partitionIndex,
          errorCode: ErrorCode.NONE,
          highWatermark: partition.highWatermark,
          logStartOffset: partition.logStartOffset,
          records,
        };
      }),
    }));
    return { response: { errorCode: ErrorCode.NONE, responses }, bytesReadable, hasError };
  }

  /**
   * A read for a completing DelayedFetch, shared with the identical reads of the same wake-up: when a
   * produce wakes a thousand consumers parked at one offset, the log is read once, not a thousand times.
   * The key holds everything the result depends on in an append-only log (the readable end included, so
   * an append or a HW move makes a new key); truncation and retention clear the cache, and it lives only
   * until the current task's microtasks run.
   */
  private sharedRead(
    partition: Partition,
    fetchOffset: number,
    maxBytes: number,
    isFromFollower: boolean,
    minOneMessage: boolean,
  ): LogReadInfo {
    const end = isFromFollower ? partition.logEndOffset : partition.highWatermark;
    const cacheKey = `${partition.key}:${fetchOffset}:${end}:${maxBytes}:${minOneMessage ? 1 : 0}:${isFromFollower ? 1 : 0}`;
    let info = this.completionReads.get(cacheKey);
    if (info === undefined) {
      info = partition.read(fetchOffset, maxBytes, isFromFollower, minOneMessage);
      if (this.completionReads.size === 0) queueMicrotask(this.clearCompletionReads);
      this.completionReads.set(cacheKey, info);
    }
    return info;
  }

  private updateFollowerFetchState(
    partition: Partition,
    replicaId: number,
    fetchOffset: number,
    nowMs: number,
  ): void {
    const isrBefore = partition.isr;
    const isHwIncreased = partition.updateFollowerFetchState(replicaId, fetchOffset, nowMs);
    if (partition.isr !== isrBefore) this.afterIsrChange(partition, isrBefore, isHwIncreased);
    else if (isHwIncreased) this.parked.checkAndComplete(partition.key);
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

  // --- ListOffsets ---

  listOffsets(request: ListOffsetsRequest): Promise<ListOffsetsResponse> {
    return Promise.resolve({
      topics: request.topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map((query): ListOffsetsPartitionResponse => {
          const { partitionIndex, timestamp, currentLeaderEpoch } = query;
          const answer = (
            errorCode: ErrorCode,
            offset = -1,
            timestampMs = -1,
          ): ListOffsetsPartitionResponse => ({
            partitionIndex,
            errorCode,
            offset,
            timestamp: timestampMs,
          });
          const partition = this.registry.getPartition(topicPartitionKey(topic.name, partitionIndex));
          if (partition === undefined) {
            return answer(this.registry.unhostedPartitionError(topic.name, partitionIndex));
          }
          const epochError = partition.checkCurrentLeaderEpoch(currentLeaderEpoch);
          if (epochError !== ErrorCode.NONE) return answer(epochError);
          // Offsets are a leader's answer, as in Kafka: a follower's HW may lag the leader's.
          if (!partition.isLeader || this.isShutdown) return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER);
          if (timestamp === LATEST_TIMESTAMP) return answer(ErrorCode.NONE, partition.highWatermark);
          if (timestamp === EARLIEST_TIMESTAMP) return answer(ErrorCode.NONE, partition.logStartOffset);
          if (!Number.isSafeInteger(timestamp) || timestamp < 0) return answer(ErrorCode.INVALID_REQUEST);
          const found = partition.log.offsetForTimestamp(timestamp);
          // Only what a consumer may read: a record at or above the HW is not there yet for it.
          if (found === null || found.offset >= partition.highWatermark) return answer(ErrorCode.NONE);
          return answer(ErrorCode.NONE, found.offset, found.timestampMs);
        }),
      })),
    });
  }

  // --- OffsetForLeaderEpoch ---

  /**
   * For each partition, the end offset on this leader of the largest epoch at or below the one asked for
   * (Kafka's OffsetsForLeaderEpoch, KIP-101/279): where a new follower's log must be cut so that it is a
   * prefix of this one. Only the leader answers (NOT_LEADER_OR_FOLLOWER), after the same epoch check as
   * Fetch. From a follower (`replicaId` >= 0) it is replication traffic: the caller must have
   * authenticated as that node (else CLUSTER_AUTHORIZATION_FAILED) and be one of the partition's replicas
   * (else NOT_LEADER_OR_FOLLOWER).
   */
  offsetForLeaderEpoch(
    request: OffsetForLeaderEpochRequest,
    context: BrokerRequestContext = {},
  ): Promise<OffsetForLeaderEpochResponse> {
    const { replicaId } = request;
    const authorizationError = replicaAuthorizationError(
      replicaId,
      context,
      this.requireAuthenticatedReplicas,
    );
    return Promise.resolve({
      topics: request.topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map((query): EpochEndOffset => {
          const answer = (
            errorCode: ErrorCode,
            leaderEpoch = NO_LEADER_EPOCH,
            endOffset = UNDEFINED_EPOCH_OFFSET,
          ): EpochEndOffset => ({ errorCode, partition: query.partition, leaderEpoch, endOffset });
          if (authorizationError !== ErrorCode.NONE) return answer(authorizationError);
          if (this.isShutdown) return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER);
          const partition = this.registry.getPartition(topicPartitionKey(topic.name, query.partition));
          if (partition === undefined)
            return answer(this.registry.unhostedPartitionError(topic.name, query.partition));
          const epochError = partition.checkCurrentLeaderEpoch(query.currentLeaderEpoch);
          if (epochError !== ErrorCode.NONE) return answer(epochError);
          if (!partition.isLeader) return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER);
          if (replicaId >= 0 && !partition.isFollowerReplica(replicaId)) {
            return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER);
          }
          const found = epochEndOffset(partition, query.leaderEpoch);
          return answer(ErrorCode.NONE, found.leaderEpoch, found.endOffset);
        }),
      })),
    });
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
        this.removeTopic(known);
        for (const info of known.partitions) {
          if (info.partition !== undefined) this.closeUnassigned(info.partition);
        }
        continue;
      }
      // A log of this topic's still closing: its directory is not to be opened again until it is.
      if (states.some((state) => this.closingLogs.has(topicPartitionKey(name, state.partitionIndex))))
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
        if (!this.applyAssignment(assignment)) continue;
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
      this.removeTopic(state);
      for (const info of state.partitions) {
        if (info.partition !== undefined) this.closeUnassigned(info.partition);
      }
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

  // --- __consumer_offsets ---

  /**
   * Single-node mode: the internal topic at start-up, every partition led here at epoch 0. A data
   * directory that has the topic keeps its partition count (Kafka keeps its topic too); one from before
   * the topic was replicated (`__consumer_offsets-0` alone, no registry entry) is registered as a topic
   * of one partition, its log taken as it is; otherwise the topic is created with `numPartitions`, every
   * partition directory at once (eagerly: docs/storage.md).
   */
  private createLocalOffsetsTopic(options: OffsetsTopicOptions): void {
    const name = CONSUMER_OFFSETS_TOPIC;
    const configuredNumPartitions = options.numPartitions ?? DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS;
    const existing = this.registry.topic(name);
    let outcome: 'created' | 'adopted' | 'kept' = 'kept';
    if (existing === undefined) {
      // Partition 1's directory too means a create of several partitions that crashed before its
      // registry file: nothing was written to it, and it is created again (reusing the directories).
      const isAdopted = this.logManager.hasLog(name, 0) && !this.logManager.hasLog(name, 1);
      outcome = isAdopted ? 'adopted' : 'created';
      const numPartitions = isAdopted ? 1 : configuredNumPartitions;
      const replicas = [this.config.nodeId];
      this.applyAssignment(
        {
          name,
          partitions: Array.from({ length: numPartitions }, (_, partitionIndex) => ({
            partitionIndex,
            replicas,
          })),
        },
        false,
      );
    }
    const state = this.registry.topic(name)!;
    options.onStartup?.({
      outcome,
      numPartitions: state.partitions.length,
      configuredNumPartitions,
    });
    for (const info of state.partitions) {
      if (info.partition !== undefined) this.offsets.updateLeadership(info.partition);
    }
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

  /**
   * Every partition replica this node's data directory holds, for a recovery of the cluster's metadata
   * (called once this node has resigned every role: etcd lost the metadata): its topic's id and partition
   * count as this node last knew them, the highest leader epoch it knows of (its log's last batch, or the
   * epoch it was told in memory, which is higher after an election no write followed) and its log end
   * offset. Hosted logs are read as they are; the others opened (recovered), read and closed, one at a
   * time, after any close of the same directory still under way.
   */
  async describeLocalReplicas(): Promise<LocalReplicaState[]> {
    const replicas: LocalReplicaState[] = [];
    const partitionCounts = new Map<string, number>();
    for (const topic of this.logManager.loadTopics())
      partitionCounts.set(topic.name, topic.partitions.length);
    for (const { topic, partitionIndex } of this.logManager.partitionDirectories()) {
      const key = topicPartitionKey(topic, partitionIndex);
      await this.closingLogs.get(key);
      const hosted = this.registry.getPartition(key);
      const log = hosted?.log ?? this.logManager.openLog(topic, partitionIndex);
      try {
        const topicId =
          this.registry.topic(topic)?.topicId ?? this.logManager.topicIdOf(topic, partitionIndex);
        const partitionCount = this.registry.topic(topic)?.partitions.length ?? partitionCounts.get(topic);
        replicas.push({
          topic,
          partitionIndex,
          leaderEpoch: Math.max(log.latestEpoch(), hosted?.leaderEpoch ?? -1),
          logEndOffset: log.logEndOffset,
          ...(topicId === undefined ? {} : { topicId }),
          ...(partitionCount === undefined ? {} : { partitionCount }),
        });
      } finally {
        if (hosted === undefined) await log.close();
      }
    }
    return replicas;
  }

  // --- internals ---

  private reportError(error: unknown, what: string): void {
    if (this.listener.onError !== undefined) this.listener.onError(error, what);
    else throw error;
  }

  /**
   * Takes a topic's assignment: registers it (and its registry file) if new or changed, opening the
   * replicas this node now hosts and closing those it no longer does (their files stay on disk). With
   * `checkBudget`, a change that would open more files than the process has free is reported and not
   * made (false).
   */
  private applyAssignment(assignment: TopicAssignment, checkBudget = true): boolean {
    const state = this.registry.topic(assignment.name);
    if (this.registry.hasAssignment(assignment)) return true;
    if (checkBudget) {
      const added = assignment.partitions.filter(
        (p) =>
          p.replicas.includes(this.config.nodeId) &&
          state?.partitions[p.partitionIndex]?.partition === undefined,
      ).length;
      const problem =
        added === 0
          ? null
          : this.creator.fileDescriptorProblem(added, added * FILE_DESCRIPTORS_PER_NEW_PARTITION);
      if (problem !== null) {
        this.reportError(
          new CohortError(ErrorCode.POLICY_VIOLATION, problem),
          `cannot host the replicas of topic ${assignment.name}`,
        );
        return false;
      }
    }
    const opened = this.openPartitions(assignment, state);
    this.logManager.writeTopic(assignment);
    if (state !== undefined) this.removeTopic(state);
    this.registry.add(assignment, opened);
    const kept = new Set(opened.values());
    for (const info of state?.partitions ?? []) {
      if (info.partition !== undefined && !kept.has(info.partition)) this.closeUnassigned(info.partition);
    }
    return true;
  }

  /** A replica this node no longer hosts: no longer copied or served; its files stay on disk. */
  private closeUnassigned(partition: Partition): void {
    this.offsets.resign(partition);
    this.fetchStates.unfollow(partition.key);
    this.completionReads.clear();
    this.parked.checkAndComplete(partition.key);
    const key = partition.key;
    const closed = partition.log
      .close()
      .catch((error: unknown) => this.reportError(error, `closing ${key} failed`))
      .finally(() => {
        if (this.closingLogs.get(key) !== closed) return;
        this.closingLogs.delete(key);
        this.scheduleReapply();
      });
    this.closingLogs.set(key, closed);
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
      if (update === undefined || this.isShutdown || this.closingLogs.size > 0) return;
      try {
        this.applyClusterMetadata(update);
      } catch (error) {
        this.reportError(error, 'applying the cluster view again after logs closed failed');
      }
    });
  }

  /** Registers a topic read from the registry at start-up. */
  private registerTopic(assignment: TopicAssignment): void {
    this.registry.add(assignment, this.openPartitions(assignment));
  }

  /**
   * Opens the logs of the partitions this process hosts (it is one of their replicas), reusing those an
   * earlier state of the topic already opened. On a failure the logs opened here are closed again.
   */
  private openPartitions(assignment: TopicAssignment, previous?: TopicState): Map<number, Partition> {
    const opened = new Map<number, Partition>();
    const nowMs = this.time.monotonicMs();
    try {
      for (const { partitionIndex, replicas } of assignment.partitions) {
        if (!replicas.includes(this.config.nodeId)) continue;
        const existing = previous?.partitions[partitionIndex]?.partition;
        if (existing !== undefined) {
          opened.set(partitionIndex, existing);
          continue;
        }
        opened.set(
          partitionIndex,
          this.newPartition(assignment.name, partitionIndex, replicas, nowMs, false, assignment.topicId),
        );
      }
    } catch (error) {
      for (const [index, partition] of opened) {
        if (previous?.partitions[index]?.partition !== partition) void partition.log.close();
      }
      throw error;
    }
    return opened;
  }

  /**
   * Opens (creating or recovering) one partition's log; `isCreating` for CreateTopics, which makes the new
   * directories durable itself (LogManager.createLog).
   */
  private newPartition(
    topic: string,
    partitionIndex: number,
    replicas: readonly number[],
    nowMs: number,
    isCreating = false,
    topicId?: string,
  ): Partition {
    return new Partition({
      topic,
      partitionIndex,
      log: isCreating
        ? this.logManager.createLog(topic, partitionIndex, topicId)
        : this.logManager.openLog(topic, partitionIndex, topicId),
      localNodeId: this.config.nodeId,
      // Cluster mode: no role until the cluster gives it one (applyClusterMetadata). A single node leads
      // every partition it hosts.
      leaderId: this.isClusterMode ? NO_LEADER_ID : this.config.nodeId,
      replicas,
      minInsyncReplicas: this.config.minInsyncReplicas,
      replicaLagTimeMaxMs: this.config.replicaLagTimeMaxMs,
      nowMs,
      leaderEpoch: this.isClusterMode ? NO_LEADER_EPOCH : 0,
      proposeIsr: this.isClusterMode ? this.proposeIsr : undefined,
      isLeadershipActive: this.isLeadershipActive,
    });
  }

  /** Forgets a topic (before `registry.add` replaces it, which re-adds partitions kept open): no fetching. */
  private removeTopic(state: TopicState): void {
    this.registry.remove(state);
    for (const info of state.partitions) {
      this.fetchStates.unfollow(topicPartitionKey(state.name, info.partitionIndex));
    }
  }
}

function toSimpleRecord(record: ProduceRecord): SimpleRecord {
  return {
    // proto3 sends 0 for "not set": the append time is used, as for a Kafka record without a timestamp.
    timestampMs: record.timestampMs === 0 ? undefined : record.timestampMs,
    key: record.key.length === 0 ? null : record.key,
    value: record.value,
    headers: record.headers,
  };
}
