import { topicPartitionKey, type TopicPartition } from '../topic-partition';
import { sortMembers } from './member-order';
import type { Assignor, PartitionAssignor } from './partition-assignor';
import { stickyAssign } from './sticky-assign';

/**
 * Kafka's CooperativeStickyAssignor (KIP-429): the balanced, sticky assignment of `stickyAssign`, except that a
 * partition some other member still reports owning is withheld this round (assigned to nobody). Its owner
 * sees it missing from its own assignment, revokes it, and rejoins; in that follow-up rebalance nobody owns
 * it any more and it goes to its new member. A partition therefore never has two owners at once, and members
 * keep working on everything that does not move while the group rebalances.
 *
 * Example: A owns p0..p3, B joins. The target is A: p0,p1 and B: p2,p3; A still owns p2,p3, so round one gives
 * A: p0,p1 and B: nothing. A revokes p2,p3 and rejoins; round two gives A: p0,p1 and B: p2,p3.
 */
export const cooperativeStickyAssign: Assignor = (members, partitionsPerTopic) => {
  const sorted = sortMembers(members);
  const assignment = stickyAssign(sorted, partitionsPerTopic);
  // Every claim counts here, even one the sticky step distrusted (stale generation, double claim): a member
  // that says it owns a partition may be working on it, so nobody else gets it until that member lets go.
  const claimedBy = new Map<string, Set<string>>();
  for (const member of sorted) {
    for (const tp of member.subscription.ownedPartitions ?? []) {
      const key = topicPartitionKey(tp);
      let owners = claimedBy.get(key);
      if (owners === undefined) claimedBy.set(key, (owners = new Set()));
      owners.add(member.memberId);
    }
  }
  for (const [memberId, list] of assignment) {
    const kept = list.filter((tp: TopicPartition) => {
      const owners = claimedBy.get(topicPartitionKey(tp));
      if (owners === undefined) return true;
      for (const owner of owners) if (owner !== memberId) return false;
      return true;
    });
    assignment.set(memberId, kept);
  }
  return assignment;
};

/** `cooperative-sticky`, the cooperative assignor. Prefer it: rebalances stop only the partitions that move. */
export const COOPERATIVE_STICKY_ASSIGNOR: PartitionAssignor = Object.freeze({
  name: 'cooperative-sticky',
  rebalanceProtocol: 'cooperative',
  assign: cooperativeStickyAssign,
});
