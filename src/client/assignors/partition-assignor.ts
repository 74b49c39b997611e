import type { TopicPartition } from '../../protocol/topic-partition';

/**
 * How members give up partitions during a rebalance (KIP-429).
 * - `eager`: every member revokes everything it owns before it rejoins; the new assignment starts from nothing.
 * - `cooperative`: members keep what they own while they rejoin; the leader withholds any partition that must
 *   change owner, its owner revokes just that partition, and a follow-up rebalance hands it out.
 */
export type RebalanceProtocol = 'eager' | 'cooperative';

export type { Subscription } from '../../protocol/consumer-protocol';
import type { Subscription } from '../../protocol/consumer-protocol';

/** One member as the leader's assignor sees it. */
export interface AssignorMember {
  readonly memberId: string;
  /** Set for static members (KIP-345); assignors order static members by it so a restart keeps its share. */
  readonly groupInstanceId?: string;
  readonly subscription: Subscription;
}

/**
 * An assignment strategy as a plain function: the leader calls it with every member and the partition count
 * of each topic, and it returns, for EVERY member id it was given, the partitions that member gets (an empty
 * list for a member that gets nothing). Topics missing from `partitionsPerTopic` are skipped. It must be
 * deterministic: the same input gives the same output, whatever order the members arrive in.
 */
export type Assignor = (
  members: readonly AssignorMember[],
  partitionsPerTopic: ReadonlyMap<string, number>,
) => Map<string, TopicPartition[]>;

/**
 * An assignor with the name members vote for in JoinGroup (the protocol name) and the rebalance protocol
 * it needs. Replace `assign` with your own function to change the strategy.
 */
export interface PartitionAssignor {
  readonly name: string;
  readonly rebalanceProtocol: RebalanceProtocol;
  readonly assign: Assignor;
}
