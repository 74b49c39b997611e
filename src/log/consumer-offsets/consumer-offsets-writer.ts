import { CohortError, ErrorCode } from '../../errors';
import {
  type CompactionResult,
  type CorruptRegion,
  DEFAULT_MIN_CLEANABLE_DIRTY_RATIO,
  DirtyRatioCompaction,
  type LogConfig,
  type LogRecord,
  type PartitionLog,
  type SimpleRecord,
} from '../storage';
import type { OffsetsPartition } from './offsets-partition';
import { replayLog, type ReplayOptions, type ReplayResult } from './replay-log';

/**
 * One partition of the internal compacted topic `__consumer_offsets` as the group coordinator writes and
 * loads it, for as long as this node leads it at one leader epoch: the log side of the group layer's
 * CoordinatorPartitionWriter. The group layer's records (committed offsets, group metadata) are keyed; the
 * latest record per key is the truth, a tombstone deletes its key, and compaction drops what later records
 * superseded. This side stores keys and values as they are given and never decodes them: what they mean,
 * and the state they add up to, are the group layer's (Kafka's coordinator runtime over its
 * PartitionWriter).
 *
 * One writer per election, over the partition (`OffsetsPartition`): ReplicaManager hosts the topic like
 * any replicated one and creates a writer each time this node is elected leader of a partition, at that
 * leader epoch (`offsets-topic.ts`). Groups are placed on partitions by `groupPartitionFor` (Kafka's hash
 * over `offsets.topic.num.partitions`).
 *
 * Appends are made as leader at the writer's epoch and resolve once committed (the HW passed them with the
 * ISR at min.insync.replicas, and the leader's fsync covers them; with one replica that is the flush
 * policy's fsync), in append order, whatever order commits complete in: the group layer applies each one
 * as it resolves, so its state always equals a replay of a prefix of the log and never holds something a
 * crash or a failover could take back. Once the writer is resigned (this node no longer leads the
 * partition at its epoch) no append resolves any more: each rejects with NOT_LEADER_OR_FOLLOWER.
 *
 * Life cycle: `load(replay)` reads the log up to its log end offset (in bounded steps) and waits for the
 * HW to reach that offset, so that what it loaded is committed too (appends are refused with
 * COORDINATOR_LOAD_IN_PROGRESS until it is done), `resign()` ends the leadership, `close()` waits for
 * appends and compaction in flight. The log itself belongs to ReplicaManager.
 *
 * Compaction runs by size: after an append, once the log holds a sealed segment and at least
 * `minCleanableDirtyRatio` of its bytes were written since the last compaction (Kafka's
 * min.cleanable.dirty.ratio), a compaction starts in the background, over the sealed segments below the
 * high watermark. Each pass reads them once, yielding every MiB, and the next one waits for the log to
 * have grown by that ratio again, so cleaning costs a bounded amount of reading per byte appended; the
 * log stays within about twice its live data plus one segment (DirtyRatioCompaction). Followers compact
 * their own copy the same way (ReplicaManager), as Kafka's cleaner runs on every replica.
 *
 * Structurally this is the group layer's CoordinatorPartitionWriter; it does not import it (the server
 * composes them).
 */
export const CONSUMER_OFFSETS_TOPIC = '__consumer_offsets';
/**
 * Partition 0's directory under `--data-dir`: before the topic was replicated it was the only one, and a
 * data directory holding it without a topic registry entry is taken over as a topic of one partition.
 */
export const CONSUMER_OFFSETS_PARTITION_DIR = `${CONSUMER_OFFSETS_TOPIC}-0`;
/** Kafka's offsets.topic.segment.bytes. */
export const CONSUMER_OFFSETS_SEGMENT_BYTES = 100 * 1024 * 1024;
export { DEFAULT_MIN_CLEANABLE_DIRTY_RATIO };

/**
 * The internal topic's log settings (on top of the defaults, not the server's `--log-*` flags: the flush
 * policy is the default one, every append fsynced before it is acknowledged). A group's metadata record
 * grows with its members (thousands of members with their subscriptions pass a megabyte), so any record
 * that fits a segment is accepted.
 */
export const CONSUMER_OFFSETS_LOG_CONFIG: Readonly<Partial<LogConfig>> = Object.freeze({
  cleanupPolicy: 'compact',
  segmentBytes: CONSUMER_OFFSETS_SEGMENT_BYTES,
  maxMessageBytes: CONSUMER_OFFSETS_SEGMENT_BYTES,
});

export interface ConsumerOffsetsWriterOptions {
  /** The leader epoch this writer appends at (0 in single-node mode). */
  readonly leaderEpoch?: number;
  readonly minCleanableDirtyRatio?: number;
  /** How `load()` reads the log (step size, pause between steps). */
  readonly replay?: ReplayOptions;
  /** A background compaction failed (the log stays as it was; the next append may try again). */
  readonly onCompactionError?: (error: unknown) => void;
  /** The load skipped bytes holding no valid batch; the rest of the log still loads. */
  readonly onCorruptRegion?: (region: CorruptRegion) => void;
}

type Phase = 'new' | 'loading' | 'ready' | 'resigned' | 'closed';

const RESOLVED: Promise<void> = Promise.resolve();
const ignore = (): void => undefined;

export class ConsumerOffsetsWriter {
  /** The partition's key, "__consumer_offsets-<index>". */
  readonly key: string;
  /** The leader epoch this writer appends at. */
  readonly leaderEpoch: number;
  private readonly partition: OffsetsPartition;
  private readonly compaction: DirtyRatioCompaction;
  private readonly replayOptions: ReplayOptions | undefined;
  private readonly onCompactionError: ((error: unknown) => void) | undefined;
  private readonly onCorruptRegion: ((region: CorruptRegion) => void) | undefined;
  private phase: Phase = 'new';
  /** Settles (never rejects) once the last append has resolved or failed. */
  private tail: Promise<void> = RESOLVED;
  private closing: Promise<void> | null = null;

  /** No I/O: `load()` reads the log. */
  constructor(partition: OffsetsPartition, options: ConsumerOffsetsWriterOptions = {}) {
    this.partition = partition;
    this.key = partition.key;
    this.leaderEpoch = options.leaderEpoch ?? 0;
    this.compaction = new DirtyRatioCompaction(partition.log, {
      maxOffset: () => partition.highWatermark,
      ...(options.minCleanableDirtyRatio === undefined
        ? {}
        : { minCleanableDirtyRatio: options.minCleanableDirtyRatio }),
      onError: (error) => {
        if (this.phase === 'ready') this.onCompactionError?.(error);
      },
    });
    this.replayOptions = options.replay;
    this.onCompactionError = options.onCompactionError;
    this.onCorruptRegion = options.onCorruptRegion;
  }

  /** The partition's log. */
  get log(): PartitionLog {
    return this.partition.log;
  }

  /** Bytes on disk. */
  get sizeInBytes(): number {
    return this.partition.log.sizeInBytes;
  }

  /** True once `load()` finished and until `resign()`: appends are accepted. */
  get isLoaded(): boolean {
    return this.phase === 'ready';
  }

  /** True once `resign()` (or `close()`) was called: no append resolves any more. */
  get isResigned(): boolean {
    return this.phase === 'resigned' || this.phase === 'closed';
  }

  /** The compaction running now, if any. */
  get compacting(): Promise<CompactionResult> | null {
    return this.compaction.compacting;
  }

  /**
   * Reads the log to `replay`, up to the log end offset it has when the load starts (Kafka's
   * loadGroupsAndOffsets), in bounded steps, then waits until the partition's HW has reached that offset:
   * a new leader's log may hold records of the old leader's that no follower has yet, which a failover
   * to such a follower would take back, so what was read is not served before they are committed (Kafka's
   * coordinator runtime exposes its state only up to the last committed offset). The HW of a new leader
   * moves as soon as its in-sync followers fetch, or once the ISR drops those that do not; with no
   * follower in the ISR (single-node mode) it is there already. Then appends are accepted, and `isLoaded`
   * is true. Call once. Rejects with NOT_LEADER_OR_FOLLOWER if the writer was resigned meanwhile (or the
   * leadership ended during the wait).
   */
  async load(replay: (record: LogRecord) => void): Promise<ReplayResult> {
    if (this.phase !== 'new') {
      throw new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `${this.key} is ${this.phase}, not new`);
    }
    this.phase = 'loading';
    const onCorruptRegion = this.onCorruptRegion;
    const replayed = await replayLog(this.partition.log, replay, {
      ...(onCorruptRegion === undefined ? {} : { onCorruptBatch: onCorruptRegion }),
      ...this.replayOptions,
    });
    // A resignation or close during the load leaves the phase changed: what was read is of no use.
    if ((this.phase as Phase) !== 'loading') throw this.unavailableError();
    // The replay read past the HW: those records came from the old leader and a failover may still take
    // them back. Nothing is served or appended until they are committed.
    try {
      await this.partition.awaitHighWatermark(replayed.endOffset, this.leaderEpoch);
    } catch (error) {
      if ((this.phase as Phase) !== 'loading') throw this.unavailableError();
      throw error;
    }
    if ((this.phase as Phase) !== 'loading') throw this.unavailableError();
    this.phase = 'ready';
    return replayed;
  }

  /**
   * This node no longer leads the partition at `leaderEpoch` (ReplicaManager calls it before telling the
   * OffsetsTopicListener): later appends, and every append not yet resolved, reject with
   * NOT_LEADER_OR_FOLLOWER. Idempotent.
   */
  resign(): void {
    if (this.phase !== 'closed') this.phase = 'resigned';
  }

  /**
   * Appends `records` as one batch as leader at the writer's epoch, and resolves once the batch is
   * committed and every earlier append has resolved or failed: appends complete in log order, whatever
   * order commits complete in. An append that commits after the writer was resigned rejects with
   * NOT_LEADER_OR_FOLLOWER: its coordinator is gone.
   */
  append(records: readonly SimpleRecord[]): Promise<void> {
    if (this.phase !== 'ready') {
      return Promise.reject(
        this.phase === 'new' || this.phase === 'loading'
          ? new CohortError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, `${this.key} is still loading`)
          : this.unavailableError(),
      );
    }
    const committed = this.partition.appendCommitted(records, this.leaderEpoch);
    this.compaction.maybeCompact();
    const completed = Promise.all([this.tail, committed]).then(() => {
      if (this.phase !== 'ready') throw this.unavailableError();
    });
    this.tail = completed.then(ignore, ignore);
    return completed;
  }

  /**
   * Compacts the sealed segments below the high watermark now (concurrent calls share one run); the
   * dirty-ratio trigger calls this in the background.
   */
  compact(): Promise<CompactionResult> {
    return this.compaction.compact();
  }

  /**
   * Refuses every later append and waits for the appends and the compaction in flight to settle. The log
   * is ReplicaManager's, which flushes and closes it. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.settle();
    return this.closing;
  }

  private async settle(): Promise<void> {
    this.phase = 'closed';
    await this.tail;
    await this.compaction.compacting?.catch(ignore);
  }

  /** Why an append is refused once the writer is resigned or closed. */
  private unavailableError(): CohortError {
    return this.phase === 'closed'
      ? new CohortError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${this.key} is closed`)
      : new CohortError(
          ErrorCode.NOT_LEADER_OR_FOLLOWER,
          `this node no longer leads ${this.key} at leader epoch ${this.leaderEpoch}`,
        );
  }
}
