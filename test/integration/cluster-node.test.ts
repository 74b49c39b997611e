import { ClusterNode } from '../../src/cluster/cluster-node';
import { EtcdMetadataStore } from '../../src/cluster/etcd-metadata-store';
import { readPartitionState } from '../../src/cluster/partition-state';
import { SystemTimer } from '../../src/timer';
import { SYSTEM_TIME } from '../../src/time';
import { startEtcd, type EtcdProcess } from '../support/etcd';
import { RecordingRoleTarget } from '../support/recording-role-target';

/**
 * Three ClusterNodes on a real etcd, each driving a recording fake of the log layer: a topic created on
 * a node that is not the controller, the leader's lease revoked (its death, as etcd sees it), a survivor
 * leading at the next epoch, and ISR proposals committed and stale against etcd's own compares.
 */
let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

describe('ClusterNode against etcd', () => {
  let clusterId: string;
  let timer: SystemTimer;
  let admin: EtcdMetadataStore;
  let nodes: { id: number; node: ClusterNode; store: EtcdMetadataStore; target: RecordingRoleTarget }[];
  let run = 0;

  beforeEach(() => {
    clusterId = `node-${process.pid}-${run++}`;
    timer = new SystemTimer({ time: SYSTEM_TIME });
    admin = new EtcdMetadataStore({ endpoints: etcd.endpoints });
    nodes = [];
  });
  afterEach(async () => {
    for (const { node, store } of nodes) {
      await node.close();
      store.close();
    }
    admin.close();
    timer.shutdown();
  });

  function startNode(id: number, sessionTimeoutMs = 2_000): (typeof nodes)[number] {
    const store = new EtcdMetadataStore({ endpoints: etcd.endpoints });
    const target = new RecordingRoleTarget(() => SYSTEM_TIME.monotonicMs());
    const node = new ClusterNode({
      store,
      time: SYSTEM_TIME,
      timer,
      clusterId,
      nodeId: id,
      advertisedAddress: `127.0.0.1:${7070 + id}`,
      target,
      sessionTimeoutMs,
      random: () => 0,
    });
    node.start();
    const started = { id, node, store, target };
    nodes.push(started);
    return started;
  }

  async function waitFor(what: string, condition: () => boolean, timeoutMs = 15_000): Promise<void> {
    const giveUpAt = Date.now() + timeoutMs;
    while (!condition()) {
      if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('a topic created on a non-controller is led by its first replica; when that node goes, a survivor leads at epoch + 1', async () => {
    const all = [startNode(1), startNode(2), startNode(3)];
    await waitFor('every node ready with three live nodes', () =>
      all.every(({ node, target }) => node.isReady() && target.lastUpdate?.liveNodes.length === 3),
    );
    const follower = all.find(({ node }) => !node.isController())!;
    expect(await follower.node.createTopic('orders', 1, 3)).toEqual({
      outcome: 'created',
      assignment: { partitions: [[1, 2, 3]], topicId: expect.any(String) as unknown },
    });
    await waitFor('every target to learn the leader', () =>
      all.every(({ target }) => target.partition('orders')?.leader === 1),
    );
    const one = all[0];
    const survivors = all.slice(1);
    expect(one.target.partition('orders')).toMatchObject({ leaderEpoch: 0, isr: [1, 2, 3] });

    // ISR proposals against etcd's compares: committed, then stale from the old partition epoch.
    const before = one.target.partition('orders')!;
    const shrink = await one.node.isrChangeProposer.proposeIsr('orders', 0, 0, before.partitionEpoch, [1, 2]);
    expect(shrink).toMatchObject({ kind: 'committed', state: { isr: [1, 2] } });
    const stored = await readPartitionState(admin, clusterId, 'orders', 0);
    expect(shrink.kind === 'committed' && shrink.state.partitionEpoch).toBe(stored!.modRevision);
    expect(
      await one.node.isrChangeProposer.proposeIsr('orders', 0, 0, before.partitionEpoch, [1]),
    ).toMatchObject({ kind: 'stale', state: { isr: [1, 2] } });

    // Node 1's lease revoked: etcd deletes its key as it would at expiry.
    const leaseId = (await admin.get(`/${clusterId}/nodes/1`)).kv!.lease;
    await admin.revokeLease(leaseId);
    await waitFor('node 2 to lead at epoch 1', () =>
      survivors.every(({ target }) => {
        const orders = target.partition('orders');
        return orders?.leader === 2 && orders.leaderEpoch === 1;
      }),
    );
    // Node 1 hears at its next renewal that its lease is gone (a revocation gives it no deadline to
    // keep: etcd's compares fence it meanwhile), resigns, and comes back on a new lease as a follower.
    await waitFor(
      'node 1 to resign and follow node 2',
      () =>
        one.target.calls.some((call) => call.kind === 'resign') &&
        one.target.partition('orders')?.leader === 2 &&
        one.node.isReady(),
    );
    const resignAt = one.target.calls.findIndex((call) => call.kind === 'resign');
    expect(resignAt).toBeGreaterThanOrEqual(0);
    for (const call of one.target.calls.slice(resignAt + 1)) {
      if (call.kind === 'apply') {
        expect(call.update.partitions.find((p) => p.topic === 'orders')?.leader).not.toBe(1);
      }
    }
  }, 60_000);

  it('close revokes the lease at once: the others see the node gone without waiting for its TTL', async () => {
    const all = [startNode(1), startNode(2)];
    await waitFor('both ready', () =>
      all.every(({ node, target }) => node.isReady() && target.lastUpdate?.liveNodes.length === 2),
    );
    await all[0].node.close();
    // Gone when close() resolves: revoked, not left to expire.
    expect((await admin.get(`/${clusterId}/nodes/1`)).kv).toBeUndefined();
    await waitFor('node 2 to see one live node', () => all[1].target.lastUpdate?.liveNodes.length === 1);
    expect(all[0].target.calls.at(-1)?.kind).toBe('resign');
  }, 30_000);

  it('an etcd outage shorter than the session (frozen, then killed and restarted) is not noticed by the log layer', async () => {
    const all = [startNode(1, 10_000), startNode(2, 10_000)];
    await waitFor('both ready', () =>
      all.every(({ node, target }) => node.isReady() && target.lastUpdate?.liveNodes.length === 2),
    );
    expect((await all[1].node.createTopic('before', 1, 2)).outcome).toBe('created');
    await waitFor('both to see the topic', () =>
      all.every(({ target }) => target.partition('before') !== undefined),
    );
    const callsBefore = all.map(({ target }) => target.calls.length);

    // Frozen: requests and streams stall, nothing fails.
    await etcd.pause();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    etcd.resume();
    // Killed and restarted: connections refused, the watch streams fail, the views read again.
    await etcd.kill();
    await etcd.restart();

    // etcd may still be electing itself: `unavailable` is retried, as a client retries REQUEST_TIMED_OUT.
    let created = await all[0].node.createTopic('after', 1, 2);
    for (let attempt = 0; created.outcome === 'unavailable' && attempt < 100; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      created = await all[0].node.createTopic('after', 1, 2);
    }
    expect(['created', 'exists']).toContain(created.outcome);
    await waitFor('the topic created after the outage to reach both', () =>
      all.every(({ target }) => target.partition('after') !== undefined),
    );
    all.forEach(({ node, target }, i) => {
      const since = target.calls.slice(callsBefore[i]);
      // No resignation, and every update applied still names the topic from before, with its leader.
      expect(since.every((call) => call.kind === 'apply')).toBe(true);
      for (const call of since) {
        if (call.kind === 'apply')
          expect(call.update.partitions.find((p) => p.topic === 'before')?.leader).toBe(1);
      }
      expect(node.guard.isActive()).toBe(true);
    });
  }, 60_000);
});
