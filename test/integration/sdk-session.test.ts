import { ErrorCode } from '../../src';
import { keys, nextEvent, partitionsOf, settled, useHarness } from './sdk-harness';

/**
 * What ends a membership other than a clean close, end to end: a session that expires on the server's manual
 * clock while the member's heartbeats cannot get through, and the stall guard, which leaves the group when
 * user code holds work too long.
 */

const SESSION_TIMEOUT_MS = 10_000;
const TOPIC = 'jobs';
const PARTITIONS = partitionsOf(TOPIC, 4);
const partitionsPerTopic = new Map([[TOPIC, PARTITIONS.length]]);

const harness = useHarness();

describe('losing a membership through the SDK', () => {
  it('reports lost when the coordinator expired the session on the manual clock, then rejoins', async () => {
    const h = harness();
    const groupId = h.groupId('session-expiry');
    const cut = h.newClient('cut-off');
    const a = cut.join({ groupId, topics: [TOPIC], partitionsPerTopic });
    const healthy = h.newClient('healthy');
    const b = healthy.join({ groupId, topics: [TOPIC], partitionsPerTopic });
    const generationId = await settled([a, b], PARTITIONS);
    const expiredMemberId = a.memberId;
    const held = keys(a.assignment);
    let bLost = 0;
    b.on('lost', () => bLost++);

    // a's heartbeats stop reaching the coordinator; b's go on. The clock passes a's session in two steps,
    // each shorter than a session, so only a expires.
    cut.transport.hold('heartbeat');
    await cut.transport.heldUntil('heartbeat');
    for (let step = 0; step < 2; step++) {
      for (let n = 0; n < 2; n++) await healthy.transport.next('heartbeat', (o) => o.code === ErrorCode.NONE);
      await h.server.advanceClock(SESSION_TIMEOUT_MS * 0.6);
    }
    expect(await settled([b], PARTITIONS)).toBeGreaterThan(generationId);
    expect(await h.describe(groupId)).toEqual({ state: 'Stable', memberIds: [b.memberId] });

    // The network heals: a learns it was evicted, stops work on what it held, and joins again as a new member.
    const lost = nextEvent(a, 'lost');
    cut.transport.release('heartbeat');
    const event = await lost;
    expect(event).toMatchObject({ reason: 'unknown-member', generationId });
    expect(keys(event.partitions)).toEqual(held);
    expect(event.error).toMatchObject({ code: ErrorCode.UNKNOWN_MEMBER_ID });
    await settled([a, b], PARTITIONS);
    expect(a.memberId).not.toBe(expiredMemberId);
    expect(a.memberId).not.toBe('');
    expect(bLost).toBe(0);
    expect(h.errors).toEqual([]);
  });

  it("rebalances the group when the stall guard's LeaveGroup takes a stuck member out, and lets it back when its work ends", async () => {
    const h = harness();
    const groupId = h.groupId('stall-guard');
    const stuck = h.newClient('stuck');
    const a = stuck.join({ groupId, topics: [TOPIC], partitionsPerTopic, maxProcessingIntervalMs: 100 });
    const b = h.newClient('busy').join({ groupId, topics: [TOPIC], partitionsPerTopic });
    const generationId = await settled([a, b], PARTITIONS);
    const held = keys(a.assignment);

    let finishWork = (): void => {};
    let workSignal: AbortSignal | undefined;
    const lost = nextEvent(a, 'lost');
    const leave = stuck.transport.next('leaveGroup');
    const takenOver = settled([b], PARTITIONS);
    const work = a.process((signal) => {
      workSignal = signal;
      return new Promise<void>((resolve) => (finishWork = resolve));
    });

    expect(await lost).toMatchObject({ reason: 'processing-stalled', generationId });
    expect(keys((await lost).partitions)).toEqual(held);
    expect(workSignal?.aborted).toBe(true);
    expect(a.state).toBe('stalled');
    expect((await leave).code).toBe(ErrorCode.NONE);
    // The server's clock never moved: the LeaveGroup, not a session timeout, made b take everything over.
    expect(await takenOver).toBeGreaterThan(generationId);

    finishWork();
    await work;
    await settled([a, b], PARTITIONS);
    expect(h.errors).toEqual([]);
  });
});
