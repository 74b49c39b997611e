import { joined } from './support/member-harness';
import { ScriptedTransport } from './support/scripted-transport';

function deferred() {
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('GroupMember stall guard', () => {
  it('leaves the group when work runs past maxProcessingIntervalMs, and rejoins when it ends', async () => {
    const { member, transport, events, advance } = await joined({ maxProcessingIntervalMs: 5_000 });
    const gate = deferred();
    let signal: AbortSignal | undefined;
    const work = member.process((s) => {
      signal = s;
      return gate.promise;
    });
    await advance(4_999);
    expect(member.state).toBe('stable');
    await advance(1);
    expect(member.state).toBe('stalled');
    expect(signal?.aborted).toBe(true);
    expect(events.map((e) => e[0])).toEqual(['assigned', 'lost']);
    expect(events[1][1]).toMatchObject({ reason: 'processing-stalled' });
    expect(transport.callsOf('leaveGroup')[0].request.members).toEqual([
      { memberId: 'member-1', groupInstanceId: '', reason: expect.stringContaining('processing stalled') },
    ]);

    const heartbeats = transport.callsOf('heartbeat').length;
    await advance(20_000);
    expect(transport.callsOf('heartbeat')).toHaveLength(heartbeats); // out of the group: silent
    expect(transport.callsOf('joinGroup')).toHaveLength(1);

    gate.resolve();
    await work;
    await advance(0);
    expect(transport.callsOf('joinGroup')).toHaveLength(2);
    expect(transport.callsOf('joinGroup')[1].request.memberId).toBe('');
    expect(member.state).toBe('stable');
  });

  it('sends no LeaveGroup for a static member: the session timeout decides', async () => {
    const { member, transport, advance } = await joined({
      maxProcessingIntervalMs: 5_000,
      groupInstanceId: 'i-1',
    });
    void member.process(() => new Promise(() => {}));
    await advance(5_000);
    expect(member.state).toBe('stalled');
    expect(transport.callsOf('leaveGroup')).toHaveLength(0);
  });

  it('leaves work that finishes in time alone', async () => {
    const { member, advance, names } = await joined({ maxProcessingIntervalMs: 5_000 });
    for (let i = 0; i < 5; i++) {
      const gate = deferred();
      const work = member.process(() => gate.promise);
      await advance(4_000);
      gate.resolve();
      await work;
    }
    for (let i = 0; i < 10; i++) await advance(1_000);
    expect(member.state).toBe('stable');
    expect(names()).toEqual(['assigned']);
  });

  it('times the oldest work still running', async () => {
    const { member, advance } = await joined({ maxProcessingIntervalMs: 5_000 });
    const first = deferred();
    const second = deferred();
    const a = member.process(() => first.promise);
    await advance(3_000);
    const b = member.process(() => second.promise);
    await advance(1_000);
    first.resolve();
    await a;
    await advance(3_999); // second started at 3000: due at 8000
    expect(member.state).toBe('stable');
    await advance(1);
    expect(member.state).toBe('stalled');
    second.resolve();
    await b;
  });

  it('is off without maxProcessingIntervalMs', async () => {
    const { member, advance } = await joined({}, new ScriptedTransport());
    void member.process(() => new Promise(() => {}));
    for (let i = 0; i < 100; i++) await advance(3_000);
    expect(member.state).toBe('stable');
  });
});
