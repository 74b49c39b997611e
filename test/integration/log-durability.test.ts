import * as net from 'node:net';
import { ErrorCode } from '../../src/errors';
import type { CohortProcess } from '../support/spawn-cohort';
import { TEST_CLUSTER_SECRET_ENV } from '../support/cluster-secret';
import { spawnCohort } from '../support/spawn-cohort';
import type { BrokerClient } from './log-cluster';
import { awaitIsr, brokerClient, eventually, fetchRequest, LogCluster, produceRequest } from './log-cluster';

/** A port that was free a moment ago, so a restarted leader can come back at the address its follower knows. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Every record of a partition, read from offset 0 up to the HW. */
async function readAll(client: BrokerClient, topic: string): Promise<Map<number, string>> {
  const records = new Map<number, string>();
  for (;;) {
    const response = await client.fetch(fetchRequest(topic, records.size));
    const partition = response.responses[0]!.partitions[0]!;
    expect(partition.errorCode).toBe(ErrorCode.NONE);
    if (partition.records.length === 0) return records;
    for (const record of partition.records) records.set(record.offset, record.value.toString());
  }
}

describe('durability across kill -9 of the leader process', () => {
  let cluster: LogCluster;
  let leader: CohortProcess | undefined;
  const clients: BrokerClient[] = [];

  beforeEach(() => {
    cluster = new LogCluster();
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await leader?.kill();
    leader = undefined;
    await cluster.cleanup();
  });

  async function spawnLeader(port: number): Promise<BrokerClient> {
    leader = spawnCohort(
      [
        '--listen',
        `127.0.0.1:${port}`,
        '--data-dir',
        cluster.dataDir('leader'),
        '--followers',
        '1',
        '--replica-lag-time-max-ms',
        '2000',
      ],
      { ...TEST_CLUSTER_SECRET_ENV },
    );
    await leader.waitForLog('cohort listening');
    const client = brokerClient(`127.0.0.1:${port}`);
    clients.push(client);
    return client;
  }

  it('keeps every acknowledged record, acks=1 and acks=-1, and the follower rejoins the restarted leader', async () => {
    const port = await freePort();
    let client = await spawnLeader(port);
    const created = await client.createTopics({
      topics: [
        { name: 'replicated', numPartitions: 1, replicationFactor: 2 },
        { name: 'local', numPartitions: 1, replicationFactor: 1 },
      ],
    });
    expect(created.topics.map((t) => t.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
    const follower = await cluster.start('follower', {
      nodeId: 1,
      replicaOf: `127.0.0.1:${port}`,
      replicaLagTimeMaxMs: 2_000,
    });
    await eventually(
      () => (follower.server.replicaManager.getPartition('replicated-0') !== undefined ? true : undefined),
      'the follower to learn the topic',
    );

    // Producers that keep writing until the leader dies, remembering what was acknowledged.
    const acknowledged = { replicated: new Map<number, string>(), local: new Map<number, string>() };
    let isKilled = false;
    const producer = async (topic: 'replicated' | 'local', acks: number, id: number): Promise<void> => {
      for (let n = 0; !isKilled; n++) {
        const values = [0, 1, 2].map((i) => `${topic}-${id}-${n}-${i}`);
        let response;
        try {
          response = await client.produce(produceRequest(topic, values, acks));
        } catch {
          return; // the leader is gone
        }
        const partition = response.topics[0]!.partitions[0]!;
        if (partition.errorCode !== ErrorCode.NONE) continue;
        values.forEach((value, i) => acknowledged[topic].set(partition.baseOffset + i, value));
      }
    };
    const producers = [0, 1, 2, 3].flatMap((id) => [
      producer('replicated', -1, id),
      producer('local', 1, id),
    ]);
    await eventually(
      () => (acknowledged.replicated.size >= 150 && acknowledged.local.size >= 150 ? true : undefined),
      'enough acknowledged records',
    );
    leader!.child.kill('SIGKILL');
    isKilled = true;
    await leader!.exited;
    await Promise.all(producers);
    const replicatedAcks = new Map(acknowledged.replicated);

    // Every acks=-1 record was on the follower when it was acknowledged.
    const followerLog = follower.server.replicaManager.getPartition('replicated-0')!.log;
    const onFollower = new Map(
      followerLog.read(0, 1 << 30).records.map((r) => [r.offset, r.value!.toString()]),
    );
    for (const [offset, value] of replicatedAcks) expect(onFollower.get(offset)).toBe(value);

    client.close();
    client = await spawnLeader(port);
    const missing = (topic: 'replicated' | 'local', stored: Map<number, string>): [number, string][] =>
      [...acknowledged[topic]].filter(([offset, value]) => stored.get(offset) !== value);
    // One replica: the restarted leader is the whole ISR, so its HW is its log end and consumers read
    // every acknowledged record at once.
    expect(missing('local', await readAll(client, 'local'))).toEqual([]);
    // Two replicas: the HW restarts at its checkpoint (at most 5 s old, here likely none), so consumers
    // read the records above it once the follower has fetched them from the restarted leader again.
    const replicated = await eventually(async () => {
      const stored = await readAll(client, 'replicated');
      return missing('replicated', stored).length === 0 ? stored : undefined;
    }, 'consumers to read every acknowledged replicated record');
    expect(missing('replicated', replicated)).toEqual([]);

    // The follower reconnects to the restarted leader, catches up and acks=-1 works again.
    await awaitIsr(client, 'replicated', [0, 1]);
    const after = await client.produce(produceRequest('replicated', ['after restart'], -1));
    expect(after.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    const leaderEnd = after.topics[0]!.partitions[0]!.baseOffset + 1;
    expect(followerLog.logEndOffset).toBe(leaderEnd);
  });
});
