import type { JoinGroupMember, SyncGroupAssignment } from '../protocol/group-messages';
import type { AssignorMember, PartitionAssignor } from './assignors/partition-assignor';
import { decodeSubscription, encodeAssignment } from './consumer-protocol';
import type { PartitionCounts } from './group-member-options';

/**
 * The leader's part of a rebalance (Kafka's ConsumerCoordinator.onLeaderElected): decode every member's
 * subscription, run the assignor the group voted for over the topics' partition counts, and encode one
 * assignment per member for SyncGroup. A member the assignor leaves out gets an empty assignment (it must
 * still hear that it owns nothing). The counts are read here, at each rebalance, so a topic that grew is
 * spread over the group.
 *
 * Throws when a subscription cannot be read or the assignor names a member who is not in the group: the
 * leader cannot hand out a correct assignment, and the member treats that as fatal.
 */
export async function assignAsLeader(
  groupId: string,
  assignor: PartitionAssignor,
  joinedMembers: readonly JoinGroupMember[],
  counts: PartitionCounts | undefined,
): Promise<SyncGroupAssignment[]> {
  const members: AssignorMember[] = joinedMembers.map((m) => {
    let subscription;
    try {
      subscription = decodeSubscription(m.metadata);
    } catch (cause) {
      throw new Error(`leader of group "${groupId}" cannot read member ${m.memberId}'s subscription`, {
        cause,
      });
    }
    return {
      memberId: m.memberId,
      ...(m.groupInstanceId ? { groupInstanceId: m.groupInstanceId } : {}),
      subscription,
    };
  });
  const partitionsPerTopic =
    typeof counts === 'function' ? await counts() : (counts ?? new Map<string, number>());
  const result = assignor.assign(members, partitionsPerTopic);
  const ids = new Set(members.map((m) => m.memberId));
  for (const memberId of result.keys()) {
    if (!ids.has(memberId)) {
      throw new Error(
        `assignor "${assignor.name}" assigned partitions to "${memberId}", who is not in the group`,
      );
    }
  }
  return members.map((m) => ({
    memberId: m.memberId,
    assignment: encodeAssignment({ partitions: result.get(m.memberId) ?? [] }),
  }));
}
