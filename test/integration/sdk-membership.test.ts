import { RANGE_ASSIGNOR, type GroupMember, type LostEvent } from '../../src';
import { keys, partitionsOf, settled, useHarness } from './sdk-harness';

/**
 * Real SDK members against a real server on the manual clock. The server's clock moves only when a test
 * advances it, so no session can end unless the test says so: what makes the group rebalance here is the
 * members' own requests.
 */

const INITIAL_DELAY_MS = 3_000;
const SESSION_TIMEOUT_MS = 10_000;
const TOPIC = 'orders';
const PARTITIONS = partitionsOf(TOPIC, 6);
const partitionsPerTopic = new Map([[TOPIC, PARTITIONS.length]]);

const harness = useHarness({ groupInitialRebalanceDelayMs: INITIAL_DELAY_MS });

function recordLost(members: readonly GroupMember[]): LostEvent[] {
  const lost: LostEvent[] = [];
  for (const member of members) member.on('lost', (event) => lost.push(event));
  return lost;
}

describe('group membership through the SDK', () => {
  it('three members join, sync and heartbeat through sessions the clock would end, and a new leader takes over when the leader closes', async () => {
    const h = harness();
    const groupId = h.groupId('three');
    const clients = [h.newClient('a'), h.newClient('b'), h.newClient('c')];
    const members = clients.map((c) =>
      c.join({ groupId, topics: [TOPIC], partitionsPerTopic, protocols: [RANGE_ASSIGNOR] }),
    );
    const lost = recordLost(members);

    // All three arrive within the initial rebalance delay, which is extended once for the late-comers.
    await h.groupReaches(groupId, 'PreparingRebalance', 3);
    const formed = settled(members, PARTITIONS);
    await h.server.advanceClock(INITIAL_DELAY_MS);
    await h.server.advanceClock(INITIAL_DELAY_MS);
    expect(await formed).toBe(1);
    const leaders = members.filter((m) => m.isLeader);
    expect(leaders).toHaveLength(1);
    for (const m of members) {
      expect(m.leaderId).toBe(leaders[0].memberId);
      expect(m.protocolName).toBe('range');
      expect(m.assignment).toHaveLength(2);
    }

    // Heartbeats keep every session alive while the server's clock passes almost two session timeouts. Two
    // answers per member after each step: the second was certainly sent after the step.
    for (let step = 0; step < 3; step++) {
      await Promise.all(
        clients.map(async (c) => {
          for (let i = 0; i < 2; i++) await c.transport.next('heartbeat', (o) => o.code === 0);
        }),
      );
      await h.server.advanceClock(SESSION_TIMEOUT_MS * 0.6);
    }
    await Promise.all(clients.map((c) => c.transport.next('heartbeat', (o) => o.code === 0)));
    expect(members.map((m) => [m.state, m.generationId])).toEqual(members.map(() => ['stable', 1]));
    expect(lost).toEqual([]);

    // The leader leaves; the other two rebalance without it and one of them leads generation 2.
    const leader = leaders[0];
    const rest = members.filter((m) => m !== leader);
    const next = settled(rest, PARTITIONS);
    await leader.close();
    expect(await next).toBe(2);
    const newLeader = rest.find((m) => m.isLeader);
    expect(newLeader).toBeDefined();
    expect(rest.map((m) => m.leaderId)).toEqual([newLeader?.memberId, newLeader?.memberId]);
    expect(rest.map((m) => m.assignment?.length)).toEqual([3, 3]);
    expect(await h.describe(groupId)).toEqual({
      state: 'Stable',
      memberIds: rest.map((m) => m.memberId).sort(),
    });
    expect(lost).toEqual([]);
    expect(h.errors).toEqual([]);
  });

  it('rebalances the others as soon as a dynamic member closes, without waiting for its session to expire', async () => {
    const h = harness();
    const groupId = h.groupId('dynamic-close');
    const [a, b, c] = [h.newClient('a'), h.newClient('b'), h.newClient('c')];
    const members = [a, b, c].map((client) => client.join({ groupId, topics: [TOPIC], partitionsPerTopic }));
    await h.groupReaches(groupId, 'PreparingRebalance', 3);
    const formed = settled(members, PARTITIONS);
    await h.server.advanceClock(INITIAL_DELAY_MS);
    await h.server.advanceClock(INITIAL_DELAY_MS);
    const generationId = await formed;
    const lost = recordLost(members);
    const [stays1, stays2, leaves] = members;
    const before = [keys(stays1.assignment), keys(stays2.assignment)];
    const revoked: string[] = [];
    for (const m of [stays1, stays2]) m.on('revoked', (event) => revoked.push(...keys(event.partitions)));

    const next = settled([stays1, stays2], PARTITIONS);
    const leave = c.transport.next('leaveGroup');
    await leaves.close();
    expect((await leave).code).toBe(0);
    // The clock has not moved since the group formed: only the LeaveGroup can have ended the membership.
    expect(await next).toBe(generationId + 1);
    expect(keys([...(stays1.assignment ?? []), ...(stays2.assignment ?? [])])).toEqual(keys(PARTITIONS));
    // Cooperative rebalancing: the leaver's partitions were handed out and nothing else moved.
    expect(keys(stays1.assignment)).toEqual(expect.arrayContaining(before[0]));
    expect(keys(stays2.assignment)).toEqual(expect.arrayContaining(before[1]));
    expect(revoked).toEqual([]);
    expect(lost).toEqual([]);
    expect(h.errors).toEqual([]);
  });
});
