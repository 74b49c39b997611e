import type { CoordinatorRecordStore, TopicPartitionOffset } from '../group';

/**
 * The committed offsets of every `__consumer_offsets` partition this node leads, read as one store, for
 * what reads offsets across groups outside the coordinator: the consumer-lag metrics and the live page.
 * The coordinator's shards write through their own partition's store; this only keeps, per partition,
 * the store of the current election (set on election, dropped on resignation), and finds a group's store
 * by the group's partition. A store is read only once loaded: before, its view is partial, or holds
 * records not yet committed (the load waits for the HW), which a failover could still take back.
 */
export class LedOffsetsStores {
  private readonly stores = new Map<number, CoordinatorRecordStore>();

  /** `partitionFor`: the group's partition (undefined while the partition count is unknown). */
  constructor(private readonly partitionFor: (groupId: string) => number | undefined) {}

  /** This node now leads `partitionIndex` with `store`. */
  elect(partitionIndex: number, store: CoordinatorRecordStore): void {
    this.stores.set(partitionIndex, store);
  }

  /** This node no longer leads `partitionIndex` (a later election's store stays if it came first). */
  resign(partitionIndex: number, leaderEpoch: number): void {
    const store = this.stores.get(partitionIndex);
    if (store !== undefined && store.leaderEpoch <= leaderEpoch) this.stores.delete(partitionIndex);
  }

  list(groupId: string): TopicPartitionOffset[] {
    return this.storeOf(groupId)?.list(groupId) ?? [];
  }

  committedPartitions(groupId: string): number {
    return this.storeOf(groupId)?.committedPartitions(groupId) ?? 0;
  }

  /** Groups with offsets, over every led partition (a group lives on one partition only). */
  *groupIds(): Iterable<string> {
    for (const store of this.stores.values()) if (store.isLoaded) yield* store.groupIds();
  }

  private storeOf(groupId: string): CoordinatorRecordStore | undefined {
    const partitionIndex = this.partitionFor(groupId);
    const store = partitionIndex === undefined ? undefined : this.stores.get(partitionIndex);
    return store?.isLoaded === true ? store : undefined;
  }
}
