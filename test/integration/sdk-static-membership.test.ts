import type { GroupMember } from '../../src';
import type { TestClient } from './sdk-harness';
import { keys, nextEvent, partitionsOf, settled, useHarness } from './sdk-harness';

/**
 * Static membership (KIP-345) end to end: real SDK members with a `groupInstanceId`, restarted one after the
 * other as a deployment would, against a real server whose clock moves only when the test advances it.
 */

const INITIAL_DELAY_MS = 3_000;
const SESSION_TIMEOUT_MS = 10_000;
const TOPIC = 'payments';
const PARTITIONS = partitionsOf(TOPIC, 9);
const partitionsPerTopic = new Map([[TOPIC, PARTITIONS.length]]);

const harness = useHarness({ groupInitialRebalanceDelayMs: INITIAL_DELAY_MS });

interface Instance {
  readonly instanceId: string;
  client: TestClient;
  member: GroupMember;
}

describe('static membership through the SDK', () => {
  it('restarts three static members one after another without a rebalance', async () => {
    const h = harness();
    const groupId = h.groupId('rolling-restart');
    const join = (client: TestClient, instanceId: string): GroupMember =>
      client.join({ groupId, groupInstanceId: instanceId, topics: [TOPIC], partitionsPerTopic });
    const instances: Instance[] = ['instance-a', 'instance-b', 'instance-c'].map((instanceId) => {
      const client = h.newClient(instanceId);
      return { instanceId, client, member: join(client, instanceId) };
    });

    await h.groupReaches(groupId, 'PreparingRebalance', 3);
    const formed = settled(
      instances.map((i) => i.member),
      PARTITIONS,
    );
    await h.server.advanceClock(INITIAL_DELAY_MS);
    await h.server.advanceClock(INITIAL_DELAY_MS);
    const generationId = await formed;
    const owned = new Map(instances.map((i) => [i.instanceId, keys(i.member.assignment)]));

    // Anything a member sees from here on, other than the one being stopped, would be a rebalance.
    const disturbances: string[] = [];
    const stopping = new Set<GroupMember>();
    const watch = (instance: Instance): void => {
      const { member } = instance;
      for (const name of ['revoked', 'lost', 'assigned'] as const) {
        member.on(name, () => {
          if (!stopping.has(member)) disturbances.push(`${instance.instanceId}: ${name}`);
        });
      }
    };
    instances.forEach(watch);

    for (const instance of instances) {
      // The process stops: a static member sends no LeaveGroup, so the coordinator keeps its place.
      const old = instance.client;
      stopping.add(instance.member);
      await old.client.close();
      expect(old.transport.outcomes.filter((o) => o.method === 'leaveGroup')).toEqual([]);

      // A new process with the same instance id takes the place over, in the same generation.
      instance.client = h.newClient(instance.instanceId);
      instance.member = join(instance.client, instance.instanceId);
      const assigned = await nextEvent(instance.member, 'assigned');
      expect(assigned.generationId).toBe(generationId);
      expect(keys(assigned.partitions)).toEqual(owned.get(instance.instanceId));
      watch(instance);

      // Time passes with everyone heartbeating; over the three restarts it adds up to more than a session,
      // so a place held by a stopped incarnation's session would expire and cause a rebalance.
      await Promise.all(
        instances.map(async (i) => {
          for (let n = 0; n < 2; n++) await i.client.transport.next('heartbeat', (o) => o.code === 0);
        }),
      );
      await h.server.advanceClock(SESSION_TIMEOUT_MS * 0.6);
    }

    await Promise.all(instances.map((i) => i.client.transport.next('heartbeat', (o) => o.code === 0)));
    expect(disturbances).toEqual([]);
    expect(instances.map((i) => [i.member.state, i.member.generationId])).toEqual(
      instances.map(() => ['stable', generationId]),
    );
    expect(await h.describe(groupId)).toEqual({
      state: 'Stable',
      memberIds: instances.map((i) => i.member.memberId).sort(),
    });
    expect(h.errors).toEqual([]);
  });
});
