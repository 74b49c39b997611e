import {
  ConsumerOffsetsWriter,
  type ConsumerOffsetsWriterOptions,
  type OffsetsPartition,
} from './consumer-offsets';
import type { LogConfig } from './storage';
import type { Time } from '../time';

/**
 * Told by the ReplicaManager whenever this node starts or stops leading a `__consumer_offsets` partition
 * (Kafka's GroupMetadataManager.onElection / onResignation, which the group layer's router implements).
 */
export interface OffsetsTopicListener {
  /**
   * This node now leads `partitionIndex` at `leaderEpoch`; `writer` is that partition's
   * ConsumerOffsetsWriter (on the partition's log, not yet loaded: the listener calls `load()`). Its
   * appends are made as leader at `leaderEpoch` and resolve only when committed; they reject with a
   * CohortError whose code is the log's: NOT_LEADER_OR_FOLLOWER once the leadership or the epoch is gone,
   * NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT after the commit timeout.
   */
  onElection(partitionIndex: number, leaderEpoch: number, writer: ConsumerOffsetsWriter): void;
  /**
   * This node no longer leads it (became a follower, unassigned, session lost, shutdown). `leaderEpoch` is
   * the epoch it led at. Called once per election, synchronously inside the change, after the writer was
   * resigned (its appends reject from then on).
   */
  onResignation(partitionIndex: number, leaderEpoch: number): void;
}

/** Kafka's offsets.commit.timeout.ms: a group write not committed by then is answered REQUEST_TIMED_OUT. */
export const DEFAULT_OFFSETS_COMMIT_TIMEOUT_MS = 5_000;
/** Kafka's offsets.topic.num.partitions. */
export const DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS = 50;

/** How ReplicaManager hosts `__consumer_offsets` (ReplicaManagerOptions.offsetsTopic). */
export interface OffsetsTopicOptions {
  readonly listener: OffsetsTopicListener;
  /**
   * Single-node mode: the partitions the topic is created with when the data directory has none (default
   * DEFAULT_OFFSETS_TOPIC_NUM_PARTITIONS). A data directory keeps the count it was created with; a data
   * directory from before the topic was replicated (only `__consumer_offsets-0`) keeps 1.
   */
  readonly numPartitions?: number;
  /** How long an append waits to be committed (default DEFAULT_OFFSETS_COMMIT_TIMEOUT_MS). */
  readonly commitTimeoutMs?: number;
  /** Overrides of CONSUMER_OFFSETS_LOG_CONFIG (tests use small segments); the policy is always compact. */
  readonly logConfig?: Partial<LogConfig>;
  /** What every writer is created with (its leader epoch is the election's). */
  readonly writer?: Omit<ConsumerOffsetsWriterOptions, 'leaderEpoch'>;
  /** Single-node start-up: how the topic was found (for the server's log). */
  readonly onStartup?: (info: OffsetsTopicStartup) => void;
}

/**
 * `created`: the data directory had no offsets topic; `adopted`: it had the single partition directory
 * of a cohort from before the topic was replicated, now registered as a topic of one partition; `kept`:
 * the registry's count, whatever `configuredNumPartitions` says (Kafka keeps its topic too).
 */
export interface OffsetsTopicStartup {
  readonly outcome: 'created' | 'adopted' | 'kept';
  readonly numPartitions: number;
  readonly configuredNumPartitions: number;
}

interface Election {
  readonly leaderEpoch: number;
  readonly writer: ConsumerOffsetsWriter;
}

/**
 * Which `__consumer_offsets` partitions this node leads, at which epoch, with which writer: ReplicaManager
 * reports each hosted partition's role after every change (`update`), and this turns the changes into
 * the listener's calls. A partition led at a new epoch is a resignation of the old epoch, then an
 * election; leading at the same epoch again after a resignation (the session came back) is an election.
 */
export class OffsetsTopicLeadership {
  private readonly elections = new Map<number, Election>();
  /** Resigned writers' close(): their appends and compactions still settling. */
  private readonly settling = new Set<Promise<void>>();

  /**
   * `time`: the node's clock, which each writer's load measures its steps on. `onListenerError`: the
   * listener threw (the change it was told of is made all the same).
   */
  constructor(
    private readonly options: OffsetsTopicOptions,
    private readonly time: Time,
    private readonly onListenerError: (error: unknown) => void = (error) => {
      throw error;
    },
  ) {}

  /** The writers of the partitions led here now, by partition index. */
  get writers(): ReadonlyMap<number, Election> {
    return this.elections;
  }

  /**
   * `partition` is led here at `leaderEpoch` (`isLeading`), or not. Elects, resigns, or does nothing if
   * that is already the case.
   */
  update(
    partition: OffsetsPartition & { readonly partitionIndex: number },
    isLeading: boolean,
    leaderEpoch: number,
  ): void {
    const current = this.elections.get(partition.partitionIndex);
    if (isLeading && current?.leaderEpoch === leaderEpoch) return;
    if (current !== undefined) this.resign(partition.partitionIndex);
    if (!isLeading) return;
    const { writer: writerOptions } = this.options;
    const writer = new ConsumerOffsetsWriter(partition, {
      ...writerOptions,
      leaderEpoch,
      replay: { time: this.time, ...writerOptions?.replay },
    });
    this.elections.set(partition.partitionIndex, { leaderEpoch, writer });
    try {
      this.options.listener.onElection(partition.partitionIndex, leaderEpoch, writer);
    } catch (error) {
      this.onListenerError(error);
    }
  }

  /** This node no longer leads `partitionIndex` (if it did). */
  resign(partitionIndex: number): void {
    const current = this.elections.get(partitionIndex);
    if (current === undefined) return;
    this.elections.delete(partitionIndex);
    current.writer.resign();
    const settled = current.writer.close().finally(() => this.settling.delete(settled));
    this.settling.add(settled);
    try {
      this.options.listener.onResignation(partitionIndex, current.leaderEpoch);
    } catch (error) {
      this.onListenerError(error);
    }
  }

  /** Resigns every partition (session lost, shutdown). */
  resignAll(): void {
    for (const partitionIndex of [...this.elections.keys()]) this.resign(partitionIndex);
  }

  /** Settles once every resigned writer's appends and compaction have (before the logs close). */
  async settled(): Promise<void> {
    await Promise.all(this.settling);
  }
}
