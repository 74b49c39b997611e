import { ErrorCode, type GroupMember } from '../../src';
import type { Outcome } from './sdk-harness';
import { nextEvent, partitionsOf, settled, useHarness } from './sdk-harness';

/**
 * Calls that end without the answer they waited for: a parked JoinGroup cancelled on the way, a member that
 * closes while parked, and a server that shuts down under its members. Nothing may hang, and what the
 * members see must be retriable.
 */

const TOPIC = 'audit';
const PARTITIONS = partitionsOf(TOPIC, 4);
const partitionsPerTopic = new Map([[TOPIC, PARTITIONS.length]]);

const harness = useHarness();

/**
 * `a` alone in a stable generation, and `b` parked in JoinGroup: `a`'s heartbeats are held, so it never
 * learns of the rebalance `b` started and the join cannot complete until the test releases them.
 */
async function parkedJoin(groupId: string) {
  const h = harness();
  const first = h.newClient('first');
  const a = first.join({ groupId, topics: [TOPIC], partitionsPerTopic });
  const generationId = await settled([a], PARTITIONS);
  first.transport.hold('heartbeat');
  await first.transport.heldUntil('heartbeat');
  const second = h.newClient('second');
  const b = second.join({ groupId, topics: [TOPIC], partitionsPerTopic });
  await h.groupReaches(groupId, 'PreparingRebalance', 2);
  return { h, first, a, second, b, generationId };
}

function isRetriableOutcome(outcome: Outcome): boolean {
  return outcome.error !== undefined
    ? outcome.error.retriable
    : outcome.code === ErrorCode.COORDINATOR_NOT_AVAILABLE;
}

describe('interrupted calls through the SDK', () => {
  it('retries a parked JoinGroup that was cancelled on the way and joins the generation', async () => {
    const groupId = harness().groupId('cancelled-join');
    const { h, first, a, second, b, generationId } = await parkedJoin(groupId);

    const cancelled = second.transport.next('joinGroup');
    expect(second.transport.cancel('joinGroup')).toBe(1);
    const outcome = await cancelled;
    expect(outcome.error).toMatchObject({ code: ErrorCode.COORDINATOR_NOT_AVAILABLE, retriable: true });

    first.transport.release('heartbeat');
    expect(await settled([a, b], PARTITIONS)).toBeGreaterThan(generationId);
    expect(await h.describe(groupId)).toEqual({
      state: 'Stable',
      memberIds: [a.memberId, b.memberId].sort(),
    });
    expect(h.errors).toEqual([]);
  });

  it('closes a member whose JoinGroup is parked: the call is cancelled, LeaveGroup goes out, and the group completes without it', async () => {
    const groupId = harness().groupId('close-while-parked');
    const { h, first, a, second, b, generationId } = await parkedJoin(groupId);

    const join = second.transport.next('joinGroup');
    const leave = second.transport.next('leaveGroup');
    await b.close();
    expect(b.state).toBe('closed');
    expect((await join).error).toMatchObject({ retriable: true });
    expect((await leave).code).toBe(ErrorCode.NONE);

    // a learns of the rebalance b started; it completes with a alone, as b is gone.
    const assigned = nextEvent(a, 'assigned');
    first.transport.release('heartbeat');
    expect(await assigned).toMatchObject({ generationId: generationId + 1, partitions: PARTITIONS });
    expect(await h.describe(groupId)).toEqual({ state: 'Stable', memberIds: [a.memberId] });
    expect(h.errors).toEqual([]);
  });

  it('gives members retriable errors when the server closes under them, and every member still closes', async () => {
    const groupId = harness().groupId('server-close');
    const { h, first, a, second, b } = await parkedJoin(groupId);
    const other = h.newClient('other');
    const c = other.join({ groupId: h.groupId('server-close-other'), topics: [TOPIC], partitionsPerTopic });
    await settled([c], PARTITIONS);
    const transports = [first, second, other].map((client) => client.transport);
    const seenBefore = transports.map((t) => t.outcomes.length);

    // b's JoinGroup is parked on the server, a's heartbeat is held on the way, c heartbeats normally.
    const parkedAnswer = second.transport.next('joinGroup');
    const retried = second.transport.next('joinGroup', (o) => o.error !== undefined);
    const heartbeatFails = other.transport.next('heartbeat', (o) => o.error !== undefined);
    await h.server.close();
    expect((await parkedAnswer).code).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await retried).error).toMatchObject({ retriable: true });
    expect((await heartbeatFails).error).toMatchObject({ retriable: true });
    const heldHeartbeat = first.transport.next('heartbeat');
    first.transport.release('heartbeat');
    expect(isRetriableOutcome(await heldHeartbeat)).toBe(true);

    // Nobody treats a server that went away as fatal, and nobody hangs on it.
    const members: GroupMember[] = [a, b, c];
    expect(members.map((m) => m.state)).not.toContain('failed');
    await Promise.all(members.map((m) => m.close()));
    expect(members.map((m) => m.state)).toEqual(['closed', 'closed', 'closed']);
    const after = transports.flatMap((t, i) => t.outcomes.slice(seenBefore[i]));
    expect(after.filter((o) => !isRetriableOutcome(o))).toEqual([]);
    expect(h.errors).toEqual([]);
  });
});
