import { ErrorCode } from '../../src/errors';
import { healthClient } from '../support/grpc-clients';
import type { ClusterNode } from './log-cluster';
import {
  awaitIsr,
  expectMinIsrRefusals,
  eventually,
  fetchRequest,
  isrOf,
  LogCluster,
  produceRequest,
  TEST_REPLICA_LAG_MS,
} from './log-cluster';

describe('replication between cohort servers on 127.0.0.1', () => {
  let cluster: LogCluster;

  beforeEach(() => {
    cluster = new LogCluster();
  });

  afterEach(async () => {
    await cluster.cleanup();
  });

  async function startCluster(
    minInsyncReplicas = 1,
  ): Promise<{ leader: ClusterNode; followers: ClusterNode[] }> {
    const leader = await cluster.start('leader', {
      nodeId: 0,
      followers: [1, 2],
      replicaLagTimeMaxMs: TEST_REPLICA_LAG_MS,
      minInsyncReplicas,
    });
    const followers = [await startFollower(1, leader), await startFollower(2, leader)];
    const created = await leader.client.createTopics({
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 3 }],
    });
    expect(created.topics).toEqual([{ name: 't', errorCode: ErrorCode.NONE, errorMessage: '' }]);
    // Both followers have learned the topic and fetched from the leader at least once.
    await eventually(
      () =>
        [1, 2].every((id) => (leaderPartition(leader).followerState(id)?.logEndOffset ?? -1) >= 0)
          ? true
          : undefined,
      'both followers to fetch t-0',
    );
    return { leader, followers };
  }

  function startFollower(nodeId: number, leader: ClusterNode): Promise<ClusterNode> {
    return cluster.start(`follower-${nodeId}`, {
      nodeId,
      replicaOf: leader.target,
      replicaLagTimeMaxMs: TEST_REPLICA_LAG_MS,
    });
  }

  function leaderPartition(leader: ClusterNode) {
    return leader.server.replicaManager.getPartition('t-0')!;
  }

  function followerLogEndOffset(follower: ClusterNode): number {
    return follower.server.replicaManager.getPartition('t-0')?.logEndOffset ?? -1;
  }

  it('acknowledges acks=-1 only once both followers have the records', async () => {
    const { leader, followers } = await startCluster();
    const response = await leader.client.produce(produceRequest('t', ['a', 'b', 'c'], -1));
    expect(response.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 0 });
    // The acknowledgement came after both followers fetched past offset 2: they hold all three.
    expect(followers.map(followerLogEndOffset)).toEqual([3, 3]);
    expect(await isrOf(leader.client, 't')).toEqual([0, 1, 2]);
    const metadata = await followers[0]!.client.metadata({ topics: [] });
    expect(metadata.topics[0]!.partitions[0]).toMatchObject({ leaderId: 0, replicaNodes: [0, 1, 2] });
    expect(metadata.brokers.map((b) => b.nodeId).sort()).toEqual([0, 1]);
    // A consumer may read the records from a follower once it has the leader's HW.
    const read = await eventually(async () => {
      const fetched = await followers[1]!.client.fetch(fetchRequest('t', 0));
      const records = fetched.responses[0]!.partitions[0]!.records;
      return records.length === 3 ? records : undefined;
    }, 'follower 2 to serve the records');
    expect(read.map((r) => r.value.toString())).toEqual(['a', 'b', 'c']);
  });

  it('shrinks the ISR when a follower stops, completes acks=-1 with the other two, and takes it back once it catches up', async () => {
    const { leader } = await startCluster();
    await leader.client.produce(produceRequest('t', ['before'], -1));
    await cluster.stop('follower-2');

    // Waits for follower 2 until the leader drops it, after about the lag time.
    const during = await leader.client.produce(
      produceRequest('t', ['during'], -1, { timeoutMs: 4 * TEST_REPLICA_LAG_MS }),
    );
    expect(during.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 1 });
    expect(await isrOf(leader.client, 't')).toEqual([0, 1]);
    expect(leader.logs.some((l) => l.msg === 'ISR changed' && JSON.stringify(l.isr) === '[0,1]')).toBe(true);
    const quick = await leader.client.produce(produceRequest('t', ['while away'], -1));
    expect(quick.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);

    const back = await startFollower(2, leader);
    await awaitIsr(leader.client, 't', [0, 1, 2]);
    expect(followerLogEndOffset(back)).toBe(3);
    const after = await leader.client.produce(produceRequest('t', ['after'], -1));
    expect(after.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(followerLogEndOffset(back)).toBe(4);
  });

  it('fails acks=-1 with NOT_ENOUGH_REPLICAS once the ISR is smaller than --min-insync-replicas', async () => {
    const { leader } = await startCluster(3);
    expect(
      (await leader.client.produce(produceRequest('t', ['a'], -1))).topics[0]!.partitions[0]!.errorCode,
    ).toBe(ErrorCode.NONE);
    await cluster.stop('follower-2');
    await expectMinIsrRefusals(leader.client, 't', TEST_REPLICA_LAG_MS);
    expect(leaderPartition(leader).logEndOffset).toBe(2);
    // acks=1 does not depend on the ISR.
    expect(
      (await leader.client.produce(produceRequest('t', ['d'], 1))).topics[0]!.partitions[0]!.errorCode,
    ).toBe(ErrorCode.NONE);
  });

  it('refuses writes and topic creation on a follower with NOT_LEADER_OR_FOLLOWER', async () => {
    const { followers } = await startCluster();
    const follower = followers[0]!;
    const produced = await follower.client.produce(produceRequest('t', ['x'], 1));
    expect(produced.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    const created = await follower.client.createTopics({
      topics: [{ name: 'u', numPartitions: 1, replicationFactor: 1 }],
    });
    expect(created.topics[0]!.errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  });
});

describe('a follower whose leader is unreachable', () => {
  let cluster: LogCluster;
  const closers: { close(): void }[] = [];

  beforeEach(() => {
    cluster = new LogCluster();
  });

  afterEach(async () => {
    for (const client of closers.splice(0)) client.close();
    await cluster.cleanup();
  });

  /** /readyz and the two follower series of /metrics, read in that order. */
  async function observe(
    adminUrl: string,
  ): Promise<{ ready: string; reachable?: number; failures?: number }> {
    const ready = await fetch(`${adminUrl}/readyz`);
    const metrics = await (await fetch(`${adminUrl}/metrics`)).text();
    const value = (name: string): number | undefined => {
      const line = metrics.split('\n').find((l) => l.startsWith(`${name}{`));
      return line === undefined ? undefined : Number(line.split(' ').pop());
    };
    return {
      ready: `${ready.status} ${await ready.text()}`,
      reachable: value('cohort_follower_leader_reachable'),
      failures: value('cohort_follower_fetch_failures_total'),
    };
  }

  it('logs once without a stack, turns /readyz 503 and health NOT_SERVING, and recovers when the leader is back', async () => {
    const leaderSettings = { nodeId: 0, followers: [1], replicaLagTimeMaxMs: TEST_REPLICA_LAG_MS };
    const leader = await cluster.start('leader', leaderSettings);
    const leaderAt = leader.target;
    await cluster.stop('leader');
    const follower = await cluster.start('follower-1', {
      nodeId: 1,
      replicaOf: leaderAt,
      replicaLagTimeMaxMs: TEST_REPLICA_LAG_MS,
      adminListen: '127.0.0.1:0',
    });
    const adminUrl = follower.server.adminAddress!.url;
    const health = healthClient(follower.target);
    closers.push(health);

    // Two failed rounds: the second is counted, not logged (the next line comes after twice the backoff).
    const down = await eventually(async () => {
      const warnings = follower.logs.filter((l) => l.msg.startsWith('the leader cannot be reached'));
      const seen = await observe(adminUrl);
      return seen.failures !== undefined && seen.failures >= 2 ? { seen, warnings } : undefined;
    }, 'two failed rounds');
    expect(down.seen.reachable).toBe(0);
    // The warnings were read first: a round may have failed since. Reports follow rounds 1, 3, 7, ...
    expect(down.warnings.length).toBeGreaterThanOrEqual(1);
    expect(down.warnings.length).toBeLessThanOrEqual(down.seen.failures! >= 3 ? 2 : 1);
    expect(down.seen.ready).toMatch(
      new RegExp(
        `^503 not ready: the leader cannot be reached \\(--replica-of ${leaderAt}, \\d+ failed rounds\\): .*UNAVAILABLE`,
      ),
    );
    expect(down.warnings).toHaveLength(1);
    expect(down.warnings[0]).toMatchObject({ level: 40, leader: leaderAt, failedRounds: 1 });
    expect(down.warnings[0]).not.toHaveProperty('err');
    expect(await health.check('')).toBe('NOT_SERVING');

    await cluster.start('leader', leaderSettings, leaderAt);
    await eventually(
      async () => ((await observe(adminUrl)).ready === '200 ready\n' ? true : undefined),
      'the follower to be ready again',
    );
    expect((await observe(adminUrl)).reachable).toBe(1);
    expect(await health.check('')).toBe('SERVING');
    expect(follower.logs).toContainEqual(
      expect.objectContaining({ msg: 'the leader answers again; replication resumes', leader: leaderAt }),
    );
  });
});
