import type { CoordinatorRecordToWrite } from '../../src/group';
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
}
