import {
  Controller,
  SETTLE_CONCURRENCY,
  type ControllerOptions,
  type ControllerRole,
} from '../../../src/cluster/controller';
import { ControllerElection, controllerKey } from '../../../src/cluster/controller-election';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import type { WatchEvent } from '../../../src/cluster/metadata-store';
import { NodeSession, nodeKey } from '../../../src/cluster/node-session';
import {
  decodePartitionState,
  encodePartitionState,
  expandIsr,
  partitionKey,
  readPartitionState,
  topicKey,
  writePartitionState,
  type PartitionState,
} from '../../../src/cluster/partition-state';
import { decodeReplicaAssignment, encodeReplicaAssignment } from '../../../src/cluster/replica-assignment';
import { SystemTimer } from '../../../src/timer';
import { ManualTime } from '../../../src/time';
import { settle } from '../../support/metadata-store-harness';

/**
 * The controller's decisions under a manual clock against the in-memory etcd. Node liveness is the
 * `nodes/<id>` key: the controller's own node registers it through its session; the other nodes' keys
 * are put and deleted by the test (a join and a leave), or expire with a lease.
 */
describe('Controller', () => {
  const clusterId = 'c1';
  let time: ManualTime;
  let timer: SystemTimer;
  let etcd: InMemoryEtcd;
  /** The test's own client: sets up topics and states, joins and removes nodes. */
  let admin: InMemoryMetadataStore;
  let controllerNodes: ControllerNode[];
  /** Every partition-state write, in revision order. */
  let writes: { key: string; state: PartitionState }[];
  let errors: unknown[];

  interface ControllerNode {
    readonly id: number;
    readonly store: InMemoryMetadataStore;
    readonly session: NodeSession;
    readonly election: ControllerElection;
    readonly controller: Controller;
  }

  beforeEach(() => {
    time = new ManualTime();
    timer = new SystemTimer({ time });
    etcd = new InMemoryEtcd({ time });
    admin = etcd.connect();
    controllerNodes = [];
    writes = [];
    errors = [];
    admin.watch(
      `/${clusterId}/partitions/`,
      { prefix: true, startRevision: 1 },
      {
        onEvents: (events: readonly WatchEvent[]) => {
          for (const { type, kv } of events) {
            if (type === 'put') writes.push({ key: kv.key, state: decodePartitionState(kv.key, kv.value) });
          }
        },
        onCancelled: () => undefined,
      },
    );
  });
  afterEach(async () => {
    for (const node of controllerNodes) {
      node.controller.close();
      node.store.heal();
      await Promise.race([Promise.all([node.election.close(), node.session.close()]), settle()]);
    }
    admin.close();
    timer.shutdown();
    etcd.shutdown();
  });

  function startControllerNode(id: number, options: Partial<ControllerOptions> = {}): ControllerNode {
    const store = etcd.connect();
    const session = new NodeSession({
      store,
      time,
      timer,
      clusterId,
      nodeId: id,
      advertisedAddress: `127.0.0.1:${7070 + id}`,
      sessionTimeoutMs: 10_000,
    });
    const election = new ControllerElection({ store, session, timer, clusterId, nodeId: id });
    const controller = new Controller({
      store,
      election,
      timer,
      clusterId,
      random: () => 0,
      onError: (error) => errors.push(error),
      ...options,
    });
    const node = { id, store, session, election, controller };
    controllerNodes.push(node);
    controller.start();
    session.start();
    election.start();
    return node;
  }

  /** Lets the store, the sessions, the elections and the controllers' queues run until nothing moves. */
  async function flush(): Promise<void> {
    for (let i = 0; i < 10; i++) {
      await settle();
      // A partitioned node's queue waits on its held requests: only the others can settle.
      await Promise.all(
        controllerNodes.filter((node) => !node.store.isPartitioned).map((node) => node.controller.idle()),
      );
    }
  }

  async function advance(ms: number, stepMs = 500): Promise<void> {
    for (let done = 0; done < ms; done += stepMs) {
      time.advance(Math.min(stepMs, ms - done));
      await flush();
    }
  }

  async function join(...ids: number[]): Promise<void> {
    for (const id of ids) await admin.put(nodeKey(clusterId, id), `127.0.0.1:${7070 + id}`);
  }

  async function leave(...ids: number[]): Promise<void> {
    for (const id of ids) await admin.delete(nodeKey(clusterId, id));
  }

  /** A topic as a previous controller left it: its assignment and the states given. */
  async function seedTopic(
    topic: string,
    replicas: number[][],
    states: (PartitionState | undefined)[],
  ): Promise<void> {
    await admin.put(topicKey(clusterId, topic), encodeReplicaAssignment({ partitions: replicas }));
    for (const [partition, state] of states.entries()) {
      if (state !== undefined)
        await admin.put(partitionKey(clusterId, topic, partition), encodePartitionState(state));
    }
  }

  /**
   * Nodes 2, 3 and 4 alive, and topic t's 100 partitions at leader epoch 5 on [2, 3, 4], each led by 2
   * (even partitions) or 3 (odd) with 2 in its ISR: node 2's leave changes every one of them.
   */
  async function seedHundredPartitionsOfNode2(): Promise<void> {
    await join(2, 3, 4);
    const replicas = Array.from({ length: 100 }, (_, p) => (p % 2 === 0 ? [2, 3, 4] : [3, 2, 4]));
    await seedTopic(
      't',
      replicas,
      replicas.map((r) => state(r[0], 5, [2, 3, 4])),
    );
  }

  async function stateOf(topic: string, partition = 0): Promise<PartitionState | undefined> {
    return (await readPartitionState(admin, clusterId, topic, partition))?.state;
  }

  /** The partition's leader adds a replica that caught up, as a leader does: expandIsr, a compared write. */
  async function leaderAddsToIsr(topic: string, replicas: number[], caughtUp: number): Promise<void> {
    const stored = (await readPartitionState(admin, clusterId, topic, 0))!;
    const { leader, leaderEpoch } = stored.state;
    const change = expandIsr(stored.state, replicas, leader, leaderEpoch, caughtUp);
    if (change.outcome !== 'changed') throw new Error(`the ISR did not change: ${change.outcome}`);
    const written = await writePartitionState(admin, {
      clusterId,
      topic,
      partition: 0,
      expectedModRevision: stored.modRevision,
      state: change.state,
    });
    expect(written.outcome).toBe('updated');
  }

  const state = (
    leader: number,
    leaderEpoch: number,
    isr: number[],
    controllerEpoch = 1,
  ): PartitionState => ({
    leader,
    leaderEpoch,
    isr,
    controllerEpoch,
  });

  it('on election, elects a leader where the stored one is not alive, creates missing states, and leaves healthy partitions alone', async () => {
    await join(2, 3);
    await seedTopic('healthy', [[2, 3]], [state(2, 3, [2, 3])]);
    await seedTopic('orphan', [[4, 3, 2]], [state(4, 7, [4, 2, 3])]);
    await seedTopic(
      'half',
      [
        [2, 3],
        [3, 2],
      ],
      [state(3, 0, [3, 2]), undefined],
    );
    const healthyBefore = (await readPartitionState(admin, clusterId, 'healthy', 0))!.modRevision;
    const node = startControllerNode(1);
    await flush();
    const epoch = node.election.controllerEpoch!;
    expect(node.controller.activeEpoch).toBe(epoch);
    // Node 4 is not registered: the first live ISR member in assignment order (3, not 2) leads.
    expect(await stateOf('orphan')).toEqual(state(3, 8, [2, 3], epoch));
    expect(await stateOf('half', 1)).toEqual(state(3, 0, [3, 2], epoch));
    expect((await readPartitionState(admin, clusterId, 'healthy', 0))!.modRevision).toBe(healthyBefore);
    expect(node.controller.partitionState('orphan', 0)?.state).toEqual(state(3, 8, [2, 3], epoch));
  });

  it('watches from the revision after its read: a node leaving between the read and the watch is not missed', async () => {
    await join(2, 3);
    await seedTopic('t', [[2, 3]], [state(2, 4, [2, 3])]);
    const store = etcd.connect();
    const watch = store.watch.bind(store);
    let leftBeforeWatch = false;
    jest.spyOn(store, 'watch').mockImplementation((key, options, handlers) => {
      if (key === `/${clusterId}/` && !leftBeforeWatch) {
        leftBeforeWatch = true;
        etcd.applyTxn({ compare: [], success: [{ type: 'delete', key: nodeKey(clusterId, 2) }] });
      }
      return watch(key, options, handlers);
    });
    const session = new NodeSession({
      store,
      time,
      timer,
      clusterId,
      nodeId: 1,
      advertisedAddress: '127.0.0.1:7071',
      sessionTimeoutMs: 10_000,
    });
    const election = new ControllerElection({ store, session, timer, clusterId, nodeId: 1 });
    const controller = new Controller({ store, election, timer, clusterId });
    controllerNodes.push({ id: 1, store, session, election, controller });
    controller.start();
    session.start();
    election.start();
    await flush();
    expect(leftBeforeWatch).toBe(true);
    expect(await stateOf('t')).toEqual(state(3, 5, [3], election.controllerEpoch!));
  });

  it('reads everything again when its watch is cancelled by a compaction, and decides from that', async () => {
    await join(2, 3);
    await seedTopic('t', [[2, 3]], [state(2, 4, [2, 3])]);
    const node = startControllerNode(1);
    await flush();
    // Cut off briefly (well within its session): node 2 leaves and the history is compacted meanwhile.
    node.store.partition();
    await leave(2);
    const { revision } = await admin.put('/other', 'x');
    await admin.compact(revision);
    node.store.heal();
    await flush();
    expect(await stateOf('t')).toEqual(state(3, 5, [3], node.election.controllerEpoch!));
  });

  it("when a leader's node leaves, elects the first live ISR member in assignment order at leaderEpoch + 1", async () => {
    await join(2, 3, 4);
    await seedTopic('t', [[2, 4, 3]], [state(2, 5, [2, 3, 4])]);
    const node = startControllerNode(1);
    await flush();
    const epoch = node.election.controllerEpoch!;
    expect(await stateOf('t')).toEqual(state(2, 5, [2, 3, 4]));
    await leave(2);
    await flush();
    expect(await stateOf('t')).toEqual(state(4, 6, [3, 4], epoch));
  });

  it("writes a leaving node's partitions together, not one etcd round trip after another", async () => {
    // 100 partitions, every one led or followed by node 2. Its leave changes them all: the writes go out
    // SETTLE_CONCURRENCY at a time, so the last partition's leader does not wait on 99 round trips.
    await seedHundredPartitionsOfNode2();
    const node = startControllerNode(1);
    await flush();
    const epoch = node.election.controllerEpoch!;
    let inFlight = 0;
    let mostInFlight = 0;
    const txn = node.store.txn.bind(node.store);
    jest.spyOn(node.store, 'txn').mockImplementation(async (request) => {
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      try {
        return await txn(request);
      } finally {
        inFlight--;
      }
    });
    await leave(2);
    await flush();
    expect(mostInFlight).toBe(SETTLE_CONCURRENCY);
    // Led by 2: 3 leads next; led by 3: 2 leaves the ISR. Either way one epoch up.
    for (let p = 0; p < 100; p++) expect(await stateOf('t', p)).toEqual(state(3, 6, [3, 4], epoch));
  });

  it('a batch that etcd cuts off midway resumes from a fresh read: each partition is bumped once, none is left behind', async () => {
    // Node 2's leave changes 100 partitions. After 30 writes etcd refuses every request, as one that stops
    // answering does: the writes in flight fail with their outcome unknown, the re-reads fail, the watch
    // ends. Once etcd answers again, the controller reads everything and finishes the batch.
    await seedHundredPartitionsOfNode2();
    const node = startControllerNode(1, { retryBackoffMs: 500 });
    await flush();
    const epoch = node.election.controllerEpoch!;
    const txn = node.store.txn.bind(node.store);
    let sent = 0;
    jest.spyOn(node.store, 'txn').mockImplementation((request) => {
      if (++sent === 31) node.store.failRequests();
      return txn(request);
    });
    await leave(2);
    await flush();
    const writtenWhileCut = writes.filter((write) => write.state.leaderEpoch === 6).length;
    expect(writtenWhileCut).toBeGreaterThan(0);
    expect(writtenWhileCut).toBeLessThan(100);
    node.store.restoreRequests();
    await advance(2_000);
    expect(node.controller.activeEpoch).toBe(epoch);
    for (let p = 0; p < 100; p++) expect(await stateOf('t', p)).toEqual(state(3, 6, [3, 4], epoch));
    // Every partition written once at epoch 6: none bumped twice by the resumed batch.
    const bumped = writes.filter((write) => write.state.leaderEpoch === 6).map((write) => write.key);
    expect(bumped).toHaveLength(100);
    expect(new Set(bumped).size).toBe(100);
    expect(errors.length).toBeGreaterThan(0);
  });

  it("when a follower's node leaves, takes it out of the ISR with the leader epoch bumped (Kafka's removeReplicasFromIsr)", async () => {
    await join(2, 3, 4);
    await seedTopic('t', [[2, 3, 4]], [state(2, 5, [2, 3, 4])]);
    const node = startControllerNode(1);
    await flush();
    await leave(3);
    await flush();
    expect(await stateOf('t')).toEqual(state(2, 6, [2, 4], node.election.controllerEpoch!));
  });

  it('a node that registered again since a state was written has restarted: its partitions get a new election, one epoch up', async () => {
    await join(2, 3, 4);
    await seedTopic(
      't',
      [
        [2, 3, 4],
        [3, 2, 4],
        [2, 4, 3],
      ],
      [state(2, 5, [2, 3, 4]), state(3, 1, [3, 2, 4]), state(2, 7, [2])],
    );
    const node = startControllerNode(1);
    await flush();
    const epoch = node.election.controllerEpoch!;
    expect(await stateOf('t')).toEqual(state(2, 5, [2, 3, 4]));
    // Node 2 restarts faster than the controller could see it go: its key deleted and put back in one
    // revision (a kill -9 and a restart before the watch delivered anything is the same to the controller).
    await admin.txn({
      compare: [],
      success: [
        { type: 'delete', key: nodeKey(clusterId, 2) },
        { type: 'put', key: nodeKey(clusterId, 2), value: '127.0.0.1:7072' },
      ],
    });
    await flush();
    // As leader: the next steady ISR member leads, and the restarted one leaves the ISR.
    expect(await stateOf('t', 0)).toEqual(state(3, 6, [3, 4], epoch));
    // As follower: it leaves the ISR.
    expect(await stateOf('t', 1)).toEqual(state(3, 2, [3, 4], epoch));
    // As the only live ISR member: it leads again, but one epoch up.
    expect(await stateOf('t', 2)).toEqual(state(2, 8, [2], epoch));
    // Decided after the registration: nothing more to do, however often the controller decides.
    const revision = etcd.revision;
    await join(5);
    await flush();
    expect(etcd.revision).toBe(revision + 1);
  });

  it('a registration on a new lease over the same key (no delete) is a restart too', async () => {
    await join(2, 3);
    await seedTopic('t', [[2, 3]], [state(2, 0, [2, 3])]);
    const node = startControllerNode(1);
    await flush();
    const lease = await admin.grantLease(10);
    await admin.put(nodeKey(clusterId, 2), '127.0.0.1:7072', { lease: lease.id });
    await flush();
    expect(await stateOf('t')).toEqual(state(3, 1, [3], node.election.controllerEpoch!));
  });

  it("a node's lease expiring is a node leaving", async () => {
    await join(3);
    const lease = await admin.grantLease(10);
    await admin.put(nodeKey(clusterId, 2), '127.0.0.1:7072', { lease: lease.id });
    await seedTopic('t', [[2, 3]], [state(2, 0, [2, 3])]);
    const node = startControllerNode(1);
    await flush();
    expect(await stateOf('t')).toEqual(state(2, 0, [2, 3]));
    await advance(10_000);
    expect(await stateOf('t')).toEqual(state(3, 1, [3], node.election.controllerEpoch!));
  });

  it('with no live ISR member the partition goes offline; nodes outside the ISR change nothing; the returning ISR member leads', async () => {
    await join(2, 3);
    await seedTopic('t', [[2, 3]], [state(2, 4, [2])]);
    const node = startControllerNode(1);
    await flush();
    const epoch = node.election.controllerEpoch!;
    await leave(2);
    await flush();
    expect(await stateOf('t')).toEqual(state(-1, 5, [2], epoch));
    const writesWhileOffline = writes.length;
    await leave(3);
    await join(3);
    await join(5);
    await flush();
    expect(writes.length).toBe(writesWhileOffline);
    expect(await stateOf('t')).toEqual(state(-1, 5, [2], epoch));
    await join(2);
    await flush();
    expect(await stateOf('t')).toEqual(state(2, 6, [2], epoch));
  });

  it('unclean leader election, when enabled, elects a live replica outside the ISR; off by default it does not', async () => {
    await join(2, 3);
    await seedTopic('t', [[2, 3]], [state(2, 4, [2])]);
    const node = startControllerNode(1, { uncleanLeaderElection: true });
    await flush();
    await leave(2);
    await flush();
    expect(await stateOf('t')).toEqual(state(3, 5, [3], node.election.controllerEpoch!));
  });

  it('moves leadership back to the preferred replica on the imbalance check, once it is alive and in the ISR', async () => {
    await join(2, 3);
    await seedTopic('t', [[2, 3]], [state(2, 0, [2, 3])]);
    const node = startControllerNode(1, { leaderImbalanceCheckIntervalMs: 60_000 });
    await flush();
    const epoch = node.election.controllerEpoch!;
    await leave(2);
    await flush();
    expect(await stateOf('t')).toEqual(state(3, 1, [3], epoch));
    await join(2);
    await advance(60_000);
    // Back, but not in sync: the check leaves the leadership where it is.
    expect(await stateOf('t')).toEqual(state(3, 1, [3], epoch));
    // The leader (3) adds 2 to its ISR once it has caught up.
    await leaderAddsToIsr('t', [2, 3], 2);
    await advance(59_000);
    expect(await stateOf('t')).toEqual(state(3, 1, [2, 3], epoch));
    await advance(1_000);
    expect(await stateOf('t')).toEqual(state(2, 2, [2, 3], epoch));
  });

  it("leaves leadership alone while no node's imbalance exceeds the percentage", async () => {
    await join(2, 3);
    // Node 2 is preferred for 10 partitions and leads 9: 10 % is not above 10 %.
    const replicas = Array.from({ length: 10 }, () => [2, 3]);
    const states = replicas.map((_, p) => (p === 0 ? state(3, 1, [2, 3]) : state(2, 0, [2, 3])));
    await seedTopic('t', replicas, states);
    startControllerNode(1, { leaderImbalanceCheckIntervalMs: 1_000 });
    await flush();
    await advance(5_000);
    expect(await stateOf('t', 0)).toEqual(state(3, 1, [2, 3]));
  });

  it.each([true, false])(
    'after a write whose answer was lost (applied: %s), reads again and bumps the leader epoch exactly once',
    async (applied) => {
      await join(2, 3);
      await seedTopic('t', [[2, 3]], [state(2, 4, [2, 3])]);
      const node = startControllerNode(1);
      await flush();
      const epoch = node.election.controllerEpoch!;
      node.store.loseNextResponse({ applied });
      await leave(2);
      await flush();
      expect(await stateOf('t')).toEqual(state(3, 5, [3], epoch));
      expect(writes.filter((write) => write.state.leaderEpoch === 5)).toHaveLength(1);
      expect(node.controller.partitionState('t', 0)?.state).toEqual(state(3, 5, [3], epoch));
      // And it keeps deciding from the right revision afterwards.
      await join(2);
      await leave(3);
      await flush();
      expect(await stateOf('t')).toEqual(state(-1, 6, [3], epoch));
    },
  );

  it('when even the re-read fails, reads everything again after the backoff and decides from that', async () => {
    await join(2, 3);
    await seedTopic('t', [[2, 3]], [state(2, 4, [2, 3])]);
    const node = startControllerNode(1, { retryBackoffMs: 500 });
    await flush();
    const epoch = node.election.controllerEpoch!;
    node.store.loseNextResponse({ applied: true });
    const get = node.store.get.bind(node.store);
    let failReads = 1;
    jest.spyOn(node.store, 'get').mockImplementation((key) => {
      if (failReads-- > 0) return Promise.reject(new Error('read failed'));
      return get(key);
    });
    await leave(2);
    await flush();
    expect(node.controller.activeEpoch).toBeUndefined();
    await advance(500);
    expect(node.controller.activeEpoch).toBe(epoch);
    expect(await stateOf('t')).toEqual(state(3, 5, [3], epoch));
    expect(writes.filter((write) => write.state.leaderEpoch === 5)).toHaveLength(1);
  });

  it('when every retry of an election loses its answer unapplied, reads everything again after the backoff', async () => {
    await join(2, 3);
    await seedTopic('t', [[2, 3]], [state(2, 4, [2, 3])]);
    const node = startControllerNode(1, { retryBackoffMs: 500 });
    await flush();
    const epoch = node.election.controllerEpoch!;
    // The first write and each of its three retries: no write lands, and no event follows.
    for (let i = 0; i < 4; i++) node.store.loseNextResponse({ applied: false });
    await leave(2);
    await flush();
    expect(await stateOf('t')).toEqual(state(2, 4, [2, 3]));
    expect(node.controller.activeEpoch).toBeUndefined();
    await advance(500);
    expect(node.controller.activeEpoch).toBe(epoch);
    expect(await stateOf('t')).toEqual(state(3, 5, [3], epoch));
    expect(writes.filter((write) => write.state.leaderEpoch === 5)).toHaveLength(1);
  });

  it('a deposed controller that still believes it leads has its elections refused by etcd, and stops', async () => {
    await join(2, 3);
    await seedTopic('t', [[2, 3]], [state(2, 4, [2, 3])]);
    const store = etcd.connect();
    // The node was controller at epoch 1 (a key that no longer exists): a process paused past its
    // deadline between its check and its write believes so.
    const role: ControllerRole = {
      on: () => role,
      off: () => role,
      controllerEpoch: 1,
    } as unknown as ControllerRole;
    const deposed = new Controller({ store, election: role, timer, clusterId });
    deposed.start();
    await flush();
    await deposed.idle();
    expect(deposed.activeEpoch).toBe(1);
    await leave(2);
    await flush();
    await deposed.idle();
    expect(await stateOf('t')).toEqual(state(2, 4, [2, 3]));
    expect(writes).toHaveLength(1);
    expect(deposed.activeEpoch).toBeUndefined();
    deposed.close();
    store.close();
  });

  it('steps down when its session expires: no view, no watch, no writes; the next controller takes over at a higher epoch', async () => {
    await join(3, 4);
    await seedTopic('t', [[3, 4]], [state(3, 0, [3, 4])]);
    const a = startControllerNode(1);
    await flush();
    const b = startControllerNode(2);
    await flush();
    const epochA = a.election.controllerEpoch!;
    expect(a.controller.activeEpoch).toBe(epochA);
    expect(b.controller.activeEpoch).toBeUndefined();
    // A is cut off from etcd: its session reaches its deadline and it must stop acting.
    a.store.partition();
    const clusterWatches = (): number =>
      etcd.watchersOf(a.store).filter((watcher) => watcher.prefix && watcher.key === `/${clusterId}/`).length;
    expect(clusterWatches()).toBe(1);
    await advance(9_500);
    expect(a.election.isController()).toBe(false);
    expect(a.controller.activeEpoch).toBeUndefined();
    expect(clusterWatches()).toBe(0);
    await advance(2_000);
    const epochB = b.election.controllerEpoch!;
    expect(epochB).toBeGreaterThan(epochA);
    expect(b.controller.activeEpoch).toBe(epochB);
    await leave(3);
    await flush();
    expect(await stateOf('t')).toEqual(state(4, 1, [4], epochB));
    a.store.heal();
    await flush();
    expect(writes.every((write) => write.state.controllerEpoch !== epochA)).toBe(true);
    expect(await a.store.get(controllerKey(clusterId))).toMatchObject({ kv: { createRevision: epochB } });
  });

  it('a write a controller issued while cut off, applied after its successor took over, is refused', async () => {
    await join(2, 3);
    // Imbalanced: node 2 is preferred and in sync, node 3 leads.
    await seedTopic('t', [[2, 3]], [state(3, 1, [2, 3])]);
    const a = startControllerNode(1, { leaderImbalanceCheckIntervalMs: 5_000 });
    await flush();
    const b = startControllerNode(4, { leaderImbalanceCheckIntervalMs: 5_000 });
    await flush();
    const epochA = a.election.controllerEpoch!;
    a.store.partition();
    const txn = jest.spyOn(a.store, 'txn');
    // A's rebalance check fires while it still believes it leads: its write is held, unapplied.
    await advance(5_000);
    expect(a.controller.activeEpoch).toBe(epochA);
    expect(txn).toHaveBeenCalledTimes(1);
    await advance(12_000);
    const epochB = b.election.controllerEpoch!;
    expect(epochB).toBeGreaterThan(epochA);
    expect(await stateOf('t')).toEqual(state(2, 2, [2, 3], epochB));
    a.store.heal();
    await flush();
    expect(await stateOf('t')).toEqual(state(2, 2, [2, 3], epochB));
    expect(writes.filter((write) => write.state.controllerEpoch === epochA)).toEqual([]);
  });

  it("runs the worked example of controller.ts's opening comment", async () => {
    await join(1, 2, 3);
    await seedTopic('t', [[1, 2, 3]], [state(1, 4, [1, 2, 3])]);
    const node = startControllerNode(9, { leaderImbalanceCheckIntervalMs: 1_000 });
    await flush();
    const epoch = node.election.controllerEpoch!;
    await leave(1);
    await flush();
    expect(await stateOf('t')).toEqual(state(2, 5, [2, 3], epoch));
    await leave(3);
    await flush();
    expect(await stateOf('t')).toEqual(state(2, 6, [2], epoch));
    await leave(2);
    await join(1);
    await flush();
    expect(await stateOf('t')).toEqual(state(-1, 7, [2], epoch));
    await join(2);
    await flush();
    expect(await stateOf('t')).toEqual(state(2, 8, [2], epoch));
    await leaderAddsToIsr('t', [1, 2, 3], 1);
    await advance(1_000);
    expect(await stateOf('t')).toEqual(state(1, 9, [1, 2], epoch));
  });

  describe('createTopic', () => {
    it('assigns replicas round-robin over the live nodes and writes every initial state at epoch 0', async () => {
      await join(2, 3);
      const node = startControllerNode(1);
      await flush();
      const epoch = node.election.controllerEpoch!;
      const created = await node.controller.createTopic('orders', 3, 2);
      // random() = 0: start at the first of [1, 2, 3], shift 0.
      expect(created).toEqual({
        outcome: 'created',
        assignment: {
          topicId: expect.any(String) as unknown,
          partitions: [
            [1, 2],
            [2, 3],
            [3, 1],
          ],
        },
      });
      const { kv } = await admin.get(topicKey(clusterId, 'orders'));
      expect(decodeReplicaAssignment(kv!.key, kv!.value)).toEqual(
        (created as { assignment: unknown }).assignment,
      );
      expect(await stateOf('orders', 2)).toEqual(state(3, 0, [3, 1], epoch));
      expect(node.controller.partitionState('orders', 1)?.state).toEqual(state(2, 0, [2, 3], epoch));
      // It then looks after the new partitions like any other.
      await leave(3);
      await flush();
      expect(await stateOf('orders', 2)).toEqual(state(1, 1, [1], epoch));
    });

    it('answers exists, invalidReplicationFactor, invalidPartitions, invalidTopic and, off the controller, notController', async () => {
      await join(2);
      const node = startControllerNode(1);
      const other = startControllerNode(9);
      await flush();
      expect(await node.controller.createTopic('t', 1, 1)).toMatchObject({ outcome: 'created' });
      expect(await node.controller.createTopic('t', 1, 1)).toEqual({ outcome: 'exists' });
      expect(await node.controller.createTopic('u', 1, 4)).toMatchObject({
        outcome: 'invalidReplicationFactor',
      });
      expect(await node.controller.createTopic('u', 0, 1)).toMatchObject({ outcome: 'invalidPartitions' });
      expect(await node.controller.createTopic('a/b', 1, 1)).toMatchObject({ outcome: 'invalidTopic' });
      expect(await other.controller.createTopic('u', 1, 1)).toEqual({ outcome: 'notController' });
    });

    it('a creation queued when the controller steps down answers notController', async () => {
      await join(2);
      const node = startControllerNode(1);
      await flush();
      const result = node.controller.createTopic('t', 1, 1);
      node.controller.close();
      await expect(result).resolves.toEqual({ outcome: 'notController' });
      expect((await admin.get(topicKey(clusterId, 't'))).kv).toBeUndefined();
    });

    it.each([true, false])(
      'after a lost answer (applied: %s), tells by a read whether it created the topic',
      async (applied) => {
        await join(2);
        const node = startControllerNode(1);
        await flush();
        node.store.loseNextResponse({ applied });
        const result = node.controller.createTopic('t', 2, 2);
        if (applied) {
          await expect(result).resolves.toMatchObject({ outcome: 'created' });
        } else {
          await expect(result).rejects.toMatchObject({ isOutcomeUnknown: true });
          expect(await node.controller.createTopic('t', 2, 2)).toMatchObject({ outcome: 'created' });
        }
        expect(writes).toHaveLength(2);
      },
    );
  });
});
