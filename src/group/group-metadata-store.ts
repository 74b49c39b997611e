import type { StoredGroup } from './stored-group';

export type { StoredGroup, StoredMember } from './stored-group';

/**
 * Where group metadata lives, so that groups survive a restart with their members (Kafka's group metadata
 * records in `__consumer_offsets`). The coordinator writes a group's record when a generation completes —
 * after the leader's SyncGroup, before the group becomes Stable and the assignment is handed out — when a
 * group becomes Empty, and when a static member is replaced without a rebalance; each record replaces the
 * group's previous one.
 *
 * `storeGroup` resolves once the record is durable; the coordinator waits for it before it answers the
 * calls the record describes. Reject with a CohortError whose code says why (as for OffsetStore); the
 * coordinator converts it as Kafka's storeGroup does (see `storeGroupErrorCode`).
 *
 * `storedGroups` is read once, when the coordinator loads: each group comes back Stable with its members
 * (or Empty without), and every member gets a fresh session timeout from that moment.
 *
 * `deleteGroup` removes the group's record (DeleteGroups, and offset retention when an Empty group has no
 * offsets left). A store that is also the coordinator's
 * OffsetStore is called once and removes the offsets in the same write.
 */
export interface GroupMetadataStore {
  storeGroup(group: StoredGroup): Promise<void>;
  storedGroups(): Iterable<StoredGroup>;
  deleteGroup(groupId: string): Promise<void>;
}
