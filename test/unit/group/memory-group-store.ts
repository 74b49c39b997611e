import type { GroupMetadataStore, StoredGroup } from '../../../src/group/group-metadata-store';
import { InMemoryOffsetStore } from '../../../src/group/in-memory-offset-store';
import type {
  CommittedOffset,
  OffsetStore,
  TopicPartition,
  TopicPartitionOffset,
} from '../../../src/group/offset-store';

interface PendingWrite {
  readonly apply: () => void;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  /** The write's promise, settled or not, as its caller got it. */
  readonly outcome: Promise<void>;
}

/**
 * A stand-in for the durable `__consumer_offsets` store: offsets and group records that outlive a
 * coordinator (hand the same object to the next one to simulate a restart). Writes take effect when they
 * are released: at once by default, or, with `isDeferred`, only when the test calls `release()` or
 * `fail()`, in the order they were made (the durable store's contract).
 */
export class MemoryGroupStore implements OffsetStore, GroupMetadataStore {
  isDeferred = false;
  readonly pending: PendingWrite[] = [];
  /** Every group record ever stored, oldest first. */
  readonly groupWrites: StoredGroup[] = [];
  readonly deletions: string[] = [];
  /** Every expiry asked of the store, as "group topic-partition ...". */
  readonly offsetDeletions: string[] = [];
  private readonly offsets = new InMemoryOffsetStore();
  private readonly groups = new Map<string, StoredGroup>();

  /** Settles the oldest `count` pending writes as durable. */
  release(count = this.pending.length): void {
    for (const write of this.pending.splice(0, count)) {
      write.apply();
      write.resolve();
    }
  }

  /**
   * Resolves once the pending write at `index` has settled, however (a test awaits a write whose caller
   * is gone, and whose callbacks, attached when it was made, have run by then).
   */
  pendingOutcome(index: number): Promise<void> {
    const write = this.pending[index];
    if (write === undefined) throw new Error(`no pending write at ${index}`);
    return write.outcome.then(
      () => undefined,
      () => undefined,
    );
  }

  /** Fails the oldest pending write. */
  fail(error: unknown): void {
    const write = this.pending.shift();
    if (write === undefined) throw new Error('no pending write');
    write.reject(error);
  }

  /** Puts a group record in place without a coordinator (a data directory written by an earlier run). */
  seed(group: StoredGroup): void {
    this.groups.set(group.groupId, group);
  }

  storedGroup(groupId: string): StoredGroup | undefined {
    return this.groups.get(groupId);
  }

  commit(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    return this.write(() => void this.offsets.commit(groupId, offsets));
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

  deleteGroup(groupId: string): Promise<void> {
    this.deletions.push(groupId);
    return this.write(() => {
      void this.offsets.deleteGroup(groupId);
      this.groups.delete(groupId);
    });
  }

  deleteOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<void> {
    this.offsetDeletions.push([groupId, ...partitions.map((p) => `${p.topic}-${p.partition}`)].join(' '));
    return this.write(() => void this.offsets.deleteOffsets(groupId, partitions));
  }

  storeGroup(group: StoredGroup): Promise<void> {
    this.groupWrites.push(group);
    return this.write(() => this.groups.set(group.groupId, group));
  }

  storedGroups(): Iterable<StoredGroup> {
    return this.groups.values();
  }

  private write(apply: () => void): Promise<void> {
    if (!this.isDeferred) {
      apply();
      return Promise.resolve();
    }
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const outcome = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.pending.push({ apply, resolve, reject, outcome });
    return outcome;
  }
}
