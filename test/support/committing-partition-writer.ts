import type { CoordinatorRecordToWrite, StoredGroup } from '../../src/group';
import {
  decodeGroupMetadataValue,
  decodeKey,
  GROUP_METADATA_KEY_TYPE,
} from '../../src/group/records/consumer-offsets-record';
import { FakePartitionWriter } from './fake-partition-writer';

/**
 * A partition in memory whose appends commit as they are made, as an in-memory coordinator's do, until the
 * test holds them (`isHeld`): from then on they wait, as FakePartitionWriter's do, for `releaseAppends` or
 * `failAppend`. Its committed records are what a successor loads (`committedRecords`): a restart, or a new
 * election of the partition, is a new writer over them.
 */
export class CommittingPartitionWriter extends FakePartitionWriter {
  isHeld = false;

  override append(records: readonly CoordinatorRecordToWrite[]): Promise<void> {
    const appended = super.append(records);
    // Every append waiting commits with it, in order: appends complete in the order they were made.
    if (!this.isHeld) this.releaseAppends();
    return appended;
  }

  /** The records committed so far (not those of an append pending, failed, or ended by the resignation). */
  committedRecords(): CoordinatorRecordToWrite[] {
    return this.committed.map(({ offset, key, value }) => {
      if (key === null) throw new Error(`the record at offset ${offset} has no key`);
      return { key, value };
    });
  }

  /** The latest committed metadata record of `groupId`, undefined if none or a tombstone. */
  storedGroup(groupId: string): StoredGroup | undefined {
    let latest: StoredGroup | undefined;
    for (const record of this.committedRecords()) {
      const key = decodeKey(record.key);
      if (key.type !== GROUP_METADATA_KEY_TYPE || key.groupId !== groupId) continue;
      latest = record.value === null ? undefined : { groupId, ...decodeGroupMetadataValue(record.value) };
    }
    return latest;
  }

  /** Every group metadata record appended, committed or not, oldest first (null: a tombstone). */
  groupRecords(): Array<StoredGroup | null> {
    const found: Array<StoredGroup | null> = [];
    for (const record of this.records) {
      if (record.key === null) continue;
      const key = decodeKey(record.key);
      if (key.type !== GROUP_METADATA_KEY_TYPE) continue;
      found.push(
        record.value === null ? null : { groupId: key.groupId, ...decodeGroupMetadataValue(record.value) },
      );
    }
    return found;
  }
}
