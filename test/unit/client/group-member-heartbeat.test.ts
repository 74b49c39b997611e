import { ErrorCode } from '../../../src/errors';
import { CohortError } from '../../../src/errors';
import { joined } from './support/member-harness';
import { Held, ScriptedTransport, flush } from './support/scripted-transport';
import type { HeartbeatResponse } from '../../../src/protocol/group-messages';

describe('GroupMember heartbeats', () => {
  it('sends the first heartbeat one interval after joining, then one per interval', async () => {
    const { transport, advance } = await joined();
    await advance(2_999);
    expect(transport.callsOf('heartbeat')).toHaveLength(0);
    await advance(1);
    expect(transport.callsOf('heartbeat')).toHaveLength(1);
    await advance(3_000);
    await advance(3_000);
    expect(transport.callsOf('heartbeat')).toHaveLength(3);
    expect(transport.callsOf('heartbeat')[0].request).toEqual({
      groupId: 'g',
      generationId: 1,
      memberId: 'member-1',
      groupInstanceId: '',
    });
  });

  it('measures the interval from the previous send, not from its answer', async () => {
    const held = new Held<HeartbeatResponse>();
    const { transport, advance } = await joined({}, new ScriptedTransport().script('heartbeat', held));
    await advance(3_000); // sent at 3000
    await advance(1_000);
    held.resolve({});
    await flush(); // answered at 4000
    await advance(1_999);
    expect(transport.callsOf('heartbeat')).toHaveLength(1);
    await advance(1); // 6000 = 3000 + interval
    expect(transport.callsOf('heartbeat')).toHaveLength(2);
  });

  it('keeps one heartbeat in flight and sends the next as soon as a late answer arrives', async () => {
    const held = new Held<HeartbeatResponse>();
    const { transport, advance } = await joined({}, new ScriptedTransport().script('heartbeat', held));
    await advance(3_000);
    await advance(4_000);
    expect(transport.callsOf('heartbeat')).toHaveLength(1);
    held.resolve({});
    await flush();
    expect(transport.callsOf('heartbeat')).toHaveLength(2);
  });

  it('gives every heartbeat a deadline of the smaller of requestTimeoutMs and sessionTimeoutMs', async () => {
    const { transport, advance } = await joined({ requestTimeoutMs: 30_000 });
    await advance(3_000);
    expect(transport.callsOf('heartbeat')[0].options.timeoutMs).toBe(10_000);
  });

  it('retries a retriable failure after a jittered backoff and keeps the assignment', async () => {
    const transport = new ScriptedTransport().script(
      'heartbeat',
      { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE },
      new CohortError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'connection refused'),
    );
    const { member, advance, names } = await joined({}, transport);
    await advance(3_000);
    await advance(99);
    expect(transport.callsOf('heartbeat')).toHaveLength(1);
    await advance(1); // backoff 100 ms (random 0.5 → no jitter)
    expect(transport.callsOf('heartbeat')).toHaveLength(2);
    await advance(200); // second failure: 200 ms
    expect(transport.callsOf('heartbeat')).toHaveLength(3);
    expect(member.state).toBe('stable');
    expect(names()).toEqual(['assigned']);
  });

  it('declares the assignment lost and rejoins, keeping its member id, when no heartbeat succeeds for a session', async () => {
    const transport = new ScriptedTransport().script('heartbeat', 'hang');
    const { member, events, advance } = await joined({}, transport);
    transport.script('joinGroup', 'hang');
    await advance(9_999);
    expect(member.state).toBe('stable');
    await advance(1);
    expect(events.map((e) => e[0])).toEqual(['assigned', 'lost']);
    expect(events[1][1]).toMatchObject({
      reason: 'session-expired',
      partitions: member.options.topics.length ? expect.any(Array) : [],
    });
    expect(member.generationId).toBe(-1);
    const rejoin = transport.callsOf('joinGroup')[1];
    expect(rejoin.request.memberId).toBe('member-1');
    expect(member.state).toBe('preparing-rebalance');
  });

  it('goes on heartbeating while SyncGroup is parked', async () => {
    const transport = new ScriptedTransport().script('syncGroup', 'hang');
    const { harness } = await import('./support/member-harness');
    const { member, advance } = harness({}, transport);
    await flush();
    expect(member.state).toBe('completing-rebalance');
    for (let i = 0; i < 3; i++) await advance(3_000);
    expect(transport.callsOf('heartbeat')).toHaveLength(3);
    expect(member.state).toBe('completing-rebalance');
  });

  it('stops heartbeating once it sends JoinGroup', async () => {
    const transport = new ScriptedTransport().script('heartbeat', {
      errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
    });
    const { member, advance } = await joined({ protocols: undefined }, transport);
    transport.script('joinGroup', 'hang');
    await advance(3_000);
    expect(member.state).toBe('preparing-rebalance');
    await advance(15_000);
    expect(transport.callsOf('heartbeat')).toHaveLength(1);
  });

  it('is never delayed by long-running work', async () => {
    const { member, transport, advance } = await joined();
    let finish = (): void => {};
    const work = member.process(() => new Promise<void>((resolve) => (finish = resolve)));
    await advance(3_000);
    await advance(3_000);
    await advance(3_000);
    expect(transport.callsOf('heartbeat')).toHaveLength(3);
    finish();
    await work;
  });
});
