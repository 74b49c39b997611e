import { randomUUID } from 'node:crypto';
import { CohortError, ErrorCode } from '../errors';
import { DelayedOperationPurgatory, type PurgatoryStats } from '../purgatory';
import type { Time } from '../time';
import { MAX_DELAY_MS, SystemTimer } from '../timer';
import type { Timer } from '../timer';
import {
  CREATE_PARTITIONS_PER_TURN,
  CREATE_SLICE_MAX_MS,
  DEFAULT_RETENTION_CHECK_INTERVAL_MS,
  DEFAULT_NUM_PARTITIONS,
  DEFAULT_REPLICATION_FACTOR,
  MAX_PARTITIONS_PER_TOPIC,
} from './broker-config';
import type { BrokerConfig } from './broker-config';
import {
  DEFAULT_TOPIC_SETTING,
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  NO_LEADER_EPOCH,
  UNDEFINED_EPOCH_OFFSET,
} from './broker-protocol';
import type {
  BrokerNode,
  BrokerRequestContext,
  BrokerService,
  CreatableTopic,
  CreatableTopicResult,
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
  PartitionMetadata,
  ProducePartitionData,
  ProducePartitionResponse,
  ProduceRecord,
  ProduceRequest,
  ProduceResponse,
  TopicMetadata,
} from './broker-protocol';
import {
  CONSUMER_OFFSETS_LOG_CONFIG,
  CONSUMER_OFFSETS_TOPIC,
  type OffsetsPartition,
} from './consumer-offsets';
import { DelayedFetch } from './delayed-fetch';
import type { FetchParams, FetchPartitionStatus } from './delayed-fetch';
import { DelayedHighWatermark } from './delayed-high-watermark';
import { DelayedProduce } from './delayed-produce';
import type { ProducePartitionStatus } from './delayed-produce';
import { LogManager } from './log-manager';
import type { TopicAssignment } from './log-manager';
import {
  countOpenFileDescriptors,
  FALLBACK_OPEN_FILE_LIMIT,
  FILE_DESCRIPTORS_PER_NEW_PARTITION,
  openFilesHeadroom,
  readOpenFileLimit,
} from './open-files';
import { epochEndOffset, latestLocalEpoch } from './leader-epochs';
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
import {
  DEFAULT_OFFSETS_COMMIT_TIMEOUT_MS,
  DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS,
  OffsetsTopicLeadership,
  type OffsetsTopicOptions,
} from './offsets-topic';
import { PeriodicTask } from './periodic-task';
import { replicaAuthorizationError } from './replica-authorization';
import type { LeaderLinkStatus, ReplicaFetcherOptions } from './replica-fetcher';
import { ReplicaFetcherManager } from './replica-fetcher-manager';
import type { LeaderEndpointFactory } from './replica-fetcher-manager';
import {
  checkpointHighWatermarks,
  DirtyRatioCompaction,
  HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
  type LogAppendInfo,
  type LogReadInfo,
  type LogRecord,
  type LogRecoveryOptions,
  type SimpleRecord,
} from './storage';
import { RESERVED_TOPIC_NAMES, topicNameProblem, topicPartitionKey } from './topic-partition';

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

/** Cluster mode: what this follower replica is doing about its leader. */
interface FollowerFetchState {
  readonly leaderId: number;
  /** Became a follower in a new epoch: must truncate to the epoch boundary before fetching. */
  needsTruncation: boolean;
  /** The leader answered FENCED_LEADER_EPOCH: this replica's epoch is old; wait for newer metadata. */
  isFenced: boolean;
}

interface PartitionInfo {
  readonly partitionIndex: number;
  replicas: readonly number[];
  /** On a follower, for partitions not hosted here: what the leader last reported. */
  leaderId: number;
  leaderEpoch: number;
  isr: readonly number[];
  /** Set when this process hosts the partition. */
  partition: Partition | undefined;
}

interface TopicState {
  readonly name: string;
  /** The topic's id (its incarnation), when it has one: see TopicAssignment.topicId. */
  readonly topicId: string | undefined;
  readonly partitions: PartitionInfo[];
}

/** A partition's part of a Produce, as processed. */
interface ProduceEntry {
  readonly response: { -readonly [K in keyof ProducePartitionResponse]: ProducePartitionResponse[K] };
  readonly key: string;
  readonly info: LogAppendInfo | null;
}

const NO_RECORDS: readonly LogRecord[] = Object.freeze([]);
const NO_NODES: readonly number[] = Object.freeze([]);

/** The error code of a thrown error: a CohortError's own, anything else UNKNOWN_SERVER_ERROR. */
function codeOf(error: unknown): ErrorCode {
  return error instanceof CohortError ? error.code : ErrorCode.UNKNOWN_SERVER_ERROR;
}

const ignore = (): void => undefined;
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function abortError(): Error {
  const error = new Error('the call was cancelled');
  error.name = 'AbortError';
  return error;
}

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
  private readonly topics = new Map<string, TopicState>();
  private readonly partitions = new Map<string, Partition>();
  /**
   * Logs being closed, by partition key (a replica no longer hosted, or of a topic deleted and created
   * again): their directories are not opened again until the close is done.
   */
  private readonly closingLogs = new Map<string, Promise<void>>();
  /** Cluster mode: the last view applied, applied again when a log that held a topic back has closed. */
  private lastClusterUpdate: ClusterMetadataUpdate | undefined;
  private isReapplyScheduled = false;
  /** Cluster mode: the controller as the last view named it (Metadata's controller_id). */
  private controllerId = NO_LEADER_ID;
  private readonly producePurgatory: DelayedOperationPurgatory<DelayedProduce | DelayedHighWatermark>;
  private readonly fetchPurgatory: DelayedOperationPurgatory<DelayedFetch>;
  private readonly maintenanceTimer: Timer;
  private readonly periodicTasks: PeriodicTask[] = [];
  private readonly retentionCheckIntervalMs: number;
  /** Reads shared by the DelayedFetches one event completes (see `sharedRead`). */
  private readonly completionReads = new Map<string, LogReadInfo>();
  private readonly clearCompletionReads = (): void => this.completionReads.clear();
  /** Parked operations, answered at shutdown. */
  private readonly parked = new Set<DelayedFetch | DelayedProduce | DelayedHighWatermark>();
  /** Topics whose partitions CreateTopics is creating, slice by slice: their names are taken. */
  private readonly creations = new Map<string, Promise<CreatableTopicResult>>();
  /**
   * Descriptors the creations in flight will have opened when done. Held in full until a creation ends, so
   * what it has opened so far counts twice (also in the open count): the budget errs on the safe side.
   */
  private reservedFileDescriptors = 0;
  private readonly createPartitionsPerTurn: number;
  private readonly maxOpenFiles: number;
  private readonly countOpenFiles: () => number | undefined;
  private localBroker: BrokerNode | null = null;
  private readonly isrChangeProposer: IsrChangeProposer | undefined;
  private readonly isrProposalRetryBackoffMs: number;
  private readonly leadershipGuard: LeadershipGuard | undefined;
  /** Replication must come from the node it names (BrokerConfig.requireAuthenticatedReplicas). */
  private readonly requireAuthenticatedReplicas: boolean;
  /** Cluster mode: the live nodes of the latest applyClusterMetadata (Metadata's broker list). */
  private liveNodes: readonly BrokerNode[] | null = null;
  /** resignLeadership was called and no update has named this node live since. */
  private isResigned = false;
  /** Cluster mode: the follower partitions, by key, and what each is doing about its leader. */
  private readonly followerFetches = new Map<string, FollowerFetchState>();
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
  /** The high-watermark checkpoint pass under way, if any (a slow one is not overlapped). */
  private highWatermarkCheckpointing: Promise<void> | null = null;
  /** Operations that expired, by kind (Kafka's ExpiresPerSec meters, as counts). */
  readonly expired = { produce: 0, consumerFetch: 0, followerFetch: 0 };
  private readonly offsetsTopic: OffsetsTopicOptions | undefined;
  private readonly offsetsLeadership: OffsetsTopicLeadership | undefined;
  private readonly offsetsCommitTimeoutMs: number;
  /** shutdown() has begun: a store write answered from here on was cut by it, not timed out. */
  private isShuttingDown = false;
  /** The compaction of each compacted follower replica (a leader's is its store's). */
  private readonly followerCompactions = new WeakMap<Partition, DirtyRatioCompaction>();

  constructor(config: BrokerConfig, options: ReplicaManagerOptions) {
    this.config = config;
    this.time = options.time;
    this.listener = options.listener ?? {};
    this.retentionCheckIntervalMs = options.retentionCheckIntervalMs ?? DEFAULT_RETENTION_CHECK_INTERVAL_MS;
    this.createPartitionsPerTurn = Math.max(1, options.createPartitionsPerTurn ?? CREATE_PARTITIONS_PER_TURN);
    this.maxOpenFiles = config.maxOpenFiles ?? readOpenFileLimit() ?? FALLBACK_OPEN_FILE_LIMIT;
    this.countOpenFiles = options.countOpenFiles ?? countOpenFileDescriptors;
    this.isrChangeProposer = options.isrChangeProposer;
    this.isrProposalRetryBackoffMs =
      options.isrProposalRetryBackoffMs ?? DEFAULT_ISR_PROPOSAL_RETRY_BACKOFF_MS;
    this.leadershipGuard = options.leadershipGuard;
    this.requireAuthenticatedReplicas = config.requireAuthenticatedReplicas ?? this.isClusterMode;
    this.logManager = new LogManager(config.dataDir, config.logConfig, this.time, options.recovery);
    this.offsetsTopic = options.offsetsTopic;
    this.offsetsLeadership =
      options.offsetsTopic === undefined
        ? undefined
        : // A listener that throws must not stop the partition changes it is told of halfway.
          new OffsetsTopicLeadership(options.offsetsTopic, this.time, (error) =>
            this.reportError(error, 'the __consumer_offsets listener failed'),
          );
    this.offsetsCommitTimeoutMs = options.offsetsTopic?.commitTimeoutMs ?? DEFAULT_OFFSETS_COMMIT_TIMEOUT_MS;
    // The internal topic's own settings (not the server's --log-* flags), on every replica. Its logs
    // always open with truncateCorruptLogs: one damaged batch costs one group write, where refusing the
    // partition would cost every group on it (docs/operations.md).
    this.logManager.setTopicConfig(
      CONSUMER_OFFSETS_TOPIC,
      { ...CONSUMER_OFFSETS_LOG_CONFIG, ...options.offsetsTopic?.logConfig, cleanupPolicy: 'compact' },
      { truncateCorruptLogs: true },
    );
    // One timer per purgatory, as in Kafka: numDelayed is its timer's size.
    const onTaskError = (error: unknown): void => this.reportError(error, 'a delayed operation failed');
    this.producePurgatory = new DelayedOperationPurgatory(
      'Produce',
      new SystemTimer({ name: 'produce-purgatory', time: this.time, onTaskError }),
    );
    this.fetchPurgatory = new DelayedOperationPurgatory(
      'Fetch',
      new SystemTimer({ name: 'fetch-purgatory', time: this.time, onTaskError }),
    );
    this.maintenanceTimer = new SystemTimer({ name: 'log-maintenance', time: this.time, onTaskError });
    this.replicaFetcherManager =
      options.leaderEndpointFactory === undefined
        ? undefined
        : new ReplicaFetcherManager(config.nodeId, this, options.leaderEndpointFactory, {
            onError: (error, what) => this.reportError(error, what),
            ...options.replicaFetcherOptions,
            time: this.time,
            timer: this.maintenanceTimer,
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
    return this.producePurgatory.numDelayed;
  }

  get numDelayedFetch(): number {
    return this.fetchPurgatory.numDelayed;
  }

  /** Kafka's gauges of the Produce and Fetch purgatories, for metrics read on scrape. */
  purgatoryStats(): PurgatoryStats[] {
    return [this.producePurgatory.stats(), this.fetchPurgatory.stats()];
  }

  /**
   * The partitions this process hosts, led or followed, each with its LEO, HW and ISR: for metrics read on
   * scrape. A live view: do not hold it across an await.
   */
  hostedPartitions(): IterableIterator<Partition> {
    return this.partitions.values();
  }

  /** Each leader this node fetches from, and whether its fetches succeed: for metrics read on scrape. */
  followedLeaderLinks(): { leaderId: number; status: LeaderLinkStatus }[] {
    return this.replicaFetcherManager?.leaderLinks() ?? [];
  }

  /**
   * Opens and recovers every partition of every registered topic, then starts the periodic tasks: ISR
   * expiry every half of replicaLagTimeMaxMs (leader), retention, and the time-based flush if set.
   */
  startup(): void {
    if (this.isStarted) return;
    this.isStarted = true;
    for (const assignment of this.logManager.loadTopics()) this.registerTopic(assignment);
    if (this.offsetsTopic !== undefined && !this.isClusterMode) {
      this.createLocalOffsetsTopic(this.offsetsTopic);
    }
    const periodMs = Math.max(1, Math.floor(this.config.replicaLagTimeMaxMs / 2));
    this.schedule(periodMs, () => this.maybeShrinkIsr());
    this.deleteOldSegments();
    this.schedule(this.retentionCheckIntervalMs, () => this.deleteOldSegments());
    const flushIntervalMs = this.logManager.logConfig.flushIntervalMs;
    if (flushIntervalMs < Number.MAX_SAFE_INTEGER) {
      this.schedule(Math.max(1, Math.floor(flushIntervalMs / 2)), () => this.maybeFlush());
    }
    this.schedule(HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS, () => void this.checkpointHighWatermarks());
  }

  /** This process's address, for Metadata's broker list (known once the server is bound). */
  setLocalBroker(node: BrokerNode): void {
    this.localBroker = node;
  }

  getPartition(key: string): Partition | undefined {
    return this.partitions.get(key);
  }

  /**
   * The partition count of `__consumer_offsets` as this node knows the topic (the data directory's
   * registry in single-node mode, the cluster's metadata in cluster mode), or undefined until the topic
   * is known here. The group layer places groups over this count, never over the configured one.
   */
  offsetsTopicPartitionCount(): number | undefined {
    return this.topics.get(CONSUMER_OFFSETS_TOPIC)?.partitions.length;
  }

  /** Topic names, in creation (or load) order. */
  topicNames(): string[] {
    return [...this.topics.keys()];
  }

  // --- CreateTopics ---

  /**
   * Creates each topic of the request (Kafka's CreateTopics): every check runs first, in the request's
   * order, without touching the disk — the name, that no topic of that name exists or is being created,
   * the partition count and replication factor, and that the process has the file descriptors the new
   * partitions need (POLICY_VIOLATION otherwise, as Kafka refuses a create over its partition limits).
   * The partitions are then created CREATE_PARTITIONS_PER_TURN per event-loop turn, so heartbeats and
   * every other call keep being answered during a large create; the call is answered once every topic is
   * done. A topic becomes visible (Metadata, Produce, Fetch) only once all its partitions exist and its
   * registry file is written. If anything fails on the way, or the server shuts down, the logs that
   * create opened are closed and the directories it made are deleted: nothing half-made is left.
   */
  createTopics(request: CreateTopicsRequest): Promise<CreateTopicsResponse> {
    const counts = new Map<string, number>();
    for (const topic of request.topics) counts.set(topic.name, (counts.get(topic.name) ?? 0) + 1);
    // The topics of one request are created one after the other, in its order (Metadata lists them so).
    let previous: Promise<unknown> = Promise.resolve();
    const results = request.topics.map((topic): CreatableTopicResult | Promise<CreatableTopicResult> => {
      if ((counts.get(topic.name) ?? 0) > 1) {
        return result(topic.name, ErrorCode.INVALID_REQUEST, `topic ${topic.name} appears more than once`);
      }
      const created = this.createTopic(topic, previous);
      if (created instanceof Promise) previous = created;
      return created;
    });
    return Promise.all(results).then((topics) => ({ topics }));
  }

  private createTopic(
    topic: CreatableTopic,
    after: Promise<unknown>,
  ): CreatableTopicResult | Promise<CreatableTopicResult> {
    const { name } = topic;
    if (this.isShutdown) return result(name, ErrorCode.NOT_LEADER_OR_FOLLOWER, 'the server is shutting down');
    // Cluster mode: the controller assigns replicas and the topic reaches this node through
    // applyClusterMetadata; a local create would make a topic no other node knows of.
    if (this.isClusterMode) {
      return result(name, ErrorCode.NOT_CONTROLLER, 'topics of a cluster are created by its controller');
    }
    const nameProblem = topicNameProblem(name);
    if (nameProblem !== null) return result(name, ErrorCode.INVALID_TOPIC_EXCEPTION, nameProblem);
    if (RESERVED_TOPIC_NAMES.has(name)) {
      return result(name, ErrorCode.INVALID_TOPIC_EXCEPTION, `${name} is reserved for the server's own use`);
    }
    if (this.topics.has(name)) {
      return result(name, ErrorCode.TOPIC_ALREADY_EXISTS, `topic ${name} already exists`);
    }
    if (this.creations.has(name)) {
      return result(name, ErrorCode.TOPIC_ALREADY_EXISTS, `topic ${name} is being created`);
    }
    const numPartitions =
      topic.numPartitions === DEFAULT_TOPIC_SETTING ? DEFAULT_NUM_PARTITIONS : topic.numPartitions;
    if (
      !Number.isSafeInteger(numPartitions) ||
      numPartitions < 1 ||
      numPartitions > MAX_PARTITIONS_PER_TOPIC
    ) {
      return result(
        name,
        ErrorCode.INVALID_PARTITIONS,
        `num_partitions must be from 1 to ${MAX_PARTITIONS_PER_TOPIC} (or -1 for ${DEFAULT_NUM_PARTITIONS}), got ${numPartitions}`,
      );
    }
    const replicationFactor =
      topic.replicationFactor === DEFAULT_TOPIC_SETTING
        ? DEFAULT_REPLICATION_FACTOR
        : topic.replicationFactor;
    // One node holds one replica of each partition; more replicas need a cluster (docs/cluster.md).
    if (replicationFactor !== 1) {
      return result(
        name,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        `replication_factor must be 1 (or -1) on a single node, got ${replicationFactor}; more replicas need a cluster of nodes (--etcd-endpoints)`,
      );
    }
    // The leader hosts every partition it creates.
    const descriptors = numPartitions * FILE_DESCRIPTORS_PER_NEW_PARTITION;
    const budgetProblem = this.fileDescriptorProblem(numPartitions, descriptors);
    if (budgetProblem !== null) return result(name, ErrorCode.POLICY_VIOLATION, budgetProblem);
    const replicas = [this.config.nodeId];
    const assignment: TopicAssignment = {
      name,
      topicId: randomUUID(),
      partitions: Array.from({ length: numPartitions }, (_, partitionIndex) => ({
        partitionIndex,
        replicas,
      })),
    };
    this.reservedFileDescriptors += descriptors;
    const creation = after
      .catch(ignore)
      .then(() => this.createPartitionsInSlices(assignment))
      .finally(() => {
        this.creations.delete(name);
        this.reservedFileDescriptors -= descriptors;
      });
    this.creations.set(name, creation);
    return creation;
  }

  /**
   * Why the process cannot open `descriptors` more files for `partitions` new partitions, or null if it
   * can: the limit, less the descriptors open now, less those that creates in flight will open, less the
   * headroom kept for connections and segment rolls (open-files.ts).
   */
  private fileDescriptorProblem(partitions: number, descriptors: number): string | null {
    const limit = this.maxOpenFiles;
    const open = this.countOpenFiles() ?? this.estimatedOpenFiles();
    const headroom = openFilesHeadroom(limit);
    const free = limit - headroom - open - this.reservedFileDescriptors;
    if (descriptors <= free) return null;
    return (
      `${partitions} partitions need ${descriptors} file descriptors and ${Math.max(0, free)} are free: ` +
      `the process may open ${limit}, has ${open} open, ${this.reservedFileDescriptors} are reserved by ` +
      `creates in flight and ${headroom} kept for connections and segments. Raise the limit (ulimit -n, ` +
      '--max-open-files) or create fewer partitions'
    );
  }

  /** Where /proc/self/fd cannot be read: two descriptors per segment of every hosted partition. */
  private estimatedOpenFiles(): number {
    let open = 0;
    for (const partition of this.partitions.values()) open += 2 * partition.log.numberOfSegments;
    return open;
  }

  /**
   * Opens the topic's partition logs a slice per event-loop turn, then writes its registry file and
   * registers it (logs first, registry last: see LogManager). Resolves with the topic's result; never
   * rejects. On a failure or a shutdown, the logs opened so far are closed and the directories this
   * creation made are deleted (directories an earlier crashed create left are reused, and left).
   */
  private async createPartitionsInSlices(assignment: TopicAssignment): Promise<CreatableTopicResult> {
    const { name } = assignment;
    const opened = new Map<number, Partition>();
    const made: number[] = [];
    const nowMs = this.time.monotonicMs();
    let failure: unknown;
    try {
      let next = 0;
      while (!this.isShutdown) {
        const end = Math.min(next + this.createPartitionsPerTurn, assignment.partitions.length);
        const sliceStartMs = this.time.monotonicMs();
        while (next < end) {
          const { partitionIndex, replicas } = assignment.partitions[next++]!;
          // Counted before the open: a failure halfway through it may have made the directory already.
          if (!this.logManager.hasLog(name, partitionIndex)) made.push(partitionIndex);
          opened.set(
            partitionIndex,
            this.newPartition(name, partitionIndex, replicas, nowMs, true, assignment.topicId),
          );
          // A slow disk makes a partition slower: the slice also ends when its time is up.
          if (this.time.monotonicMs() - sliceStartMs >= CREATE_SLICE_MAX_MS) break;
        }
        if (next === assignment.partitions.length) break;
        await nextTurn();
      }
      if (!this.isShutdown) {
        // The new directories durable in the data directory, then the registry that names them, both
        // off the loop. Once the registry is written the topic exists, shutdown or not: close() closes
        // its logs with the others.
        await this.logManager.syncNewLogs();
        await this.logManager.writeTopicAsync(assignment);
        this.addTopic(assignment, opened);
        return result(name, ErrorCode.NONE, '');
      }
    } catch (error) {
      failure = error;
    }
    // Undo: close the logs, forget a registry file the failure may have left, then delete the directories
    // in slices (deleting thousands is no shorter than making them).
    await Promise.all([...opened.values()].map((partition) => partition.log.close().catch(ignore)));
    if (failure !== undefined) this.logManager.deleteTopicFile(name);
    for (let i = 0; i < made.length; i++) {
      if (i > 0 && i % this.createPartitionsPerTurn === 0) await nextTurn();
      this.logManager.deleteLog(name, made[i]!);
    }
    if (made.length > 0) this.logManager.syncDataDir();
    if (failure === undefined) {
      return result(name, ErrorCode.NOT_LEADER_OR_FOLLOWER, 'the server is shutting down');
    }
    this.reportError(failure, `creating topic ${name} failed; the partitions it made were removed`);
    return result(
      name,
      failure instanceof CohortError ? failure.code : ErrorCode.KAFKA_STORAGE_ERROR,
      'the partitions could not be created; the server log has why',
    );
  }

  // --- Metadata ---

  /**
   * The requested topics (every topic but the internal ones when none is named) and the brokers: this node
   * on a single node, the live nodes of the cluster's last view in cluster mode.
   *
   * A cluster node without a view yet (not registered: etcd down at its start, or its node id still held by
   * another process's session) knows neither the cluster's nodes nor its topics: its data directory may
   * hold topics deleted since and lack topics created since, and UNKNOWN_TOPIC_OR_PARTITION would tell a
   * client bootstrapped from it that an existing topic does not exist. It answers no brokers, as a node
   * that is not a member (Kafka's client drops a Metadata without brokers and asks again, another node if
   * it has one), and each named topic LEADER_NOT_AVAILABLE (retriable) with a message saying why; asked
   * for every topic, no topics. Once a member, a node answers from its last view even after losing
   * its session, as a Kafka broker answers from its metadata cache: the leaders it names refuse what they
   * no longer lead, and the client asks Metadata again.
   */
  metadata(request: MetadataRequest): Promise<MetadataResponse> {
    if (this.isClusterMode && this.liveNodes === null) {
      const topics = request.topics.map((name): TopicMetadata => {
        const problem = topicNameProblem(name);
        return problem === null
          ? topicError(name, ErrorCode.LEADER_NOT_AVAILABLE, NOT_A_MEMBER_MESSAGE)
          : topicError(name, ErrorCode.INVALID_TOPIC_EXCEPTION, problem);
      });
      return Promise.resolve({ brokers: [], topics, controllerId: NO_LEADER_ID });
    }
    // Every topic but the internal ones (Kafka's clients exclude them by default, exclude.internal.topics;
    // the protocol here has no is_internal flag to let them): `__consumer_offsets` is listed when named.
    const names =
      request.topics.length === 0
        ? [...this.topics.keys()].filter((name) => !RESERVED_TOPIC_NAMES.has(name))
        : request.topics;
    const topics = names.map((name): TopicMetadata => {
      const state = this.topics.get(name);
      if (state === undefined) {
        const problem = topicNameProblem(name);
        return problem === null
          ? topicError(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, '')
          : topicError(name, ErrorCode.INVALID_TOPIC_EXCEPTION, problem);
      }
      return {
        name,
        errorCode: ErrorCode.NONE,
        partitions: state.partitions.map(partitionMetadata),
        errorMessage: '',
      };
    });
    const brokers: BrokerNode[] = [];
    if (this.liveNodes !== null) {
      // Cluster mode: every live node, as the cluster last told this one (Kafka's live brokers).
      for (const node of this.liveNodes) brokers.push(node);
    } else if (this.localBroker !== null) {
      brokers.push(this.localBroker);
    }
    const controllerId = this.isClusterMode ? this.controllerId : this.config.nodeId;
    return Promise.resolve({ brokers, topics, controllerId });
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
    const partition = this.partitions.get(key);
    if (partition === undefined) {
      return failed(this.unhostedPartitionError(topic, partitionIndex));
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
    // Wake-ups: the HW moves on append only with an ISR of one. Parked follower Fetches wait for the
    // LEO, consumer Fetches for the HW: one check of the key covers both.
    const isHwIncreased = partition.maybeIncrementLeaderHW();
    this.fetchPurgatory.checkAndComplete(key);
    if (isHwIncreased) this.producePurgatory.checkAndComplete(key);
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
          entry.response.errorCode = codeOf(error);
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
    return new Promise<ProduceResponse>((resolve, reject) => {
      const onAbort = (): void => {
        this.parked.delete(op);
        op.abort();
        reject(abortError());
      };
      const respond = (): void => {
        this.parked.delete(op);
        unlisten?.();
        for (let i = 0; i < appended.length; i++) appended[i]!.response.errorCode = statuses[i]!.errorCode;
        resolve(response);
      };
      const op: DelayedProduce = new DelayedProduce(timeoutMs, statuses, this, respond, () => {
        this.expired.produce++;
      });
      this.parked.add(op);
      for (let i = 0; i < appended.length; i++) {
        const flushed = appended[i]!.info!.flushed;
        if (flushed === null) continue;
        const status = statuses[i]!;
        flushed.then(
          () => op.onFlushed(status),
          (error: unknown) => op.onFlushFailed(status, codeOf(error)),
        );
      }
      // Runs onAbort at once if the caller has already gone; respond (which unregisters) runs only later.
      const unlisten = context.onCancel?.(onAbort);
      if (op.isCompleted) return; // aborted: the caller was already gone
      this.producePurgatory.tryCompleteElseWatch(
        op,
        statuses.map((status) => status.key),
      );
    });
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
    return new Promise<FetchResponse>((resolve, reject) => {
      const onAbort = (): void => {
        this.parked.delete(op);
        op.abort();
        reject(abortError());
      };
      const respond = (): void => {
        this.parked.delete(op);
        unlisten?.();
        resolve(this.readFromLocalLog(params, request.topics, null).response);
      };
      const op: DelayedFetch = new DelayedFetch(maxWaitMs, params, statuses, this, respond, () => {
        if (params.isFromFollower) this.expired.followerFetch++;
        else this.expired.consumerFetch++;
      });
      this.parked.add(op);
      // Runs onAbort at once if the caller has already gone; respond (which unregisters) runs only later.
      const unlisten = context.onCancel?.(onAbort);
      if (op.isCompleted) return; // aborted: the caller was already gone
      this.fetchPurgatory.tryCompleteElseWatch(
        op,
        statuses.map((status) => status.key),
      );
    });
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
        const partition = this.partitions.get(key);
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
          return failed(this.unhostedPartitionError(topic.name, request.partitionIndex));
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
    if (partition.isr !== isrBefore)
      this.listener.onIsrChange?.(partition.topic, partition.partitionIndex, partition.isr, isrBefore);
    if (isHwIncreased) this.onHighWatermarkIncreased(partition);
  }

  /** Kafka's tryCompleteDelayedRequests: a higher HW may complete Produces and consumer Fetches. */
  private onHighWatermarkIncreased(partition: Partition): void {
    this.producePurgatory.checkAndComplete(partition.key);
    this.fetchPurgatory.checkAndComplete(partition.key);
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
          const partition = this.partitions.get(topicPartitionKey(topic.name, partitionIndex));
          if (partition === undefined) {
            return answer(this.unhostedPartitionError(topic.name, partitionIndex));
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
          const partition = this.partitions.get(topicPartitionKey(topic.name, query.partition));
          if (partition === undefined)
            return answer(this.unhostedPartitionError(topic.name, query.partition));
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
    this.liveNodes = update.liveNodes.map(({ nodeId: id, host, port }) => ({ nodeId: id, host, port }));
    this.controllerId = update.controllerId;
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
      const known = this.topics.get(name);
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
      const current = this.topics.get(name)!;
      for (const state of states) {
        const info = current.partitions[state.partitionIndex]!;
        info.leaderId = state.leader;
        info.leaderEpoch = state.leaderEpoch;
        info.isr = Object.freeze([...state.isr]);
        if (info.partition !== undefined) {
          this.applyPartitionState(info.partition, state, nowMs);
          this.updateOffsetsLeadership(info.partition);
        }
      }
    }
    for (const state of [...this.topics.values()]) {
      if (byTopic.has(state.name) || this.creations.has(state.name)) continue;
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
    this.offsetsLeadership?.resignAll();
    for (const partition of this.partitions.values()) {
      if (partition.isLeader) this.producePurgatory.checkAndComplete(partition.key);
    }
  }

  /** One hosted partition's state from the cluster: leader or follower (of a leader, or of nobody). */
  private applyPartitionState(partition: Partition, state: PartitionLeadership, nowMs: number): void {
    const key = partition.key;
    if (state.leader === this.config.nodeId) {
      const isrBefore = partition.isr;
      const isSameLeadership = partition.isLeader && partition.leaderEpoch === state.leaderEpoch;
      if (!partition.makeLeader(state, nowMs)) return;
      this.followerFetches.delete(key);
      // An ISR change of this leader's, committed (the store's view may arrive before the proposer's
      // answer, which is then ignored). A new leadership's ISR is the cluster's, not a change.
      if (isSameLeadership && !sameIds(partition.isr, isrBefore)) {
        this.listener.onIsrChange?.(partition.topic, partition.partitionIndex, partition.isr, isrBefore);
      }
      partition.maybeIncrementLeaderHW();
    } else {
      if (!partition.makeFollower(state)) return;
      if (state.leader === NO_LEADER_ID) this.followerFetches.delete(key);
      else this.followerFetches.set(key, { leaderId: state.leader, needsTruncation: true, isFenced: false });
    }
    // Parked acks=-1 produces answer (NOT_LEADER_OR_FOLLOWER on a former leader), parked follower fetches
    // of a former leader answer, consumers see a new HW.
    this.producePurgatory.checkAndComplete(key);
    this.fetchPurgatory.checkAndComplete(key);
  }

  /** Sends a partition's ISR proposal to the store; the answer is applied when it comes (never awaited). */
  private sendIsrProposal(partition: Partition, proposal: IsrProposal): void {
    const proposer = this.isrChangeProposer!;
    const settle = (result: IsrChangeResult): void => {
      if (this.isShutdown || this.partitions.get(partition.key) !== partition) return;
      const isrBefore = partition.isr;
      const isChanged = partition.completeIsrProposal(
        proposal,
        result,
        this.time.monotonicMs(),
        this.isrProposalRetryBackoffMs,
      );
      if (!isChanged) return;
      this.listener.onIsrChange?.(partition.topic, partition.partitionIndex, partition.isr, isrBefore);
      if (partition.maybeIncrementLeaderHW()) this.onHighWatermarkIncreased(partition);
      // acks=-1 produces answer NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR fell below the minimum.
      else this.producePurgatory.checkAndComplete(partition.key);
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

  // --- the follower side, driven by ReplicaFetcher ---

  /**
   * The partitions this follower copies from `leaderId`, each from its LEO: those that follow that leader,
   * have found their epoch boundary and are not fenced, each with its leader epoch.
   */
  followerFetchTargets(leaderId: number): FollowerFetchTarget[] {
    const targets: FollowerFetchTarget[] = [];
    for (const [key, state] of this.followerFetches) {
      const partition = this.partitions.get(key);
      if (partition === undefined || state.leaderId !== leaderId) continue;
      if (state.needsTruncation || state.isFenced) continue;
      targets.push({
        topic: partition.topic,
        partitionIndex: partition.partitionIndex,
        key,
        fetchOffset: partition.logEndOffset,
        currentLeaderEpoch: partition.leaderEpoch,
      });
    }
    return targets;
  }

  /** Cluster mode: the leaders this node's follower partitions fetch from. */
  followedLeaders(): Set<number> {
    const leaders = new Set<number>();
    for (const state of this.followerFetches.values()) leaders.add(state.leaderId);
    return leaders;
  }

  /**
   * Whether a partition following `leaderId` waits for its epoch-boundary truncation (it just became a
   * follower of that leader, or its epoch moved) and `isDue` (the fetcher's: not sitting out a backoff):
   * the leader's fetcher starts its next round with it.
   */
  hasPendingTruncation(leaderId: number, isDue: (key: string) => boolean): boolean {
    for (const [key, state] of this.followerFetches) {
      if (state.leaderId === leaderId && state.needsTruncation && !state.isFenced && isDue(key)) return true;
    }
    return false;
  }

  /**
   * Cluster mode: the partitions following `leaderId` that must find their epoch boundary before they
   * fetch. One whose log records no leader epoch has nothing to ask: it is truncated to its HW here (every
   * record below it is on the leader, as before KIP-101) and fetches next.
   */
  epochBoundaryTargets(leaderId: number): EpochBoundaryTarget[] {
    const targets: EpochBoundaryTarget[] = [];
    for (const [key, state] of this.followerFetches) {
      const partition = this.partitions.get(key);
      if (partition === undefined || state.leaderId !== leaderId) continue;
      if (!state.needsTruncation || state.isFenced) continue;
      const latestEpoch = latestLocalEpoch(partition);
      if (latestEpoch === NO_LEADER_EPOCH) {
        this.truncateFollower(partition, partition.highWatermark);
        state.needsTruncation = false;
        continue;
      }
      targets.push({
        topic: partition.topic,
        partitionIndex: partition.partitionIndex,
        key,
        currentLeaderEpoch: partition.leaderEpoch,
        leaderEpoch: latestEpoch,
      });
    }
    return targets;
  }

  /**
   * Applies the leader's OffsetForLeaderEpoch answer for one partition (Kafka's
   * AbstractFetcherThread.getOffsetTruncationState, KIP-279):
   * - no end offset: the leader knows nothing of the epoch; truncate to the HW;
   * - no epoch (an old leader): truncate to the leader's end offset;
   * - the leader's epoch, which this replica also has: truncate to the smaller of the two ends of it;
   * - an epoch this replica does not have: truncate to the end of the largest epoch below it that it
   *   has, and ask again (`again`) with that one.
   * Never past the local LEO. FENCED_LEADER_EPOCH parks the partition until newer metadata arrives;
   * UNKNOWN_LEADER_EPOCH asks again shortly (`retrySoon`); other errors ask for a backoff (`retry`).
   */
  applyEpochEndOffset(key: string, data: EpochEndOffset, sentLeaderEpoch?: number): EpochBoundaryOutcome {
    const partition = this.partitions.get(key);
    const state = this.followerFetches.get(key);
    if (partition === undefined || state === undefined || this.isShutdown) return 'retry';
    if (!state.needsTruncation) return 'truncated';
    // An answer to a request sent in an older epoch says nothing of the current one (the metadata moved
    // while it was in flight): its fence is already lifted, and its end offset is asked for again.
    if (sentLeaderEpoch !== undefined && sentLeaderEpoch !== partition.leaderEpoch) return 'again';
    if (data.errorCode === ErrorCode.FENCED_LEADER_EPOCH) {
      state.isFenced = true;
      return 'retry';
    }
    if (data.errorCode === ErrorCode.UNKNOWN_LEADER_EPOCH) return 'retrySoon';
    if (data.errorCode !== ErrorCode.NONE) return 'retry';
    const logEndOffset = partition.logEndOffset;
    let offset: number;
    let isComplete = true;
    if (data.endOffset === UNDEFINED_EPOCH_OFFSET) {
      offset = partition.highWatermark;
    } else if (data.leaderEpoch === NO_LEADER_EPOCH) {
      offset = data.endOffset;
    } else {
      const local = epochEndOffset(partition, data.leaderEpoch);
      if (local.leaderEpoch === NO_LEADER_EPOCH) {
        offset = data.endOffset;
      } else if (local.leaderEpoch !== data.leaderEpoch) {
        offset = local.endOffset;
        isComplete = false;
      } else {
        offset = Math.min(local.endOffset, data.endOffset);
      }
    }
    this.truncateFollower(partition, Math.min(offset, logEndOffset));
    if (!isComplete) return 'again';
    state.needsTruncation = false;
    return 'truncated';
  }

  /** Cuts a follower's log at `offset` if it reaches past it. */
  private truncateFollower(partition: Partition, offset: number): void {
    if (offset >= partition.logEndOffset) return;
    this.completionReads.clear();
    partition.truncateTo(Math.max(offset, partition.logStartOffset));
  }

  /**
   * Applies one partition of a fetch response from the leader: appends its records and takes the
   * leader's HW (capped at the local LEO). OFFSET_OUT_OF_RANGE means this replica is ahead of the leader
   * or behind its log start: without leader epochs the safe rule is to truncate to the leader's HW (every
   * record below it is on the leader) or, behind the log start, to restart at the leader's log start.
   */
  applyFetchedPartition(
    key: string,
    data: FetchPartitionData,
    sentLeaderEpoch?: number,
  ): FetchedPartitionOutcome {
    const partition = this.partitions.get(key);
    if (partition === undefined || partition.isLeader || this.isShutdown) return 'retry';
    if (data.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
      if (data.highWatermark < 0 || data.logStartOffset < 0) return 'retry';
      this.completionReads.clear();
      if (partition.logEndOffset < data.logStartOffset)
        partition.truncateFullyAndStartAt(data.logStartOffset);
      else partition.truncateTo(Math.min(data.highWatermark, partition.logEndOffset));
      return 'truncated';
    }
    if (data.errorCode === ErrorCode.FENCED_LEADER_EPOCH) {
      // This replica's epoch is older than the leader's: wait for the metadata that says so — unless the
      // fetch was sent in an epoch this replica has already left (the metadata arrived while it was in
      // flight): then the fence is old news, and marking the new epoch fenced would park the partition
      // until the next change of its state, which may never come.
      if (sentLeaderEpoch !== undefined && sentLeaderEpoch !== partition.leaderEpoch) return 'appended';
      const state = this.followerFetches.get(key);
      if (state !== undefined) state.isFenced = true;
      return 'retry';
    }
    if (data.errorCode === ErrorCode.UNKNOWN_LEADER_EPOCH) return 'retrySoon';
    if (data.errorCode !== ErrorCode.NONE) return 'retry';
    if (data.records.length > 0) {
      // Only what follows the local LEO: a response to an older fetch offset may overlap.
      const from = partition.logEndOffset;
      const fresh =
        data.records[0]!.offset >= from ? data.records : data.records.filter((r) => r.offset >= from);
      if (fresh.length > 0) {
        partition.appendRecordsAsFollower(fresh);
        // A consumer reading this follower waits for the HW, not the LEO: nothing to wake yet.
      }
    }
    if (partition.updateFollowerHighWatermark(data.highWatermark)) this.fetchPurgatory.checkAndComplete(key);
    if (data.records.length > 0) this.maybeCompactFollower(partition);
    return 'appended';
  }

  /**
   * Kafka's cleaner runs on every replica: a follower of a compacted topic compacts its own copy, by the
   * same dirty ratio as the leader's store and only below its own HW (a record above it may still be
   * truncated when it follows a new leader). Offsets never change, so the copy still matches the leader's
   * offset for offset wherever both hold a record.
   */
  private maybeCompactFollower(partition: Partition): void {
    if (partition.log.config.cleanupPolicy !== 'compact') return;
    let compaction = this.followerCompactions.get(partition);
    if (compaction === undefined) {
      const ratio = this.offsetsTopic?.writer?.minCleanableDirtyRatio;
      compaction = new DirtyRatioCompaction(partition.log, {
        maxOffset: () => partition.highWatermark,
        ...(ratio === undefined ? {} : { minCleanableDirtyRatio: ratio }),
        onError: (error) => {
          if (!this.isShuttingDown && this.partitions.get(partition.key) === partition) {
            this.reportError(error, `compaction of ${partition.key} failed`);
          }
        },
      });
      this.followerCompactions.set(partition, compaction);
    }
    compaction.maybeCompact();
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
    const existing = this.topics.get(name);
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
    const state = this.topics.get(name)!;
    options.onStartup?.({
      outcome,
      numPartitions: state.partitions.length,
      configuredNumPartitions,
    });
    for (const info of state.partitions) {
      if (info.partition !== undefined) this.updateOffsetsLeadership(info.partition);
    }
  }

  /** Tells the offsets listener whether `partition` (of `__consumer_offsets`) is led here, and at which epoch. */
  private updateOffsetsLeadership(partition: Partition): void {
    if (this.offsetsLeadership === undefined || partition.topic !== CONSUMER_OFFSETS_TOPIC) return;
    const isLeading = partition.isLeader && !this.isShuttingDown && this.isLeadershipActive();
    this.offsetsLeadership.update(this.offsetsPartitionOf(partition), isLeading, partition.leaderEpoch);
  }

  private offsetsPartitionOf(partition: Partition): OffsetsPartition & { readonly partitionIndex: number } {
    return {
      key: partition.key,
      partitionIndex: partition.partitionIndex,
      log: partition.log,
      get highWatermark() {
        return partition.highWatermark;
      },
      appendCommitted: (records: readonly SimpleRecord[], leaderEpoch: number) =>
        this.appendCommitted(partition, records, leaderEpoch),
      awaitHighWatermark: (offset: number, leaderEpoch: number) =>
        this.awaitHighWatermark(partition, offset, leaderEpoch),
    };
  }

  /**
   * A store's write (OffsetsPartition.appendCommitted): appended as leader at `leaderEpoch` with acks=-1
   * semantics and parked as a DelayedProduce in the produce purgatory until the HW passes it with the ISR
   * at the minimum and the leader's fsync covers it, or the commit timeout (REQUEST_TIMED_OUT). Once this
   * node no longer leads the partition at that epoch (a new epoch, a follower, unassigned, the session
   * lost, shutdown) it rejects NOT_LEADER_OR_FOLLOWER, whatever the purgatory found.
   */
  private appendCommitted(
    partition: Partition,
    records: readonly SimpleRecord[],
    leaderEpoch: number,
  ): Promise<void> {
    const key = partition.key;
    const { isLeading, notLeader, lookup } = this.leadershipAt(partition, leaderEpoch);
    if (!isLeading()) return Promise.reject(notLeader());
    let info: LogAppendInfo;
    try {
      info = partition.appendRecordsToLeader(records, -1);
    } catch (error) {
      return Promise.reject(error);
    }
    const isHwIncreased = partition.maybeIncrementLeaderHW();
    this.fetchPurgatory.checkAndComplete(key);
    if (isHwIncreased) this.producePurgatory.checkAndComplete(key);
    const status: ProducePartitionStatus = {
      key,
      requiredOffset: info.lastOffset + 1,
      acksPending: true,
      isFlushed: info.flushed === null,
      errorCode: ErrorCode.REQUEST_TIMED_OUT,
    };
    return new Promise<void>((resolve, reject) => {
      const respond = (): void => {
        this.parked.delete(op);
        if (!isLeading()) reject(notLeader());
        else if (status.errorCode === ErrorCode.NONE) resolve();
        else {
          reject(
            new CohortError(
              status.errorCode,
              status.errorCode === ErrorCode.REQUEST_TIMED_OUT
                ? `${key}: not committed within ${this.offsetsCommitTimeoutMs} ms`
                : `${key}: the write was not committed`,
            ),
          );
        }
      };
      const op: DelayedProduce = new DelayedProduce(this.offsetsCommitTimeoutMs, [status], lookup, respond);
      this.parked.add(op);
      info.flushed?.then(
        () => op.onFlushed(status),
        (error: unknown) => op.onFlushFailed(status, codeOf(error)),
      );
      this.producePurgatory.tryCompleteElseWatch(op, [key]);
    });
  }

  /**
   * A store's wait for its load to be committed (OffsetsPartition.awaitHighWatermark): parked as a
   * DelayedHighWatermark in the produce purgatory, under the partition's key, until the HW reaches
   * `offset`; rejected NOT_LEADER_OR_FOLLOWER once this node no longer leads the partition at `leaderEpoch`
   * (every such change checks the key's watchers; shutdown completes every parked operation).
   */
  private awaitHighWatermark(partition: Partition, offset: number, leaderEpoch: number): Promise<void> {
    const { isLeading, notLeader, lookup } = this.leadershipAt(partition, leaderEpoch);
    if (!isLeading()) return Promise.reject(notLeader());
    if (partition.highWatermark >= offset) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const respond = (): void => {
        this.parked.delete(op);
        if (!isLeading()) reject(notLeader());
        else if (op.errorCode === ErrorCode.NONE) resolve();
        else reject(new CohortError(op.errorCode, `${partition.key}: the HW did not reach ${offset}`));
      };
      const op = new DelayedHighWatermark(MAX_DELAY_MS, partition.key, offset, lookup, respond);
      this.parked.add(op);
      this.producePurgatory.tryCompleteElseWatch(op, [partition.key]);
    });
  }

  /**
   * Whether this node still leads `partition` at `leaderEpoch` (not shutting down, the same replica, its
   * leader at that epoch, the session active), the error a store's call gets once it does not, and the
   * partition as a delayed operation sees it: gone once it is no longer led here at the epoch.
   */
  private leadershipAt(
    partition: Partition,
    leaderEpoch: number,
  ): { isLeading: () => boolean; notLeader: () => CohortError; lookup: PartitionLookup } {
    const key = partition.key;
    const isLeading = (): boolean =>
      !this.isShuttingDown &&
      this.partitions.get(key) === partition &&
      partition.isLeader &&
      partition.leaderEpoch === leaderEpoch &&
      this.isLeadershipActive();
    const notLeader = (): CohortError =>
      new CohortError(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        `node ${this.config.nodeId} does not lead ${key} at leader epoch ${leaderEpoch}`,
      );
    return { isLeading, notLeader, lookup: { getPartition: () => (isLeading() ? partition : undefined) } };
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
    this.offsetsLeadership?.resignAll();
    this.stoppingFetchers = this.replicaFetcherManager?.shutdown() ?? null;
    for (const task of this.periodicTasks) task.cancel();
    for (const op of [...this.parked]) op.forceComplete();
    this.isShutdown = true;
    this.producePurgatory.shutdown();
    this.fetchPurgatory.shutdown();
    this.maintenanceTimer.shutdown();
  }

  /** `shutdown()`, then fsyncs and closes every log. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.shutdown();
      await this.stoppingFetchers;
      // A create in flight sees the shutdown at its next slice and removes what it made.
      await Promise.all(this.creations.values());
      // The last HWs, so a restart starts from them; a failure (reported) must not keep the logs open.
      await this.highWatermarkCheckpointing?.catch(ignore);
      await this.checkpointHighWatermarks().catch(ignore);
      // The resigned stores' compactions end before their logs close (a close would abort them anyway).
      await this.offsetsLeadership?.settled();
      await Promise.all([...this.partitions.values()].map((partition) => partition.log.close()));
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
      const hosted = this.partitions.get(key);
      const log = hosted?.log ?? this.logManager.openLog(topic, partitionIndex);
      try {
        const topicId = this.topics.get(topic)?.topicId ?? this.logManager.topicIdOf(topic, partitionIndex);
        const partitionCount = this.topics.get(topic)?.partitions.length ?? partitionCounts.get(topic);
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

  private schedule(periodMs: number, action: () => void): void {
    this.periodicTasks.push(new PeriodicTask(this.maintenanceTimer, periodMs, action).start());
  }

  private maybeShrinkIsr(): void {
    const nowMs = this.time.monotonicMs();
    for (const partition of this.partitions.values()) {
      const isrBefore = partition.isr;
      const removed = partition.maybeShrinkIsr(nowMs);
      if (removed.length === 0) continue;
      this.listener.onIsrChange?.(partition.topic, partition.partitionIndex, partition.isr, isrBefore);
      if (partition.maybeIncrementLeaderHW()) this.onHighWatermarkIncreased(partition);
      // Below the minimum the HW stays, but a waiting acks=-1 may now be answered
      // NOT_ENOUGH_REPLICAS_AFTER_APPEND.
      else this.producePurgatory.checkAndComplete(partition.key);
    }
  }

  private deleteOldSegments(): void {
    for (const partition of this.partitions.values()) {
      try {
        if (partition.deleteOldSegments() > 0) this.completionReads.clear();
      } catch (error) {
        this.reportError(error, `retention of ${partition.key} failed`);
      }
    }
  }

  /** Kafka's checkpointHighWatermarks: each partition whose HW moved since its last checkpoint. */
  private checkpointHighWatermarks(): Promise<void> {
    this.highWatermarkCheckpointing ??= checkpointHighWatermarks(this.partitions.values(), (error, key) =>
      this.reportError(error, `high watermark checkpoint of ${key} failed`),
    ).finally(() => {
      this.highWatermarkCheckpointing = null;
    });
    return this.highWatermarkCheckpointing;
  }

  private maybeFlush(): void {
    for (const partition of this.partitions.values()) {
      partition.log
        .maybeFlush()
        ?.catch((error: unknown) => this.reportError(error, `flush of ${partition.key} failed`));
    }
  }

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
    const state = this.topics.get(assignment.name);
    if (state !== undefined && sameAssignment(state, assignment)) return true;
    if (checkBudget) {
      const added = assignment.partitions.filter(
        (p) =>
          p.replicas.includes(this.config.nodeId) &&
          state?.partitions[p.partitionIndex]?.partition === undefined,
      ).length;
      const problem =
        added === 0 ? null : this.fileDescriptorProblem(added, added * FILE_DESCRIPTORS_PER_NEW_PARTITION);
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
    this.addTopic(assignment, opened);
    const kept = new Set(opened.values());
    for (const info of state?.partitions ?? []) {
      if (info.partition !== undefined && !kept.has(info.partition)) this.closeUnassigned(info.partition);
    }
    return true;
  }

  /** A replica this node no longer hosts: no longer copied or served; its files stay on disk. */
  private closeUnassigned(partition: Partition): void {
    if (partition.topic === CONSUMER_OFFSETS_TOPIC) this.offsetsLeadership?.resign(partition.partitionIndex);
    this.followerFetches.delete(partition.key);
    this.completionReads.clear();
    this.producePurgatory.checkAndComplete(partition.key);
    this.fetchPurgatory.checkAndComplete(partition.key);
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
    this.addTopic(assignment, this.openPartitions(assignment));
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

  /**
   * The error for a partition this process has no log of, as Kafka tells them apart:
   * UNKNOWN_TOPIC_OR_PARTITION when the topic or that partition index does not exist,
   * NOT_LEADER_OR_FOLLOWER when it exists on replicas that do not include this process.
   */
  private unhostedPartitionError(topic: string, partitionIndex: number): ErrorCode {
    // A topic's partitions are indexed by partition index; any other index finds nothing.
    return this.topics.get(topic)?.partitions[partitionIndex] !== undefined
      ? ErrorCode.NOT_LEADER_OR_FOLLOWER
      : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
  }

  private addTopic(assignment: TopicAssignment, opened: Map<number, Partition>): void {
    const partitions = assignment.partitions.map(({ partitionIndex, replicas }): PartitionInfo => {
      const partition = opened.get(partitionIndex);
      if (partition !== undefined) this.partitions.set(partition.key, partition);
      return {
        partitionIndex,
        replicas,
        leaderId: partition?.leaderId ?? NO_LEADER_ID,
        leaderEpoch: partition?.leaderEpoch ?? 0,
        isr: NO_NODES,
        partition,
      };
    });
    this.topics.set(assignment.name, { name: assignment.name, topicId: assignment.topicId, partitions });
  }

  /** Forgets a topic's state before `addTopic` replaces it (partitions kept open are re-added there). */
  private removeTopic(state: TopicState): void {
    this.topics.delete(state.name);
    for (const info of state.partitions) {
      if (info.partition !== undefined) this.partitions.delete(info.partition.key);
      this.followerFetches.delete(topicPartitionKey(state.name, info.partitionIndex));
    }
  }
}

function result(name: string, errorCode: ErrorCode, errorMessage: string): CreatableTopicResult {
  return { name, errorCode, errorMessage };
}

/** Metadata's answer for a topic named by a cluster node that has no view of the cluster yet. */
const NOT_A_MEMBER_MESSAGE =
  'this node is not yet a member of the cluster (not registered, or its first cluster view not applied): ' +
  'ask another node, or again shortly';

function topicError(name: string, errorCode: ErrorCode, errorMessage: string): TopicMetadata {
  return { name, errorCode, partitions: [], errorMessage };
}

function partitionMetadata(info: PartitionInfo): PartitionMetadata {
  const partition = info.partition;
  if (partition !== undefined) {
    return {
      partitionIndex: info.partitionIndex,
      leaderId: partition.leaderId,
      replicaNodes: partition.replicas,
      isrNodes: partition.isr,
      errorCode: partition.leaderId < 0 ? ErrorCode.LEADER_NOT_AVAILABLE : ErrorCode.NONE,
      leaderEpoch: partition.leaderEpoch,
    };
  }
  return {
    partitionIndex: info.partitionIndex,
    leaderId: info.leaderId,
    replicaNodes: info.replicas,
    isrNodes: info.isr,
    errorCode: info.leaderId < 0 ? ErrorCode.LEADER_NOT_AVAILABLE : ErrorCode.NONE,
    leaderEpoch: info.leaderEpoch,
  };
}

function sameAssignment(state: TopicState, assignment: TopicAssignment): boolean {
  if (state.partitions.length !== assignment.partitions.length) return false;
  if (state.topicId !== assignment.topicId) return false;
  return assignment.partitions.every((p, i) => {
    return sameIds(state.partitions[i]!.replicas, p.replicas);
  });
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
