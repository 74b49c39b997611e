import { CohortError, ErrorCode } from '../errors';
import { CommittedOffsets } from './committed-offsets';
import type {
  CoordinatorLoadSummary,
  CoordinatorLogRecord,
  CoordinatorPartitionWriter,
  CoordinatorRecordToWrite,
} from './coordinator-partition-writer';
import type { GroupMetadataStore, StoredGroup } from './group-metadata-store';
import type { CommittedOffset, OffsetStore, TopicPartition, TopicPartitionOffset } from './offset-store';
import {
  decodeGroupMetadataValue,
  decodeKey,
  decodeOffsetCommitValue,
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
  GROUP_METADATA_KEY_TYPE,
} from './records/consumer-offsets-record';

export interface CoordinatorRecordStoreOptions {
  /**
   * A record the load could not decode (no key, an unknown key type or value version, bytes that do not
   * parse) was skipped; the rest of the partition still loads.
   */
  readonly onCorruptRecord?: (offset: number, error: unknown) => void;
}

/** What a load brought back. */
export interface CoordinatorLoadResult extends CoordinatorLoadSummary {
  readonly groups: number;
  readonly offsets: number;
  /** Records skipped because their key or value could not be decoded. */
  readonly corruptRecords: number;
}

/**
 * The durable state of one `__consumer_offsets` partition's groups, as records: every committed offset and
 * every group's metadata is a keyed record (`records/consumer-offsets-record.ts`) written through the
 * partition's CoordinatorPartitionWriter, and the state is what replaying those records gives (Kafka's
 * offsets cache and group metadata, loaded by GroupMetadataManager, replayed by its coordinator shard
 * since). The latest record per key is the truth; a tombstone deletes its key.
 *
 * It holds the committed offsets (the only copy: OffsetFetch, lag and retention read them here) and, from
 * the load until the shard has taken them, the groups the load replayed; a group's live state is the
 * shard's, and the record written for it is not kept here.
 *
 * A write changes the offsets only once the writer's append has resolved (committed, in append order), so
 * they always equal a replay of a prefix of the partition and a read never returns something a crash or a
 * failover could take back. The promise a write returns resolves at that moment: the coordinator
 * acknowledges an OffsetCommit only then. Once the writer is resigned no write resolves any more.
 *
 * Structurally the shard's OffsetStore and GroupMetadataStore.
 */
export class CoordinatorRecordStore implements OffsetStore, GroupMetadataStore {
  private readonly writer: CoordinatorPartitionWriter;
  private readonly onCorruptRecord: CoordinatorRecordStoreOptions['onCorruptRecord'];
  private readonly offsets = new CommittedOffsets();
  /** The groups the load replayed, until the shard takes them (storedGroups). */
  private loadedGroups: Map<string, StoredGroup> | null = new Map();
  private corruptRecords = 0;

  constructor(writer: CoordinatorPartitionWriter, options: CoordinatorRecordStoreOptions = {}) {
    this.writer = writer;
    this.onCorruptRecord = options.onCorruptRecord;
  }

  /** "__consumer_offsets-<index>". */
  get key(): string {
    return this.writer.key;
  }

  get leaderEpoch(): number {
    return this.writer.leaderEpoch;
  }

  /** True once `load()` finished and until the writer is resigned: writes are accepted, reads are whole. */
  get isLoaded(): boolean {
    return this.writer.isLoaded;
  }

  /** True once this node no longer leads the partition at `leaderEpoch`: no write resolves any more. */
  get isResigned(): boolean {
    return this.writer.isResigned;
  }

  /**
   * Replays the partition's records into the state (the writer reads them in bounded steps, then waits
   * until the high watermark covers them). Call once; see CoordinatorPartitionWriter.load.
   */
  async load(): Promise<CoordinatorLoadResult> {
    const summary = await this.writer.load((record) => this.replay(record));
    return {
      ...summary,
      groups: this.loadedGroups?.size ?? 0,
      offsets: this.offsets.size,
      corruptRecords: this.corruptRecords,
    };
  }

  // ---------------------------------------------------------------------------------------------------
  // OffsetStore

  commit(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    const records: CoordinatorRecordToWrite[] = new Array(offsets.length);
    for (let i = 0; i < offsets.length; i++) {
      const { topic, partition, offset } = offsets[i]!;
      records[i] = {
        timestampMs: offset.commitTimestampMs,
        key: encodeOffsetCommitKey(groupId, topic, partition),
        value: encodeOffsetCommitValue(offset),
      };
    }
    return this.writer.append(records).then(() => {
      for (const { topic, partition, offset } of offsets) this.offsets.put(groupId, topic, partition, offset);
    });
  }

  get(groupId: string, topic: string, partition: number): CommittedOffset | undefined {
    return this.offsets.get(groupId, topic, partition);
  }

  list(groupId: string): TopicPartitionOffset[] {
    return this.offsets.list(groupId);
  }

  hasOffsets(groupId: string): boolean {
    return this.offsets.hasOffsets(groupId);
  }

  committedPartitions(groupId: string): number {
    return this.offsets.committedPartitions(groupId);
  }

  groupIds(): Iterable<string> {
    return this.offsets.groupIds();
  }

  /**
   * Tombstones for the group's metadata and every offset it has now, in one batch (so a crash keeps all or
   * none of them). Once committed, exactly those offsets go: a commit written earlier but not yet
   * committed has no tombstone here, and stays, as it does in the log.
   */
  deleteGroup(groupId: string): Promise<void> {
    const deleted = this.offsets.list(groupId);
    const records: CoordinatorRecordToWrite[] = [{ key: encodeGroupMetadataKey(groupId), value: null }];
    for (const { topic, partition } of deleted) {
      records.push({ key: encodeOffsetCommitKey(groupId, topic, partition), value: null });
    }
    return this.writer.append(records).then(() => {
      for (const { topic, partition } of deleted) this.offsets.remove(groupId, topic, partition);
    });
  }

  /** Tombstones for these offsets, in one batch; they go once committed. */
  deleteOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<void> {
    if (partitions.length === 0) return Promise.resolve();
    const records: CoordinatorRecordToWrite[] = partitions.map(({ topic, partition }) => ({
      key: encodeOffsetCommitKey(groupId, topic, partition),
      value: null,
    }));
    return this.writer.append(records).then(() => {
      for (const { topic, partition } of partitions) this.offsets.remove(groupId, topic, partition);
    });
  }

  // ---------------------------------------------------------------------------------------------------
  // GroupMetadataStore

  /** Writes the group's record; the group's state stays the shard's (nothing is kept here). */
  storeGroup(group: StoredGroup): Promise<void> {
    return this.writer.append([
      {
        timestampMs: group.currentStateTimestampMs,
        key: encodeGroupMetadataKey(group.groupId),
        value: encodeGroupMetadataValue(group),
      },
    ]);
  }

  /**
   * The groups the load replayed (their latest records that are not tombstones), handed over once: the
   * shard restores them, and from then on a group lives in the shard alone. Later calls return nothing.
   */
  storedGroups(): Iterable<StoredGroup> {
    const groups = this.loadedGroups;
    this.loadedGroups = null;
    return groups === null ? [] : groups.values();
  }

  /**
   * Applies one record of the load: the latest record per key wins, a tombstone deletes. A record that
   * cannot be decoded is skipped and reported: its key keeps the value an earlier record gave it, and the
   * load goes on. It stays in the log, so a version of cohort that can read it still finds it.
   */
  private replay(record: CoordinatorLogRecord): void {
    try {
      if (record.key === null) {
        throw new CohortError(ErrorCode.CORRUPT_MESSAGE, `a record without a key at offset ${record.offset}`);
      }
      const key = decodeKey(record.key);
      // The log's cleaner treats an empty value as a tombstone too.
      const value = record.value === null || record.value.length === 0 ? null : record.value;
      if (key.type === GROUP_METADATA_KEY_TYPE) {
        if (value === null) this.loadedGroups?.delete(key.groupId);
        else
          this.loadedGroups?.set(key.groupId, { groupId: key.groupId, ...decodeGroupMetadataValue(value) });
      } else if (value === null) {
        this.offsets.remove(key.groupId, key.topic, key.partition);
      } else {
        this.offsets.put(key.groupId, key.topic, key.partition, decodeOffsetCommitValue(value));
      }
    } catch (error) {
      this.corruptRecords++;
      this.onCorruptRecord?.(record.offset, error);
    }
  }
}
