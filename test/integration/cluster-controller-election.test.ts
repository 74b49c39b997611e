import { once } from 'node:events';
import { ControllerElection, controllerKey, fencedTxn } from '../../src/cluster/controller-election';
import { EtcdMetadataStore } from '../../src/cluster/etcd-metadata-store';
import { NodeSession } from '../../src/cluster/node-session';
import { SystemTimer } from '../../src/timer';
import { SYSTEM_TIME } from '../../src/time';
import { startEtcd, type EtcdProcess } from '../support/etcd';

/** The controller election on a real etcd: one winner, a successor at a higher epoch, fenced writes. */
let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

interface Node {
  readonly store: EtcdMetadataStore;
  readonly session: NodeSession;
  readonly election: ControllerElection;
}

describe('ControllerElection against etcd', () => {
  const clusterId = `election-${process.pid}`;
  let timer: SystemTimer;
  let nodes: Node[];

  beforeEach(() => {
    timer = new SystemTimer({ time: SYSTEM_TIME });
    nodes = [];
  });
  afterEach(async () => {
    for (const node of nodes) {
      await node.election.close();
      await node.session.close();
      node.store.close();
    }
    timer.shutdown();
  });

  function startNode(nodeId: number): Node {
    const store = new EtcdMetadataStore({ endpoints: etcd.endpoints });
    const session = new NodeSession({
      store,
      time: SYSTEM_TIME,
      timer,
      clusterId,
      nodeId,
      advertisedAddress: `127.0.0.1:${7070 + nodeId}`,
      sessionTimeoutMs: 2_000,
    });
    const election = new ControllerElection({ store, session, timer, clusterId, nodeId });
    session.start();
    election.start();
    const node = { store, session, election };
    nodes.push(node);
    return node;
  }

  /** Resolves once `election` knows a controller. */
  function controllerKnown(election: ControllerElection): Promise<unknown> {
    if (election.controller.controllerId !== undefined) return Promise.resolve();
    return once(election, 'controllerChanged');
  }

  it('elects one node; when its lease is revoked the other wins at a higher epoch, and the old epoch cannot write', async () => {
    const a = startNode(1);
    const b = startNode(2);
    await Promise.all([controllerKnown(a.election), controllerKnown(b.election)]);
    const [winner, loser] = a.election.isController() ? [a, b] : [b, a];
    expect(winner.election.isController()).toBe(true);
    expect(loser.election.isController()).toBe(false);
    const firstEpoch = winner.election.controllerEpoch!;
    const { kv } = await a.store.get(controllerKey(clusterId));
    expect(kv).toMatchObject({ createRevision: firstEpoch, lease: winner.session.leaseId });
    expect(loser.election.controller.controllerEpoch).toBe(firstEpoch);

    const elected = once(loser.election, 'elected') as Promise<[{ controllerEpoch: number }]>;
    await a.store.revokeLease(winner.session.leaseId!);
    const [{ controllerEpoch: secondEpoch }] = await elected;
    expect(secondEpoch).toBeGreaterThan(firstEpoch);
    expect(loser.election.isController()).toBe(true);

    const stale = await fencedTxn(winner.store, clusterId, firstEpoch, {
      compare: [],
      success: [{ type: 'put', key: `/${clusterId}/topics/t`, value: 'stale' }],
    });
    expect(stale).toEqual({ outcome: 'notController', currentEpoch: secondEpoch });
    expect((await a.store.get(`/${clusterId}/topics/t`)).kv).toBeUndefined();
    const fresh = await loser.election.write(secondEpoch, {
      compare: [],
      success: [{ type: 'put', key: `/${clusterId}/topics/t`, value: 'fresh' }],
    });
    expect(fresh.outcome).toBe('applied');
    expect((await a.store.get(`/${clusterId}/topics/t`)).kv?.value).toBe('fresh');
  }, 30_000);
});
