import type { ErrorCode } from '../errors';
import type { Time } from '../time';
import type { EmptyGroupSnapshot } from './empty-group-snapshot';
import type { GroupConfig } from './group-config';
import type { GroupMetadata } from './group-metadata';
import type { MemberMetadata } from './member-metadata';
import type { OffsetStore } from './offset-store';

/** A request waiting for a store; unloading the shard answers it at once with the unload's code. */
export interface StoreWait {
  abandon(errorCode: ErrorCode): void;
}

/** What DeleteGroups asks of each store. */
export interface GroupDeletion {
  deleteGroup(groupId: string): Promise<void>;
}

/**
 * The state of one coordinator shard as its request families (GroupMembership, GroupOffsets) work on it:
 * the partition's groups, its stores and load state, and the few operations on them the families share.
 * GroupCoordinatorShard implements it and builds the families over it, so the imports point one way:
 * shard → families → this declaration. The members are documented where the shard implements them.
 */
export interface GroupShardState {
  readonly config: GroupConfig;
  readonly time: Time;
  readonly groups: Map<string, GroupMetadata>;
  readonly offsetStore: OffsetStore;
  readonly groupStores: readonly GroupDeletion[];
  readonly storeWaits: Set<StoreWait>;
  readonly isActive: boolean;
  readonly availability: ErrorCode;
  createGroup(groupId: string): GroupMetadata;
  bringBackEmptyGroup(removed: EmptyGroupSnapshot): void;
  deleteGroup(group: GroupMetadata): void;
  storeGroup(
    group: GroupMetadata,
    assignments: ReadonlyMap<string, Buffer> | undefined,
    onStored: (error: ErrorCode) => void,
  ): void;
  validateCurrentMember(group: GroupMetadata, memberId: string, groupInstanceId: string): ErrorCode;
  fenced(groupId: string, memberId: string, groupInstanceId: string, errorCode: ErrorCode): ErrorCode;
  scheduleSessionTimeout(member: MemberMetadata): void;
  keepAlive(member: MemberMetadata): void;
}
