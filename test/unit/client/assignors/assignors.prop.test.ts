import fc from 'fast-check';
import {
  cooperativeStickyAssign,
  rangeAssign,
  roundRobinAssign,
  stickyAssign,
  type Assignor,
  type AssignorMember,
} from '../../../../src/client/assignors';
import { sortMembers } from '../../../../src/client/assignors/member-order';
import { topicPartitionKey, type TopicPartition } from '../../../../src/client/topic-partition';

const TOPICS = ['t0', 't1', 't2', 't3'];

const partitionsPerTopicArb = fc
  .record({ t0: fc.nat(9), t1: fc.nat(9), t2: fc.nat(9), t3: fc.option(fc.nat(9), { nil: undefined }) })
  .map((counts) => {
    const map = new Map<string, number>();
    for (const [topic, count] of Object.entries(counts)) if (count !== undefined) map.set(topic, count);
    return map; // t3 is sometimes unknown to the leader
  });

const idsArb = (min: number, max: number) =>
  fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: min, maxLength: max });

/** Members with arbitrary (possibly differing) subscriptions and no claims. */
const membersArb = fc
  .tuple(
    idsArb(0, 8),
    fc.array(fc.subarray(TOPICS, { minLength: 1 }), { minLength: 8, maxLength: 8 }),
    fc.boolean(),
  )
  .map(([ids, subs, someStatic]) =>
    ids.map((id, i): AssignorMember => ({
      memberId: `m${id}`,
      ...(someStatic && i % 2 === 0 ? { groupInstanceId: `i${id}` } : {}),
      subscription: { topics: subs[i] },
    })),
  );

/** Members that all subscribe to the same topics. */
const equalMembersArb = fc
  .tuple(idsArb(1, 8), fc.subarray(TOPICS, { minLength: 1 }))
  .map(([ids, topics]) =>
    ids.map((id): AssignorMember => ({ memberId: `m${id}`, subscription: { topics } })),
  );

function subscribedPartitions(
  members: readonly AssignorMember[],
  partitionsPerTopic: Map<string, number>,
): string[] {
  const topics = new Set(members.flatMap((m) => m.subscription.topics));
  const keys: string[] = [];
  for (const topic of topics) {
    for (let p = 0; p < (partitionsPerTopic.get(topic) ?? 0); p++)
      keys.push(topicPartitionKey({ topic, partition: p }));
  }
  return keys.sort();
}

function assignedKeys(assignment: Map<string, TopicPartition[]>): string[] {
  return [...assignment.values()].flat().map(topicPartitionKey).sort();
}

function counts(assignment: Map<string, TopicPartition[]>): number[] {
  return [...assignment.values()].map((list) => list.length);
}

function withClaims(
  members: readonly AssignorMember[],
  assignment: Map<string, TopicPartition[]>,
  generationId?: number,
): AssignorMember[] {
  return members.map((m) => ({
    ...m,
    subscription: {
      ...m.subscription,
      ownedPartitions: assignment.get(m.memberId) ?? [],
      ...(generationId !== undefined ? { generationId } : {}),
    },
  }));
}

/** The cooperative protocol as members run it: owners drop what they lost, and the group rejoins once. */
function cooperativeRounds(members: readonly AssignorMember[], partitionsPerTopic: Map<string, number>) {
  const first = cooperativeStickyAssign(members, partitionsPerTopic);
  const second = cooperativeStickyAssign(withClaims(members, first), partitionsPerTopic);
  return { first, second };
}

const shuffled = <T>(items: readonly T[], seed: number): T[] => {
  const copy = [...items];
  let s = seed;
  for (let i = copy.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const j = s % (i + 1);
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
};

const ALL: [string, Assignor][] = [
  ['range', rangeAssign],
  ['roundrobin', roundRobinAssign],
  ['sticky target', (members, ppt) => stickyAssign(sortMembers(members), ppt)],
];

describe.each(ALL)('%s', (_name, assign) => {
  it('assigns every subscribed partition exactly once, only to members subscribed to its topic', () => {
    fc.assert(
      fc.property(membersArb, partitionsPerTopicArb, (members, ppt) => {
        const result = assign(members, ppt);
        expect([...result.keys()].sort()).toEqual(members.map((m) => m.memberId).sort());
        expect(assignedKeys(result)).toEqual(subscribedPartitions(members, ppt));
        for (const m of members) {
          for (const tp of result.get(m.memberId) ?? []) expect(m.subscription.topics).toContain(tp.topic);
        }
      }),
    );
  });

  it('gives the same answer whatever order the members arrive in', () => {
    fc.assert(
      fc.property(membersArb, partitionsPerTopicArb, fc.nat(), (members, ppt, seed) => {
        const a = assign(members, ppt);
        const b = assign(shuffled(members, seed), ppt);
        for (const m of members) expect(b.get(m.memberId)).toEqual(a.get(m.memberId));
      }),
    );
  });
});

describe.each([
  ['roundrobin', roundRobinAssign],
  [
    'sticky target',
    (members: readonly AssignorMember[], ppt: Map<string, number>) => stickyAssign(sortMembers(members), ppt),
  ],
] as [string, Assignor][])('%s with identical subscriptions', (_name, assign) => {
  it('balances counts within one', () => {
    fc.assert(
      fc.property(equalMembersArb, partitionsPerTopicArb, (members, ppt) => {
        const c = counts(assign(members, ppt));
        expect(Math.max(...c) - Math.min(...c)).toBeLessThanOrEqual(1);
      }),
    );
  });
});

describe('range with identical subscriptions', () => {
  it('balances each topic within one', () => {
    fc.assert(
      fc.property(equalMembersArb, partitionsPerTopicArb, (members, ppt) => {
        const result = rangeAssign(members, ppt);
        for (const topic of members[0].subscription.topics) {
          const perMember = [...result.values()].map((l) => l.filter((tp) => tp.topic === topic).length);
          expect(Math.max(...perMember) - Math.min(...perMember)).toBeLessThanOrEqual(1);
        }
      }),
    );
  });
});

describe('stickyAssign', () => {
  it('with differing subscriptions, leaves no partition that could move to an eligible member with two fewer', () => {
    fc.assert(
      fc.property(membersArb, partitionsPerTopicArb, (members, ppt) => {
        const result = stickyAssign(sortMembers(members), ppt);
        for (const [owner, list] of result) {
          for (const tp of list) {
            for (const m of members) {
              if (m.memberId === owner || !m.subscription.topics.includes(tp.topic)) continue;
              expect((result.get(m.memberId) as TopicPartition[]).length).toBeGreaterThan(list.length - 2);
            }
          }
        }
      }),
    );
  });

  it('moves no partition when membership and subscriptions are unchanged', () => {
    fc.assert(
      fc.property(
        membersArb,
        partitionsPerTopicArb,
        fc.integer({ min: 1, max: 50 }),
        (members, ppt, generation) => {
          const before = stickyAssign(sortMembers(members), ppt);
          const again = stickyAssign(sortMembers(withClaims(members, before, generation)), ppt);
          expect(again).toEqual(before);
        },
      ),
    );
  });

  it('with identical subscriptions, moves only the partitions that must move when members join or leave', () => {
    fc.assert(
      fc.property(
        fc.subarray(TOPICS, { minLength: 1 }),
        partitionsPerTopicArb,
        idsArb(1, 8),
        idsArb(1, 8),
        (topics, ppt, beforeIds, afterIds) => {
          const sub = { topics };
          const before = stickyAssign(
            sortMembers(beforeIds.map((id) => ({ memberId: `m${id}`, subscription: sub }))),
            ppt,
          );
          const afterMembers = withClaims(
            afterIds.map((id) => ({ memberId: `m${id}`, subscription: sub })),
            before,
            1,
          );
          const after = stickyAssign(sortMembers(afterMembers), ppt);

          // Lower bound on moves: with P partitions over N members, quotas are q = ⌊P/N⌋ and, for P mod N of
          // them, q + 1. A survivor owning o keeps at most min(o, its quota); the q + 1 slots are best spent
          // on survivors owning more than q.
          const total = subscribedPartitions(afterMembers, ppt).length;
          const q = Math.floor(total / afterIds.length);
          const extra = total % afterIds.length;
          const owned = afterMembers.map((m) => (m.subscription.ownedPartitions ?? []).length);
          const keepable =
            owned.reduce((sum, o) => sum + Math.min(o, q), 0) +
            Math.min(extra, owned.filter((o) => o > q).length);
          const ownedTotal = owned.reduce((a, b) => a + b, 0);

          let kept = 0;
          for (const m of afterMembers) {
            const now = new Set((after.get(m.memberId) as TopicPartition[]).map(topicPartitionKey));
            for (const tp of m.subscription.ownedPartitions ?? []) if (now.has(topicPartitionKey(tp))) kept++;
          }
          expect(ownedTotal - kept).toBe(ownedTotal - keepable);
        },
      ),
    );
  });
});

describe('cooperativeStickyAssign', () => {
  it('never assigns a partition that another member still owns', () => {
    fc.assert(
      fc.property(membersArb, membersArb, partitionsPerTopicArb, (beforeMembers, afterMembers, ppt) => {
        const before = cooperativeRounds(beforeMembers, ppt).second;
        const claimed = withClaims(afterMembers, before, 1);
        const result = cooperativeStickyAssign(claimed, ppt);
        const ownerOf = new Map<string, string>();
        for (const m of claimed)
          for (const tp of m.subscription.ownedPartitions ?? [])
            ownerOf.set(topicPartitionKey(tp), m.memberId);
        for (const [memberId, list] of result) {
          for (const tp of list) expect([undefined, memberId]).toContain(ownerOf.get(topicPartitionKey(tp)));
        }
        const keys = assignedKeys(result);
        expect(new Set(keys).size).toBe(keys.length); // at most once
      }),
    );
  });

  it('assigns every partition exactly once, balanced within one, after the follow-up rebalance', () => {
    fc.assert(
      fc.property(
        fc.subarray(TOPICS, { minLength: 1 }),
        partitionsPerTopicArb,
        idsArb(1, 8),
        idsArb(1, 8),
        (topics, ppt, beforeIds, afterIds) => {
          const sub = { topics };
          const toMembers = (ids: number[]) => ids.map((id) => ({ memberId: `m${id}`, subscription: sub }));
          const before = cooperativeRounds(toMembers(beforeIds), ppt).second;
          const { first, second } = cooperativeRounds(withClaims(toMembers(afterIds), before, 1), ppt);
          expect(assignedKeys(second)).toEqual(subscribedPartitions(toMembers(afterIds), ppt));
          const c = counts(second);
          expect(Math.max(...c) - Math.min(...c)).toBeLessThanOrEqual(1);
          // The follow-up only hands out what was withheld: nobody loses anything a second time.
          for (const [memberId, list] of first) {
            const now = new Set((second.get(memberId) as TopicPartition[]).map(topicPartitionKey));
            for (const tp of list) expect(now.has(topicPartitionKey(tp))).toBe(true);
          }
        },
      ),
    );
  });

  it('with differing subscriptions, assigns every partition exactly once within two follow-up rebalances', () => {
    // Unlike identical subscriptions (exactly one follow-up, proven by the test above), a follow-up round may
    // now and then have to move one more claimed partition to stay balanced. Over 60,000 random cases no
    // group needed more than two follow-ups; this checks the protocol as members run it.
    fc.assert(
      fc.property(membersArb, membersArb, partitionsPerTopicArb, (beforeMembers, afterMembers, ppt) => {
        const before = cooperativeRounds(beforeMembers, ppt).second;
        let owned = before;
        let rounds = 0;
        let result: Map<string, TopicPartition[]>;
        do {
          result = cooperativeStickyAssign(withClaims(afterMembers, owned, 1), ppt);
          owned = result;
          rounds++;
        } while (assignedKeys(result).length < subscribedPartitions(afterMembers, ppt).length && rounds < 10);
        expect(assignedKeys(result)).toEqual(subscribedPartitions(afterMembers, ppt));
        expect(rounds).toBeLessThanOrEqual(3);
      }),
    );
  });
});
