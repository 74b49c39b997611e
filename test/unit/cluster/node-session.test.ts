import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import { NodeIdInUseError, NodeSession, type NodeSessionOptions } from '../../../src/cluster/node-session';
import { SystemTimer } from '../../../src/timer';
import { ManualTime } from '../../../src/time';
import { settle } from '../../support/metadata-store-harness';

/**
 * The node session under a manual clock against the in-memory etcd. Timeout 10 s, margin 1 s, renewals
 * every 3,333 ms unless a test says otherwise.
 */
describe('NodeSession', () => {
  let time: ManualTime;
  let timer: SystemTimer;
  let etcd: InMemoryEtcd;
  let store: InMemoryMetadataStore;
  const sessions: NodeSession[] = [];

  beforeEach(() => {
    time = new ManualTime();
    timer = new SystemTimer({ time });
    etcd = new InMemoryEtcd({ time });
    store = etcd.connect();
  });
  afterEach(async () => {
    for (const session of sessions.splice(0)) {
      store.heal();
      await Promise.race([session.close(), settle()]);
    }
    timer.shutdown();
    etcd.shutdown();
  });

  function newSession(options: Partial<NodeSessionOptions> = {}): NodeSession {
    const session = new NodeSession({
      store,
      time,
      timer,
      clusterId: 'c1',
      nodeId: 1,
      advertisedAddress: '127.0.0.1:7071',
      sessionTimeoutMs: 10_000,
      ...options,
    });
    sessions.push(session);
    return session;
  }

  /** Moves the clock in steps, letting the answers of the fake etcd arrive between them. */
  async function advance(ms: number, stepMs = 100): Promise<void> {
    for (let done = 0; done < ms; done += stepMs) {
      time.advance(Math.min(stepMs, ms - done));
      await settle();
    }
  }

  it('registers nodes/<id> = the advertised address on a lease of its own and becomes active', async () => {
    const session = newSession();
    const active = jest.fn();
    session.on('active', active);
    session.start();
    await settle();
    expect(session.state).toBe('active');
    expect(session.isActive()).toBe(true);
    const { kv } = await store.get('/c1/nodes/1');
    expect(kv).toMatchObject({ value: '127.0.0.1:7071', lease: session.leaseId });
    expect(active).toHaveBeenCalledWith({
      leaseId: session.leaseId,
      incarnation: 1,
      ttlSeconds: 10,
      deadlineMs: 9_000,
    });
  });

  it('stays active across many timeouts while renewals are acknowledged', async () => {
    const session = newSession();
    const expired = jest.fn();
    session.on('expired', expired);
    session.start();
    await settle();
    const lease = session.leaseId;
    await advance(60_000);
    expect(expired).not.toHaveBeenCalled();
    expect(session.leaseId).toBe(lease);
    expect(etcd.leaseIds()).toEqual([lease]);
    // The last renewal was sent at 59,994 ms (every 3,333 ms from 0 to the clock's 100 ms steps).
    expect(session.deadlineMs).toBeGreaterThan(60_000 + 10_000 - 1_000 - 3_333 - 100);
  });

  it('expires at last acknowledged send + TTL − margin when renewals go unanswered, before etcd expires the lease', async () => {
    const session = newSession();
    session.start();
    await settle();
    const lease = session.leaseId!;
    time.advance(3_333); // a renewal goes out at 3,333 and is acknowledged: deadline 3,333 + 10,000 − 1,000.
    await settle();
    expect(session.deadlineMs).toBe(12_333);
    store.partition();
    const events: { at: number; etcdStillHasLease: boolean }[] = [];
    session.on('expired', () =>
      events.push({ at: time.monotonicMs(), etcdStillHasLease: etcd.leaseIds().includes(lease) }),
    );
    time.advance(12_332 - time.monotonicMs());
    expect(session.isActive()).toBe(true);
    time.advance(1);
    expect(session.isActive()).toBe(false);
    expect(session.leaseId).toBeUndefined();
    expect(events).toEqual([{ at: 12_333, etcdStillHasLease: true }]);
    // etcd received that renewal at 3,333 too, and lets the lease go 10 s later: after the node gave up.
    time.advance(13_333 - time.monotonicMs() - 1);
    expect(etcd.leaseIds()).toContain(lease);
    time.advance(1);
    expect(etcd.leaseIds()).not.toContain(lease);
  });

  it('retries a failed renewal after 500 ms, so an etcd restart shorter than the TTL leaves it active', async () => {
    const session = newSession();
    session.start();
    await settle();
    const lease = session.leaseId!;
    const expired = jest.fn();
    session.on('expired', expired);
    // Acknowledged at 3,333: deadline 12,333. etcd goes away just before the next renewal, at 6,666.
    await advance(6_600, 1);
    expect(session.deadlineMs).toBe(12_333);
    store.failRequests();
    const renewals: number[] = [];
    const keepAliveOnce = store.keepAliveOnce.bind(store);
    store.keepAliveOnce = (id) => {
      renewals.push(time.monotonicMs());
      return keepAliveOnce(id);
    };
    // Back at 10,000, just after a failed attempt; waiting for the regular one (13,332) would be too late.
    await advance(10_000 - 6_600, 1);
    store.restoreRequests();
    await advance(1_000, 1);
    expect(renewals.slice(0, 3)).toEqual([6_666, 7_166, 7_666]);
    expect(
      renewals.filter((at) => at < 10_000).every((at, i, all) => i === 0 || at - all[i - 1] === 500),
    ).toBe(true);
    expect(expired).not.toHaveBeenCalled();
    expect(session.isActive()).toBe(true);
    expect(session.leaseId).toBe(lease);
    expect(session.deadlineMs).toBeGreaterThan(19_000);
    // Acknowledged again: the regular interval from then on.
    const acknowledged = renewals.length;
    await advance(3_333, 1);
    expect(renewals.length).toBe(acknowledged + 1);
  });

  it('comes back on a new lease, never the old one, once etcd answers again', async () => {
    const session = newSession();
    const active = jest.fn();
    const expired = jest.fn();
    session.on('active', active);
    session.on('expired', expired);
    session.start();
    await settle();
    const oldLease = session.leaseId!;
    store.partition();
    await advance(15_000);
    expect(expired).toHaveBeenCalledWith({ leaseId: oldLease, incarnation: 1, reason: 'deadline' });
    expect(session.state).toBe('registering');
    store.heal();
    await settle();
    expect(session.isActive()).toBe(true);
    expect(session.incarnation).toBe(2);
    expect(session.leaseId).not.toBe(oldLease);
    expect(active).toHaveBeenLastCalledWith(
      expect.objectContaining({ leaseId: session.leaseId, incarnation: 2 }),
    );
    expect((await store.get('/c1/nodes/1')).kv?.lease).toBe(session.leaseId);
    expect(etcd.leaseIds()).toEqual([session.leaseId]);
  });

  it('does not resume on a renewal answered after its deadline (a node frozen by SIGSTOP)', async () => {
    // The node's timers run on a clock of their own: the test moves the shared clock without them, as
    // time passes for a process stopped by SIGSTOP, whose timers cannot run until it resumes.
    const nodeTimerClock = new ManualTime();
    const nodeTimer = new SystemTimer({ time: nodeTimerClock });
    const session = newSession({ timer: nodeTimer });
    const expired = jest.fn();
    session.on('expired', expired);
    session.start();
    await settle();
    const oldLease = session.leaseId!;
    expect(session.deadlineMs).toBe(9_000);
    // A renewal goes out at 0; the network holds it. Then the node freezes for 9.5 s: past its deadline,
    // though etcd (lease until 10 s) still has the lease when the renewal finally arrives and renews it.
    store.partition();
    nodeTimerClock.advance(3_333);
    time.advance(9_500);
    expect(session.isActive()).toBe(false);
    expect(session.leaseId).toBeUndefined();
    store.heal();
    await settle();
    expect(expired).toHaveBeenCalledWith({ leaseId: oldLease, incarnation: 1, reason: 'lateRenewal' });
    expect(session.isActive()).toBe(true);
    expect(session.leaseId).not.toBe(oldLease);
    // The old lease was revoked, not left to run on the late renewal.
    expect(etcd.leaseIds()).toEqual([session.leaseId]);
    nodeTimer.shutdown();
  });

  it('expires at once when etcd says the lease is gone, and registers again', async () => {
    const session = newSession();
    const expired = jest.fn();
    session.on('expired', expired);
    session.start();
    await settle();
    const oldLease = session.leaseId!;
    await etcd.connect().revokeLease(oldLease);
    await advance(3_400);
    expect(expired).toHaveBeenCalledWith({ leaseId: oldLease, incarnation: 1, reason: 'leaseLost' });
    expect(session.isActive()).toBe(true);
    expect((await store.get('/c1/nodes/1')).kv?.lease).toBe(session.leaseId);
  });

  it.each([true, false])(
    'registers exactly once after a registration whose answer was lost (applied: %s)',
    async (applied) => {
      const session = newSession();
      // Lose the answer to the write after the grant: the put of nodes/1.
      const originalGrant = store.grantLease.bind(store);
      jest.spyOn(store, 'grantLease').mockImplementationOnce(async (ttl) => {
        const grant = await originalGrant(ttl);
        store.loseNextResponse({ applied });
        return grant;
      });
      session.start();
      await settle();
      expect(session.isActive()).toBe(true);
      const { kv } = await store.get('/c1/nodes/1');
      expect(kv).toMatchObject({ lease: session.leaseId, version: 1 });
    },
  );

  it('starts over on a new lease, reporting neither active nor expired, when registering outlasts the deadline', async () => {
    const session = newSession();
    const events: string[] = [];
    session.on('active', ({ incarnation }) => events.push(`active ${incarnation}`));
    session.on('expired', ({ incarnation }) => events.push(`expired ${incarnation}`));
    // The network stops right after the grant: the put of nodes/1 waits until after the deadline (9 s).
    const originalGrant = store.grantLease.bind(store);
    jest.spyOn(store, 'grantLease').mockImplementationOnce(async (ttl) => {
      const grant = await originalGrant(ttl);
      store.partition();
      return grant;
    });
    session.start();
    await settle();
    const [firstLease] = etcd.leaseIds();
    time.advance(9_500);
    store.heal();
    await settle();
    expect(events).toEqual(['active 2']);
    expect(session.leaseId).not.toBe(firstLease);
    expect(etcd.leaseIds()).toEqual([session.leaseId]);
    expect((await store.get('/c1/nodes/1')).kv?.lease).toBe(session.leaseId);
  });

  it('does not take nodes/<id> from another lease; it retries and registers once that lease is gone', async () => {
    const other = etcd.connect();
    const foreign = await other.grantLease(30);
    await other.put('/c1/nodes/1', '10.0.0.9:7071', { lease: foreign.id });
    const session = newSession();
    const failures: unknown[] = [];
    session.on('registrationFailed', ({ error }) => failures.push(error));
    session.start();
    await settle();
    expect(session.isActive()).toBe(false);
    expect(failures[0]).toBeInstanceOf(NodeIdInUseError);
    expect((await store.get('/c1/nodes/1')).kv?.value).toBe('10.0.0.9:7071');
    await advance(35_000, 500);
    expect(session.isActive()).toBe(true);
    expect((await store.get('/c1/nodes/1')).kv).toMatchObject({
      value: '127.0.0.1:7071',
      lease: session.leaseId,
    });
  });

  it('close() expires the session, revokes the lease and stops renewing', async () => {
    const session = newSession();
    const expired = jest.fn();
    session.on('expired', expired);
    session.start();
    await settle();
    const lease = session.leaseId!;
    await session.close();
    expect(expired).toHaveBeenCalledWith({ leaseId: lease, incarnation: 1, reason: 'closed' });
    expect(session.state).toBe('closed');
    expect(etcd.leaseIds()).toEqual([]);
    expect((await store.get('/c1/nodes/1')).kv).toBeUndefined();
    expect(timer.size).toBe(0);
  });

  it('refuses a margin that leaves no room for a renewal', () => {
    expect(() => newSession({ sessionTimeoutMs: 3_000, safetyMarginMs: 2_000 })).toThrow(/must leave room/);
    expect(() => newSession({ sessionTimeoutMs: 500 })).toThrow(/at least 1000/);
  });
});
