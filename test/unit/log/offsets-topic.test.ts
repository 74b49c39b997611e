import { CohortError, ErrorCode } from '../../../src/errors';
import type { BrokerConfig, FetchRequest, ReplicaManager, ReplicaManagerOptions } from '../../../src/log';
import type { OffsetCommitValue } from '../../../src/group/records/consumer-offsets-record';
import type { ConsumerOffsetsWriter } from '../../../src/log/consumer-offsets';
import type { LogConfig } from '../../../src/log/storage';
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
} from './broker-harness';
import { ReplayedPartition } from '../../support/replayed-partition';
import { FakeCluster } from './fake-cluster';

const TOPIC = '__consumer_offsets';
const KEY = `${TOPIC}-0`;

function offset(committedOffset: number): OffsetCommitValue {
  return { committedOffset, committedLeaderEpoch: -1, metadata: '', commitTimestampMs: 1_000 };
}

type Call = [call: 'election' | 'resignation', partitionIndex: number, leaderEpoch: number];

/**
 * `__consumer_offsets` hosted by ReplicaManagers in cluster mode (a fake cluster, manual time): the
 * listener's elections and resignations, stores whose writes resolve only once committed, and the
 * topic replicated with its exact offsets once compaction has left gaps.
 */
describe('__consumer_offsets on a replicated ReplicaManager', () => {
  let h: BrokerHarness;
  let cluster: FakeCluster;
  let calls: Map<number, Call[]>;
  let stores: Map<number, Map<number, ReplayedPartition>>;
  let writers: Map<number, Map<number, ConsumerOffsetsWriter>>;

  beforeEach(() => {
    h = new BrokerHarness();
    cluster = new FakeCluster();
    calls = new Map();
    stores = new Map();
    writers = new Map();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  function node(
    nodeId: number,
    overrides: Partial<BrokerConfig> = {},
    offsetsTopic: { logConfig?: Partial<LogConfig>; commitTimeoutMs?: number } = {},
    options: Partial<ReplicaManagerOptions> = {},
  ): ReplicaManager {
    const made: Call[] = [];
    const led = new Map<number, ReplayedPartition>();
    const ledWriters = new Map<number, ConsumerOffsetsWriter>();
    calls.set(nodeId, made);
    stores.set(nodeId, led);
    writers.set(nodeId, ledWriters);
    const manager = h.start(
      leaderConfig(h.dir(`node-${nodeId}`), {
        nodeId,
        replicaLagTimeMaxMs: 10_000,
        ...overrides,
      }),
      {
        isrChangeProposer: cluster.proposerFor(nodeId),
        offsetsTopic: {
          ...offsetsTopic,
          listener: {
            onElection: (partitionIndex, leaderEpoch, writer) => {
              made.push(['election', partitionIndex, leaderEpoch]);
              ledWriters.set(partitionIndex, writer);
              led.set(partitionIndex, new ReplayedPartition(writer));
            },
            onResignation: (partitionIndex, leaderEpoch) => {
              made.push(['resignation', partitionIndex, leaderEpoch]);
              led.delete(partitionIndex);
              ledWriters.delete(partitionIndex);
            },
          },
        },
        ...options,
      },
    );
    cluster.managers.set(nodeId, manager);
    cluster.liveNodes.push({ nodeId, host: `node-${nodeId}`, port: 9000 + nodeId });
    return manager;
  }

  async function loadedStore(nodeId: number, partitionIndex = 0): Promise<ReplayedPartition> {
    const store = stores.get(nodeId)!.get(partitionIndex)!;
    expect(store).toBeDefined();
    await store.load();
    return store;
  }

  /** A replica fetch of __consumer_offsets-0 by `replicaId`, as its fetcher sends it. */
  function replicaFetch(replicaId: number, fetchOffset: number, maxBytes = 1 << 20): FetchRequest {
    return {
      replicaId,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes,
      topics: [
        { name: TOPIC, partitions: [{ partitionIndex: 0, fetchOffset, partitionMaxBytes: maxBytes }] },
      ],
    };
  }

  async function errorOf(promise: Promise<unknown>): Promise<ErrorCode> {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CohortError);
    return (error as CohortError).code;
  }

  const commit = (store: ReplayedPartition, n: number, partition = 0): Promise<void> =>
    store.commit('g', [{ topic: 't', partition, offset: offset(n) }]);

  it('elects a store at the leader epoch; its commit resolves only once the follower has it (HW passed)', async () => {
    const zero = node(0);
    cluster.liveNodes.push({ nodeId: 1, host: 'node-1', port: 9001 });
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 2, isr: [0, 1], replicas: [0, 1] });
    expect(calls.get(0)).toEqual([['election', 0, 2]]);
    const store = await loadedStore(0);
    expect(store.leaderEpoch).toBe(2);

    const committed = track(commit(store, 5));
    await settle();
    expect(committed.isSettled).toBe(false);
    expect(store.get('g', 't', 0)).toBeUndefined();
    // The follower fetches the record (its LEO is still 0: nothing is committed yet) ...
    const first = fetched(await zero.fetch(replicaFetch(1, 0), { authenticatedNodeId: 1 }));
    expect(first.records.map((r) => [r.offset, r.leaderEpoch])).toEqual([[0, 2]]);
    await settle();
    expect(committed.isSettled).toBe(false);
    // ... and asks for the next one: it has offset 0, the HW passes it, the commit resolves.
    await zero.fetch(replicaFetch(1, 1), { authenticatedNodeId: 1 });
    await committed.value;
    expect(zero.getPartition(KEY)!.highWatermark).toBe(1);
    expect(store.get('g', 't', 0)).toEqual(offset(5));
  });

  it("a deposed leader's write never resolves: NOT_LEADER_OR_FOLLOWER, and the resignation is told once", async () => {
    node(0);
    node(1);
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    const store = await loadedStore(0);
    const pending = commit(store, 1);
    cluster.elect(TOPIC, 0, 1, [1, 0]);
    expect(await errorOf(pending)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(store.isResigned).toBe(true);
    expect(store.get('g', 't', 0)).toBeUndefined();
    expect(await errorOf(commit(store, 2))).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(calls.get(0)).toEqual([
      ['election', 0, 1],
      ['resignation', 0, 1],
    ]);
    expect(calls.get(1)).toEqual([['election', 0, 2]]);
    // Republishing the same view changes nothing.
    cluster.publish();
    expect(calls.get(0)).toHaveLength(2);
    expect(calls.get(1)).toHaveLength(1);
  });

  it('a new epoch here is a resignation, then an election; the new store loads to the log end offset', async () => {
    const zero = node(0);
    cluster.liveNodes.push({ nodeId: 1, host: 'node-1', port: 9001 });
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    const old = await loadedStore(0);
    const pending = commit(old, 7);
    // Follower 1 is gone: the controller elects this node again, alone, at the next epoch.
    cluster.elect(TOPIC, 0, 0, [0]);
    expect(calls.get(0)).toEqual([
      ['election', 0, 1],
      ['resignation', 0, 1],
      ['election', 0, 2],
    ]);
    expect(await errorOf(pending)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(old.get('g', 't', 0)).toBeUndefined();
    // Kafka's loadGroupsAndOffsets reads to the log end: the record of the old epoch is in the new view.
    const store = await loadedStore(0);
    expect(store.get('g', 't', 0)).toEqual(offset(7));
    await commit(store, 8);
    expect(store.get('g', 't', 0)).toEqual(offset(8));
    const partition = zero.getPartition(KEY)!;
    expect(partition.read(0, 1 << 20, true, true).records.map((r) => r.leaderEpoch)).toEqual([1, 2]);
  });

  /**
   * Node 1 takes over __consumer_offsets-0 from node 0 holding a record node 0 appended (a commit of 5)
   * that follower 2 does not have yet: node 1 fetched it, but not the HW past it (its HW is 0, its LEO 1).
   * Node 0 is gone; node 1 leads at epoch 2 with 2 still in sync. Returns node 1 and its store, not loaded.
   */
  async function takeOverAboveHw(): Promise<{ one: ReplicaManager; store: ReplayedPartition }> {
    const zero = node(0);
    const one = node(1);
    node(2);
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 1, isr: [0, 1, 2], replicas: [0, 1, 2] });
    const old = await loadedStore(0);
    // Never committed: node 0 is gone before anyone acknowledges the fetch (its close rejects it).
    void commit(old, 5).catch(() => undefined);
    const data = fetched(await zero.fetch(replicaFetch(1, 0), { authenticatedNodeId: 1 }));
    expect(one.applyFetchedPartition(KEY, data, 1)).toBe('appended');
    cluster.liveNodes = cluster.liveNodes.filter((n) => n.nodeId !== 0);
    cluster.elect(TOPIC, 0, 1, [1, 2]);
    const leader = one.getPartition(KEY)!;
    expect([leader.isLeader, leader.highWatermark, leader.logEndOffset]).toEqual([true, 0, 1]);
    return { one, store: stores.get(1)!.get(0)! };
  }

  it("a new leader's load ends only once the HW covers what it loaded: the old leader's records above it are not served before", async () => {
    const { one, store } = await takeOverAboveHw();
    const loading = track(store.load());
    await settle();
    // Replayed, but not committed: nothing is served or written, nothing counts as loaded.
    expect(loading.isSettled).toBe(false);
    expect(store.isLoaded).toBe(false);
    expect(one.numDelayedProduce).toBe(1);
    expect(await errorOf(commit(store, 6))).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    // Follower 2 fetches the record, then asks for the next one: the HW passes it and the load ends.
    await one.fetch(replicaFetch(2, 0), { authenticatedNodeId: 2 });
    await settle();
    expect(loading.isSettled).toBe(false);
    await one.fetch(replicaFetch(2, 1), { authenticatedNodeId: 2 });
    const loaded = await loading.value;
    expect([loaded.endOffset, one.getPartition(KEY)!.highWatermark]).toEqual([1, 1]);
    expect(store.isLoaded).toBe(true);
    expect(store.get('g', 't', 0)).toEqual(offset(5));
    expect(one.numDelayedProduce).toBe(0);
  });

  it("a new leader's load waits for the ISR to drop a follower that does not fetch, then ends", async () => {
    const { one, store } = await takeOverAboveHw();
    const loading = track(store.load());
    h.time.advance(9_999);
    await settle();
    expect(loading.isSettled).toBe(false);
    // Past replica.lag.time.max.ms (10 s) follower 2 leaves the ISR: node 1 alone, its LEO is the HW.
    h.time.advance(10_000);
    await loading.value;
    expect(one.getPartition(KEY)!.isr).toEqual([1]);
    expect(store.get('g', 't', 0)).toEqual(offset(5));
  });

  it("a resignation during the load's wait for the HW rejects it NOT_LEADER_OR_FOLLOWER and leaves nothing parked", async () => {
    const { one, store } = await takeOverAboveHw();
    const loading = store.load();
    await settle();
    expect(one.numDelayedProduce).toBe(1);
    cluster.elect(TOPIC, 0, 2, [2]);
    expect(await errorOf(loading)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(store.isLoaded).toBe(false);
    expect(one.numDelayedProduce).toBe(0);
    expect(calls.get(1)).toEqual([
      ['election', 0, 2],
      ['resignation', 0, 2],
    ]);
  });

  it('a lost session or a shutdown during the wait rejects the load too', async () => {
    const { one, store } = await takeOverAboveHw();
    const loading = store.load();
    await settle();
    one.resignLeadership();
    expect(await errorOf(loading)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(one.numDelayedProduce).toBe(0);
    // The session is back: a new store, whose wait the shutdown ends.
    cluster.publish();
    const again = stores.get(1)!.get(0)!.load();
    await settle();
    expect(one.numDelayedProduce).toBe(1);
    one.shutdown();
    expect(await errorOf(again)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  });

  it('answers REQUEST_TIMED_OUT after the commit timeout, NOT_ENOUGH_REPLICAS below the minimum ISR', async () => {
    node(0, { minInsyncReplicas: 2 }, { commitTimeoutMs: 5_000 });
    cluster.liveNodes.push({ nodeId: 1, host: 'node-1', port: 9001 });
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 0, isr: [0, 1], replicas: [0, 1] });
    const store = await loadedStore(0);
    const pending = track(commit(store, 1));
    h.time.advance(4_999);
    await settle();
    expect(pending.isSettled).toBe(false);
    h.time.advance(1);
    expect(await errorOf(pending.value)).toBe(ErrorCode.REQUEST_TIMED_OUT);
    expect(store.get('g', 't', 0)).toBeUndefined();
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 0, isr: [0], replicas: [0, 1] });
    expect(await errorOf(commit(store, 2))).toBe(ErrorCode.NOT_ENOUGH_REPLICAS);
  });

  it('a lost session, an unassignment and a shutdown each resign; a view naming this node again elects', async () => {
    const zero = node(0);
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 0, isr: [0], replicas: [0] });
    cluster.set(TOPIC, 1, { leader: 0, leaderEpoch: 0, isr: [0], replicas: [0] });
    const store = await loadedStore(0);
    await commit(store, 1);
    zero.resignLeadership();
    expect(await errorOf(commit(store, 2))).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(calls.get(0)!.slice(2)).toEqual([
      ['resignation', 0, 0],
      ['resignation', 1, 0],
    ]);
    cluster.publish();
    expect(calls.get(0)!.slice(4)).toEqual([
      ['election', 0, 0],
      ['election', 1, 0],
    ]);
    expect((await loadedStore(0)).get('g', 't', 0)).toEqual(offset(1));
    // Partition 1 moves to another node: unassigned here.
    cluster.liveNodes.push({ nodeId: 1, host: 'node-1', port: 9001 });
    cluster.set(TOPIC, 1, { leader: 1, leaderEpoch: 1, isr: [1], replicas: [1] });
    expect(calls.get(0)!.slice(6)).toEqual([['resignation', 1, 0]]);
    const last = stores.get(0)!.get(0)!;
    zero.shutdown();
    expect(calls.get(0)!.slice(7)).toEqual([['resignation', 0, 0]]);
    expect(await errorOf(commit(last, 3))).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  });

  it('serves replica Fetch, Metadata by name and OffsetForLeaderEpoch on it, but no Produce, and lists it only by name', async () => {
    const zero = node(0);
    cluster.liveNodes.push({ nodeId: 1, host: 'node-1', port: 9001 });
    cluster.set('t', 0, { leader: 0, leaderEpoch: 0, isr: [0], replicas: [0] }, false);
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 3, isr: [0, 1], replicas: [0, 1] });
    const store = await loadedStore(0);
    const pending = commit(store, 1);
    expect((await zero.metadata({ topics: [] })).topics.map((t) => t.name)).toEqual(['t']);
    const named = await zero.metadata({ topics: [TOPIC] });
    expect(
      named.topics[0]!.partitions.map((p) => [p.partitionIndex, p.leaderId, p.leaderEpoch, p.isrNodes]),
    ).toEqual([[0, 0, 3, [0, 1]]]);
    const produce = await zero.produce({
      acks: 1,
      timeoutMs: 1_000,
      topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, records: [record('x', 'k')] }] }],
    });
    expect(produced(produce).errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
    const epochs = await zero.offsetForLeaderEpoch(
      { replicaId: 1, topics: [{ name: TOPIC, partitions: [{ partition: 0, leaderEpoch: 3 }] }] },
      { authenticatedNodeId: 1 },
    );
    expect(onlyPartition(epochs)).toMatchObject({ errorCode: ErrorCode.NONE, leaderEpoch: 3, endOffset: 1 });
    // A client posing as the follower gets nothing.
    expect((await zero.fetch(replicaFetch(1, 1))).errorCode).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
    await zero.fetch(replicaFetch(1, 1), { authenticatedNodeId: 1 });
    await pending;
  });

  it('replicates a compacted partition with its exact offsets, gaps included, and compacts only below the HW', async () => {
    const small = { logConfig: { segmentBytes: 400 } };
    const zero = node(0, {}, small);
    const one = node(1, {}, small);
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    const store = await loadedStore(0);
    const leader = zero.getPartition(KEY)!;
    // Two keys overwritten again and again, over several segments, none committed yet (1 never fetched).
    const writes: Promise<void>[] = [];
    for (let n = 0; n < 40; n++) writes.push(commit(store, n, n % 2));
    expect(leader.log.numberOfSegments).toBeGreaterThan(2);
    // Nothing is below the HW: compaction must leave every segment as it is.
    const early = await writers.get(0)!.get(0)!.compact();
    expect([early.isAborted, early.recordsRemoved]).toEqual([false, 0]);
    // Follower 1 copies everything; the HW reaches the log end and every write resolves.
    await zero.fetch(replicaFetch(1, 0), { authenticatedNodeId: 1 });
    await zero.fetch(replicaFetch(1, leader.logEndOffset), { authenticatedNodeId: 1 });
    await Promise.all(writes);
    const compacted = await writers.get(0)!.get(0)!.compact();
    expect(compacted.recordsRemoved).toBeGreaterThan(0);
    const leaderOffsets = leader.read(0, 1 << 20, true, true).records.map((r) => r.offset);
    expect(leaderOffsets.length).toBeLessThan(40);
    expect(leaderOffsets.at(-1)).toBe(39);
    // Across a compacted range: a fetch at an offset compaction removed returns the next record there.
    const gapOffset = [...Array(40).keys()].find((o) => !leaderOffsets.includes(o))!;
    const fromGap = fetched(await zero.fetch(replicaFetch(1, gapOffset), { authenticatedNodeId: 1 }));
    expect(fromGap.records[0]!.offset).toBe(leaderOffsets.find((o) => o > gapOffset));

    // A new replica, node 2, copies the compacted log in small fetches, as its fetcher would.
    const two = node(2, {}, small);
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1, 2] });
    const follower = two.getPartition(KEY)!;
    expect(follower.isLeader).toBe(false);
    const sent: [number, string][] = [];
    for (let rounds = 0; follower.logEndOffset < leader.logEndOffset; rounds++) {
      expect(rounds).toBeLessThan(100);
      const data = fetched(
        await zero.fetch(replicaFetch(2, follower.logEndOffset, 150), { authenticatedNodeId: 2 }),
      );
      for (const r of data.records) sent.push([r.offset, r.key!.toString('hex')]);
      expect(two.applyFetchedPartition(KEY, data, 1)).toBe('appended');
      // What was just appended is there at the leader's offsets (the active segment is never compacted).
      const appended = follower.read(data.records[0]!.offset, 1 << 20, true, true).records;
      expect(appended.map((r) => r.offset)).toEqual(data.records.map((r) => r.offset));
    }
    const leaderRecords = leader
      .read(0, 1 << 20, true, true)
      .records.map((r): [number, string] => [r.offset, r.key!.toString('hex')]);
    expect(sent).toEqual(leaderRecords);
    expect(follower.logEndOffset).toBe(leader.logEndOffset);
    // The follower may have compacted its copy meanwhile: whatever it holds is at the leader's offsets.
    const byOffset = new Map(leaderRecords);
    for (const r of follower.read(0, 1 << 20, true, true).records) {
      expect(byOffset.get(r.offset)).toBe(r.key!.toString('hex'));
    }
    // The copy loads the same view once node 2 leads.
    const view = store.list('g');
    cluster.elect(TOPIC, 0, 2, [2]);
    expect((await loadedStore(2)).list('g')).toEqual(view);
    void one;
  });

  it('a follower compacts its own copy below its HW, and the copy loads the same view when it leads', async () => {
    const small = { logConfig: { segmentBytes: 400 } };
    const zero = node(0, {}, small);
    const one = node(1, {}, small);
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    const store = await loadedStore(0);
    const leader = zero.getPartition(KEY)!;
    const follower = one.getPartition(KEY)!;
    const writes: Promise<void>[] = [];
    for (let n = 0; n < 40; n++) writes.push(commit(store, n, n % 2));
    // The follower copies everything, then learns the HW from its next fetch.
    for (let rounds = 0; follower.highWatermark < leader.logEndOffset; rounds++) {
      expect(rounds).toBeLessThan(100);
      const data = fetched(
        await zero.fetch(replicaFetch(1, follower.logEndOffset, 300), { authenticatedNodeId: 1 }),
      );
      one.applyFetchedPartition(KEY, data, 1);
    }
    await Promise.all(writes);
    const recordsOf = (): number => follower.read(0, 1 << 20, true, true).records.length;
    await until(() => recordsOf() < 40, "the follower's compaction");
    expect(follower.read(0, 1 << 20, true, true).records.at(-1)!.offset).toBe(39);
    const view = store.list('g');
    cluster.elect(TOPIC, 0, 1, [1]);
    expect((await loadedStore(1)).list('g')).toEqual(view);
  });

  it('a listener that throws is reported, and the partition changes it was told of are made all the same', async () => {
    const zero = h.start(leaderConfig(h.dir('node-0'), { nodeId: 0 }), {
      isrChangeProposer: cluster.proposerFor(0),
      offsetsTopic: {
        listener: {
          onElection: () => {
            throw new Error('election listener');
          },
          onResignation: () => {
            throw new Error('resignation listener');
          },
        },
      },
    });
    cluster.managers.set(0, zero);
    cluster.liveNodes.push({ nodeId: 0, host: 'node-0', port: 9000 });
    cluster.set(TOPIC, 0, { leader: 0, leaderEpoch: 0, isr: [0], replicas: [0] }, false);
    cluster.set('t', 0, { leader: 0, leaderEpoch: 0, isr: [0], replicas: [0] });
    expect(zero.getPartition('t-0')!.isLeader).toBe(true);
    zero.resignLeadership();
    expect(h.errors.map((e) => (e as Error).message)).toEqual(['election listener', 'resignation listener']);
  });
});
