import { CohortError, ErrorCode } from '../../errors';
import {
  type CompactionResult,
  type CorruptRegion,
  DEFAULT_MIN_CLEANABLE_DIRTY_RATIO,
  DirtyRatioCompaction,
  isTombstone,
  type LogConfig,
  type LogRecord,
  type PartitionLog,
  type SimpleRecord,
} from '../storage';
import {
  decodeGroupMetadataValue,
  decodeKey,
  decodeOffsetCommitValue,
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
  GROUP_METADATA_KEY_TYPE,
  type GroupMetadataValue,
  type OffsetCommitValue,
} from './consumer-offsets-record';
import type { OffsetsPartition } from './offsets-partition';
import { replayLog, type ReplayOptions, type ReplayResult } from './replay-log';

/**
 * Durable group state in the internal compacted topic `__consumer_offsets`, as Kafka keeps it: every
 * committed offset and every group's metadata is a keyed record (`consumer-offsets-record.ts`) appended to
 * one partition of the topic; the latest record per key is the truth, a tombstone deletes its key, and
 * compaction drops what later records superseded.
 *
 * One store per partition this node leads, over that partition (`OffsetsPartition`): ReplicaManager
 * hosts the topic like any replicated one and creates a store each time this node is elected leader of a
 * partition, at that leader epoch (`offsets-topic.ts`). Groups are placed on partitions by
 * `groupPartitionFor` (Kafka's hash over `offsets.topic.num.partitions`).
 *
 * The store keeps a materialised view (Kafka's offsets cache): the latest offset per group, topic and
 * partition, and the latest metadata per group. Writes append as leader at the store's epoch and change
 * the view only once the append is committed (the HW passed it with the ISR at min.insync.replicas, and
 * the leader's fsync covers it; with one replica that is the flush policy's fsync), and in append order, so
 * the view always equals a replay of a prefix of the log and a read never returns something a crash or a
 * failover could take back. The promise a write returns resolves at that moment: the coordinator
 * acknowledges an OffsetCommit only then. Once the store is resigned (this node no longer leads the
 * partition at its epoch) no write of it resolves any more: each rejects with NOT_LEADER_OR_FOLLOWER.
 *
 * Life cycle: `load()` replays the log up to its log end offset into the view (in bounded steps) and
 * waits for the HW to reach that offset, so that what it loaded is committed too (writes are refused with
 * COORDINATOR_LOAD_IN_PROGRESS until it is done), `resign()` ends the leadership,
 * `close()` waits for writes and compaction in flight. The log itself belongs to ReplicaManager.
 *
 * Compaction runs by size: after an append, once the log holds a sealed segment and at least
 * `minCleanableDirtyRatio` of its bytes were written since the last compaction (Kafka's
 * min.cleanable.dirty.ratio), a compaction starts in the background, over the sealed segments below the
 * high watermark. Each pass reads them once, yielding every MiB, and the next one waits for the log to
 * have grown by that ratio again, so cleaning costs a bounded amount of reading per byte appended; the
 * log stays within about twice its live data plus one segment (DirtyRatioCompaction). Followers compact
 * their own copy the same way (ReplicaManager), as Kafka's cleaner runs on every replica.
 *
 * Structurally this is the group layer's OffsetStore and GroupMetadataStore; it imports neither (the
 * server composes them).
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

/** A group's metadata with its id: the group layer's StoredGroup. */
export interface StoredGroupRecord extends GroupMetadataValue {
  readonly groupId: string;
}

/** The group layer's TopicPartition. */
export interface TopicPartitionRecord {
  readonly topic: string;
  readonly partition: number;
}

/** The group layer's TopicPartitionOffset. */
export interface TopicPartitionOffsetRecord extends TopicPartitionRecord {
  readonly offset: OffsetCommitValue;
}

export interface ConsumerOffsetsStoreOptions {
  /** The leader epoch this store's writes append at (0 in single-node mode). */
  readonly leaderEpoch?: number;
  readonly minCleanableDirtyRatio?: number;
  /** How `load()` reads the log (step size, pause between steps). */
  readonly replay?: ReplayOptions;
  /** A background compaction failed (the log stays as it was; the next append may try again). */
  readonly onCompactionError?: (error: unknown) => void;
  /**
   * The load skipped damage: bytes holding no valid batch (`region`), or one record whose key or value
   * could not be decoded (`record`, with the decoding error). The rest of the log still loads.
   */
  readonly onCorruptData?: (
    damage: { readonly region: CorruptRegion } | { readonly offset: number; readonly error: unknown },
  ) => void;
}

export interface ConsumerOffsetsLoadResult extends ReplayResult {
  readonly groups: number;
  readonly offsets: number;
  /** Records skipped because their key or value could not be decoded. */
  readonly corruptRecords: number;
}

type Phase = 'new' | 'loading' | 'ready' | 'resigned' | 'closed';

const RESOLVED: Promise<void> = Promise.resolve();
const ignore = (): void => undefined;

export class ConsumerOffsetsStore {
  /** The partition's key, "__consumer_offsets-<index>". */
  readonly key: string;
  /** The leader epoch this store writes at. */
  readonly leaderEpoch: number;
  private readonly partition: OffsetsPartition;
  private readonly compaction: DirtyRatioCompaction;
  private readonly replayOptions: ReplayOptions | undefined;
  private readonly onCompactionError: ((error: unknown) => void) | undefined;
  private readonly onCorruptData: ConsumerOffsetsStoreOptions['onCorruptData'];
  private corruptRecords = 0;
  private phase: Phase = 'new';
  // groupId → topic → partition → offset
  private readonly offsets = new Map<string, Map<string, Map<number, OffsetCommitValue>>>();
  /** groupId → partitions with an offset in the view */
  private readonly offsetCounts = new Map<string, number>();
  private readonly groups = new Map<string, StoredGroupRecord>();
  /** Settles (never rejects) once the last write has been applied or has failed. */
  private tail: Promise<void> = RESOLVED;
  private closing: Promise<void> | null = null;

  /** No I/O: `load()` reads the log. */
  constructor(partition: OffsetsPartition, options: ConsumerOffsetsStoreOptions = {}) {
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
    this.onCorruptData = options.onCorruptData;
  }

  /** The partition's log. */
  get log(): PartitionLog {
    return this.partition.log;
  }

  /** Bytes on disk. */
  get sizeInBytes(): number {
    return this.partition.log.sizeInBytes;
  }

  /** True once `load()` finished and until `resign()`: writes are accepted. */
  get isLoaded(): boolean {
    return this.phase === 'ready';
  }

  /** True once `resign()` (or `close()`) was called: no write of this store resolves any more. */
  get isResigned(): boolean {
    return this.phase === 'resigned' || this.phase === 'closed';
  }

  /** The compaction running now, if any. */
  get compacting(): Promise<CompactionResult> | null {
    return this.compaction.compacting;
  }

  /**
   * Replays the log into the view, up to the log end offset it has when the load starts (Kafka's
   * loadGroupsAndOffsets), in bounded steps, then waits until the partition's HW has reached that offset:
   * a new leader's log may hold records of the old leader's that no follower has yet, which a failover
   * to such a follower would take back, so the view is not served before they are committed (Kafka's
   * coordinator runtime exposes its state only up to the last committed offset). The HW of a new leader
   * moves as soon as its in-sync followers fetch, or once the ISR drops those that do not; with no
   * follower in the ISR (single-node mode) it is there already. Then writes are accepted, and `isLoaded`
   * is true. Call once. Rejects with NOT_LEADER_OR_FOLLOWER if the store was resigned meanwhile (or the
   * leadership ended during the wait).
   */
  async load(): Promise<ConsumerOffsetsLoadResult> {
    if (this.phase !== 'new') {
      throw new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `${this.key} is ${this.phase}, not new`);
    }
    this.phase = 'loading';
    const onCorruptBatch = (region: CorruptRegion): void => this.onCorruptData?.({ region });
    const replayed = await replayLog(this.partition.log, (record) => this.replay(record), {
      onCorruptBatch,
      ...this.replayOptions,
    });
    // A resignation or close during the load leaves the phase changed: the view is of no use.
    if ((this.phase as Phase) !== 'loading') throw this.unavailableError();
    // The replay read past the HW: those records came from the old leader and a failover may still take
    // them back. Nothing of the view is read or written on until they are committed.
    try {
      await this.partition.awaitHighWatermark(replayed.endOffset, this.leaderEpoch);
    } catch (error) {
      if ((this.phase as Phase) !== 'loading') throw this.unavailableError();
      throw error;
    }
    if ((this.phase as Phase) !== 'loading') throw this.unavailableError();
    this.phase = 'ready';
    let offsets = 0;
    for (const topics of this.offsets.values()) {
      for (const partitions of topics.values()) offsets += partitions.size;
    }
    return { ...replayed, groups: this.groups.size, offsets, corruptRecords: this.corruptRecords };
  }

  /**
   * This node no longer leads the partition at `leaderEpoch` (ReplicaManager calls it before telling the
   * OffsetsTopicListener): later writes, and every write not yet applied, reject with
   * NOT_LEADER_OR_FOLLOWER. Reads keep answering from the view. Idempotent.
   */
  resign(): void {
    if (this.phase !== 'closed') this.phase = 'resigned';
  }

  // ---------------------------------------------------------------------------------------------------
  // OffsetStore

  commit(groupId: string, offsets: readonly TopicPartitionOffsetRecord[]): Promise<void> {
    const records: SimpleRecord[] = new Array(offsets.length);
    for (let i = 0; i < offsets.length; i++) {
      const { topic, partition, offset } = offsets[i]!;
      records[i] = {
        timestampMs: offset.commitTimestampMs,
        key: encodeOffsetCommitKey(groupId, topic, partition),
        value: encodeOffsetCommitValue(offset),
      };
    }
    return this.append(records, () => {
      for (const { topic, partition, offset } of offsets) this.putOffset(groupId, topic, partition, offset);
    });
  }

  get(groupId: string, topic: string, partition: number): OffsetCommitValue | undefined {
    return this.offsets.get(groupId)?.get(topic)?.get(partition);
  }

  list(groupId: string): TopicPartitionOffsetRecord[] {
    const result: TopicPartitionOffsetRecord[] = [];
    const topics = this.offsets.get(groupId);
    if (topics === undefined) return result;
    for (const [topic, partitions] of topics) {
      for (const [partition, offset] of partitions) result.push({ topic, partition, offset });
    }
    return result;
  }

  hasOffsets(groupId: string): boolean {
    return this.offsets.has(groupId);
  }

  /** Partitions the group has an offset for in the view; O(1). */
  committedPartitions(groupId: string): number {
    return this.offsetCounts.get(groupId) ?? 0;
  }

  /** Groups that have offsets. */
  groupIds(): Iterable<string> {
    return this.offsets.keys();
  }

  /**
   * Tombstones for the group's metadata and every offset it has now, in one batch (so a crash keeps all or
   * none of them). Once committed, exactly those keys leave the view: a commit appended earlier but not yet
   * committed has no tombstone here, and stays, as it does in the log.
   */
  deleteGroup(groupId: string): Promise<void> {
    const deleted = this.list(groupId);
    const records: SimpleRecord[] = [{ key: encodeGroupMetadataKey(groupId), value: null }];
    for (const { topic, partition } of deleted) {
      records.push({ key: encodeOffsetCommitKey(groupId, topic, partition), value: null });
    }
    return this.append(records, () => {
      this.groups.delete(groupId);
      for (const { topic, partition } of deleted) this.removeOffset(groupId, topic, partition);
    });
  }

  /** Tombstones for these offsets, in one batch; they leave the view once committed. */
  deleteOffsets(groupId: string, partitions: readonly TopicPartitionRecord[]): Promise<void> {
    if (partitions.length === 0) return Promise.resolve();
    const records: SimpleRecord[] = partitions.map(({ topic, partition }) => ({
      key: encodeOffsetCommitKey(groupId, topic, partition),
      value: null,
    }));
    return this.append(records, () => {
      for (const { topic, partition } of partitions) this.removeOffset(groupId, topic, partition);
    });
  }

  // ---------------------------------------------------------------------------------------------------
  // GroupMetadataStore

  /** Keeps `group` (not a copy) as the group's latest metadata once the record is committed. */
  storeGroup(group: StoredGroupRecord): Promise<void> {
    const record: SimpleRecord = {
      timestampMs: group.currentStateTimestampMs,
      key: encodeGroupMetadataKey(group.groupId),
      value: encodeGroupMetadataValue(group),
    };
    return this.append([record], () => {
      this.groups.set(group.groupId, group);
    });
  }

  /** Every group whose latest metadata record is not a tombstone. */
  storedGroups(): Iterable<StoredGroupRecord> {
    return this.groups.values();
  }

  // ---------------------------------------------------------------------------------------------------
  // Compaction and shutdown

  /**
   * Compacts the sealed segments below the high watermark now (concurrent calls share one run); the
   * dirty-ratio trigger calls this in the background.
   */
  compact(): Promise<CompactionResult> {
    return this.compaction.compact();
  }

  /**
   * Refuses every later write and waits for the writes and the compaction in flight to settle. The log is
   * ReplicaManager's, which flushes and closes it. Idempotent.
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

  /**
   * Appends `records` as one batch as leader at the store's epoch, then runs `apply` once the batch is
   * committed and every earlier write has been applied or has failed: the view changes in log order,
   * whatever order commits complete in. A write that commits after the store was resigned is not
   * applied and rejects with NOT_LEADER_OR_FOLLOWER: its coordinator is gone.
   */
  private append(records: readonly SimpleRecord[], apply: () => void): Promise<void> {
    if (this.phase !== 'ready') {
      return Promise.reject(
        this.phase === 'new' || this.phase === 'loading'
          ? new CohortError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, `${this.key} is still loading`)
          : this.unavailableError(),
      );
    }
    const committed = this.partition.appendCommitted(records, this.leaderEpoch);
    this.compaction.maybeCompact();
    const applied = Promise.all([this.tail, committed]).then(() => {
      if (this.phase !== 'ready') throw this.unavailableError();
      apply();
    });
    this.tail = applied.then(ignore, ignore);
    return applied;
  }

  /** Why a write is refused once the store is resigned or closed. */
  private unavailableError(): CohortError {
    return this.phase === 'closed'
      ? new CohortError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${this.key} is closed`)
      : new CohortError(
          ErrorCode.NOT_LEADER_OR_FOLLOWER,
          `this node no longer leads ${this.key} at leader epoch ${this.leaderEpoch}`,
        );
  }

  /**
   * Applies one replayed record to the view: the latest record per key wins, a tombstone deletes. A record
   * that cannot be decoded (no key, an unknown key type or value version, bytes that do not parse) is
   * skipped and reported: its key keeps the value an earlier record gave it, and the load goes on. It
   * stays in the log, so a version of cohort that can read it still finds it.
   */
  private replay(record: LogRecord): void {
    try {
      if (record.key === null) {
        throw new CohortError(ErrorCode.CORRUPT_MESSAGE, `a record without a key at offset ${record.offset}`);
      }
      const key = decodeKey(record.key);
      const value = isTombstone(record) ? null : record.value!;
      if (key.type === GROUP_METADATA_KEY_TYPE) {
        if (value === null) this.groups.delete(key.groupId);
        else this.groups.set(key.groupId, { groupId: key.groupId, ...decodeGroupMetadataValue(value) });
      } else if (value === null) {
        this.removeOffset(key.groupId, key.topic, key.partition);
      } else {
        this.putOffset(key.groupId, key.topic, key.partition, decodeOffsetCommitValue(value));
      }
    } catch (error) {
      this.corruptRecords++;
      this.onCorruptData?.({ offset: record.offset, error });
    }
  }

  private putOffset(groupId: string, topic: string, partition: number, offset: OffsetCommitValue): void {
    let topics = this.offsets.get(groupId);
    if (topics === undefined) {
      topics = new Map();
      this.offsets.set(groupId, topics);
    }
    let partitions = topics.get(topic);
    if (partitions === undefined) {
      partitions = new Map();
      topics.set(topic, partitions);
    }
    if (!partitions.has(partition)) this.offsetCounts.set(groupId, (this.offsetCounts.get(groupId) ?? 0) + 1);
    partitions.set(partition, offset);
  }

  private removeOffset(groupId: string, topic: string, partition: number): void {
    const topics = this.offsets.get(groupId);
    const partitions = topics?.get(topic);
    if (topics === undefined || partitions === undefined || !partitions.delete(partition)) return;
    this.offsetCounts.set(groupId, (this.offsetCounts.get(groupId) ?? 1) - 1);
    if (partitions.size > 0) return;
    topics.delete(topic);
    if (topics.size > 0) return;
    this.offsets.delete(groupId);
    this.offsetCounts.delete(groupId);
  }
}
