import { CohortError, ErrorCode } from '../errors';
import type { Time } from '../time';
import type { BrokerConfig } from './broker-config';
import { NO_LEADER_EPOCH } from './broker-protocol';
import { CONSUMER_OFFSETS_TOPIC } from './consumer-offsets';
import type { LogManager, TopicAssignment } from './log-manager';
import { DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS, type OffsetsTopicOptions } from './offsets-topic';
import { FILE_DESCRIPTORS_PER_NEW_PARTITION } from './open-files';
import { Partition, type IsrProposal } from './partition';
import { NO_LEADER_ID, type LocalReplicaState } from './partition-roles';
import { topicPartitionKey } from './topic-partition';
import type { TopicRegistry, TopicState } from './topic-registry';

/** What hosting replicas needs of the node (ReplicaManager), and whom it tells. */
export interface HostedReplicasHost {
  readonly time: Time;
  readonly config: BrokerConfig;
  /** Cluster mode: a replica has no role until the cluster gives it one, and proposes its ISR changes. */
  readonly isClusterMode: boolean;
  readonly logManager: LogManager;
  /** Where the topics and the replicas hosted here are registered. */
  readonly registry: TopicRegistry;
  /** Cluster mode: how a leader's ISR change is proposed (Partition's proposeIsr). */
  readonly proposeIsr: (partition: Partition, proposal: IsrProposal) => void;
  /** Whether this node may act as a leader now (Partition's isLeadershipActive). */
  readonly isLeadershipActive: () => boolean;
  /** Why the process cannot open `descriptors` more files for `partitions` new ones (TopicCreator's budget). */
  fileDescriptorProblem(partitions: number, descriptors: number): string | null;
  /** The topic's partitions, hosted or not, are forgotten: none of them is fetched any more. */
  onTopicForgotten(state: TopicState): void;
  /** A replica is no longer hosted here (its log is closing): nobody may lead, fetch or serve it. */
  onUnassigned(partition: Partition): void;
  /** A log closed for a replica no longer hosted: a topic that waited for its directory may open. */
  onLogClosed(): void;
  reportError(error: unknown, what: string): void;
}

/**
 * The replicas this node hosts, as their logs open and close (Kafka's ReplicaManager.allPartitions, with
 * the LogManager's getOrCreateLog): the topics of the data directory at start-up, single-node mode's
 * `__consumer_offsets`, each topic's assignment as the cluster changes it (the replicas it now puts here
 * opened, within the file-descriptor budget; those it no longer does closed, their files kept, and their
 * directories not opened again until the close is done), and what the data directory holds for a
 * recovery of the cluster's metadata. Which role each replica plays is ReplicaManager's.
 */
export class HostedReplicas {
  /**
   * Logs being closed, by partition key (a replica no longer hosted, or of a topic deleted and created
   * again): their directories are not opened again until the close is done.
   */
  private readonly closingLogs = new Map<string, Promise<void>>();

  constructor(private readonly host: HostedReplicasHost) {}

  /** Whether the replica's log is still closing (its directory must not be opened again yet). */
  isClosing(key: string): boolean {
    return this.closingLogs.has(key);
  }

  /** Whether any log is still closing. */
  get hasClosingLogs(): boolean {
    return this.closingLogs.size > 0;
  }

  /** Opens and recovers every partition of every topic of the data directory's registry (start-up). */
  loadTopics(): void {
    for (const assignment of this.host.logManager.loadTopics()) {
      this.host.registry.add(assignment, this.openPartitions(assignment));
    }
  }

  /**
   * Single-node mode: the internal topic at start-up, every partition led here at epoch 0. A data
   * directory that has the topic keeps its partition count (Kafka keeps its topic too); one from before
   * the topic was replicated (`__consumer_offsets-0` alone, no registry entry) is registered as a topic
   * of one partition, its log taken as it is; otherwise the topic is created with `numPartitions`, every
   * partition directory at once (eagerly: docs/storage.md). Returns the partitions, each led here.
   */
  hostLocalOffsetsTopic(options: OffsetsTopicOptions): Partition[] {
    const name = CONSUMER_OFFSETS_TOPIC;
    const configuredNumPartitions = options.numPartitions ?? DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS;
    const existing = this.host.registry.topic(name);
    let outcome: 'created' | 'adopted' | 'kept' = 'kept';
    if (existing === undefined) {
      // Partition 1's directory too means a create of several partitions that crashed before its
      // registry file: nothing was written to it, and it is created again (reusing the directories).
      const isAdopted = this.host.logManager.hasLog(name, 0) && !this.host.logManager.hasLog(name, 1);
      outcome = isAdopted ? 'adopted' : 'created';
      const numPartitions = isAdopted ? 1 : configuredNumPartitions;
      const replicas = [this.host.config.nodeId];
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
    const state = this.host.registry.topic(name)!;
    options.onStartup?.({
      outcome,
      numPartitions: state.partitions.length,
      configuredNumPartitions,
    });
    return state.partitions.flatMap((info) => (info.partition === undefined ? [] : [info.partition]));
  }

  /**
   * Takes a topic's assignment: registers it (and its registry file) if new or changed, opening the
   * replicas this node now hosts and closing those it no longer does (their files stay on disk). With
   * `checkBudget`, a change that would open more files than the process has free is reported and not
   * made (false).
   */
  applyAssignment(assignment: TopicAssignment, checkBudget = true): boolean {
    const state = this.host.registry.topic(assignment.name);
    if (this.host.registry.hasAssignment(assignment)) return true;
    if (checkBudget) {
      const added = assignment.partitions.filter(
        (p) =>
          p.replicas.includes(this.host.config.nodeId) &&
          state?.partitions[p.partitionIndex]?.partition === undefined,
      ).length;
      const problem =
        added === 0
          ? null
          : this.host.fileDescriptorProblem(added, added * FILE_DESCRIPTORS_PER_NEW_PARTITION);
      if (problem !== null) {
        this.host.reportError(
          new CohortError(ErrorCode.POLICY_VIOLATION, problem),
          `cannot host the replicas of topic ${assignment.name}`,
        );
        return false;
      }
    }
    const opened = this.openPartitions(assignment, state);
    this.host.logManager.writeTopic(assignment);
    if (state !== undefined) this.forgetTopic(state);
    this.host.registry.add(assignment, opened);
    const kept = new Set(opened.values());
    for (const info of state?.partitions ?? []) {
      if (info.partition !== undefined && !kept.has(info.partition)) this.closeUnassigned(info.partition);
    }
    return true;
  }

  /** A replica this node no longer hosts: no longer copied or served; its files stay on disk. */
  private closeUnassigned(partition: Partition): void {
    this.host.onUnassigned(partition);
    const key = partition.key;
    const closed = partition.log
      .close()
      .catch((error: unknown) => this.host.reportError(error, `closing ${key} failed`))
      .finally(() => {
        if (this.closingLogs.get(key) !== closed) return;
        this.closingLogs.delete(key);
        this.host.onLogClosed();
      });
    this.closingLogs.set(key, closed);
  }

  /** Forgets a topic the cluster no longer has (or had under another id) and closes its replicas here. */
  dropTopic(state: TopicState): void {
    this.forgetTopic(state);
    for (const info of state.partitions) {
      if (info.partition !== undefined) this.closeUnassigned(info.partition);
    }
  }

  /** Forgets a topic (before `registry.add` replaces it, which re-adds partitions kept open): no fetching. */
  private forgetTopic(state: TopicState): void {
    this.host.registry.remove(state);
    this.host.onTopicForgotten(state);
  }

  /**
   * Opens the logs of the partitions this process hosts (it is one of their replicas), reusing those an
   * earlier state of the topic already opened. On a failure the logs opened here are closed again.
   */
  private openPartitions(assignment: TopicAssignment, previous?: TopicState): Map<number, Partition> {
    const opened = new Map<number, Partition>();
    const nowMs = this.host.time.monotonicMs();
    try {
      for (const { partitionIndex, replicas } of assignment.partitions) {
        if (!replicas.includes(this.host.config.nodeId)) continue;
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
  newPartition(
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
        ? this.host.logManager.createLog(topic, partitionIndex, topicId)
        : this.host.logManager.openLog(topic, partitionIndex, topicId),
      localNodeId: this.host.config.nodeId,
      // Cluster mode: no role until the cluster gives it one (applyClusterMetadata). A single node leads
      // every partition it hosts.
      leaderId: this.host.isClusterMode ? NO_LEADER_ID : this.host.config.nodeId,
      replicas,
      minInsyncReplicas: this.host.config.minInsyncReplicas,
      replicaLagTimeMaxMs: this.host.config.replicaLagTimeMaxMs,
      nowMs,
      leaderEpoch: this.host.isClusterMode ? NO_LEADER_EPOCH : 0,
      proposeIsr: this.host.isClusterMode ? this.host.proposeIsr : undefined,
      isLeadershipActive: this.host.isLeadershipActive,
    });
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
    for (const topic of this.host.logManager.loadTopics())
      partitionCounts.set(topic.name, topic.partitions.length);
    for (const { topic, partitionIndex } of this.host.logManager.partitionDirectories()) {
      const key = topicPartitionKey(topic, partitionIndex);
      await this.closingLogs.get(key);
      const hosted = this.host.registry.getPartition(key);
      const log = hosted?.log ?? this.host.logManager.openLog(topic, partitionIndex);
      try {
        const topicId =
          this.host.registry.topic(topic)?.topicId ?? this.host.logManager.topicIdOf(topic, partitionIndex);
        const partitionCount =
          this.host.registry.topic(topic)?.partitions.length ?? partitionCounts.get(topic);
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
}
