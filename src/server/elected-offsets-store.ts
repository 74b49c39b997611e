import { CohortError, ErrorCode } from '../errors';
import type {
  CommittedOffset,
  GroupMetadataStore,
  OffsetStore,
  StoredGroup,
  TopicPartitionOffset,
} from '../group';
import type { ConsumerOffsetsStore } from '../log/consumer-offsets';

const NOTHING: readonly never[] = Object.freeze([]);

type TopicPartitions = Parameters<OffsetStore['deleteOffsets']>[1];

/**
 * The one GroupCoordinator's OffsetStore and GroupMetadataStore: the ConsumerOffsetsStore of the
 * `__consumer_offsets` partition it was elected for, whichever that is now. The coordinator is built
 * before the ReplicaManager elects anything (its log opens at start()), and lives across elections; this
 * forwards every call to the store of the current election. With none (before start(), or after a
 * resignation) reads find nothing and writes reject NOT_LEADER_OR_FOLLOWER, which the coordinator
 * answers NOT_COORDINATOR.
 */
export class ElectedOffsetsStore implements OffsetStore, GroupMetadataStore {
  private current: ConsumerOffsetsStore | undefined;

  constructor(private readonly partitionKey: string) {}

  /** The store of the current election, if any. */
  get store(): ConsumerOffsetsStore | undefined {
    return this.current;
  }

  /** This node now leads the partition: `store` answers from here on. */
  elect(store: ConsumerOffsetsStore): void {
    this.current = store;
  }

  /** This node no longer leads the partition. */
  resign(): void {
    this.current = undefined;
  }

  commit(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    return this.current?.commit(groupId, offsets) ?? this.notLeader();
  }

  get(groupId: string, topic: string, partition: number): CommittedOffset | undefined {
    return this.current?.get(groupId, topic, partition);
  }

  list(groupId: string): TopicPartitionOffset[] {
    return this.current?.list(groupId) ?? [];
  }

  hasOffsets(groupId: string): boolean {
    return this.current?.hasOffsets(groupId) ?? false;
  }

  committedPartitions(groupId: string): number {
    return this.current?.committedPartitions(groupId) ?? 0;
  }

  deleteGroup(groupId: string): Promise<void> {
    return this.current?.deleteGroup(groupId) ?? this.notLeader();
  }

  deleteOffsets(groupId: string, partitions: TopicPartitions): Promise<void> {
    return this.current?.deleteOffsets(groupId, partitions) ?? this.notLeader();
  }

  groupIds(): Iterable<string> {
    return this.current?.groupIds() ?? NOTHING;
  }

  storeGroup(group: StoredGroup): Promise<void> {
    return this.current?.storeGroup(group) ?? this.notLeader();
  }

  storedGroups(): Iterable<StoredGroup> {
    return this.current?.storedGroups() ?? NOTHING;
  }

  private notLeader(): Promise<never> {
    return Promise.reject(
      new CohortError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `this node does not lead ${this.partitionKey}`),
    );
  }
}
