import { ErrorCode } from '../../../src/errors';
import type { LeaderFailure, ReplicaManager } from '../../../src/log';
import { LeaderRefusedCall, ReplicaFetcher } from '../../../src/log';
import { SystemTimer } from '../../../src/timer';
import { BrokerHarness, record, settle, until } from './broker-harness';
import { InMemoryLeader } from './in-memory-leader';

/**
 * The fetcher's loop against one leader: backoff, failure reports, stopping. What it copies, truncates
 * and completes is tested through ReplicaFetcherManager in replica-manager-cluster.test.ts.
 */
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

  /** Node 0 leading t-0 on [0, 1] at epoch 0, and node 1 following it. */
  function cluster(): { leader: ReplicaManager; followerManager: ReplicaManager } {
    const leader = h.clusterNode(0);
    const followerManager = h.clusterNode(1);
    h.leadTopic('t', 2);
    return { leader, followerManager };
  }

  /** A fetcher of node 1 copying from node 0, through `endpoint` (authenticated as node 1). */
  function follower(
    manager: ReplicaManager,
    leader: ReplicaManager,
    endpoint = new InMemoryLeader(leader, 1),
  ) {
    const fetcher = new ReplicaFetcher(1, manager, endpoint, {
      leaderId: 0,
      time: h.time,
      timer: new SystemTimer({ time: h.time }),
      fetchMaxWaitMs: 500,
      backoffMs: 1_000,
      idleIntervalMs: 1_000,
      onError: (_error, what) => errors.push(what),
      onLeaderFailure: (failure) => reports.push({ event: 'failure', failure }),
      onLeaderRecovered: (failure) => reports.push({ event: 'recovered', failure }),
    });
    fetchers.push(fetcher);
    fetcher.start();
    return { manager, fetcher, endpoint };
  }

  async function produce(leader: ReplicaManager, acks: number, ...records: string[]) {
    return produceTo(leader, 't', acks, ...records);
  }

  async function produceTo(leader: ReplicaManager, topic: string, acks: number, ...records: string[]) {
    return leader.produce({
      acks,
      timeoutMs: 60_000,
      topics: [{ name: topic, partitions: [{ partitionIndex: 0, records: records.map((v) => record(v)) }] }],
    });
  }

  it('backs off and retries while the leader cannot be reached', async () => {
    const { leader, followerManager } = cluster();
    // A record to copy: the fetch that gets through is answered at once.
    await produce(leader, 1, 'a');
    const endpoint = new InMemoryLeader(leader, 1);
    endpoint.failuresLeft = 2;
    const one = follower(followerManager, leader, endpoint);
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
    await until(() => one.manager.getPartition('t-0')!.logEndOffset === 1, 'the record to arrive');
    expect(one.fetcher.leaderStatus).toMatchObject({ isReplicating: true, failedRoundsTotal: 2 });
    // Told once of the run as it began, once as it ended; the second failure was only counted.
    expect(reports.map((r) => [r.event, r.failure.failedRounds, r.failure.failingForMs])).toEqual([
      ['failure', 1, 0],
      ['recovered', 2, 2_000],
    ]);
    expect(errors).toEqual([]);
  });

  it('reports a run of failures at a doubling interval, capped at a minute, while retrying every backoff', async () => {
    const { leader, followerManager } = cluster();
    const endpoint = new InMemoryLeader(leader, 1);
    endpoint.failuresLeft = Infinity;
    const one = follower(followerManager, leader, endpoint);
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

  it('counts a refused fetch as a failure until a fetch succeeds', async () => {
    const { leader, followerManager } = cluster();
    const endpoint = new InMemoryLeader(leader, 1);
    let refusalsLeft = 3;
    const fetch = endpoint.fetch;
    endpoint.fetch = async (request, signal) => {
      if (refusalsLeft === 0) return fetch(request, signal);
      refusalsLeft--;
      return { errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, responses: [] };
    };
    const one = follower(followerManager, leader, endpoint);
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

  it('counts a call the leader turned down (its credentials check) as refused, not unreachable', async () => {
    const { leader, followerManager } = cluster();
    const endpoint = new InMemoryLeader(leader, 1);
    endpoint.fetch = () => Promise.reject(new LeaderRefusedCall('16 UNAUTHENTICATED: not accepted'));
    endpoint.offsetForLeaderEpoch = endpoint.fetch as never;
    const one = follower(followerManager, leader, endpoint);
    await until(() => reports.length === 1, 'the first refusal');
    expect(reports[0].failure).toMatchObject({ leaderId: 0, kind: 'refused', failedRounds: 1 });
    expect(one.fetcher.leaderStatus.isReplicating).toBe(false);
  });

  it('cuts short its parked fetch when it gains a partition, and fetches that one at once', async () => {
    // The clock never moves: the parked long poll would wait for ever. A partition that just became a
    // follower of this leader (a new leader elected for it) gets its first fetch now, not after
    // fetchMaxWaitMs: that fetch is what lets the leader's HW advance.
    const { leader, followerManager } = cluster();
    const one = follower(followerManager, leader);
    await until(() => leader.numDelayedFetch === 1, 'the follower to park a fetch');
    const roundsBefore = one.fetcher.rounds;
    h.leadTopic('u', 2);
    await produceTo(leader, 'u', 1, 'first');
    one.fetcher.wake();
    await until(
      () => followerManager.getPartition('u-0')?.logEndOffset === 1,
      'the follower to copy u-0 without the clock moving',
    );
    await until(() => leader.getPartition('u-0')!.highWatermark === 1, "the leader's HW to advance");
    expect(one.fetcher.rounds).toBeGreaterThan(roundsBefore);
    // Not a failure: nothing reported, nothing logged, no backoff.
    expect(reports).toEqual([]);
    expect(errors).toEqual([]);
    expect(one.fetcher.leaderStatus.failedRoundsTotal).toBe(0);
  });

  it('asks a leader that has not heard of its new epoch again within 50 ms, doubling, not after the backoff', async () => {
    // Node 1 learns of epoch 1 before node 0 does (both learn from one etcd watch, at moments apart):
    // node 0 answers UNKNOWN_LEADER_EPOCH. The partition is asked about again 50 ms later, then 100 ms,
    // 200 ms..., up to the 1 s backoff, and fetched as soon as node 0 has the epoch.
    const { leader, followerManager } = cluster();
    const one = follower(followerManager, leader);
    // A record at epoch 0 on both: the follower has an epoch to ask about.
    await produce(leader, 1, 'at epoch 0');
    await until(() => followerManager.getPartition('t-0')?.logEndOffset === 1, 'the follower to copy it');
    await until(() => leader.numDelayedFetch === 1, 'the follower to park a fetch');
    const asked: number[] = [];
    const ask = one.endpoint.offsetForLeaderEpoch;
    one.endpoint.offsetForLeaderEpoch = (request, signal) => {
      asked.push(h.time.monotonicMs());
      return ask(request, signal);
    };
    const startMs = h.time.monotonicMs();
    h.cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] }, false);
    h.cluster.publish([1]);
    one.fetcher.wake();
    await until(() => asked.length === 1, 'the first OffsetForLeaderEpoch');
    for (const stepMs of [50, 100, 200]) {
      h.time.advance(stepMs - 1);
      await settle();
      const before = asked.length;
      h.time.advance(1);
      await until(() => asked.length === before + 1, `a question ${stepMs} ms after the last`);
    }
    expect(asked.map((at) => at - startMs)).toEqual([0, 50, 150, 350]);
    h.cluster.publish([0]);
    h.time.advance(400);
    await until(() => asked.length === 5, 'the question after the leader caught up');
    await produce(leader, 1, 'at epoch 1');
    await until(
      () => followerManager.getPartition('t-0')?.logEndOffset === 2,
      'the follower to fetch at epoch 1',
    );
    expect(reports).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('cuts its long poll short when a partition answered UNKNOWN_LEADER_EPOCH on a Fetch is due again', async () => {
    // u-0 has no records, so no epoch to ask about: it goes straight to Fetch, at epoch 1, which node 0
    // has not applied yet. t-0 holds the long poll meanwhile; the catch-up timer, 50 ms on, cuts it short
    // and u-0 is fetched then, not when the poll ends 500 ms on.
    const { leader, followerManager } = cluster();
    h.leadTopic('u', 2);
    const one = follower(followerManager, leader);
    await until(() => leader.numDelayedFetch === 1, 'the follower to park a fetch');
    h.cluster.set('u', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] }, false);
    h.cluster.publish([1]);
    one.fetcher.wake();
    await until(
      () => leader.numDelayedFetch === 1 && one.fetcher.rounds >= 2,
      'the fetch at epoch 1 answered, t-0 parked again',
    );
    h.cluster.publish([0]);
    await produceTo(leader, 'u', 1, 'at epoch 1');
    await settle();
    expect(followerManager.getPartition('u-0')!.logEndOffset).toBe(0);
    h.time.advance(50);
    await until(
      () => followerManager.getPartition('u-0')!.logEndOffset === 1,
      'u-0 fetched 50 ms after its UNKNOWN_LEADER_EPOCH',
    );
    expect(reports).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('starts over, not into a long poll, when a wake came during its OffsetForLeaderEpoch', async () => {
    // t-0 moves to epoch 1 and the fetcher asks about it; while that call is out, u-0 moves too. The
    // round must not park a Fetch with u-0 left out: it asks about u-0 at once (the clock never moves).
    const { leader, followerManager } = cluster();
    h.leadTopic('u', 2);
    const one = follower(followerManager, leader);
    await produce(leader, 1, 't at epoch 0');
    await produceTo(leader, 'u', 1, 'u at epoch 0');
    await until(
      () =>
        followerManager.getPartition('t-0')?.logEndOffset === 1 &&
        followerManager.getPartition('u-0')?.logEndOffset === 1,
      'the follower to copy both',
    );
    await until(() => leader.numDelayedFetch === 1, 'the follower to park a fetch');
    const asked: string[] = [];
    let release: (() => void) | undefined;
    const ask = one.endpoint.offsetForLeaderEpoch;
    one.endpoint.offsetForLeaderEpoch = async (request, signal) => {
      asked.push(request.topics.map((t) => t.name).join());
      if (asked.length === 1) await new Promise<void>((resolve) => (release = resolve));
      return ask(request, signal);
    };
    h.cluster.set('t', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    one.fetcher.wake();
    await until(() => release !== undefined, 'the question about t-0 to be out');
    h.cluster.set('u', 0, { leader: 0, leaderEpoch: 1, isr: [0, 1], replicas: [0, 1] });
    one.fetcher.wake();
    release!();
    await until(() => asked.length === 2, 'the question about u-0, without the clock moving');
    expect(asked).toEqual(['t', 'u']);
  });

  it('leaves its parked fetch alone when nothing new is to be fetched', async () => {
    const { leader, followerManager } = cluster();
    const one = follower(followerManager, leader);
    await until(() => leader.numDelayedFetch === 1, 'the follower to park a fetch');
    const roundsBefore = one.fetcher.rounds;
    one.fetcher.wake();
    await settle();
    expect(one.fetcher.rounds).toBe(roundsBefore);
    expect(leader.numDelayedFetch).toBe(1);
  });

  it('stops promptly, releasing the fetch parked on the leader', async () => {
    const { leader, followerManager } = cluster();
    const one = follower(followerManager, leader);
    await until(() => leader.numDelayedFetch === 1, 'the follower to park a fetch');
    await one.fetcher.stop();
    expect(leader.numDelayedFetch).toBe(0);
    expect(one.endpoint.isClosed).toBe(true);
    expect(errors).toEqual([]);
  });
});
