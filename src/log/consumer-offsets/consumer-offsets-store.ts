import * as fs from 'node:fs';
import { CohortError, ErrorCode } from '../../errors';
import type { Time } from '../../time';
import {
  type CompactionResult,
  type CorruptRegion,
  isTombstone,
  type LogConfig,
  type LogRecord,
  type LogRecoveryOptions,
  PartitionLog,
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
import { replayLog, type ReplayOptions, type ReplayResult } from './replay-log';

/**
 * Durable group state in the internal compacted topic `__consumer_offsets`, as Kafka keeps it: every
 * committed offset and every group's metadata is a keyed record (`consumer-offsets-record.ts`) appended to
 * one PartitionLog; the latest record per key is the truth, a tombstone deletes its key, and compaction
 * drops what later records superseded.
 *
 * cohort has one coordinator per process, so the topic has one partition, `__consumer_offsets-0`, under the
 * data directory (Kafka hashes group ids over `offsets.topic.num.partitions`, 50, to spread coordinators).
 *
 * The store keeps a materialised view (Kafka's offsets cache): the latest offset per group, topic and
 * partition, and the latest metadata per group. Writes append first and change the view only once the
 * append is durable (fsynced under the log's flush policy), and in append order, so the view always equals
 * a replay of a prefix of the log and a read never returns something a crash could take back. The promise
 * a write returns resolves at that moment: the coordinator acknowledges an OffsetCommit only then.
 *
 * Life cycle: `open()` recovers the log, `load()` replays it into the view (in bounded steps; writes are
 * refused with COORDINATOR_LOAD_IN_PROGRESS until it is done), `close()` flushes and closes. A partition
 * directory that does not exist yet is created by the first write, not by `open()`: like topics, a server
 * that never stores group state leaves no trace in its data directory.
 *
 * Compaction runs by size: after an append, once the log holds a sealed segment and at least
 * `minCleanableDirtyRatio` of its bytes were written since the last compaction (Kafka's
 * min.cleanable.dirty.ratio), a compaction starts in the background. Each pass reads the sealed segments
 * once, yielding every MiB, and the next one waits for the log to have grown by that ratio again, so
 * cleaning costs a bounded amount of reading per byte appended; the log stays within about twice its live
 * data plus one segment.
 *
 * Structurally this is the group layer's OffsetStore and GroupMetadataStore; it imports neither (the
 * server composes them).
 */
export const CONSUMER_OFFSETS_TOPIC = '__consumer_offsets';
/** The one partition's directory under `--data-dir`. */
export const CONSUMER_OFFSETS_PARTITION_DIR = `${CONSUMER_OFFSETS_TOPIC}-0`;
/** Kafka's offsets.topic.segment.bytes. */
export const CONSUMER_OFFSETS_SEGMENT_BYTES = 100 * 1024 * 1024;
/** Kafka's min.cleanable.dirty.ratio. */
export const DEFAULT_MIN_CLEANABLE_DIRTY_RATIO = 0.5;

/**
 * The internal topic's log settings. A group's metadata record grows with its members (thousands of
 * members with their subscriptions pass a megabyte), so any record that fits a segment is accepted.
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
  readonly time: Time;
  /** Overrides of CONSUMER_OFFSETS_LOG_CONFIG (tests use small segments); the policy is always compact. */
  readonly logConfig?: Partial<LogConfig>;
  readonly minCleanableDirtyRatio?: number;
  /** How `load()` reads the log (step size, pause between steps). */
  readonly replay?: ReplayOptions;
  /** A background compaction failed (the log stays as it was; the next append may try again). */
  readonly onCompactionError?: (error: unknown) => void;
  /**
   * Whom opening the log tells what it repaired (see PartitionLog). Damage below the recovery point is
   * always removed here (`truncateCorruptLogs` is forced on): only the damaged bytes go.
   */
  readonly recovery?: LogRecoveryOptions;
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

type Phase = 'new' | 'opened' | 'loading' | 'ready' | 'closed';

const RESOLVED: Promise<void> = Promise.resolve();
const NOTHING_TO_COMPACT: CompactionResult = Object.freeze({
  isAborted: false,
  segmentsBefore: 0,
  segmentsAfter: 0,
  recordsRemoved: 0,
  bytesBefore: 0,
  bytesAfter: 0,
});
const ignore = (): void => undefined;

export class ConsumerOffsetsStore {
  readonly dir: string;
  private readonly time: Time;
  private readonly logConfig: Partial<LogConfig>;
  private readonly minCleanableDirtyRatio: number;
  private readonly replayOptions: ReplayOptions | undefined;
  private readonly onCompactionError: ((error: unknown) => void) | undefined;
  private readonly recovery: LogRecoveryOptions | undefined;
  private readonly onCorruptData: ConsumerOffsetsStoreOptions['onCorruptData'];
  private corruptRecords = 0;
  private logValue: PartitionLog | null = null;
  private phase: Phase = 'new';
  // groupId → topic → partition → offset
  private readonly offsets = new Map<string, Map<string, Map<number, OffsetCommitValue>>>();
  /** groupId → partitions with an offset in the view */
  private readonly offsetCounts = new Map<string, number>();
  private readonly groups = new Map<string, StoredGroupRecord>();
  /** Settles (never rejects) once the last write has been applied or has failed. */
  private tail: Promise<void> = RESOLVED;
  private compactingValue: Promise<CompactionResult> | null = null;
  /** The log's size right after the last compaction: what is beyond it is dirty. */
  private cleanBytes = 0;
  private closing: Promise<void> | null = null;

  /** No I/O: `open()` (or `load()`) touches the disk. */
  constructor(dir: string, options: ConsumerOffsetsStoreOptions) {
    const ratio = options.minCleanableDirtyRatio ?? DEFAULT_MIN_CLEANABLE_DIRTY_RATIO;
    if (!(ratio > 0 && ratio <= 1)) {
      throw new RangeError(`minCleanableDirtyRatio must be in (0, 1], got ${ratio}`);
    }
    this.dir = dir;
    this.time = options.time;
    this.logConfig = { ...CONSUMER_OFFSETS_LOG_CONFIG, ...options.logConfig, cleanupPolicy: 'compact' };
    this.minCleanableDirtyRatio = ratio;
    this.replayOptions = options.replay;
    this.onCompactionError = options.onCompactionError;
    this.recovery = options.recovery;
    this.onCorruptData = options.onCorruptData;
  }

  /** The partition's log; throws until it exists (after `open()` of an existing directory, or a first write). */
  get log(): PartitionLog {
    if (this.logValue === null) {
      throw new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `${this.dir} has no log yet`);
    }
    return this.logValue;
  }

  /** Bytes on disk (0 before the first write to a new directory). */
  get sizeInBytes(): number {
    return this.logValue?.sizeInBytes ?? 0;
  }

  /** True once `load()` finished: writes are accepted. */
  get isLoaded(): boolean {
    return this.phase === 'ready';
  }

  /** The compaction running now, if any. */
  get compacting(): Promise<CompactionResult> | null {
    return this.compactingValue;
  }

  /**
   * Opens and recovers the log if its directory exists (synchronously; throws if it cannot be used).
   * Idempotent.
   */
  open(): void {
    if (this.phase === 'closed') throw closedError(this.dir);
    if (this.phase !== 'new') return;
    if (fs.existsSync(this.dir)) this.logValue = this.openLog();
    this.phase = 'opened';
  }

  /** Opens the log if needed and replays it into the view; then writes are accepted. Call once. */
  async load(): Promise<ConsumerOffsetsLoadResult> {
    this.open();
    if (this.phase !== 'opened') {
      throw new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `${this.dir} is ${this.phase}, not opened`);
    }
    this.phase = 'loading';
    const onCorruptBatch = (region: CorruptRegion): void => this.onCorruptData?.({ region });
    const replayed =
      this.logValue === null
        ? { records: 0, bytes: 0, startOffset: 0, endOffset: 0, corruptBatches: 0, corruptBytes: 0 }
        : await replayLog(this.logValue, (record) => this.replay(record), {
            onCorruptBatch,
            ...this.replayOptions,
          });
    if (this.phase !== 'loading') throw closedError(this.dir);
    this.phase = 'ready';
    let offsets = 0;
    for (const topics of this.offsets.values()) {
      for (const partitions of topics.values()) offsets += partitions.size;
    }
    return { ...replayed, groups: this.groups.size, offsets, corruptRecords: this.corruptRecords };
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
   * none of them). Once durable, exactly those keys leave the view: a commit appended earlier but not yet
   * durable has no tombstone here, and stays, as it does in the log.
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

  /** Tombstones for these offsets, in one batch; they leave the view once durable. */
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

  /** Keeps `group` (not a copy) as the group's latest metadata once the record is durable. */
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

  /** Compacts now (concurrent calls share one run); the dirty-ratio trigger calls this in the background. */
  compact(): Promise<CompactionResult> {
    if (this.logValue === null) return Promise.resolve(NOTHING_TO_COMPACT);
    this.compactingValue ??= this.logValue
      .compact()
      .then((result) => {
        if (!result.isAborted) this.cleanBytes = result.bytesAfter;
        return result;
      })
      .finally(() => {
        this.compactingValue = null;
      });
    return this.compactingValue;
  }

  /** Waits for writes in flight and compaction, flushes and closes the log. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.closeLog();
    return this.closing;
  }

  private async closeLog(): Promise<void> {
    this.phase = 'closed';
    if (this.logValue !== null) await this.logValue.close();
    await this.tail;
  }

  /**
   * Appends `records` as one batch, then runs `apply` once the batch is durable and every earlier write has
   * been applied or has failed: the view changes in log order, whatever order fsyncs complete in.
   */
  private append(records: readonly SimpleRecord[], apply: () => void): Promise<void> {
    if (this.phase !== 'ready') {
      return Promise.reject(
        this.phase === 'closed'
          ? closedError(this.dir)
          : new CohortError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, `${this.dir} is still loading`),
      );
    }
    let flushed: Promise<void> | null;
    try {
      this.logValue ??= this.openLog();
      flushed = this.logValue.append(records).flushed;
    } catch (error) {
      return Promise.reject(error);
    }
    this.maybeCompact();
    const applied = Promise.all([this.tail, flushed ?? RESOLVED]).then(apply);
    this.tail = applied.then(ignore, ignore);
    return applied;
  }

  private openLog(): PartitionLog {
    return PartitionLog.open(this.dir, {
      time: this.time,
      config: this.logConfig,
      // Group state has no replica to restore from, and one damaged batch costs one write: removing only
      // the damaged bytes (reported at error) beats refusing every group (docs/operations.md).
      recovery: { ...this.recovery, truncateCorruptLogs: true },
    });
  }

  private maybeCompact(): void {
    if (this.compactingValue !== null) return;
    const log = this.log;
    if (log.numberOfSegments < 2) return;
    const size = log.sizeInBytes;
    if (size - this.cleanBytes < size * this.minCleanableDirtyRatio) return;
    this.compact().catch((error: unknown) => {
      if (this.phase !== 'closed') this.onCompactionError?.(error);
    });
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

function closedError(dir: string): CohortError {
  return new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, `${dir} is closed`);
}
