import {
  ClusterNode,
  type ClusterNodeOptions,
  type LeadershipChange,
} from '../../../src/cluster/cluster-node';
import {
  ClusterIdentityError,
  clusterIdentityKey,
  encodeClusterIdentity,
} from '../../../src/cluster/cluster-identity';
import { controllerKey } from '../../../src/cluster/controller-election';
import { SessionInactiveError } from '../../../src/cluster/etcd-isr-change-proposer';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import { nodeKey } from '../../../src/cluster/node-session';
import { partitionKey, readPartitionState, topicKey } from '../../../src/cluster/partition-state';
import { decodeReplicaAssignment, PARTITION_STATES_PER_TXN } from '../../../src/cluster/replica-assignment';
import { NO_LEADER_ID } from '../../../src/log/partition-roles';
import { SystemTimer } from '../../../src/timer';
import { ManualTime, type Time } from '../../../src/time';
import { settle } from '../../support/metadata-store-harness';
import { RecordingRoleTarget } from '../../support/recording-role-target';

/**
 * A clock shared with the others whose timers can be stopped, as SIGSTOP stops a process: its monotonic
 * clock keeps running, but nothing of the node runs until `resume()`, when every due timer fires.
 */
class FreezableTime implements Time {
  private listeners = new Set<(monotonicMs: number) => void>();
  isFrozen = false;

  constructor(private readonly time: ManualTime) {
    time.onAdvance((now) => {
      if (!this.isFrozen) for (const listener of this.listeners) listener(now);
    });
  }

  monotonicMs(): number {
    return this.time.monotonicMs();
  }

  nowMs(): number {
    return this.time.nowMs();
  }

  onAdvance(listener: (monotonicMs: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  resume(): void {
    this.isFrozen = false;
    for (const listener of this.listeners) listener(this.time.monotonicMs());
  }
}

/**
 * Three ClusterNodes on one in-memory etcd under a manual clock, each driving a recording fake of the
 * log layer. Session timeout 10 s (lease TTL 10 s, deadline margin 1 s, renewals every 3.33 s).
 */
describe('ClusterNode', () => {
  const clusterId = 'c1';
  let time: ManualTime;
  let etcd: InMemoryEtcd;
  let admin: InMemoryMetadataStore;
  let nodes: TestNode[];
  let timers: SystemTimer[];

  interface TestNode {
    readonly id: number;
    readonly store: InMemoryMetadataStore;
    readonly time: FreezableTime;
    readonly target: RecordingRoleTarget;
    readonly node: ClusterNode;
    readonly changes: LeadershipChange[];
    readonly leases: string[];
    readonly errors: unknown[];
  }

  beforeEach(() => {
    time = new ManualTime();
    etcd = new InMemoryEtcd({ time });
    admin = etcd.connect();
    nodes = [];
    timers = [];
  });
  afterEach(async () => {
    for (const { node, store, time: nodeTime } of nodes) {
      store.heal();
      store.restoreRequests();
      if (nodeTime.isFrozen) nodeTime.resume();
      const closed = node.close();
      await settle();
      time.advance(5_000);
      await closed;
    }
    admin.close();
    for (const timer of timers) timer.shutdown();
    etcd.shutdown();
  });

  function startNode(id: number, options: Partial<ClusterNodeOptions> = {}): TestNode {
    const store = etcd.connect();
    const nodeTime = new FreezableTime(time);
    const timer = new SystemTimer({ time: nodeTime });
    timers.push(timer);
    const target = new RecordingRoleTarget(() => time.monotonicMs());
    const errors: unknown[] = [];
    const node = new ClusterNode({
      store,
      time: nodeTime,
      timer,
      clusterId,
      nodeId: id,
      advertisedAddress: `127.0.0.1:${7070 + id}`,
      target,
      sessionTimeoutMs: 10_000,
      random: () => 0,
      onError: (error) => errors.push(error),
      ...options,
    });
    const testNode: TestNode = { id, store, time: nodeTime, target, node, changes: [], leases: [], errors };
    node.on('leadershipChanged', (change) => testNode.changes.push(change));
    node.on('sessionRegistered', ({ leaseId }) => testNode.leases.push(leaseId));
    nodes.push(testNode);
    node.start();
    return testNode;
  }

  async function flush(): Promise<void> {
    for (let i = 0; i < 10; i++) {
      await settle();
      await Promise.all(
        nodes
          .filter(({ store, time: t }) => !store.isPartitioned && !t.isFrozen)
          .map(({ node }) => node.idle()),
      );
    }
  }

  async function advance(ms: number, stepMs = 500): Promise<void> {
    for (let done = 0; done < ms; done += stepMs) {
      time.advance(Math.min(stepMs, ms - done));
      await flush();
    }
  }

  async function startThree(): Promise<TestNode[]> {
    const started = [startNode(1)];
    await flush();
    started.push(startNode(2), startNode(3));
    await flush();
    return started;
  }

  it('starts every node as ready with a view of all live nodes and the controller', async () => {
    const [one, two, three] = await startThree();
    for (const { node, target } of [one, two, three]) {
      expect(node.isReady()).toBe(true);
      expect(target.lastUpdate?.liveNodes).toEqual([
        { nodeId: 1, host: '127.0.0.1', port: 7071 },
        { nodeId: 2, host: '127.0.0.1', port: 7072 },
        { nodeId: 3, host: '127.0.0.1', port: 7073 },
      ]);
      expect(target.lastUpdate?.controllerId).toBe(1);
    }
    expect(one.node.isController()).toBe(true);
    expect(two.node.isController() || three.node.isController()).toBe(false);
  });

  it('creates a topic from a node that is not the controller: it writes the assignment, the controller the states, every target learns them', async () => {
    const [one, two, three] = await startThree();
    const outcome = await two.node.createTopic('orders', 3, 3);
    expect(outcome).toEqual({
      outcome: 'created',
      assignment: {
        topicId: expect.any(String) as unknown,
        partitions: [
          [1, 2, 3],
          [2, 3, 1],
          [3, 1, 2],
        ],
      },
    });
    await flush();
    const controllerEpoch = (await admin.get(controllerKey(clusterId))).kv!.createRevision;
    for (let p = 0; p < 3; p++) {
      const stored = await readPartitionState(admin, clusterId, 'orders', p);
      // Written by the controller (its epoch), each first replica leading at epoch 0.
      expect(stored?.state).toEqual({
        leader: p + 1,
        leaderEpoch: 0,
        isr: decodeReplicaAssignment('', (await admin.get(topicKey(clusterId, 'orders'))).kv!.value)
          .partitions[p],
        controllerEpoch,
      });
      for (const { target } of [one, two, three]) {
        expect(target.partition('orders', p)).toMatchObject({
          leader: p + 1,
          leaderEpoch: 0,
          partitionEpoch: stored!.modRevision,
        });
      }
    }
    expect(two.changes.at(-1)).toMatchObject({ leaderCount: 1, followerCount: 2 });
    expect(await two.node.createTopic('orders', 1, 1)).toEqual({ outcome: 'exists' });
    expect(await three.node.createTopic('too-wide', 1, 4)).toMatchObject({
      outcome: 'invalidReplicationFactor',
    });
    expect(await three.node.createTopic('bad/name', 1, 1)).toMatchObject({ outcome: 'invalidTopic' });
  });

  /** How many partitions of `topic` each update applied to `target` held, in order. */
  const partitionCounts = (target: RecordingRoleTarget, topic: string): number[] =>
    target.calls.flatMap((call) =>
      call.kind === 'apply' ? [call.update.partitions.filter((p) => p.topic === topic).length] : [],
    );

  /** The target was never shown part of `topic`: none of it, or all `count` partitions; all of it last. */
  function expectOnlyEverWhole(target: RecordingRoleTarget, topic: string, count: number): void {
    const counts = partitionCounts(target, topic);
    expect(counts.filter((seen) => seen !== 0 && seen !== count)).toEqual([]);
    expect(counts.at(-1)).toBe(count);
  }

  /** The partition keys of `topic` by the revision that created them: [revision, how many], in order. */
  async function stateCreations(topic: string): Promise<[number, number][]> {
    const { kvs } = await admin.range(`/${clusterId}/partitions/${topic}/`);
    const byRevision = new Map<number, number>();
    for (const kv of kvs) byRevision.set(kv.createRevision, (byRevision.get(kv.createRevision) ?? 0) + 1);
    return [...byRevision].sort(([a], [b]) => a - b);
  }

  const transactionsFor = (partitions: number): number =>
    1 + Math.ceil(partitions / PARTITION_STATES_PER_TXN);

  it.each([2, 127, 200, 10_000])(
    'creates a topic of %i partitions on the controller: the assignment in one write, the states in slices of 127, seen only whole',
    async (partitions) => {
      const nodes = await startThree();
      const before = etcd.revision;
      expect(await nodes[0].node.createTopic('wide', partitions, 2)).toMatchObject({ outcome: 'created' });
      expect(etcd.revision - before).toBe(transactionsFor(partitions));
      await flush();
      for (const { target } of nodes) expectOnlyEverWhole(target, 'wide', partitions);
      expect(nodes[1].target.partition('wide', partitions - 1)).toMatchObject({ leaderEpoch: 0 });
    },
  );

  it.each([127, 200, 10_000])(
    'creates a topic of %i partitions from a node that is not the controller, whose states the controller writes in slices of 127',
    async (partitions) => {
      const nodes = await startThree();
      const before = etcd.revision;
      expect(await nodes[1].node.createTopic('wide', partitions, 3)).toMatchObject({ outcome: 'created' });
      await flush();
      expect(etcd.revision - before).toBe(transactionsFor(partitions));
      for (const { target } of nodes) expectOnlyEverWhole(target, 'wide', partitions);
    },
  );

  it.each([
    ['the controller creates it', false, 0],
    ['the controller creates it, the answer to its first slice lost', true, 0],
    ['another node creates it', false, 1],
  ])(
    'a controller cut off halfway through a topic’s states (%s): no node sees part of it, and the next controller writes the rest',
    async (_case, isFirstSliceLost, creator) => {
      const nodes = await startThree();
      const [one, two, three] = nodes;
      expect(one.node.isController()).toBe(true);
      // The controller's own writes: the assignment (when it creates the topic), then its slices. The
      // first slice goes through (its answer lost, if asked), the second and everything after are held.
      const controllerWritesBefore = creator === 0 ? 2 : 1;
      if (isFirstSliceLost) {
        one.store.loseNextResponse({ applied: true, afterWrites: controllerWritesBefore - 1 });
      }
      one.store.partitionAfterWrites(controllerWritesBefore);
      const creating = nodes[creator].node.createTopic('wide', 300, 3);
      await flush();
      const [firstSlice] = await stateCreations('wide');
      expect(await stateCreations('wide')).toEqual([[firstSlice![0], PARTITION_STATES_PER_TXN]]);
      for (const { target } of [two, three]) expect(partitionCounts(target, 'wide').at(-1)).toBe(0);

      // Node 1's session ends; another node becomes the controller and writes the missing states.
      await advance(12_000);
      expect([two, three].filter(({ node }) => node.isController())).toHaveLength(1);
      const secondEpoch = (await admin.get(controllerKey(clusterId))).kv!.createRevision;
      const completed = await stateCreations('wide');
      expect(completed.map(([, count]) => count)).toEqual([PARTITION_STATES_PER_TXN, 127, 46]);
      expect(completed[1]![0]).toBeGreaterThan(secondEpoch);
      for (const { target } of [two, three]) expectOnlyEverWhole(target, 'wide', 300);

      // Node 1 back: its held slices are refused by the fence, and it sees the topic whole too.
      one.store.heal();
      await advance(5_000);
      expect(await creating).toMatchObject({ outcome: 'created' });
      expect(await stateCreations('wide')).toEqual(completed);
      expectOnlyEverWhole(one.target, 'wide', 300);
    },
  );

  it('writes a topic’s states one by one where etcd refuses a slice whole (--max-txn-ops below 128)', async () => {
    admin.close();
    etcd.shutdown();
    // Five ops: the cluster read's five gets, a partition write's compares and reads; not 11 compares.
    etcd = new InMemoryEtcd({ time, maxTxnOps: 5 });
    admin = etcd.connect();
    const nodes = await startThree();
    expect(await nodes[0].node.createTopic('wide', 10, 2)).toMatchObject({ outcome: 'created' });
    await flush();
    for (const { target } of nodes) expectOnlyEverWhole(target, 'wide', 10);
    expect(nodes[0].errors).toEqual([
      expect.objectContaining({ message: expect.stringContaining('too many operations') as unknown }),
    ]);
  });

  it.each([true, false])(
    'a controller whose slice answer is lost (applied: %s) settles that slice partition by partition, each state written once',
    async (applied) => {
      const nodes = await startThree();
      nodes[0].store.loseNextResponse({ applied, afterWrites: 2 });
      expect(await nodes[0].node.createTopic('wide', 300, 2)).toMatchObject({ outcome: 'created' });
      await flush();
      const { kvs } = await admin.range(`/${clusterId}/partitions/wide/`);
      expect(kvs).toHaveLength(300);
      expect(kvs.filter((kv) => kv.version !== 1)).toEqual([]);
      for (const { target } of nodes) expectOnlyEverWhole(target, 'wide', 300);
    },
  );

  it('when the leader dies, a survivor leads at the next epoch, and the dead node resigned before its lease could expire', async () => {
    const [one, two, three] = await startThree();
    await two.node.createTopic('orders', 1, 3);
    await flush();
    expect(two.target.leaderOf('orders')).toBe(1);
    const leaseOfOne = one.leases.at(-1)!;
    let leaseAliveAtResign: boolean | undefined;
    one.target.onCall = (call) => {
      if (call.kind === 'resign') {
        leaseAliveAtResign = etcd.leaseIds().includes(leaseOfOne);
        expect(one.node.guard.isActive()).toBe(false);
      }
    };
    // Node 1 (leader and controller) loses etcd: its renewals no longer arrive.
    one.store.partition();
    const cutAtMs = time.monotonicMs();
    await advance(12_000);
    const resign = one.target.calls.find((call) => call.kind === 'resign');
    expect(resign).toBeDefined();
    expect(leaseAliveAtResign).toBe(true);
    // etcd renewed the lease at most when the cut began: it cannot expire before cutAtMs + TTL.
    expect(resign!.atMs).toBeLessThan(cutAtMs + 10_000);
    expect(etcd.leaseIds()).not.toContain(leaseOfOne);
    // A survivor became controller and elected 2, the first live ISR member, at epoch 1.
    expect(two.node.isController() || three.node.isController()).toBe(true);
    for (const { target } of [two, three]) {
      expect(target.partition('orders')).toMatchObject({ leader: 2, leaderEpoch: 1, isr: [2, 3] });
      expect(target.lastUpdate?.liveNodes.map((n) => n.nodeId)).toEqual([2, 3]);
    }
    expect(two.changes.at(-1)?.becameLeader.map((p) => p.topic)).toEqual(['orders']);
  });

  it('a node frozen past its TTL comes back as a follower of the leader elected meanwhile', async () => {
    const [one, two, three] = await startThree();
    await two.node.createTopic('orders', 1, 3);
    await flush();
    expect(one.target.leaderOf('orders')).toBe(1);
    const callsBefore = one.target.calls.length;
    // SIGSTOP: nothing of node 1 runs, nothing it sent or is sent is delivered.
    one.time.isFrozen = true;
    one.store.partition();
    await advance(15_000);
    expect(two.target.partition('orders')).toMatchObject({ leader: 2, leaderEpoch: 1 });
    expect(one.target.calls.length).toBe(callsBefore);
    // SIGCONT: the held traffic arrives and the timers run late.
    one.store.heal();
    one.time.resume();
    await advance(2_000);
    const after = one.target.calls.slice(callsBefore);
    expect(after[0]?.kind).toBe('resign');
    const applied = after.flatMap((call) => (call.kind === 'apply' ? [call.update] : []));
    expect(applied.length).toBeGreaterThan(0);
    // Never told it leads at the old epoch once it resumed: its first update is already the new leader's.
    for (const update of applied) {
      const orders = update.partitions.find((p) => p.topic === 'orders')!;
      expect(orders.leader).not.toBe(1);
    }
    expect(one.target.partition('orders')).toMatchObject({ leader: 2, leaderEpoch: 1 });
    expect(one.node.isReady()).toBe(true);
    expect(one.node.isController()).toBe(false);
    expect(one.leases).toHaveLength(2);
    expect(one.changes.at(-1)).toMatchObject({ leaderCount: 0 });
    expect(three.target.lastUpdate?.liveNodes.map((n) => n.nodeId)).toEqual([1, 2, 3]);
  });

  it('after losing its session, applies nothing until a new session registers and a fresh read is applied', async () => {
    const [one] = await startThree();
    await one.node.createTopic('orders', 1, 3);
    await flush();
    one.store.partition();
    await advance(9_500);
    const resignAt = one.target.calls.findIndex((call) => call.kind === 'resign');
    expect(resignAt).toBeGreaterThanOrEqual(0);
    expect(one.node.isReady()).toBe(false);
    // The new registration goes out when etcd is reachable again.
    one.store.heal();
    await advance(4_000);
    expect(one.leases).toHaveLength(2);
    expect(one.node.isReady()).toBe(true);
    expect(one.target.calls.slice(resignAt + 1).some((call) => call.kind === 'apply')).toBe(true);
  });

  it('does not lead on a state decided before its current registration, until the controller elects again', async () => {
    // Another process holds the controller key: no ClusterNode here acts as controller.
    const lease = await admin.grantLease(60);
    await admin.put(controllerKey(clusterId), JSON.stringify({ nodeId: 9 }), { lease: lease.id });
    // Node 1 led t-0 before it restarted: the state is older than the registration about to happen.
    await admin.put(topicKey(clusterId, 't'), JSON.stringify({ partitions: [[1]] }));
    await admin.put(
      partitionKey(clusterId, 't', 0),
      JSON.stringify({ leader: 1, leaderEpoch: 3, isr: [1], controllerEpoch: 2 }),
    );
    const one = startNode(1);
    await flush();
    expect(one.node.isReady()).toBe(true);
    expect(one.target.partition('t')).toMatchObject({ leader: NO_LEADER_ID, leaderEpoch: 3 });
    expect(one.changes.at(-1)).toMatchObject({ leaderCount: 0 });
    // The controller's new election, after the registration: now it leads.
    await admin.put(
      partitionKey(clusterId, 't', 0),
      JSON.stringify({ leader: 1, leaderEpoch: 4, isr: [1], controllerEpoch: 2 }),
    );
    await flush();
    expect(one.target.partition('t')).toMatchObject({ leader: 1, leaderEpoch: 4 });
    expect(one.changes.at(-1)).toMatchObject({ leaderCount: 1 });
  });

  describe('ISR proposals', () => {
    async function topicLedByOne(): Promise<TestNode[]> {
      const started = await startThree();
      await started[1].node.createTopic('orders', 1, 3);
      await flush();
      return started;
    }

    it('commits a shrink at the leader epoch and partition epoch, with the new state and mod revision', async () => {
      const [one, two] = await topicLedByOne();
      const current = one.target.partition('orders')!;
      const result = await one.node.isrChangeProposer.proposeIsr(
        'orders',
        0,
        0,
        current.partitionEpoch,
        [1, 2],
      );
      const stored = await readPartitionState(admin, clusterId, 'orders', 0);
      expect(result).toEqual({
        kind: 'committed',
        state: { ...current, isr: [1, 2], partitionEpoch: stored!.modRevision },
      });
      expect(stored!.modRevision).toBeGreaterThan(current.partitionEpoch);
      await flush();
      expect(two.target.partition('orders')).toMatchObject({ isr: [1, 2], leaderEpoch: 0 });
      // And an expansion back, from the new partition epoch.
      const expanded = await one.node.isrChangeProposer.proposeIsr(
        'orders',
        0,
        0,
        stored!.modRevision,
        [1, 2, 3],
      );
      expect(expanded).toMatchObject({ kind: 'committed', state: { isr: [1, 2, 3] } });
    });

    it('answers stale with the current state when the partition epoch moved, and writes nothing', async () => {
      const [one] = await topicLedByOne();
      const old = one.target.partition('orders')!;
      const first = await one.node.isrChangeProposer.proposeIsr('orders', 0, 0, old.partitionEpoch, [1, 2]);
      expect(first.kind).toBe('committed');
      const revision = etcd.revision;
      const second = await one.node.isrChangeProposer.proposeIsr('orders', 0, 0, old.partitionEpoch, [1]);
      expect(second).toMatchObject({ kind: 'stale', state: { isr: [1, 2] } });
      expect(etcd.revision).toBe(revision);
    });

    it('answers stale to a node that does not lead at that epoch', async () => {
      const [, two] = await topicLedByOne();
      const current = two.target.partition('orders')!;
      const result = await two.node.isrChangeProposer.proposeIsr('orders', 0, 0, current.partitionEpoch, [2]);
      expect(result).toMatchObject({ kind: 'stale', state: { leader: 1 } });
    });

    it('fails without writing when the session is not active', async () => {
      const [one] = await topicLedByOne();
      const current = one.target.partition('orders')!;
      one.store.partition();
      await advance(9_500);
      expect(one.node.guard.isActive()).toBe(false);
      one.store.heal();
      const revision = etcd.revision;
      const result = await one.node.isrChangeProposer.proposeIsr('orders', 0, 0, current.partitionEpoch, [1]);
      expect(result.kind).toBe('failed');
      expect(result.kind === 'failed' && result.error).toBeInstanceOf(SessionInactiveError);
      expect(etcd.revision).toBe(revision);
    });

    it('fails when the answer is lost and the read that would tell cannot be made', async () => {
      const [one] = await topicLedByOne();
      const current = one.target.partition('orders')!;
      one.store.loseNextResponse({ applied: true });
      // The write's answer is lost; the re-read finds etcd unreachable.
      const proposal = one.node.isrChangeProposer.proposeIsr('orders', 0, 0, current.partitionEpoch, [1, 3]);
      one.store.failRequests();
      const result = await proposal;
      one.store.restoreRequests();
      expect(result.kind).toBe('failed');
    });

    it('resolves a lost answer by a read: committed when the write applied', async () => {
      const [one] = await topicLedByOne();
      const current = one.target.partition('orders')!;
      one.store.loseNextResponse({ applied: true });
      const result = await one.node.isrChangeProposer.proposeIsr(
        'orders',
        0,
        0,
        current.partitionEpoch,
        [1, 3],
      );
      expect(result).toMatchObject({ kind: 'committed', state: { isr: [1, 3] } });
    });
  });

  it('keeps the last view through a short outage of etcd, and catches up after it', async () => {
    const [one, two] = await startThree();
    await two.node.createTopic('orders', 1, 3);
    await flush();
    const callsBefore = two.target.calls.length;
    two.store.failRequests();
    await advance(4_000);
    // Nothing told to the log layer: no resign, no empty view.
    expect(two.target.calls.length).toBe(callsBefore);
    expect(two.node.guard.isActive()).toBe(true);
    expect(two.errors.length).toBeGreaterThan(0);
    // Meanwhile the cluster moves on.
    await one.node.createTopic('payments', 1, 1);
    two.store.restoreRequests();
    await advance(10_000);
    expect(two.target.partition('payments')).toMatchObject({ leader: 1 });
    expect(two.target.partition('orders')).toMatchObject({ leader: 1 });
    expect(two.target.calls.slice(callsBefore).every((call) => call.kind === 'apply')).toBe(true);
    expect(two.node.guard.isActive()).toBe(true);
  });

  it('close resigns the controller, revokes the lease at once, and is idempotent', async () => {
    const [one, two] = await startThree();
    const closing = one.node.close();
    expect(one.node.close()).toBe(closing);
    await closing;
    expect((await admin.get(nodeKey(clusterId, 1))).kv).toBeUndefined();
    await flush();
    expect(two.target.lastUpdate?.liveNodes.map((n) => n.nodeId)).toEqual([2, 3]);
    expect(nodes.some(({ node }) => node !== one.node && node.isController())).toBe(true);
    expect(one.target.calls.at(-1)?.kind).toBe('resign');
  });

  it('close ends within its bound when etcd does not answer', async () => {
    const [one] = await startThree();
    one.store.partition();
    let closed = false;
    void one.node.close().then(() => (closed = true));
    await settle();
    expect(closed).toBe(false);
    time.advance(5_000);
    await settle();
    expect(closed).toBe(true);
    expect(one.node.guard.isActive()).toBe(false);
  });

  it('leaves partitions without a state out of the view until the controller writes them', async () => {
    const [, two] = await startThree();
    // A topic key without states and with no live replica: the controller cannot initialise it.
    await admin.put(topicKey(clusterId, 'ghost'), JSON.stringify({ partitions: [[9]] }));
    await flush();
    expect(two.target.partition('ghost')).toBeUndefined();
    await admin.put(nodeKey(clusterId, 9), '127.0.0.1:7079');
    await flush();
    expect(two.target.partition('ghost')).toMatchObject({ leader: 9, leaderEpoch: 0 });
    expect((await admin.get(partitionKey(clusterId, 'ghost', 0))).kv).toBeDefined();
    expect(two.target.leaderOf('absent')).toBe(NO_LEADER_ID);
  });

  describe('with the cluster identity', () => {
    /** etcd losing its data: every key of the cluster gone, every lease with it. */
    async function wipeEtcd(): Promise<void> {
      await admin.txn({ compare: [], success: [{ type: 'delete', key: `/${clusterId}/`, prefix: true }] });
      for (const lease of etcd.leaseIds()) await admin.revokeLease(lease);
    }

    async function startIdentified(): Promise<TestNode[]> {
      await admin.put(clusterIdentityKey(clusterId), encodeClusterIdentity('uuid-a'));
      const started = [startNode(1, { clusterUuid: 'uuid-a' })];
      await flush();
      started.push(startNode(2, { clusterUuid: 'uuid-a' }));
      await flush();
      return started;
    }

    it('registers only while etcd holds its identity, and never applies a view of an etcd that lost it', async () => {
      const [one, two] = await startIdentified();
      expect(await one.node.createTopic('orders', 2, 2)).toMatchObject({ outcome: 'created' });
      await advance(1_000);
      const before = one.target.lastUpdate;
      expect(before?.partitions).toHaveLength(2);

      await wipeEtcd();
      await advance(15_000);
      for (const { node, target, errors } of [one, two]) {
        expect(node.isReady()).toBe(false);
        // The topic did not vanish: the last view of a cluster that had it stays.
        expect(target.lastUpdate?.partitions.map((p) => `${p.topic}-${p.partitionIndex}`)).toEqual([
          'orders-0',
          'orders-1',
        ]);
        expect(errors.some((e) => e instanceof ClusterIdentityError && e.foundUuid === undefined)).toBe(true);
      }
      // Nothing was registered or created on the empty etcd.
      expect((await admin.range(`/${clusterId}/`)).kvs).toEqual([]);

      // The metadata is restored (as a recovery writes it): the nodes come back.
      await admin.put(clusterIdentityKey(clusterId), encodeClusterIdentity('uuid-a'));
      await advance(10_000);
      expect(one.node.isReady() && two.node.isReady()).toBe(true);
    });

    it("resigns at once when etcd's keys are deleted while its leases live on, and comes back after", async () => {
      const [one, two] = await startIdentified();
      expect(await one.node.createTopic('orders', 2, 2)).toMatchObject({ outcome: 'created' });
      await advance(1_000);
      expect(one.node.isController()).toBe(true);
      const resignationsBefore = one.target.calls.filter((c) => c.kind === 'resign').length;
      // The keys go, the leases stay: nothing expires by itself.
      await admin.txn({ compare: [], success: [{ type: 'delete', key: `/${clusterId}/`, prefix: true }] });
      await advance(2_000);
      for (const { node } of [one, two]) {
        expect(node.isReady()).toBe(false);
        expect(node.guard.isActive()).toBe(false);
        expect(node.isController()).toBe(false);
      }
      expect(one.target.calls.filter((c) => c.kind === 'resign').length).toBeGreaterThan(resignationsBefore);
      expect(await two.node.createTopic('more', 1, 1)).toMatchObject({ outcome: 'unavailable' });
      expect((await admin.range(`/${clusterId}/`)).kvs).toEqual([]);

      await admin.put(clusterIdentityKey(clusterId), encodeClusterIdentity('uuid-a'));
      await advance(10_000);
      expect(one.node.isReady() && two.node.isReady()).toBe(true);
    });

    it('registers only once the identity is written in its own form, retrying with a backoff meanwhile', async () => {
      await admin.put(clusterIdentityKey(clusterId), '{ "clusterUuid": "uuid-a" }');
      const one = startNode(1, { clusterUuid: 'uuid-a' });
      await advance(10_000);
      expect(one.node.isReady()).toBe(false);
      const malformed = one.errors.filter(
        (e) => e instanceof ClusterIdentityError && e.malformedValue !== undefined,
      );
      // One attempt per backoff (a third of the session timeout), not a loop without pause.
      expect(malformed.length).toBeGreaterThan(0);
      expect(malformed.length).toBeLessThan(10);
      await admin.put(clusterIdentityKey(clusterId), encodeClusterIdentity('uuid-a'));
      await advance(5_000);
      expect(one.node.isReady()).toBe(true);
    });

    it("does not register on an etcd whose identity is another cluster's", async () => {
      await admin.put(clusterIdentityKey(clusterId), encodeClusterIdentity('uuid-b'));
      const one = startNode(1, { clusterUuid: 'uuid-a' });
      await advance(5_000);
      expect(one.node.isReady()).toBe(false);
      expect((await admin.get(nodeKey(clusterId, 1))).kv).toBeUndefined();
      expect(one.errors.find((e) => e instanceof ClusterIdentityError)).toMatchObject({
        foundUuid: 'uuid-b',
      });
    });
  });
});
