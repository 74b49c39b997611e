import { CohortError, ErrorCode } from '../../errors';
import type { CommittedOffset, TopicPartition } from '../committed-offsets';
import type { CoordinatorLogRecord, CoordinatorRecordToWrite } from '../coordinator-partition-writer';
import type { StoredGroup } from '../stored-group';
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
  OFFSET_COMMIT_KEY_TYPE,
} from './consumer-offsets-record';

/** An offset commit record: a group's committed offset of one partition; a null value deletes it. */
export interface OffsetCommitRecord extends TopicPartition {
  readonly type: typeof OFFSET_COMMIT_KEY_TYPE;
  readonly groupId: string;
  readonly value: CommittedOffset | null;
}

/** A group metadata record: the group as stored (StoredGroup without its id); a null value deletes it. */
export interface GroupMetadataRecord {
  readonly type: typeof GROUP_METADATA_KEY_TYPE;
  readonly groupId: string;
  readonly value: GroupMetadataValue | null;
}

/**
 * One record of a `__consumer_offsets` partition as the coordinator shard handles it (Kafka's
 * CoordinatorRecord): what a write handler returns, what the shard's runtime appends once serialized
 * (`serializeRecord`), and what the shard replays — each record of the partition at its load (read back
 * by `deserializeRecord`), each record of a write once it is committed.
 */
export type CoordinatorRecord = OffsetCommitRecord | GroupMetadataRecord;

export function offsetCommitRecord(
  groupId: string,
  topic: string,
  partition: number,
  value: CommittedOffset | null,
): OffsetCommitRecord {
  return { type: OFFSET_COMMIT_KEY_TYPE, groupId, topic, partition, value };
}

/** The record of `group`, or its tombstone. */
export function groupMetadataRecord(groupId: string, group: GroupMetadataValue | null): GroupMetadataRecord {
  return { type: GROUP_METADATA_KEY_TYPE, groupId, value: group };
}

/** The StoredGroup a group metadata record holds (undefined for a tombstone). */
export function storedGroupOf(record: GroupMetadataRecord): StoredGroup | undefined {
  return record.value === null ? undefined : { groupId: record.groupId, ...record.value };
}

/**
 * The key and value the writer appends (Kafka's GroupCoordinatorRecordSerde.serializeKey/Value). The
 * record's timestamp is the time it describes: a commit's, a group's last change; a tombstone's is the
 * append's.
 */
export function serializeRecord(record: CoordinatorRecord): CoordinatorRecordToWrite {
  if (record.type === OFFSET_COMMIT_KEY_TYPE) {
    const { groupId, topic, partition, value } = record;
    const key = encodeOffsetCommitKey(groupId, topic, partition);
    if (value === null) return { key, value: null };
    return { key, value: encodeOffsetCommitValue(value), timestampMs: value.commitTimestampMs };
  }
  const key = encodeGroupMetadataKey(record.groupId);
  if (record.value === null) return { key, value: null };
  return {
    key,
    value: encodeGroupMetadataValue(record.value),
    timestampMs: record.value.currentStateTimestampMs,
  };
}

/**
 * A record the load read back (Kafka's deserialize). An empty value is a tombstone, as the log's cleaner
 * treats it. Throws a CORRUPT_MESSAGE CohortError for a record without a key, with an unknown key type or
 * value version, or with bytes that do not parse.
 */
export function deserializeRecord(record: CoordinatorLogRecord): CoordinatorRecord {
  if (record.key === null) {
    throw new CohortError(ErrorCode.CORRUPT_MESSAGE, `a record without a key at offset ${record.offset}`);
  }
  const key = decodeKey(record.key);
  const value = record.value === null || record.value.length === 0 ? null : record.value;
  if (key.type === GROUP_METADATA_KEY_TYPE) {
    return groupMetadataRecord(key.groupId, value === null ? null : decodeGroupMetadataValue(value));
  }
  return offsetCommitRecord(
    key.groupId,
    key.topic,
    key.partition,
    value === null ? null : decodeOffsetCommitValue(value),
  );
}

/**
 * `record` as the writer appends it, serialized (`serializeRecord`) when the writer first reads its key,
 * value or timestamp. A partition that keeps nothing (InMemoryPartitionWriter) never reads them, and so
 * never pays for bytes nobody will read: a retention pass of a million offsets would otherwise encode a
 * million keys, 10,000 in each of its turns, for nothing.
 */
export function recordToWrite(record: CoordinatorRecord): CoordinatorRecordToWrite {
  return new SerializedOnRead(record);
}

class SerializedOnRead implements CoordinatorRecordToWrite {
  private readonly record: CoordinatorRecord;
  private serialized: CoordinatorRecordToWrite | undefined;

  constructor(record: CoordinatorRecord) {
    this.record = record;
  }

  get key(): Buffer {
    return this.serialize().key;
  }

  get value(): Buffer | null {
    return this.serialize().value;
  }

  get timestampMs(): number | undefined {
    return this.serialize().timestampMs;
  }

  private serialize(): CoordinatorRecordToWrite {
    return (this.serialized ??= serializeRecord(this.record));
  }
}
