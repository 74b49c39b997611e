import { ErrorCode } from '../../src/errors';
import type { CohortProcess } from '../support/spawn-cohort';
import { TEST_CLUSTER_SECRET_ENV } from '../support/cluster-secret';
import { spawnCohort } from '../support/spawn-cohort';
import type { BrokerClient } from './log-cluster';
import {
  awaitIsr,
  expectMinIsrRefusals,
  brokerClient,
  eventually,
  fetchRequest,
  isrOf,
  LogCluster,
  produceRequest,
  TEST_REPLICA_LAG_MS,
} from './log-cluster';

/** Three or four processes start in each test (each transpiles cohort on start) on a 2-core machine. */
const TEST_TIMEOUT_MS = 90_000;

interface Node {
  readonly target: string;
  readonly client: BrokerClient;
}

/**
 * The replication scenarios of log-replication.test.ts with every server a process of its own, started as
 * `npm start` starts one, and a follower's failure a kill -9. Only the wire is observed: Produce answers,
 * the ISR in Metadata, and what each follower serves to a consumer.
 */
describe('replication between cohort processes on 127.0.0.1', () => {
  let cluster: LogCluster; // its data directories only: every server here is a process
  const processes = new Map<string, CohortProcess>();
  const clients: BrokerClient[] = [];

  beforeEach(() => {
    cluster = new LogCluster();
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const child of processes.values()) await child.kill();
    processes.clear();
    await cluster.cleanup();
  });

  async function start(name: string, args: readonly string[]): Promise<Node> {
    const child = spawnCohort(
      [
        '--listen',
        '127.0.0.1:0',
        '--data-dir',
        cluster.dataDir(name),
        '--replica-lag-time-max-ms',
        String(TEST_REPLICA_LAG_MS),
        ...args,
      ],
      { ...TEST_CLUSTER_SECRET_ENV },
    );
    processes.set(name, child);
    const listening = await child.waitForLog('cohort listening');
    const client = brokerClient(listening.address as string);
    clients.push(client);
    return { target: listening.address as string, client };
  }

  function startFollower(nodeId: number, leader: Node): Promise<Node> {
    return start(`follower-${nodeId}`, ['--node-id', String(nodeId), '--replica-of', leader.target]);
  }

  async function startCluster(minInsyncReplicas = 1): Promise<{ leader: Node; followers: Node[] }> {
    const leader = await start('leader', [
      '--node-id',
      '0',
      '--followers',
      '1,2',
      '--min-insync-replicas',
      String(minInsyncReplicas),
    ]);
    const followers = await Promise.all([startFollower(1, leader), startFollower(2, leader)]);
    const created = await leader.client.createTopics({
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 3 }],
    });
    expect(created.topics).toEqual([{ name: 't', errorCode: ErrorCode.NONE, errorMessage: '' }]);
    return { leader, followers };
  }

  /** The values a follower serves to a consumer, once it serves `count` of them (up to its HW). */
  function servedBy(follower: Node, count: number): Promise<string[]> {
    return eventually(async () => {
      const response = await follower.client.fetch(fetchRequest('t', 0));
      const records = response.responses[0]!.partitions[0]!.records;
      return records.length === count ? records.map((r) => r.value.toString()) : undefined;
    }, `a follower to serve ${count} records`);
  }

  async function killFollower(nodeId: number): Promise<void> {
    const name = `follower-${nodeId}`;
    await processes.get(name)!.kill(); // SIGKILL
    processes.delete(name);
  }

  it(
    'acks=-1 waits for both followers; a killed follower leaves the ISR and rejoins once restarted',
    async () => {
      const { leader, followers } = await startCluster();
      const first = await leader.client.produce(produceRequest('t', ['a', 'b', 'c'], -1));
      expect(first.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 0 });
      for (const follower of followers) expect(await servedBy(follower, 3)).toEqual(['a', 'b', 'c']);

      await killFollower(2);
      // Waits for follower 2 until the leader drops it from the ISR, after about the lag time.
      const during = await leader.client.produce(
        produceRequest('t', ['during'], -1, { timeoutMs: 4 * TEST_REPLICA_LAG_MS }),
      );
      expect(during.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 3 });
      expect(await isrOf(leader.client, 't')).toEqual([0, 1]);

      const back = await startFollower(2, leader);
      await awaitIsr(leader.client, 't', [0, 1, 2]);
      expect(await servedBy(back, 4)).toEqual(['a', 'b', 'c', 'during']);
      const after = await leader.client.produce(produceRequest('t', ['after'], -1));
      expect(after.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 4 });
      expect(await servedBy(back, 5)).toEqual(['a', 'b', 'c', 'during', 'after']);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'with --min-insync-replicas 3, a killed follower turns acks=-1 into NOT_ENOUGH_REPLICAS',
    async () => {
      const { leader } = await startCluster(3);
      const first = await leader.client.produce(produceRequest('t', ['a'], -1));
      expect(first.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
      await killFollower(2);
      await expectMinIsrRefusals(leader.client, 't', TEST_REPLICA_LAG_MS);
      const acksOne = await leader.client.produce(produceRequest('t', ['d'], 1));
      expect(acksOne.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 2 });
    },
    TEST_TIMEOUT_MS,
  );
});
