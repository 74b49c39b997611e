import type { CohortError } from '../errors';
import type { TopicPartition } from './topic-partition';

// What `CohortAdmin.describeGroups` answers and every `GroupWatch` event carries: its own file so that the
// watch, which the admin opens, reads the shape without importing the admin.

/** A member of a described group. */
export interface GroupMemberDescription {
  readonly memberId: string;
  /** Set for static members. */
  readonly groupInstanceId: string | null;
  readonly clientId: string;
  /** The address the member's calls come from. */
  readonly clientHost: string;
  /**
   * The member's partitions, decoded through the consumer protocol; empty while the group rebalances, null
   * for groups of another protocol type or an assignment that does not decode.
   */
  readonly assignment: readonly TopicPartition[] | null;
  /** The raw assignment bytes, for groups of other protocol types. */
  readonly assignmentBytes: Buffer;
}

/** A described group; `error` is GROUP_ID_NOT_FOUND for a group the coordinator does not hold. */
export interface GroupDescription {
  readonly groupId: string;
  readonly state: string;
  /** The group's generation: 0 before its first rebalance, -1 when it could not be described. */
  readonly generationId: number;
  readonly protocolType: string;
  /** The assignor the group chose (its protocol), when Stable; empty otherwise. */
  readonly protocol: string;
  readonly members: readonly GroupMemberDescription[];
  readonly error: CohortError | null;
}
