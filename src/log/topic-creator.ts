import { randomUUID } from 'node:crypto';
import { CohortError, ErrorCode } from '../errors';
import type { Time } from '../time';
import {
  CREATE_PARTITIONS_PER_TURN,
  CREATE_SLICE_MAX_MS,
  DEFAULT_NUM_PARTITIONS,
  DEFAULT_REPLICATION_FACTOR,
  MAX_PARTITIONS_PER_TOPIC,
} from './broker-config';
import {
  DEFAULT_TOPIC_SETTING,
  type CreatableTopic,
  type CreatableTopicResult,
  type CreateTopicsRequest,
  type CreateTopicsResponse,
} from './broker-protocol';
import type { LogManager, TopicAssignment } from './log-manager';
import {
  countOpenFileDescriptors,
  FALLBACK_OPEN_FILE_LIMIT,
  FILE_DESCRIPTORS_PER_NEW_PARTITION,
  openFilesHeadroom,
  readOpenFileLimit,
} from './open-files';
import type { Partition } from './partition';
import { RESERVED_TOPIC_NAMES, topicNameProblem } from './topic-partition';
import type { TopicRegistry } from './topic-registry';

/** What CreateTopics needs of the node it creates topics on (ReplicaManager). */
export interface TopicCreatorHost {
  readonly time: Time;
  readonly nodeId: number;
  /** Cluster mode: topics are the controller's to create, never a node's. */
  readonly isClusterMode: boolean;
  readonly logManager: LogManager;
  /** Where a created topic is registered once all its partitions exist. */
  readonly registry: TopicRegistry;
  isShutdown(): boolean;
  /** Opens a new partition's log (LogManager.createLog: its directory is made durable by the creation). */
  createPartition(
    topic: string,
    partitionIndex: number,
    replicas: readonly number[],
    nowMs: number,
    topicId: string | undefined,
  ): Partition;
  reportError(error: unknown, what: string): void;
}

export interface TopicCreatorOptions {
  /** Partitions created per event-loop turn; default CREATE_PARTITIONS_PER_TURN. */
  readonly createPartitionsPerTurn?: number;
  /** The process's open-file limit; default /proc/self/limits, else FALLBACK_OPEN_FILE_LIMIT. */
  readonly maxOpenFiles?: number;
  /** Descriptors the process has open (see ReplicaManagerOptions.countOpenFiles). */
  readonly countOpenFiles?: () => number | undefined;
}

const ignore = (): void => undefined;
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * CreateTopics on a single node, in slices (see `createTopics`), and the file-descriptor budget it checks
 * first, which cluster mode also checks before it hosts a topic's new replicas (`fileDescriptorProblem`).
 * The topics being created are known here: their names are taken until the creation ends, and `settled`
 * waits for them (a shutdown makes each undo what it made).
 */
export class TopicCreator {
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

  constructor(
    private readonly host: TopicCreatorHost,
    options: TopicCreatorOptions = {},
  ) {
    this.createPartitionsPerTurn = Math.max(1, options.createPartitionsPerTurn ?? CREATE_PARTITIONS_PER_TURN);
    this.maxOpenFiles = options.maxOpenFiles ?? readOpenFileLimit() ?? FALLBACK_OPEN_FILE_LIMIT;
    this.countOpenFiles = options.countOpenFiles ?? countOpenFileDescriptors;
  }

  /** Whether a topic of that name is being created. */
  isCreating(name: string): boolean {
    return this.creations.has(name);
  }

  /** Settles once every creation in flight has (none rejects). */
  async settled(): Promise<void> {
    await Promise.all(this.creations.values());
  }

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
    if (this.host.isShutdown()) {
      return result(name, ErrorCode.NOT_LEADER_OR_FOLLOWER, 'the server is shutting down');
    }
    // Cluster mode: the controller assigns replicas and the topic reaches this node through
    // applyClusterMetadata; a local create would make a topic no other node knows of.
    if (this.host.isClusterMode) {
      return result(name, ErrorCode.NOT_CONTROLLER, 'topics of a cluster are created by its controller');
    }
    const nameProblem = topicNameProblem(name);
    if (nameProblem !== null) return result(name, ErrorCode.INVALID_TOPIC_EXCEPTION, nameProblem);
    if (RESERVED_TOPIC_NAMES.has(name)) {
      return result(name, ErrorCode.INVALID_TOPIC_EXCEPTION, `${name} is reserved for the server's own use`);
    }
    if (this.host.registry.topic(name) !== undefined) {
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
    const replicas = [this.host.nodeId];
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
  fileDescriptorProblem(partitions: number, descriptors: number): string | null {
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
    for (const partition of this.host.registry.hostedPartitions()) open += 2 * partition.log.numberOfSegments;
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
    const nowMs = this.host.time.monotonicMs();
    let failure: unknown;
    try {
      let next = 0;
      while (!this.host.isShutdown()) {
        const end = Math.min(next + this.createPartitionsPerTurn, assignment.partitions.length);
        const sliceStartMs = this.host.time.monotonicMs();
        while (next < end) {
          const { partitionIndex, replicas } = assignment.partitions[next++]!;
          // Counted before the open: a failure halfway through it may have made the directory already.
          if (!this.host.logManager.hasLog(name, partitionIndex)) made.push(partitionIndex);
          opened.set(
            partitionIndex,
            this.host.createPartition(name, partitionIndex, replicas, nowMs, assignment.topicId),
          );
          // A slow disk makes a partition slower: the slice also ends when its time is up.
          if (this.host.time.monotonicMs() - sliceStartMs >= CREATE_SLICE_MAX_MS) break;
        }
        if (next === assignment.partitions.length) break;
        await nextTurn();
      }
      if (!this.host.isShutdown()) {
        // The new directories durable in the data directory, then the registry that names them, both
        // off the loop. Once the registry is written the topic exists, shutdown or not: close() closes
        // its logs with the others.
        await this.host.logManager.syncNewLogs();
        await this.host.logManager.writeTopicAsync(assignment);
        this.host.registry.add(assignment, opened);
        return result(name, ErrorCode.NONE, '');
      }
    } catch (error) {
      failure = error;
    }
    // Undo: close the logs, forget a registry file the failure may have left, then delete the directories
    // in slices (deleting thousands is no shorter than making them).
    await Promise.all([...opened.values()].map((partition) => partition.log.close().catch(ignore)));
    if (failure !== undefined) this.host.logManager.deleteTopicFile(name);
    for (let i = 0; i < made.length; i++) {
      if (i > 0 && i % this.createPartitionsPerTurn === 0) await nextTurn();
      this.host.logManager.deleteLog(name, made[i]!);
    }
    if (made.length > 0) this.host.logManager.syncDataDir();
    if (failure === undefined) {
      return result(name, ErrorCode.NOT_LEADER_OR_FOLLOWER, 'the server is shutting down');
    }
    this.host.reportError(failure, `creating topic ${name} failed; the partitions it made were removed`);
    return result(
      name,
      failure instanceof CohortError ? failure.code : ErrorCode.KAFKA_STORAGE_ERROR,
      'the partitions could not be created; the server log has why',
    );
  }
}

function result(name: string, errorCode: ErrorCode, errorMessage: string): CreatableTopicResult {
  return { name, errorCode, errorMessage };
}
