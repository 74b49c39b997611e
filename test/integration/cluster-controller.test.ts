import { Controller } from '../../src/cluster/controller';
import { ControllerElection } from '../../src/cluster/controller-election';
import { EtcdMetadataStore } from '../../src/cluster/etcd-metadata-store';
import { NodeSession } from '../../src/cluster/node-session';
import { decodePartitionState, NO_LEADER, type PartitionState } from '../../src/cluster/partition-state';
import { SystemTimer } from '../../src/timer';
import { SYSTEM_TIME } from '../../src/time';
import { startEtcd, type EtcdProcess } from '../support/etcd';

/**
 * Two controllers on a real etcd: the first one's session is revoked after it has created a topic; the
 * second takes over at a higher epoch and handles a node leaving, and nothing is ever written at the
 * first one's epoch after the revocation.
 */
let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

interface Node {
  readonly id: number;
  readonly store: EtcdMetadataStore;
  readonly session: NodeSession;
  readonly election?: ControllerElection;
  readonly controller?: Controller;
}

describe('Controller against etcd', () => {
  const clusterId = `controller-${process.pid}`;
  let timer: SystemTimer;
  let nodes: Node[];
  let admin: EtcdMetadataStore;

  beforeEach(() => {
    timer = new SystemTimer({ time: SYSTEM_TIME });
    nodes = [];
    admin = new EtcdMetadataStore({ endpoints: etcd.endpoints });
  });
  afterEach(async () => {
    for (const node of nodes) {
      node.controller?.close();
      await node.election?.close();
      await node.session.close();
      node.store.close();
    }
    admin.close();
    timer.shutdown();
  });

  function startNode(id: number, withController: boolean): Node {
    const store = new EtcdMetadataStore({ endpoints: etcd.endpoints });
    const session = new NodeSession({
      store,
      time: SYSTEM_TIME,
      timer,
      clusterId,
      nodeId: id,
      advertisedAddress: `127.0.0.1:${7070 + id}`,
      sessionTimeoutMs: 2_000,
    });
    let node: Node = { id, store, session };
    if (withController) {
      const election = new ControllerElection({ store, session, timer, clusterId, nodeId: id });
      const controller = new Controller({ store, election, timer, clusterId });
      controller.start();
      election.start();
      node = { ...node, election, controller };
    }
    session.start();
    nodes.push(node);
    return node;
  }

  async function waitFor(
    what: string,
    condition: () => boolean | Promise<boolean>,
    timeoutMs = 15_000,
  ): Promise<void> {
    const giveUpAt = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function states(): Promise<Map<number, PartitionState>> {
    const { kvs } = await admin.range(`/${clusterId}/partitions/t/`);
    return new Map(
      kvs.map((kv) => [Number(kv.key.split('/').pop()), decodePartitionState(kv.key, kv.value)]),
    );
  }

  async function liveNodes(): Promise<Set<number>> {
    const { kvs } = await admin.range(`/${clusterId}/nodes/`);
    return new Set(kvs.map((kv) => Number(kv.key.split('/').pop())));
  }

  it('a revoked controller stops at once; a successor takes over at a higher epoch and re-elects when a node leaves', async () => {
    const a = startNode(1, true);
    const b = startNode(2, true);
    const data = [startNode(3, false), startNode(4, false)];
    await waitFor('a controller acting', () =>
      [a, b].some((node) => node.controller!.activeEpoch !== undefined),
    );
    await waitFor('four live nodes', async () => (await liveNodes()).size === 4);
    const [first, second] = a.controller!.activeEpoch !== undefined ? [a, b] : [b, a];
    const firstEpoch = first.controller!.activeEpoch!;
    // The controller's view of nodes/ comes from its watch: wait until it has all four.
    await waitFor('the controller to see four nodes', async () => {
      const result = await first.controller!.createTopic('probe', 1, 4);
      return result.outcome === 'created';
    });
    expect(await first.controller!.createTopic('t', 4, 3)).toMatchObject({ outcome: 'created' });

    const { revision: revokedAt } = await admin.get(`/${clusterId}/controller`);
    await admin.revokeLease(first.session.leaseId!);
    await waitFor('the first epoch to stop acting', () => first.controller!.activeEpoch !== firstEpoch);
    // Usually the other node wins; the revoked one may win again on its next lease, at a new epoch.
    let successor: Node | undefined;
    await waitFor('a controller at a higher epoch', () => {
      successor = [first, second].find((node) => (node.controller!.activeEpoch ?? 0) > firstEpoch);
      return successor !== undefined;
    });
    const secondEpoch = successor!.controller!.activeEpoch!;

    // Node 3 leaves: every partition it led gets a new live leader from its ISR, one epoch up.
    const before = await states();
    const leaver = data[0];
    await leaver.session.close();
    nodes.splice(nodes.indexOf(leaver), 1);
    leaver.store.close();
    await waitFor('no partition led by node 3 or with it in its ISR', async () =>
      [...(await states()).values()].every((state) => state.leader !== 3 && !state.isr.includes(3)),
    );
    const after = await states();
    const live = await liveNodes();
    for (const [partition, state] of after) {
      expect(state.leader).not.toBe(NO_LEADER);
      expect(live.has(state.leader)).toBe(true);
      expect(state.isr).toContain(state.leader);
      if (before.get(partition)!.isr.includes(3)) {
        expect(state.leaderEpoch).toBeGreaterThan(before.get(partition)!.leaderEpoch);
        expect(state.controllerEpoch).toBe(secondEpoch);
      }
    }
    // Nothing was written at the first epoch after its revocation.
    const { kvs } = await admin.range(`/${clusterId}/partitions/`);
    for (const kv of kvs) {
      if (kv.modRevision > revokedAt)
        expect(decodePartitionState(kv.key, kv.value).controllerEpoch).not.toBe(firstEpoch);
    }
  }, 60_000);
});
