import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCode } from '../../../src/errors';
import type { BrokerConfig, FetchRequest, ReplicaManager, ReplicaManagerOptions } from '../../../src/log';
import {
  BrokerHarness,
  fetched,
  leaderConfig,
  onlyPartition,
  produced,
  record,
  settle,
  track,
  until,
  values,
} from './broker-harness';
import { FakeCluster } from './fake-cluster';
import { InMemoryLeader } from './in-memory-leader';

const LAG_MS = 10_000;

/** ReplicaManager driven by the cluster (PartitionRoleTarget), with a fake store and in-memory leaders. */
describe('ReplicaManager in cluster mode', () => {
  let h: BrokerHarness;
  let cluster: FakeCluster;
  /** Every endpoint the fetchers made, by "<from>-><to>". */
  let endpoints: Map<string, InMemoryLeader>;

  beforeEach(() => {
    h = new BrokerHarness();
    cluster = new FakeCluster();
    endpoints = new Map();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  function node(
    nodeId: number,
    overrides: Partial<BrokerConfig> = {},
    options: Partial<ReplicaManagerOptions> = {},
  ): ReplicaManager {
    const config = leaderConfig(h.dir(`node-${nodeId}`), {
      nodeId,
      replicaLagTimeMaxMs: LAG_MS,
      ...overrides,
    });
    const manager = h.start(config, {
      isrChangeProposer: cluster.proposerFor(nodeId),
      leaderEndpointFactory: (leader) => {
        const endpoint = new InMemoryLeader(cluster.managers.get(leader.nodeId)!, nodeId);
        endpoints.set(`${nodeId}->${leader.nodeId}`, endpoint);
        return endpoint;
      },
      replicaFetcherOptions: { fetchMaxWaitMs: 500, backoffMs: 1_000 },
      ...options,
    });
    cluster.managers.set(nodeId, manager);
    if (!cluster.liveNodes.some((n) => n.nodeId === nodeId)) {
      cluster.liveNodes.push({ nodeId, host: `node-${nodeId}`, port: 9000 + nodeId });
    }
    return manager;
  }

  function produce(manager: ReplicaManager, acks: number, values: string[], partitionIndex = 0) {
    return manager.produce({
      acks,
      timeoutMs: 60_000,
      topics: [{ name: 't', partitions: [{ partitionIndex, records: values.map((v) => record(v)) }] }],
    });
  }

  function fetchRequest(
    replicaId: number,
    fetchOffset: number,
    currentLeaderEpoch?: number,
    partitionIndex = 0,
  ): FetchRequest {
    return {
      replicaId,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      topics: [
        {
          name: 't',
          partitions: [{ partitionIndex, fetchOffset, partitionMaxBytes: 1 << 20, currentLeaderEpoch }],
        },
      ],
    };
  }

  /** Every record of the local log of `manager`'s t-0, as a follower reads (up to the LEO). */
  function logValues(manager: ReplicaManager): string[] {
    const partition = manager.getPartition('t-0')!;
    return values(partition.read(partition.logStartOffset, 1 << 20, true, true).records);
  }

  it('makes its replicas leaders and followers, and reports live nodes, epochs and offline partitions', async () => {
    const zero = node(0);
    cluster.liveNodes.push({ nodeId: 1, host: 'node-1', port: 9001 });
    cluster.set('t', 0, { leader: 0, leaderEpoch: 3, isr: [0, 1], replicas: [0, 1] }, false);
    cluster.set('t', 1, { leader: 1, leaderEpoch: 1, isr: [1, 0], replicas: [1, 0] }, false);
    cluster.set('t', 2, { leader: 1, leaderEpoch: 0, isr: [1, 2], replicas: [1, 2] }, false);
    cluster.set('t', 3, { leader: -1, leaderEpoch: 4, isr: [], replicas: [0, 1] });
    expect(zero.getPartition('t-0')).toMatchObject({ isLeader: true, leaderEpoch: 3 });
    expect(zero.getPartition('t-1')).toMatchObject({ isLeader: false, leaderId: 1, leaderEpoch: 1 });
    expect(zero.getPartition('t-2')).toBeUndefined();
    const metadata = await zero.metadata({ topics: [] });
    // The controller as the view names it (the fake cluster's is node 0).
    expect(metadata.controllerId).toBe(0);
    expect(metadata.brokers).toEqual([
      { nodeId: 0, host: 'node-0', port: 9000 },
      { nodeId: 1, host: 'node-1', port: 9001 },
    ]);
    expect(
      metadata.topics[0]!.partitions.map((p) => [
        p.leaderId,
        p.leaderEpoch,
        p.replicaNodes,
        p.isrNodes,
        p.errorCode,
      ]),
    ).toEqual([
      [0, 3, [0, 1], [0, 1], ErrorCode.NONE],
      [1, 1, [1, 0], [1, 0], ErrorCode.NONE],
      [1, 0, [1, 2], [1, 2], ErrorCode.NONE],
      [-1, 4, [0, 1], [], ErrorCode.LEADER_NOT_AVAILABLE],
    ]);
    expect(produced(await produce(zero, 1, ['a'])).errorCode).toBe(ErrorCode.NONE);
    for (const partitionIndex of [1, 2, 3]) {
      expect(produced(await produce(zero, 1, ['a'], partitionIndex)).errorCode).toBe(
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
      );
    }
  });

  it('answers Metadata as a node not yet in the cluster until its first view: no brokers, topics retriable', async () => {
    const zero = node(0);
    zero.setLocalBroker({ nodeId: 0, host: '127.0.0.1', port: 7070 });
    const notYet = {
      errorCode: ErrorCode.LEADER_NOT_AVAILABLE,
      partitions: [],
      errorMessage: expect.stringMatching(/^this node is not yet a member of the cluster/),
    };
    expect(await zero.metadata({ topics: ['t', '__consumer_offsets', 'no spaces'] })).toEqual({
      brokers: [],
      controllerId: -1,
      topics: [
        { name: 't', ...notYet },
        { name: '__consumer_offsets', ...notYet },
        {
          name: 'no spaces',
          errorCode: ErrorCode.INVALID_TOPIC_EXCEPTION,
          partitions: [],
          errorMessage: expect.stringContaining('may contain only'),
        },
      ],
    });
    expect(await zero.metadata({ topics: [] })).toEqual({ brokers: [], topics: [], controllerId: -1 });

    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0], replicas: [0] });
    const metadata = await zero.metadata({ topics: ['t', 'u'] });
    expect(metadata.brokers).toEqual([{ nodeId: 0, host: 'node-0', port: 9000 }]);
    expect(metadata.topics.map((t) => [t.name, t.errorCode, t.partitions.length])).toEqual([
      ['t', ErrorCode.NONE, 1],
      ['u', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0],
    ]);
    // Its session lost, it keeps answering from the view it had.
    zero.resignLeadership();
    expect((await zero.metadata({ topics: [] })).topics.map((t) => t.name)).toEqual(['t']);
  });

  it('does not answer from its data directory after a restart, before the cluster view', async () => {
    const first = node(0);
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0], replicas: [0] });
    await first.close();
    cluster.managers.delete(0);
    const again = node(0);
    expect(again.topicNames()).toEqual(['t']);
    expect((await again.metadata({ topics: ['t'] })).topics[0]).toMatchObject({
      errorCode: ErrorCode.LEADER_NOT_AVAILABLE,
    });
    expect(await again.metadata({ topics: [] })).toEqual({ brokers: [], topics: [], controllerId: -1 });
    cluster.publish();
    expect((await again.metadata({ topics: [] })).topics.map((t) => [t.name, t.errorCode])).toEqual([
      ['t', ErrorCode.NONE],
    ]);
  });

  it('leaves topic creation to the controller (NOT_CONTROLLER)', async () => {
    const zero = node(0);
    const created = await zero.createTopics({
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }],
    });
    expect(created.topics[0]!.errorCode).toBe(ErrorCode.NOT_CONTROLLER);
    expect(zero.topicNames()).toEqual([]);
  });

  it('closes a replica no longer assigned to it and forgets a topic the cluster no longer has', async () => {
    const zero = node(0);
    cluster.liveNodes.push({ nodeId: 1, host: 'node-1', port: 9001 });
    cluster.set('t', 0, { leader: 0, leaderEpoch: 0, isr: [0], replicas: [0] }, false);
    cluster.set('u', 0, { leader: 0, leaderEpoch: 0, isr: [0], replicas: [0] });
    expect(zero.topicNames().sort()).toEqual(['t', 'u']);
    cluster.states.delete('u-0');
    cluster.set('t', 0, { leader: 1, leaderEpoch: 1, isr: [1], replicas: [1] });
    expect(zero.topicNames()).toEqual(['t']);
    expect(zero.getPartition('t-0')).toBeUndefined();
    expect(zero.getPartition('u-0')).toBeUndefined();
    expect(produced(await produce(zero, 1, ['a'])).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  });

  it('opens a topic created again under the same name empty, once the earlier one closed, its directory moved aside', async () => {
    const zero = node(0, { minInsyncReplicas: 1 });
    cluster.set('t', 0, { leader: 0, leaderEpoch: 4, isr: [0], replicas: [0], topicId: 'first' });
    expect(produced(await produce(zero, 1, ['a', 'b', 'c'])).errorCode).toBe(ErrorCode.NONE);
    const dataDir = h.dir('node-0');
    expect(fs.readFileSync(path.join(dataDir, 't-0', 'partition.metadata'), 'utf8')).toContain(
      'topic_id: first',
    );

    // Deleted and created again, one view to the next: the new topic waits for the old log to close.
    cluster.set('t', 0, { leader: 0, leaderEpoch: 0, isr: [0], replicas: [0], topicId: 'second' });
    expect(zero.getPartition('t-0')).toBeUndefined();
    // The close fsyncs on the thread pool: a loaded machine may take many turns of the event loop.
    await until(() => zero.getPartition('t-0') !== undefined, 'the new topic to open', 200_000);
    const partition = zero.getPartition('t-0')!;
    expect([partition.logEndOffset, partition.leaderEpoch]).toEqual([0, 0]);
    expect(produced(await produce(zero, 1, ['x'])).baseOffset).toBe(0);
    expect(
      fs
        .readdirSync(dataDir)
        .filter((name) => name.startsWith('t-0'))
        .sort(),
    ).toEqual(['t-0', 't-0.first-stray']);
    expect(fs.readFileSync(path.join(dataDir, 't-0', 'partition.metadata'), 'utf8')).toContain(
      'topic_id: second',
    );
  });

  it('describes its replicas for a recovery: the epoch it was told if above its last batch, topic id and count', async () => {
    const zero = node(0, { minInsyncReplicas: 1 });
    cluster.set('t', 0, { leader: 0, leaderEpoch: 2, isr: [0], replicas: [0], topicId: 'tid' }, false);
    cluster.set('t', 1, { leader: 0, leaderEpoch: 2, isr: [0], replicas: [0], topicId: 'tid' });
    expect(produced(await produce(zero, 1, ['a', 'b'])).errorCode).toBe(ErrorCode.NONE);
    // Elected again, no write since: the log's last batch says 2, the partition knows 7.
    cluster.set('t', 0, { leader: 0, leaderEpoch: 7, isr: [0], replicas: [0], topicId: 'tid' });
    expect(await zero.describeLocalReplicas()).toEqual([
      { topic: 't', partitionIndex: 0, leaderEpoch: 7, logEndOffset: 2, topicId: 'tid', partitionCount: 2 },
      { topic: 't', partitionIndex: 1, leaderEpoch: 2, logEndOffset: 0, topicId: 'tid', partitionCount: 2 },
    ]);
  });

  it("takes a directory without partition.metadata (written before topic ids) as the topic's own", async () => {
    const zero = node(0, { minInsyncReplicas: 1 });
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0], replicas: [0] });
    expect(produced(await produce(zero, 1, ['a'])).errorCode).toBe(ErrorCode.NONE);
    cluster.set('t', 0, { leader: 0, leaderEpoch: 2, isr: [0], replicas: [0], topicId: 'given-later' });
    expect(zero.getPartition('t-0')!.logEndOffset).toBe(1);
  });

  it('refuses writes while its guard is inactive, and resigning answers parked acks=-1 and holds the HW', async () => {
    let isActive = true;
    const zero = node(0, { minInsyncReplicas: 1 }, { leadershipGuard: { isActive: () => isActive } });
    cluster.liveNodes.push({ nodeId: 1, host: 'node-1', port: 9001 });
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    isActive = false;
    expect(produced(await produce(zero, 1, ['a'])).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    isActive = true;
    const parked = track(produce(zero, -1, ['a']));
    await settle();
    expect(parked.isSettled).toBe(false);
    zero.resignLeadership();
    expect(produced(await parked.value).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    // Follower 1 has everything, but a resigned leader moves no HW: nothing becomes readable.
    const response = await zero.fetch(fetchRequest(1, 1), { authenticatedNodeId: 1 });
    expect(fetched(response).errorCode).toBe(ErrorCode.NONE);
    expect(zero.getPartition('t-0')!.highWatermark).toBe(0);
    expect(produced(await produce(zero, 1, ['b'])).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    // The session is back and the cluster still names this node: it leads again.
    cluster.publish();
    expect(produced(await produce(zero, 1, ['b'])).errorCode).toBe(ErrorCode.NONE);
  });

  it('shrinks the ISR through the store, without waiting for it on Produce or Fetch', async () => {
    cluster.isManual = true;
    const zero = node(0, { minInsyncReplicas: 1 });
    cluster.liveNodes.push(
      { nodeId: 1, host: 'node-1', port: 9001 },
      { nodeId: 2, host: 'node-2', port: 9002 },
    );
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1, 2], replicas: [0, 1, 2] });
    const acked = track(produce(zero, -1, ['a']));
    await zero.fetch(fetchRequest(1, 1), { authenticatedNodeId: 1 });
    // Follower 2 never fetches: after the lag its removal is proposed, and nothing changes yet.
    h.time.advance(LAG_MS + LAG_MS / 2);
    await settle();
    expect(cluster.held.map((p) => [p.key, p.isr, p.leaderEpoch, p.partitionEpoch])).toEqual([
      ['t-0', [0, 1], 1, cluster.states.get('t-0')!.partitionEpoch],
    ]);
    expect(acked.isSettled).toBe(false);
    expect(zero.getPartition('t-0')!.isr).toEqual([0, 1, 2]);
    // Produce and Fetch go on meanwhile.
    expect(produced(await produce(zero, 1, ['b'])).errorCode).toBe(ErrorCode.NONE);
    expect(fetched(await zero.fetch(fetchRequest(-1, 0))).records).toEqual([]);
    // No second proposal while one is in flight.
    h.time.advance(LAG_MS);
    await settle();
    expect(cluster.held).toHaveLength(1);
    const [held] = cluster.held.splice(0);
    held!.resolve(
      cluster.commitIsr(held!.nodeId, held!.key, held!.leaderEpoch, held!.partitionEpoch, held!.isr),
    );
    expect(produced(await acked.value).errorCode).toBe(ErrorCode.NONE);
    expect(zero.getPartition('t-0')!.isr).toEqual([0, 1]);
    expect(h.isrChanges).toEqual([{ topic: 't', partitionIndex: 0, isr: [0, 1] }]);
    expect(values(fetched(await zero.fetch(fetchRequest(-1, 0))).records)).toEqual(['a']);
  });

  it('serves replication only to the authenticated node it names, if that node is a replica', async () => {
    const zero = node(0);
    cluster.liveNodes.push(
      { nodeId: 1, host: 'node-1', port: 9001 },
      { nodeId: 2, host: 'node-2', port: 9002 },
    );
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    await produce(zero, 1, ['a']);
    const asked = { replicaId: 1, topics: [{ name: 't', partitions: [{ partition: 0, leaderEpoch: 1 }] }] };
    // A client posing as follower 1, and node 2 posing as node 1.
    for (const context of [{}, { authenticatedNodeId: 2 }]) {
      expect((await zero.fetch(fetchRequest(1, 1), context)).errorCode).toBe(
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
      );
      expect(onlyPartition(await zero.offsetForLeaderEpoch(asked, context)).errorCode).toBe(
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
      );
    }
    expect(zero.getPartition('t-0')!.followerState(1)!.logEndOffset).toBe(-1);
    // Node 2 as itself, but not a replica of t-0.
    const two = { authenticatedNodeId: 2 };
    expect(fetched(await zero.fetch(fetchRequest(2, 1), two)).errorCode).toBe(
      ErrorCode.NOT_LEADER_OR_FOLLOWER,
    );
    expect(onlyPartition(await zero.offsetForLeaderEpoch({ ...asked, replicaId: 2 }, two)).errorCode).toBe(
      ErrorCode.NOT_LEADER_OR_FOLLOWER,
    );
    // Node 1 as itself, and a consumer, which needs no node identity.
    const one = { authenticatedNodeId: 1 };
    expect(fetched(await zero.fetch(fetchRequest(1, 1), one)).errorCode).toBe(ErrorCode.NONE);
    expect(zero.getPartition('t-0')!.followerState(1)!.logEndOffset).toBe(1);
    expect(onlyPartition(await zero.offsetForLeaderEpoch(asked, one))).toEqual({
      errorCode: ErrorCode.NONE,
      partition: 0,
      leaderEpoch: 1,
      endOffset: 1,
    });
    expect(values(fetched(await zero.fetch(fetchRequest(-1, 0))).records)).toEqual(['a']);
  });

  it('accepts an unauthenticated replica fetch when the node is configured not to require it', async () => {
    const zero = node(0, { requireAuthenticatedReplicas: false });
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    expect(fetched(await zero.fetch(fetchRequest(1, 0))).errorCode).toBe(ErrorCode.NONE);
  });

  it('fences a fetch or ListOffsets of an older leader epoch and does not know a newer one', async () => {
    const zero = node(0);
    cluster.set('t', 0, { leader: 0, leaderEpoch: 2, isr: [0], replicas: [0] });
    const at = async (epoch: number) => fetched(await zero.fetch(fetchRequest(-1, 0, epoch))).errorCode;
    expect([await at(1), await at(2), await at(3)]).toEqual([
      ErrorCode.FENCED_LEADER_EPOCH,
      ErrorCode.NONE,
      ErrorCode.UNKNOWN_LEADER_EPOCH,
    ]);
    const offsets = await zero.listOffsets({
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp: -1, currentLeaderEpoch: 1 }] }],
    });
    expect(onlyPartition(offsets).errorCode).toBe(ErrorCode.FENCED_LEADER_EPOCH);
  });

  it('copies from each leader with one fetcher per leader node, and acks=-1 completes', async () => {
    const zero = node(0);
    const one = node(1);
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] }, false);
    cluster.set('t', 1, { leader: 1, leaderEpoch: 1, isr: [1, 0], replicas: [1, 0] });
    expect(zero.replicaFetcherManager!.leaderIds()).toEqual([1]);
    expect(one.replicaFetcherManager!.leaderIds()).toEqual([0]);
    const acked = await Promise.all([produce(zero, -1, ['a', 'b'], 0), produce(one, -1, ['c'], 1)]);
    expect(acked.map((response) => produced(response).errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
    expect(logValues(one)).toEqual(['a', 'b']);
    // Fetches carry the follower's epoch: the leader checked it (a wrong one would have failed above).
    expect(endpoints.get('1->0')!.calls).toBeGreaterThan(0);
  });

  it('stops the fetcher of a leader it no longer follows, and replaces one whose address changed', async () => {
    const zero = node(0);
    node(1);
    cluster.set('t', 0, { leader: 1, leaderEpoch: 1, isr: [1, 0], replicas: [1, 0] });
    expect(zero.replicaFetcherManager!.leaderIds()).toEqual([1]);
    const first = endpoints.get('0->1')!;
    // Node 1 restarts at another port: a new connection.
    cluster.liveNodes = cluster.liveNodes.map((n) => (n.nodeId === 1 ? { ...n, port: 9101 } : n));
    cluster.publish();
    await until(() => first.isClosed, 'the old connection to close');
    const second = endpoints.get('0->1')!;
    expect(second).not.toBe(first);
    expect(zero.replicaFetcherManager!.leaderIds()).toEqual([1]);
    // Node 0 takes over: it follows nobody.
    cluster.elect('t', 0, 0, [0]);
    await until(() => second.isClosed, 'the fetcher to stop');
    expect(zero.replicaFetcherManager!.leaderIds()).toEqual([]);
  });

  it('truncates a returning old leader’s divergent tail to the new leader’s epoch boundary, then copies', async () => {
    const a = node(0);
    const b = node(1);
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    // Leader A at epoch 1 writes 0..7; follower B copies them.
    const first = Array.from({ length: 8 }, (_, i) => `v${i}`);
    expect(produced(await produce(a, -1, first)).errorCode).toBe(ErrorCode.NONE);
    await until(() => a.numDelayedFetch === 1, 'B to park its next fetch');
    // B loses A; A appends 8 and 9, which never reach B.
    endpoints.get('1->0')!.isDown = true;
    expect(produced(await produce(a, 1, ['lost8', 'lost9'])).errorCode).toBe(ErrorCode.NONE);
    expect(logValues(a)).toEqual([...first, 'lost8', 'lost9']);
    expect(a.getPartition('t-0')!.highWatermark).toBe(8);
    // A is gone: B leads at epoch 2 and writes 8 and 9 of its own.
    cluster.liveNodes = cluster.liveNodes.filter((n) => n.nodeId !== 0);
    cluster.elect('t', 0, 1, [1]);
    expect(b.getPartition('t-0')).toMatchObject({ isLeader: true, leaderEpoch: 2 });
    expect(produced(await produce(b, 1, ['b8', 'b9'])).errorCode).toBe(ErrorCode.NONE);
    // A comes back and learns it follows B at epoch 2: it must drop its 8 and 9 and copy B's.
    cluster.liveNodes.push({ nodeId: 0, host: 'node-0', port: 9000 });
    cluster.publish();
    expect(a.getPartition('t-0')).toMatchObject({ isLeader: false, leaderId: 1, leaderEpoch: 2 });
    await until(() => a.getPartition('t-0')!.logEndOffset === 10 && logValues(a)[8] === 'b8', 'A to copy B');
    expect(logValues(a)).toEqual([...first, 'b8', 'b9']);
    expect(logValues(a)).toEqual(logValues(b));
    expect(endpoints.get('0->1')!.fetchOffsets[0]).toBe(8);
    // Caught up, A rejoins B's ISR through the store.
    await until(() => b.getPartition('t-0')!.isr.length === 2, 'A to rejoin the ISR');
    expect(cluster.states.get('t-0')!.isr).toEqual([0, 1]);
  });

  it('truncates through an epoch it never had, asking again at the intermediate boundary (KIP-279)', async () => {
    const a = node(0);
    const b = node(1);
    // Both follow node 2, which is not live: nobody fetches while the logs are set up.
    cluster.set('t', 0, { leader: 2, leaderEpoch: 0, isr: [2], replicas: [0, 1, 2] });
    const records = (from: number, epoch: number, tag: string, count: number) =>
      Array.from({ length: count }, (_, i) => ({
        offset: from + i,
        timestampMs: 1,
        key: null,
        value: Buffer.from(`${tag}${from + i}`),
        headers: [],
        leaderEpoch: epoch,
      }));
    // A: 0..3 and 4 at epoch 1, 5..7 at epoch 3 (a leader B never heard of). B: 0..3 at epoch 1, 4..9 at 2.
    const aLog = a.getPartition('t-0')!.log;
    aLog.appendAsFollower([...records(0, 1, 'c', 4), ...records(4, 1, 'a', 1)]);
    aLog.appendAsFollower(records(5, 3, 'a', 3));
    const bLog = b.getPartition('t-0')!.log;
    bLog.appendAsFollower(records(0, 1, 'c', 4));
    bLog.appendAsFollower(records(4, 2, 'b', 6));
    // B leads at epoch 4. A asks for epoch 3: B's answer is epoch 2 ending at 10, which A does not have;
    // A cuts to the end of its epoch 1 (5) and asks for 1: B's epoch 1 ends at 4, where A cuts again.
    // (B hears of it first: asked earlier, it would answer UNKNOWN_LEADER_EPOCH and A would back off.)
    cluster.set('t', 0, { leader: 1, leaderEpoch: 4, isr: [1], replicas: [0, 1, 2] }, false);
    cluster.publish([1]);
    cluster.publish([0]);
    await until(() => a.getPartition('t-0')!.logEndOffset === 10, 'A to copy B');
    expect(logValues(a)).toEqual(['c0', 'c1', 'c2', 'c3', 'b4', 'b5', 'b6', 'b7', 'b8', 'b9']);
    // Cut at the epoch boundary, not at its HW (0): it kept 0..3 and fetched from 4.
    expect(endpoints.get('0->1')!.fetchOffsets[0]).toBe(4);
    expect(aLog.epochEntries().map((e) => [e.epoch, e.startOffset])).toEqual([
      [1, 0],
      [2, 4],
    ]);
  });

  it('stamps its leader epoch on what it appends, and a follower keeps it', async () => {
    const zero = node(0);
    const one = node(1);
    cluster.set('t', 0, { leader: 0, leaderEpoch: 7, isr: [0, 1], replicas: [0, 1] });
    expect(produced(await produce(zero, -1, ['a'])).errorCode).toBe(ErrorCode.NONE);
    for (const manager of [zero, one]) {
      const partition = manager.getPartition('t-0')!;
      expect(partition.log.latestEpoch()).toBe(7);
      expect(partition.read(0, 1 << 20, true, true).records.map((r) => r.leaderEpoch)).toEqual([7]);
    }
    const response = await zero.offsetForLeaderEpoch(
      { replicaId: 1, topics: [{ name: 't', partitions: [{ partition: 0, leaderEpoch: 7 }] }] },
      { authenticatedNodeId: 1 },
    );
    expect(onlyPartition(response)).toMatchObject({ leaderEpoch: 7, endOffset: 1 });
  });

  it('is not fenced by the answer to a fetch it sent in the epoch it has just left', async () => {
    const zero = node(0);
    const one = node(1);
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    await produce(zero, 1, ['a']);
    await until(() => logValues(one).length === 1, 'follower 1 to copy');
    await settle(5); // follower 1's next fetch, at epoch 1, waits on the leader
    // Epoch 2 (the controller dropped a dead replica, say) reaches the leader, which answers the parked
    // epoch-1 fetch FENCED_LEADER_EPOCH, and the follower, which moves to epoch 2 before that answer lands.
    cluster.set('t', 0, { leader: 0, leaderEpoch: 2, isr: [0, 1], replicas: [0, 1] }, false);
    cluster.publish([0, 1]);
    await settle(20);
    // No later change of the partition's state comes; the follower still copies at epoch 2.
    await produce(zero, 1, ['b']);
    h.time.advance(500);
    await until(() => logValues(one).length === 2, 'follower 1 to copy at epoch 2');
  });

  it('backs off a follower the leader fences until the metadata moves on', async () => {
    const zero = node(0);
    const one = node(1);
    cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    await produce(zero, 1, ['a']);
    await until(() => logValues(one).length === 1, 'follower 1 to copy');
    // The leader hears of epoch 2 (a re-election of itself) before follower 1 does.
    cluster.set('t', 0, { leader: 0, leaderEpoch: 2, isr: [0, 1], replicas: [0, 1] }, false);
    cluster.publish([0]);
    await produce(zero, 1, ['b']);
    h.time.advance(500);
    await until(() => one.followerFetchTargets(0).length === 0, 'follower 1 to be fenced');
    const callsWhenFenced = endpoints.get('1->0')!.calls;
    h.time.advance(5_000);
    await settle(20);
    expect(logValues(one)).toEqual(['a']);
    expect(endpoints.get('1->0')!.calls - callsWhenFenced).toBeLessThanOrEqual(1);
    // Epoch 2 reaches follower 1: it fetches again.
    cluster.publish([1]);
    await until(() => logValues(one).length === 2, 'follower 1 to copy at epoch 2');
    expect(logValues(one)).toEqual(['a', 'b']);
  });
});
