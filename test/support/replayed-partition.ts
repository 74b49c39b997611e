import type { CoordinatorLoadResult, CoordinatorPartitionWriter, StoredGroup } from '../../src/group';
import {
  type CommittedOffset,
  CommittedOffsets,
  type TopicPartition,
  type TopicPartitionOffset,
} from '../../src/group/committed-offsets';
import {
  type CoordinatorRecord,
  deserializeRecord,
  groupMetadataRecord,
  offsetCommitRecord,
  serializeRecord,
  storedGroupOf,
} from '../../src/group/records/coordinator-record';
import { OFFSET_COMMIT_KEY_TYPE } from '../../src/group/records/consumer-offsets-record';

export interface ReplayedPartitionOptions {
  /** A record the load could not decode was skipped (`deserializeRecord` threw `error`). */
  readonly onCorruptRecord?: (offset: number, error: unknown) => void;
}

/**
 * The group layer's records over one `__consumer_offsets` writer, for the log's tests: what a coordinator
 * shard writes, and a model of what it replays, without the groups' protocol around it. A write is a batch
 * of records as the shard's handlers make them (serialized by `serializeRecord`), applied to the state
 * only once the writer says it is committed, in append order; `load` replays the partition through
 * `deserializeRecord`, skipping and counting what it cannot decode. The state is the latest record per
 * key, a tombstone deleting it: offsets in a CommittedOffsets, groups by id.
 */
export class ReplayedPartition {
  private readonly writer: CoordinatorPartitionWriter;
  private readonly onCorruptRecord: ReplayedPartitionOptions['onCorruptRecord'];
  private readonly offsets = new CommittedOffsets();
  private readonly groupsById = new Map<string, StoredGroup>();
  private corruptRecords = 0;

  constructor(writer: CoordinatorPartitionWriter, options: ReplayedPartitionOptions = {}) {
    this.writer = writer;
    this.onCorruptRecord = options.onCorruptRecord;
  }

  get leaderEpoch(): number {
    return this.writer.leaderEpoch;
  }

  get isLoaded(): boolean {
    return this.writer.isLoaded;
  }

  get isResigned(): boolean {
    return this.writer.isResigned;
  }

  async load(): Promise<CoordinatorLoadResult> {
    const summary = await this.writer.load((record) => {
      let decoded: CoordinatorRecord;
      try {
        decoded = deserializeRecord(record);
      } catch (error) {
        this.corruptRecords++;
        this.onCorruptRecord?.(record.offset, error);
        return;
      }
      this.replay(decoded);
    });
    return {
      ...summary,
      groups: this.groupsById.size,
      offsets: this.offsets.size,
      corruptRecords: this.corruptRecords,
    };
  }

  /** Offset commit records of `groupId`, in one batch (as an OffsetCommit's handler returns them). */
  commit(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    return this.write(
      offsets.map(({ topic, partition, offset }) => offsetCommitRecord(groupId, topic, partition, offset)),
    );
  }

  /** The group's metadata record. */
  storeGroup(group: StoredGroup): Promise<void> {
    const { groupId, ...value } = group;
    return this.write([groupMetadataRecord(groupId, value)]);
  }

  /**
   * The tombstones of the group's deletion, in one batch: its metadata's and those of the offsets it has
   * now (a commit written but not committed yet has none, and stays, as the shard's deletion leaves it).
   */
  deleteGroup(groupId: string): Promise<void> {
    const records: CoordinatorRecord[] = [groupMetadataRecord(groupId, null)];
    for (const { topic, partition } of this.offsets.list(groupId)) {
      records.push(offsetCommitRecord(groupId, topic, partition, null));
    }
    return this.write(records);
  }

  /** Tombstones of these offsets (their retention ran out), in one batch. */
  deleteOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<void> {
    return this.write(
      partitions.map(({ topic, partition }) => offsetCommitRecord(groupId, topic, partition, null)),
    );
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

  /** The groups whose latest metadata record is not a tombstone. */
  groups(): StoredGroup[] {
    return [...this.groupsById.values()];
  }

  private write(records: readonly CoordinatorRecord[]): Promise<void> {
    try {
      return this.writer.append(records.map(serializeRecord)).then(() => {
        for (const record of records) this.replay(record);
      });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private replay(record: CoordinatorRecord): void {
    if (record.type === OFFSET_COMMIT_KEY_TYPE) {
      const { groupId, topic, partition, value } = record;
      if (value === null) this.offsets.remove(groupId, topic, partition);
      else this.offsets.put(groupId, topic, partition, value);
      return;
    }
    const stored = storedGroupOf(record);
    if (stored === undefined) this.groupsById.delete(record.groupId);
    else this.groupsById.set(record.groupId, stored);
  }
}
