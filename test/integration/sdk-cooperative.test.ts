import type { AssignedEvent, GroupMember, RevokedEvent } from '../../src';
import { keys, partitionsOf, settled, useHarness } from './sdk-harness';

/**
 * Cooperative rebalancing (KIP-429) end to end with the default cooperative-sticky assignor: real SDK
 * members, a real server, and the follow-up rebalance that hands out what the first one withheld.
 */

const TOPIC = 'events';
const PARTITIONS = partitionsOf(TOPIC, 6);
const partitionsPerTopic = new Map([[TOPIC, PARTITIONS.length]]);

const harness = useHarness();

function record(member: GroupMember): { assigned: AssignedEvent[]; revoked: RevokedEvent[]; lost: number } {
  const events = { assigned: [] as AssignedEvent[], revoked: [] as RevokedEvent[], lost: 0 };
  member.on('assigned', (event) => events.assigned.push(event));
  member.on('revoked', (event) => events.revoked.push(event));
  member.on('lost', () => events.lost++);
  return events;
}

describe('cooperative rebalancing through the SDK', () => {
  it('moves only the partitions it withheld when a member joins, and the follow-up rebalance hands them out', async () => {
    const h = harness();
    const groupId = h.groupId('cooperative');
    const join = (): GroupMember => h.newClient().join({ groupId, topics: [TOPIC], partitionsPerTopic });
    const a = join();
    const b = join();
    const generationId = await settled([a, b], PARTITIONS);
    const before = { a: keys(a.assignment), b: keys(b.assignment) };
    expect([before.a.length, before.b.length]).toEqual([3, 3]);
    const events = { a: record(a), b: record(b) };

    const c = join();
    const cEvents = record(c);
    expect(await settled([a, b, c], PARTITIONS)).toBe(generationId + 2);

    // First rebalance: c gets nothing yet; a and b each let go of one partition, and only of that one (the
    // event names the generation in which they owned it).
    const moved = [...events.a.revoked, ...events.b.revoked].flatMap((event) => keys(event.partitions));
    for (const event of [...events.a.revoked, ...events.b.revoked]) {
      expect(event).toMatchObject({ reason: 'reassigned', generationId });
      expect(event.partitions).toHaveLength(1);
    }
    expect(moved).toHaveLength(2);
    expect(keys(a.assignment)).toEqual(before.a.filter((key) => !moved.includes(key)));
    expect(keys(b.assignment)).toEqual(before.b.filter((key) => !moved.includes(key)));

    // The follow-up hands the withheld partitions to c, which took over nothing anyone still held.
    expect(cEvents.assigned.map((event) => [event.generationId, keys(event.added)])).toEqual([
      [generationId + 1, []],
      [generationId + 2, moved.sort()],
    ]);
    expect(keys(c.assignment)).toEqual(moved.sort());
    expect([events.a.lost, events.b.lost, cEvents.lost]).toEqual([0, 0, 0]);
    expect(cEvents.revoked).toEqual([]);
    expect(h.errors).toEqual([]);
  });
});
