import type { TopicPartition } from '../topic-partition';
import { emptyAssignment, sortMembers } from './member-order';
import type { Assignor, AssignorMember, PartitionAssignor } from './partition-assignor';

/**
 * Kafka's RangeAssignor: topic by topic, the partitions in numeric order are cut into contiguous ranges, one
 * per subscribed member in member order; when they do not divide evenly the first members get one extra.
 *
 * Example: members C0 and C1, topics t0 and t1 with 3 partitions each →
 * C0: [t0p0, t0p1, t1p0, t1p1], C1: [t0p2, t1p2]. Co-partitioned topics land on the same member, which is why
 * range is chosen for joins; the price is imbalance across many topics (C0 is ahead on every topic).
 */
export const rangeAssign: Assignor = (members, partitionsPerTopic) => {
  const sorted = sortMembers(members);
  const assignment = emptyAssignment<TopicPartition>(sorted);
  const membersPerTopic = new Map<string, AssignorMember[]>();
  for (const member of sorted) {
    for (const topic of new Set(member.subscription.topics)) {
      let list = membersPerTopic.get(topic);
      if (list === undefined) membersPerTopic.set(topic, (list = []));
      list.push(member);
    }
  }
  for (const topic of [...membersPerTopic.keys()].sort()) {
    const numPartitions = partitionsPerTopic.get(topic);
    if (numPartitions === undefined) continue;
    const consumers = membersPerTopic.get(topic) as AssignorMember[];
    const perMember = Math.floor(numPartitions / consumers.length);
    const withExtra = numPartitions % consumers.length;
    for (let i = 0; i < consumers.length; i++) {
      const start = perMember * i + Math.min(i, withExtra);
      const length = perMember + (i < withExtra ? 1 : 0);
      const list = assignment.get(consumers[i].memberId) as TopicPartition[];
      for (let p = start; p < start + length; p++) list.push({ topic, partition: p });
    }
  }
  return assignment;
};

/** `range`, an eager assignor. */
export const RANGE_ASSIGNOR: PartitionAssignor = Object.freeze({
  name: 'range',
  rebalanceProtocol: 'eager',
  assign: rangeAssign,
});
