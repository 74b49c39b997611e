import { ControllerElection, controllerKey, fencedTxn } from '../../../src/cluster/controller-election';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import { NodeSession } from '../../../src/cluster/node-session';
import { SystemTimer } from '../../../src/timer';
import { ManualTime } from '../../../src/time';
import { settle } from '../../support/metadata-store-harness';

/** The controller election under a manual clock, several nodes on one in-memory etcd. */
describe('ControllerElection', () => {
  let time: ManualTime;
  let timer: SystemTimer;
  let etcd: InMemoryEtcd;
  let nodes: TestNode[];

  interface TestNode {
    readonly id: number;
    readonly store: InMemoryMetadataStore;
    readonly session: NodeSession;
    readonly election: ControllerElection;
    readonly history: string[];
  }

  beforeEach(() => {
    time = new ManualTime();
    timer = new SystemTimer({ time });
    etcd = new InMemoryEtcd({ time });
    nodes = [];
  });
  afterEach(async () => {
    for (const node of nodes) {
      node.store.heal();
      await Promise.race([Promise.all([node.election.close(), node.session.close()]), settle()]);
    }
    timer.shutdown();
    etcd.shutdown();
  });

  function startNode(id: number): TestNode {
    const store = etcd.connect();
    const session = new NodeSession({
      store,
      time,
      timer,
      clusterId: 'c1',
      nodeId: id,
      advertisedAddress: `127.0.0.1:${7070 + id}`,
      sessionTimeoutMs: 10_000,
    });
    const election = new ControllerElection({ store, session, timer, clusterId: 'c1', nodeId: id });
    const history: string[] = [];
    election.on('elected', ({ controllerEpoch }) => history.push(`elected ${controllerEpoch}`));
    election.on('resigned', ({ controllerEpoch, reason }) =>
      history.push(`resigned ${controllerEpoch} ${reason}`),
    );
    const node = { id, store, session, election, history };
    nodes.push(node);
    session.start();
    election.start();
    return node;
  }

  function controllers(): number[] {
    return nodes.filter((node) => node.election.isController()).map((node) => node.id);
  }

  /** Moves the clock in steps, checking after each that at most one node believes it is controller. */
  async function advance(ms: number, stepMs = 100): Promise<void> {
    for (let done = 0; done < ms; done += stepMs) {
      time.advance(Math.min(stepMs, ms - done));
      await settle();
      expect(controllers().length).toBeLessThanOrEqual(1);
    }
  }

  it('elects exactly one of two campaigning nodes; its epoch is the create revision of the controller key', async () => {
    const a = startNode(1);
    const b = startNode(2);
    await settle();
    expect(controllers()).toEqual([1]);
    const { kv } = await a.store.get(controllerKey('c1'));
    expect(kv).toMatchObject({ value: '{"nodeId":1}', lease: a.session.leaseId });
    expect(a.election.controllerEpoch).toBe(kv!.createRevision);
    expect(a.history).toEqual([`elected ${kv!.createRevision}`]);
    expect(b.election.controllerEpoch).toBeUndefined();
    expect(b.election.controller).toEqual({ controllerId: 1, controllerEpoch: kv!.createRevision });
  });

  it('elects the other node, at a higher epoch, when the controller’s lease is revoked', async () => {
    const a = startNode(1);
    const b = startNode(2);
    await settle();
    const firstEpoch = a.election.controllerEpoch!;
    await etcd.connect().revokeLease(a.session.leaseId!);
    await settle();
    expect(controllers()).toEqual([2]);
    expect(b.election.controllerEpoch).toBeGreaterThan(firstEpoch);
    expect(a.history).toEqual([`elected ${firstEpoch}`, `resigned ${firstEpoch} keyLost`]);
    // a's campaign on the revoked lease is refused; its session finds the lease gone at the next
    // renewal, comes back on a new one, campaigns, and learns who won.
    await advance(4_000);
    expect(a.session.incarnation).toBe(2);
    expect(controllers()).toEqual([2]);
    expect(a.election.controller).toEqual({ controllerId: 2, controllerEpoch: b.election.controllerEpoch });
  });

  it('drops the role at the controller’s session deadline, before etcd lets its key go, when it is cut off', async () => {
    const a = startNode(1);
    const b = startNode(2);
    await settle();
    const firstEpoch = a.election.controllerEpoch!;
    a.store.partition();
    let deadlineSeen = false;
    for (let t = 0; t < 20_000; t += 100) {
      await advance(100);
      if (!a.session.isActive() && !deadlineSeen) {
        deadlineSeen = true;
        // The deadline: a no longer acts as controller, and etcd still has its key (nobody else can win).
        expect(a.election.isController()).toBe(false);
        expect((await b.store.get(controllerKey('c1'))).kv?.createRevision).toBe(firstEpoch);
      }
    }
    expect(deadlineSeen).toBe(true);
    expect(controllers()).toEqual([2]);
    expect(b.election.controllerEpoch).toBeGreaterThan(firstEpoch);
    expect(a.history).toEqual([`elected ${firstEpoch}`, `resigned ${firstEpoch} sessionExpired`]);

    // Back on the network, a comes back as a follower on a new lease.
    a.store.heal();
    await advance(1_000);
    expect(a.session.isActive()).toBe(true);
    expect(controllers()).toEqual([2]);
    expect(a.election.controller.controllerId).toBe(2);
  });

  it('stops being controller at the deadline even before any of its timers runs (a node frozen by SIGSTOP)', async () => {
    // The node's timers run on a clock the test does not move, as for a stopped process.
    const frozenTimer = new SystemTimer({ time: new ManualTime() });
    const store = etcd.connect();
    const session = new NodeSession({
      store,
      time,
      timer: frozenTimer,
      clusterId: 'c1',
      nodeId: 1,
      advertisedAddress: 'a:1',
    });
    const election = new ControllerElection({
      store,
      session,
      timer: frozenTimer,
      clusterId: 'c1',
      nodeId: 1,
    });
    nodes.push({ id: 1, store, session, election, history: [] });
    const resigned = jest.fn();
    election.on('resigned', resigned);
    session.start();
    election.start();
    await settle();
    const epoch = election.controllerEpoch!;
    time.advance(session.deadlineMs - 1);
    expect(election.isController()).toBe(true);
    time.advance(1);
    expect(election.isController()).toBe(false);
    expect(election.controllerEpoch).toBeUndefined();
    expect(resigned).not.toHaveBeenCalled();
    // A write decided before the freeze is refused without being sent.
    expect(
      await election.write(epoch, { compare: [], success: [{ type: 'put', key: '/c1/x', value: 'v' }] }),
    ).toMatchObject({
      outcome: 'notController',
    });
    expect((await store.get('/c1/x')).kv).toBeUndefined();
    frozenTimer.shutdown();
  });

  it('refuses a deposed controller’s write in etcd, by the compare on the controller key’s create revision', async () => {
    const a = startNode(1);
    const b = startNode(2);
    await settle();
    const oldEpoch = a.election.controllerEpoch!;
    const write = {
      compare: [],
      success: [{ type: 'put' as const, key: '/c1/topics/t', value: 'from-old' }],
    };
    expect(await a.election.write(oldEpoch, write)).toMatchObject({ outcome: 'applied' });

    await etcd.connect().revokeLease(a.session.leaseId!);
    await settle();
    const newEpoch = b.election.controllerEpoch!;
    // Straight to etcd with the old epoch, as a controller that has not noticed would send it.
    const stale = await fencedTxn(a.store, 'c1', oldEpoch, {
      compare: [],
      success: [{ type: 'put', key: '/c1/topics/t', value: 'stale' }],
    });
    expect(stale).toEqual({ outcome: 'notController', currentEpoch: newEpoch });
    expect((await a.store.get('/c1/topics/t')).kv?.value).toBe('from-old');
    // Through the election, the old epoch is refused before anything is sent.
    expect(await a.election.write(oldEpoch, write)).toMatchObject({ outcome: 'notController' });
    // The new controller writes; its own failed compare is told apart from a lost epoch.
    expect(await b.election.write(newEpoch, write)).toMatchObject({ outcome: 'applied' });
    const conditional = await b.election.write(newEpoch, {
      compare: [{ key: '/c1/topics/t', target: 'version', result: 'equal', operand: 99 }],
      success: [{ type: 'put', key: '/c1/topics/t', value: 'never' }],
      failure: [{ type: 'get', key: '/c1/topics/t' }],
    });
    expect(conditional).toMatchObject({
      outcome: 'conditionFailed',
      results: [{ type: 'get', kvs: [{ value: 'from-old' }] }],
    });
  });

  it('deposes itself when a fenced write finds another epoch', async () => {
    const a = startNode(1);
    await settle();
    const epoch = a.election.controllerEpoch!;
    // An operator deletes the key and another process takes it, while a's watch has not yet delivered.
    const other = etcd.connect();
    const lease = await other.grantLease(30);
    a.store.partition();
    await other.delete(controllerKey('c1'));
    await other.put(controllerKey('c1'), '{"nodeId":9}', { lease: lease.id });
    const { kv } = await other.get(controllerKey('c1'));
    a.store.heal();
    const result = await a.election.write(epoch, {
      compare: [],
      success: [{ type: 'put', key: '/c1/x', value: 'v' }],
    });
    expect(result).toEqual({ outcome: 'notController', currentEpoch: kv!.createRevision });
    expect(a.election.isController()).toBe(false);
    expect((await other.get('/c1/x')).kv).toBeUndefined();
  });

  it('re-reads after a campaign whose answer was lost, and finds it won', async () => {
    const store = etcd.connect();
    const session = new NodeSession({
      store,
      time,
      timer,
      clusterId: 'c1',
      nodeId: 1,
      advertisedAddress: 'a:1',
    });
    const election = new ControllerElection({ store, session, timer, clusterId: 'c1', nodeId: 1 });
    nodes.push({ id: 1, store, session, election, history: [] });
    session.start();
    await settle();
    store.loseNextResponse({ applied: true });
    election.start();
    await settle();
    const { kv } = await store.get(controllerKey('c1'));
    expect(kv?.lease).toBe(session.leaseId);
    expect(election.controllerEpoch).toBe(kv!.createRevision);
  });

  it('resigns on close() and deletes its key, and the other node takes over', async () => {
    const a = startNode(1);
    startNode(2);
    await settle();
    const epoch = a.election.controllerEpoch!;
    await a.election.close();
    await settle();
    expect(a.history).toEqual([`elected ${epoch}`, `resigned ${epoch} closed`]);
    expect(controllers()).toEqual([2]);
  });
});
