import { ErrorCode } from '../../../src/errors';
import type { LeaderFailure, ReplicaManager } from '../../../src/log';
import { ReplicaFetcher } from '../../../src/log';
import { SystemTimer } from '../../../src/timer';
import {
  BrokerHarness,
  fetched,
  leaderConfig,
  produced,
  record,
  settle,
  track,
  until,
  values,
} from './broker-harness';
import { InMemoryLeader } from './in-memory-leader';

describe('ReplicaFetcher', () => {
  let h: BrokerHarness;
  const fetchers: ReplicaFetcher[] = [];
  const errors: string[] = [];
  /** What onLeaderFailure and onLeaderRecovered were told, in order. */
  const reports: { event: 'failure' | 'recovered'; failure: LeaderFailure }[] = [];

  beforeEach(() => {
    h = new BrokerHarness();
  });

  afterEach(async () => {
    for (const fetcher of fetchers.splice(0)) await fetcher.stop();
    errors.length = 0;
    reports.length = 0;
    await h.cleanup();
  });

  function follower(nodeId: number, leader: ReplicaManager, endpoint = new InMemoryLeader(leader)) {
    const manager = h.start(
      leaderConfig(h.dir(`follower-${nodeId}`), { nodeId, isFollower: true, followers: [] }),
    );
    const fetcher = new ReplicaFetcher(nodeId, manager, endpoint, {
      time: h.time,
      timer: new SystemTimer({ time: h.time }),
      fetchMaxWaitMs: 500,
      backoffMs: 1_000,
      metadataRefreshIntervalMs: 1_000,
      onError: (_error, what) => errors.push(what),
      onLeaderFailure: (failure) => reports.push({ event: 'failure', failure }),
      onLeaderRecovered: (failure) => reports.push({ event: 'recovered', failure }),
    });
    fetchers.push(fetcher);
    fetcher.start();
    return { manager, fetcher, endpoint };
  }

  async function produce(leader: ReplicaManager, acks: number, ...records: string[]) {
    return leader.produce({
      acks,
      timeoutMs: 60_000,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: records.map((v) => record(v)) }] }],
    });
  }

  function consumerRead(manager: ReplicaManager) {
    return manager.fetch({
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }] },
      ],
    });
  }

  it('learns the leader’s topics, copies their records, and completes acks=-1 with both followers', async () => {
    const leader = h.leader();
    await leader.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 3 }] });
    const one = follower(1, leader);
    const two = follower(2, leader);
    await until(
      () => one.manager.getPartition('t-0') !== undefined && two.manager.getPartition('t-0') !== undefined,
    );
    await until(() => leader.numDelayedFetch === 2, 'both followers to park a fetch');

    const acked = track(produce(leader, -1, 'a', 'b'));
    expect(produced(await acked.value).errorCode).toBe(ErrorCode.NONE);
    for (const f of [one, two]) expect(f.manager.getPartition('t-0')!.logEndOffset).toBe(2);
    expect(leader.getPartition('t-0')!.highWatermark).toBe(2);

    // A follower learns the new HW with its next response: here when its parked fetch expires.
    await until(() => leader.numDelayedFetch === 2, 'both followers to park again');
    h.time.advance(500);
    await until(() => one.manager.getPartition('t-0')!.highWatermark === 2, 'follower 1 to learn the HW');
    expect(values(fetched(await consumerRead(one.manager)).records)).toEqual(['a', 'b']);
    expect(errors).toEqual([]);
  });

  it('reports the leader’s replicas and ISR in a follower’s Metadata', async () => {
    const leader = h.leader({ followers: [1] });
    leader.setLocalBroker({ nodeId: 0, host: '127.0.0.1', port: 9000 });
    await leader.createTopics({ topics: [{ name: 't', numPartitions: 2, replicationFactor: 2 }] });
    const one = follower(1, leader);
    one.manager.setLocalBroker({ nodeId: 1, host: '127.0.0.1', port: 9001 });
    await until(() => one.manager.topicNames().length === 1);
    const metadata = await one.manager.metadata({ topics: ['t'] });
    expect(metadata.brokers).toEqual([
      { nodeId: 1, host: '127.0.0.1', port: 9001 },
      { nodeId: 0, host: '127.0.0.1', port: 9000 },
    ]);
    expect(metadata.topics[0]!.partitions.map((p) => [p.leaderId, p.replicaNodes, p.isrNodes])).toEqual([
      [0, [0, 1], [0, 1]],
      [0, [0, 1], [0, 1]],
    ]);
  });

  it('copies only the partitions that list it as a replica', async () => {
    const leader = h.leader();
    await leader.createTopics({
      topics: [
        { name: 't', numPartitions: 1, replicationFactor: 2 },
        { name: 'solo', numPartitions: 1, replicationFactor: 1 },
      ],
    });
    const two = follower(2, leader);
    await until(() => two.manager.topicNames().length === 2);
    expect(two.manager.getPartition('t-0')).toBeUndefined();
    expect(two.manager.getPartition('solo-0')).toBeUndefined();
    const one = follower(1, leader);
    await until(() => one.manager.getPartition('t-0') !== undefined);
    expect(one.manager.getPartition('solo-0')).toBeUndefined();
  });

  it('truncates records the leader does not have to the leader’s HW, then copies the leader’s', async () => {
    const leader = h.leader({ followers: [1] });
    await leader.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 2 }] });
    await produce(leader, 0, 'a', 'b');
    // A stale replica: the same topic with three records of its own.
    const staleDir = h.dir('follower-1');
    const stale = h.start(leaderConfig(staleDir, { nodeId: 1, isFollower: true, followers: [] }));
    stale.applyLeaderMetadata(await leader.metadata({ topics: [] }));
    stale.getPartition('t-0')!.appendRecordsAsFollower(
      ['x', 'y', 'z'].map((v, offset) => ({
        offset,
        timestampMs: 1,
        key: null,
        value: Buffer.from(v),
        headers: [],
        leaderEpoch: 0,
      })),
    );
    await stale.close();

    // The leader's HW is 0 (follower 1 never fetched): the follower truncates to 0 and copies a, b.
    const one = follower(1, leader);
    await until(
      () =>
        one.manager.getPartition('t-0')?.logEndOffset === 2 &&
        leader.getPartition('t-0')!.highWatermark === 2,
    );
    const records = one.manager.getPartition('t-0')!.log.read(0, 1 << 20).records;
    expect(values(records)).toEqual(['a', 'b']);
  });

  it('backs off and retries while the leader cannot be reached', async () => {
    const leader = h.leader({ followers: [1] });
    await leader.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 2 }] });
    const endpoint = new InMemoryLeader(leader);
    endpoint.failuresLeft = 2;
    const one = follower(1, leader, endpoint);
    await until(() => reports.length === 1, 'the first failure');
    await settle();
    expect(endpoint.calls).toBe(1);
    expect(one.fetcher.leaderStatus).toMatchObject({
      isReplicating: false,
      failure: { kind: 'unreachable', failedRounds: 1, failingForMs: 0 },
      failedRoundsTotal: 1,
    });
    h.time.advance(999);
    await settle();
    expect(endpoint.calls).toBe(1);
    h.time.advance(1);
    await until(() => endpoint.calls === 2, 'the second attempt');
    await settle();
    expect(one.fetcher.leaderStatus.failure?.failedRounds).toBe(2);
    h.time.advance(1_000);
    await until(() => one.manager.getPartition('t-0') !== undefined, 'the topic to arrive');
    expect(one.fetcher.leaderStatus).toMatchObject({ isReplicating: true, failedRoundsTotal: 2 });
    // Told once of the run as it began, once as it ended; the second failure was only counted.
    expect(reports.map((r) => [r.event, r.failure.failedRounds, r.failure.failingForMs])).toEqual([
      ['failure', 1, 0],
      ['recovered', 2, 2_000],
    ]);
    expect(errors).toEqual([]);
  });

  it('reports a run of failures at a doubling interval, capped at a minute, while retrying every backoff', async () => {
    const leader = h.leader({ followers: [1] });
    const endpoint = new InMemoryLeader(leader);
    endpoint.failuresLeft = Infinity;
    const one = follower(1, leader, endpoint);
    await until(() => endpoint.calls === 1, 'the first attempt');
    for (let round = 2; round <= 130; round++) {
      await settle();
      h.time.advance(1_000);
      await until(() => endpoint.calls === round, `attempt ${round}`);
    }
    await settle();
    expect(one.fetcher.leaderStatus.failure).toMatchObject({ failedRounds: 130, failingForMs: 129_000 });
    // After 0, 2, 6, 14, 30 and 62 s (twice the backoff, doubling), then every 60 s.
    expect(reports.map((r) => r.failure.failedRounds)).toEqual([1, 3, 7, 15, 31, 63, 123]);
    expect(reports.every((r) => r.event === 'failure')).toBe(true);
  });

  it('counts a refused fetch as a failure until a fetch succeeds, though Metadata is answered', async () => {
    const leader = h.leader({ followers: [1] });
    await leader.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 2 }] });
    const endpoint = new InMemoryLeader(leader);
    let refusalsLeft = 3;
    const fetch = endpoint.fetch;
    endpoint.fetch = async (request, signal) => {
      if (refusalsLeft === 0) return fetch(request, signal);
      refusalsLeft--;
      return { errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, responses: [] };
    };
    const one = follower(1, leader, endpoint);
    await until(() => reports.length === 1, 'the first refusal');
    expect(reports[0].failure).toMatchObject({ kind: 'refused', failedRounds: 1 });
    expect(String(reports[0].failure.error)).toContain('NOT_LEADER_OR_FOLLOWER');
    for (let i = 0; i < 3; i++) {
      await settle();
      h.time.advance(1_000);
      await settle();
    }
    // The fetch that succeeds parks on the leader (nothing to read) until its wait is over.
    await until(() => leader.numDelayedFetch === 1, 'the fetch to park');
    h.time.advance(500);
    await until(() => reports.length === 3, 'the recovery');
    expect(reports.map((r) => [r.event, r.failure.failedRounds])).toEqual([
      ['failure', 1],
      ['failure', 3],
      ['recovered', 3],
    ]);
    expect(one.fetcher.leaderStatus.isReplicating).toBe(true);
  });

  it('stops promptly, releasing the fetch parked on the leader', async () => {
    const leader = h.leader({ followers: [1] });
    await leader.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 2 }] });
    const one = follower(1, leader);
    await until(() => leader.numDelayedFetch === 1, 'the follower to park a fetch');
    await one.fetcher.stop();
    expect(leader.numDelayedFetch).toBe(0);
    expect(one.endpoint.isClosed).toBe(true);
    expect(errors).toEqual([]);
  });
});
