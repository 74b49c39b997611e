import type { TopicPartition } from '../topic-partition';
import { emptyAssignment, sortMembers } from './member-order';
import type { Assignor, PartitionAssignor } from './partition-assignor';

/**
 * Kafka's RoundRobinAssignor: every partition of every subscribed topic (topics by name, partitions in
 * order) is dealt in turn to the members in member order, skipping members not subscribed to its topic.
 * With identical subscriptions the counts differ by at most one.
 *
 * Example: members C0 and C1, topics t0 and t1 with 3 partitions each →
 * C0: [t0p0, t0p2, t1p1], C1: [t0p1, t1p0, t1p2].
 */
export const roundRobinAssign: Assignor = (members, partitionsPerTopic) => {
  const sorted = sortMembers(members);
  const assignment = emptyAssignment<TopicPartition>(sorted);
  if (sorted.length === 0) return assignment;
  const subscribed = sorted.map((member) => new Set(member.subscription.topics));
  const topics = new Set<string>();
  for (const set of subscribed) for (const topic of set) topics.add(topic);

  let next = 0; // the member that gets the next partition it is subscribed to
  for (const topic of [...topics].sort()) {
    const numPartitions = partitionsPerTopic.get(topic);
    if (numPartitions === undefined) continue;
    for (let partition = 0; partition < numPartitions; partition++) {
      // Some member is subscribed to `topic` (that is how it got into `topics`), so this loop ends.
      while (!subscribed[next].has(topic)) next = (next + 1) % sorted.length;
      (assignment.get(sorted[next].memberId) as TopicPartition[]).push({ topic, partition });
      next = (next + 1) % sorted.length;
    }
  }
  return assignment;
};

/** `roundrobin`, an eager assignor. */
export const ROUND_ROBIN_ASSIGNOR: PartitionAssignor = Object.freeze({
  name: 'roundrobin',
  rebalanceProtocol: 'eager',
  assign: roundRobinAssign,
});
