import type { RevokedEvent } from '../../../src/client/group-member-events';
import { ErrorCode } from '../../../src/errors';
import { harness, joined } from './support/member-harness';
import { flush, ScriptedTransport } from './support/scripted-transport';

describe('GroupMember close', () => {
  it('revokes its partitions, then sends LeaveGroup for a dynamic member', async () => {
    const { member, transport, events } = await joined();
    await member.close();
    expect(events.map((e) => e[0])).toEqual(['assigned', 'revoked', 'closed']);
    expect(events[1][1]).toMatchObject({ reason: 'close', generationId: 1 });
    expect(transport.callsOf('leaveGroup').map((c) => c.request)).toEqual([
      {
        groupId: 'g',
        members: [{ memberId: 'member-1', groupInstanceId: '', reason: 'the member is closing' }],
      },
    ]);
    expect(member.state).toBe('closed');
    expect([member.generationId, member.isLeader, member.memberId]).toEqual([-1, false, 'member-1']);
  });

  it('sends no LeaveGroup for a static member', async () => {
    const { member, transport, names } = await joined({ groupInstanceId: 'i-1' });
    await member.close();
    expect(transport.callsOf('leaveGroup')).toHaveLength(0);
    expect(names()).toEqual(['assigned', 'revoked', 'closed']);
  });

  it('returns the same promise when called twice, and leaves once', async () => {
    const { member, transport } = await joined();
    const first = member.close();
    const second = member.close();
    expect(second).toBe(first);
    await Promise.all([first, second]);
    await member.close();
    expect(transport.callsOf('leaveGroup')).toHaveLength(1);
  });

  it('lets revoked listeners commit before leaving', async () => {
    const { member, transport } = await joined();
    member.on('revoked', (event: RevokedEvent) =>
      event.waitUntil(member.commitOffsets([{ topic: 't', partition: 0, offset: 9n }])),
    );
    await member.close();
    const order = transport.calls
      .map((c) => c.method)
      .filter((m) => m === 'offsetCommit' || m === 'leaveGroup');
    expect(order).toEqual(['offsetCommit', 'leaveGroup']);
  });

  it('is bounded by its deadline when LeaveGroup gets no answer', async () => {
    const transport = new ScriptedTransport().script('leaveGroup', 'hang');
    const { member, advance } = await joined({}, transport);
    let closed = false;
    const closing = member.close({ timeoutMs: 2_000 }).then(() => (closed = true));
    await flush();
    expect(transport.callsOf('leaveGroup')[0].options.timeoutMs).toBe(2_000);
    await advance(1_999);
    expect(closed).toBe(false);
    await advance(1);
    await closing;
    expect(member.state).toBe('closed');
  });

  it('is bounded by its deadline when a revoked listener never finishes', async () => {
    const { member, transport, advance } = await joined();
    member.on('revoked', (event: RevokedEvent) => event.waitUntil(new Promise(() => {})));
    let closed = false;
    const closing = member.close({ timeoutMs: 1_000 }).then(() => (closed = true));
    await advance(999);
    expect(closed).toBe(false);
    await advance(1);
    await closing;
    expect(transport.callsOf('leaveGroup')).toHaveLength(0); // no time left to send it
  });

  it('cancels a JoinGroup in flight and still leaves with the member id it was given', async () => {
    const transport = new ScriptedTransport().script(
      'joinGroup',
      { errorCode: ErrorCode.MEMBER_ID_REQUIRED, memberId: 'pending-id' },
      'hang',
    );
    const { member, names } = harness({}, transport);
    await flush();
    const parked = transport.callsOf('joinGroup')[1];
    await member.close();
    expect(parked.options.signal?.aborted).toBe(true);
    expect(transport.callsOf('leaveGroup')[0].request.members[0].memberId).toBe('pending-id');
    expect(names()).toEqual(['closed']);
  });

  it('stops every timer: nothing is sent after close', async () => {
    const { member, transport, advance } = await joined({ maxProcessingIntervalMs: 1_000 });
    void member.process(() => new Promise(() => {}));
    await member.close();
    const calls = transport.calls.length;
    await advance(120_000);
    expect(transport.calls).toHaveLength(calls);
  });

  it('closes when its abort signal fires', async () => {
    const controller = new AbortController();
    const { member, transport } = await joined({ signal: controller.signal });
    const closed = new Promise<void>((resolve) => member.once('closed', resolve));
    controller.abort();
    await closed;
    expect(transport.callsOf('leaveGroup')).toHaveLength(1);
  });

  it('closed before its first join, sends nothing at all', async () => {
    const transport = new ScriptedTransport();
    const { member } = harness({}, transport);
    await member.close();
    await flush();
    expect(transport.calls).toHaveLength(0);
  });

  it('reports lost, not revoked, when closing after its generation was lost', async () => {
    const transport = new ScriptedTransport().script('heartbeat', 'hang');
    const { member, advance, names } = await joined({}, transport);
    transport.script('joinGroup', 'hang');
    await advance(10_000); // session expired: lost, rejoining
    await member.close();
    expect(names()).toEqual(['assigned', 'lost', 'closed']);
  });

  it('closes a failed member without sending anything more', async () => {
    const transport = new ScriptedTransport().script('joinGroup', { errorCode: ErrorCode.INVALID_GROUP_ID });
    const { member, names } = harness({}, transport);
    await flush();
    await member.close();
    expect(names()).toEqual(['error', 'closed']);
    expect(transport.calls).toHaveLength(1);
  });
});
