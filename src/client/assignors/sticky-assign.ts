import { compareTopicPartitions, topicPartitionKey, type TopicPartition } from '../topic-partition';
import { emptyAssignment } from './member-order';
import type { AssignorMember } from './partition-assignor';

/**
 * The balanced, sticky assignment that cooperative-sticky aims for (Kafka's AbstractStickyAssignor), before
 * any partition is withheld for revocation. `members` must already be in member order (`sortMembers`).
 *
 * 1. Claims: a member's `ownedPartitions` count only if the partition exists, the member is still subscribed
 *    to its topic, the member is of the highest generation any member reported (an older claim is stale), and
 *    no other member claims the same partition (a double claim cannot be trusted either way).
 * 2. When every member subscribes to the same topics (the common case) the counts are fixed first: with P
 *    partitions and N members, P mod N members get ⌈P/N⌉ and the rest ⌊P/N⌋, the larger quotas going to the
 *    members that claim the most. Each member keeps as many of its claims as its quota allows and the rest
 *    are dealt round-robin to members below quota. Every partition that moves had to: its old owner was over
 *    quota or gone. Example: 7 partitions owned 4/3 by A/B, C joins → quotas 3/2/2; A keeps 3, B keeps 2,
 *    one partition of A and one of B go to C. Nothing else moves.
 * 3. Otherwise (subscriptions differ) claims are kept, unclaimed partitions go, fewest eligible members first,
 *    to the eligible member with the fewest partitions, and then single partitions move from a member to an
 *    eligible member with at least two fewer until no such move exists. Each move lowers the sum of squared
 *    counts, so this ends; an assignment that is already balanced (the previous round's output, say) is
 *    returned unchanged.
 */
export function stickyAssign(
  members: readonly AssignorMember[],
  partitionsPerTopic: ReadonlyMap<string, number>,
): Map<string, TopicPartition[]> {
  const assignment = emptyAssignment<TopicPartition>(members);
  if (members.length === 0) return assignment;
  const subscriptions = members.map(
    (member) =>
      new Set(member.subscription.topics.filter((topic) => (partitionsPerTopic.get(topic) ?? 0) > 0)),
  );
  const claims = validClaims(members, subscriptions, partitionsPerTopic);
  const first = subscriptions[0];
  const allEqual = subscriptions.every(
    (set) => set.size === first.size && [...set].every((t) => first.has(t)),
  );
  if (allEqual) {
    assignWithQuotas(members, claims, partitionsOf([...first].sort(), partitionsPerTopic), assignment);
  } else {
    assignGeneral(members, subscriptions, claims, partitionsPerTopic, assignment);
  }
  for (const list of assignment.values()) list.sort(compareTopicPartitions);
  return assignment;
}

function partitionsOf(
  topics: readonly string[],
  partitionsPerTopic: ReadonlyMap<string, number>,
): TopicPartition[] {
  const all: TopicPartition[] = [];
  for (const topic of topics) {
    const count = partitionsPerTopic.get(topic) ?? 0;
    for (let partition = 0; partition < count; partition++) all.push({ topic, partition });
  }
  return all;
}

/** Step 1: each member's trustworthy claims, sorted. */
function validClaims(
  members: readonly AssignorMember[],
  subscriptions: readonly Set<string>[],
  partitionsPerTopic: ReadonlyMap<string, number>,
): TopicPartition[][] {
  let maxGeneration = -1;
  for (const member of members)
    maxGeneration = Math.max(maxGeneration, member.subscription.generationId ?? -1);
  const claimants = new Map<string, number>();
  const claims = members.map((member, i) => {
    const generationId = member.subscription.generationId ?? -1;
    if (generationId < maxGeneration) return [];
    const seen = new Set<string>();
    const list: TopicPartition[] = [];
    for (const tp of member.subscription.ownedPartitions ?? []) {
      const count = partitionsPerTopic.get(tp.topic) ?? 0;
      if (!subscriptions[i].has(tp.topic) || !Number.isInteger(tp.partition)) continue;
      if (tp.partition < 0 || tp.partition >= count) continue;
      const key = topicPartitionKey(tp);
      if (seen.has(key)) continue;
      seen.add(key);
      list.push({ topic: tp.topic, partition: tp.partition });
      claimants.set(key, (claimants.get(key) ?? 0) + 1);
    }
    return list;
  });
  return claims.map((list) =>
    list.filter((tp) => claimants.get(topicPartitionKey(tp)) === 1).sort(compareTopicPartitions),
  );
}

/** Step 2: identical subscriptions. */
function assignWithQuotas(
  members: readonly AssignorMember[],
  claims: readonly TopicPartition[][],
  all: readonly TopicPartition[],
  assignment: Map<string, TopicPartition[]>,
): void {
  const n = members.length;
  const minQuota = Math.floor(all.length / n);
  const withExtra = all.length % n;
  // The extra slots go to the members claiming the most, so the fewest claims are given up.
  const byClaims = members.map((_, i) => i).sort((a, b) => claims[b].length - claims[a].length || a - b);
  const quota = new Array<number>(n).fill(minQuota);
  for (let k = 0; k < withExtra; k++) quota[byClaims[k]] = minQuota + 1;

  const taken = new Set<string>();
  const lists = members.map((member, i) => {
    const list = assignment.get(member.memberId) as TopicPartition[];
    for (const tp of claims[i].slice(0, quota[i])) {
      list.push(tp);
      taken.add(topicPartitionKey(tp));
    }
    return list;
  });
  const pool = all.filter((tp) => !taken.has(topicPartitionKey(tp)));
  // The pool holds exactly the missing quota (quotas sum to all.length), so dealing it out fills everyone.
  let next = 0;
  while (next < pool.length) {
    for (let i = 0; i < n && next < pool.length; i++) {
      if (lists[i].length < quota[i]) lists[i].push(pool[next++]);
    }
  }
}

/** Step 3: subscriptions differ. */
function assignGeneral(
  members: readonly AssignorMember[],
  subscriptions: readonly Set<string>[],
  claims: readonly TopicPartition[][],
  partitionsPerTopic: ReadonlyMap<string, number>,
  assignment: Map<string, TopicPartition[]>,
): void {
  const n = members.length;
  const lists = members.map((member) => assignment.get(member.memberId) as TopicPartition[]);
  const eligible = new Map<string, number[]>();
  for (let i = 0; i < n; i++) {
    for (const topic of subscriptions[i]) {
      let list = eligible.get(topic);
      if (list === undefined) eligible.set(topic, (list = []));
      list.push(i);
    }
  }
  const taken = new Set<string>();
  for (let i = 0; i < n; i++) {
    for (const tp of claims[i]) {
      lists[i].push(tp);
      taken.add(topicPartitionKey(tp));
    }
  }
  const unassigned = partitionsOf([...eligible.keys()].sort(), partitionsPerTopic).filter(
    (tp) => !taken.has(topicPartitionKey(tp)),
  );
  // Most constrained first: a partition only one member can take must not find that member already full.
  unassigned.sort(
    (a, b) =>
      (eligible.get(a.topic) as number[]).length - (eligible.get(b.topic) as number[]).length ||
      compareTopicPartitions(a, b),
  );
  for (const tp of unassigned) {
    let best = -1;
    for (const i of eligible.get(tp.topic) as number[]) {
      if (best === -1 || lists[i].length < lists[best].length) best = i;
    }
    lists[best].push(tp);
  }

  // Balance. First along chains of partitions placed this round (unclaimed ones): a → b → … → m, each step
  // handing one such partition to a member subscribed to its topic, from a member to one holding at least two
  // fewer. Only the ends change count, so claimed partitions stay put. In a cooperative follow-up round the
  // withheld partitions are exactly the unclaimed ones, so this is what keeps that round from revoking more.
  // Only when no such chain is left does a claimed partition move, one at a time.
  const order = members.map((_, i) => i);
  const byCountDescending = (): number[] => order.sort((a, b) => lists[b].length - lists[a].length || a - b);

  const moveAlongUnclaimedChain = (): boolean => {
    for (const from of byCountDescending()) {
      const limit = lists[from].length - 2;
      if (limit < 0) return false;
      // Breadth-first from `from`; via[i] = [previous member, index in its list of the partition handed on].
      const via = new Map<number, [number, number]>([[from, [-1, -1]]]);
      const queue = [from];
      for (let head = 0; head < queue.length; head++) {
        const at = queue[head];
        const list = lists[at];
        for (let k = 0; k < list.length; k++) {
          if (taken.has(topicPartitionKey(list[k]))) continue;
          for (const next of eligible.get(list[k].topic) as number[]) {
            if (via.has(next)) continue;
            via.set(next, [at, k]);
            if (lists[next].length <= limit) {
              // Apply from the far end back, so indexes into earlier lists stay valid.
              for (let to = next; to !== from;) {
                const [prev, index] = via.get(to) as [number, number];
                lists[to].push(lists[prev].splice(index, 1)[0]);
                to = prev;
              }
              return true;
            }
            queue.push(next);
          }
        }
      }
    }
    return false;
  };

  const moveOneClaimed = (): boolean => {
    for (const from of byCountDescending()) {
      const fromCount = lists[from].length;
      if (fromCount < 2) return false;
      lists[from].sort(compareTopicPartitions);
      for (let k = 0; k < fromCount; k++) {
        const tp = lists[from][k];
        let best = -1;
        for (const i of eligible.get(tp.topic) as number[]) {
          if (i === from || lists[i].length > fromCount - 2) continue;
          if (best === -1 || lists[i].length < lists[best].length) best = i;
        }
        if (best !== -1) {
          lists[from].splice(k, 1);
          lists[best].push(tp);
          return true;
        }
      }
    }
    return false;
  };
  while (moveAlongUnclaimedChain() || moveOneClaimed());
}
