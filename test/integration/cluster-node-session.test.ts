import { once } from 'node:events';
import { EtcdMetadataStore } from '../../src/cluster/etcd-metadata-store';
import {
  NodeSession,
  type SessionActiveEvent,
  type SessionExpiredEvent,
} from '../../src/cluster/node-session';
import { SystemTimer } from '../../src/timer';
import { SYSTEM_TIME } from '../../src/time';
import { startEtcd, type EtcdProcess } from '../support/etcd';

/**
 * The node session against a real etcd frozen with SIGSTOP: the session must give up its lease on its own
 * monotonic deadline while etcd cannot answer, and come back on a new lease once it can.
 */
let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

describe('NodeSession against etcd', () => {
  let store: EtcdMetadataStore;
  let timer: SystemTimer;
  let session: NodeSession;

  afterEach(async () => {
    etcd.resume();
    await session?.close();
    timer?.shutdown();
    store?.close();
  });

  it('reports the session lost before a TTL has passed since etcd froze, and comes back on a new lease after SIGCONT', async () => {
    store = new EtcdMetadataStore({ endpoints: etcd.endpoints, requestTimeoutMs: 1_000 });
    timer = new SystemTimer({ time: SYSTEM_TIME });
    // etcd's minimum TTL is 2 s: the shortest session a real etcd gives.
    session = new NodeSession({
      store,
      time: SYSTEM_TIME,
      timer,
      clusterId: `session-${process.pid}`,
      nodeId: 1,
      advertisedAddress: '127.0.0.1:7071',
      sessionTimeoutMs: 2_000,
      safetyMarginMs: 200,
    });
    const firstActive = once(session, 'active') as Promise<[SessionActiveEvent]>;
    session.start();
    const [first] = await firstActive;
    expect((await store.get(session.key)).kv).toMatchObject({
      value: '127.0.0.1:7071',
      lease: first.leaseId,
    });

    const expired = once(session, 'expired') as Promise<[SessionExpiredEvent]>;
    const pausedAtMs = SYSTEM_TIME.monotonicMs();
    await etcd.pause();
    const [lost] = await expired;
    const lostAtMs = SYSTEM_TIME.monotonicMs();
    expect(lost).toEqual({ leaseId: first.leaseId, incarnation: 1, reason: 'deadline' });
    // Every acknowledged renewal was sent before the freeze, so etcd holds the lease for at least a TTL
    // after it; the session gave up sooner, while etcd still could not have given anything away.
    expect(lostAtMs - pausedAtMs).toBeLessThan(2_000);
    expect(session.isActive()).toBe(false);

    // Stay frozen past the TTL, then thaw.
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, pausedAtMs + 3_000 - SYSTEM_TIME.monotonicMs())),
    );
    expect(session.isActive()).toBe(false);
    const nextActive = once(session, 'active') as Promise<[SessionActiveEvent]>;
    etcd.resume();
    const [second] = await nextActive;
    expect(second.incarnation).toBe(2);
    expect(second.leaseId).not.toBe(first.leaseId);
    expect((await store.get(session.key)).kv).toMatchObject({
      value: '127.0.0.1:7071',
      lease: second.leaseId,
    });
    expect(await store.leaseTimeToLive(first.leaseId)).toBe(-1);
  }, 30_000);
});
