import * as fs from 'node:fs';
import * as path from 'node:path';
import { credentials, Metadata } from '@grpc/grpc-js';
import { ErrorCode } from '../../src/errors';
import { writeRecoveryCheckpointSync } from '../../src/log/storage/recovery-checkpoint';
import { WRONG_NODE_MESSAGE } from '../../src/server/node-credentials';
import { TEST_CLUSTER_SECRET } from '../support/cluster-secret';
import { startEtcd, type EtcdProcess } from '../support/etcd';
import { brokerClient as tlsBrokerClient } from '../support/grpc-clients';
import { makeTlsFixtures, type TlsFixtures } from '../support/tls-fixtures';
import type { CohortConfig } from '../../src/config';
import {
  eventually,
  fetchRequest,
  isrOf,
  LogCluster,
  produceRequest,
  TEST_REPLICA_LAG_MS,
  type ClusterNode,
} from './log-cluster';

/**
 * Replication between cohort servers in cluster mode (in this process, on a real etcd), where the
 * controller gives every partition its leader and followers: what acks=-1 waits for, a follower that lost
 * a torn tail in a crash, and who may replicate (the cluster secret, over TLS with a token).
 */
let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

describe('replication in a cluster', () => {
  let cluster: LogCluster;
  let run = 0;
  let clusterId: string;

  beforeEach(() => {
    cluster = new LogCluster();
    clusterId = `replication-${process.pid}-${run++}`;
  });
  afterEach(() => cluster.cleanup());

  const settingsOf = (nodeId: number, overrides: Partial<CohortConfig> = {}): Partial<CohortConfig> => ({
    etcdEndpoints: etcd.endpoints,
    clusterId,
    nodeId,
    nodeSessionTimeoutMs: 4_000,
    replicaLagTimeMaxMs: TEST_REPLICA_LAG_MS,
    ...overrides,
  });
  const startNode = (nodeId: number, overrides: Partial<CohortConfig> = {}): Promise<ClusterNode> =>
    cluster.start(`n${nodeId}`, settingsOf(nodeId, overrides));

  /** Every node lists `count` live nodes: each has registered and seen the others. */
  const allLive = (nodes: readonly ClusterNode[], count = nodes.length) =>
    eventually(async () => {
      const views = await Promise.all(nodes.map((node) => node.client.metadata({ topics: [] })));
      return views.every((view) => view.brokers.length === count) ? true : undefined;
    }, `every node to list ${count} live nodes`);

  /** The node leading `topic`-0, once one does. */
  const leaderOf = (nodes: readonly ClusterNode[], topic: string) =>
    eventually(
      () => nodes.find((node) => node.server.replicaManager.getPartition(`${topic}-0`)?.isLeader === true),
      `a node to lead ${topic}-0`,
    );

  /** Waits until `topic`-0's ISR, as `node` reports it, holds exactly `ids` (in replica order). */
  const awaitIsr = (node: ClusterNode, topic: string, ids: readonly number[]) =>
    eventually(
      async () => {
        const isr = await isrOf(node.client, topic);
        return [...isr].sort().join() === [...ids].sort().join() ? true : undefined;
      },
      `the ISR of ${topic}-0 to be {${ids.join(', ')}}`,
    );

  const partitionOn = (node: ClusterNode, topic: string) =>
    node.server.replicaManager.getPartition(`${topic}-0`);

  it('acknowledges acks=-1 once every in-sync follower has the records; a follower that cut a torn tail fetches it again and rejoins', async () => {
    const nodes = [await startNode(1), await startNode(2), await startNode(3)];
    await allLive(nodes);
    const created = await nodes[0].client.createTopics({
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 3 }],
    });
    expect(created.topics[0].errorCode).toBe(ErrorCode.NONE);
    const leader = await leaderOf(nodes, 't');
    const leaderId = Number(leader.name.slice(1));
    await eventually(
      async () =>
        (await leader.client.metadata({ topics: ['t'] })).topics[0]?.partitions[0]?.isrNodes.length === 3
          ? true
          : undefined,
      'all three replicas in sync',
    );
    const followers = nodes.filter((node) => node !== leader);
    for (let i = 0; i < 10; i++) {
      const produced = await leader.client.produce(produceRequest('t', [`record ${i}`], -1));
      expect(produced.topics[0].partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: i });
      // Answered only once every follower had fetched past it: each already holds it.
      for (const follower of followers) {
        expect([follower.name, partitionOn(follower, 't')!.logEndOffset]).toEqual([follower.name, i + 1]);
      }
    }

    // The follower stops; the controller takes it out of the ISR; one more record is written without it.
    const lagging = followers[0];
    await cluster.stop(lagging.name);
    const others = [leaderId, ...followers.slice(1).map((node) => Number(node.name.slice(1)))];
    await awaitIsr(leader, 't', others);
    const without = await leader.client.produce(produceRequest('t', ['record 10'], -1));
    expect(without.topics[0].partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 10 });

    // What a crash of its machine leaves: only offsets below 6 were fsynced, and the file ends in the
    // middle of a later batch.
    const partitionDir = path.join(cluster.dataDir(lagging.name), 't-0');
    const file = path.join(partitionDir, '00000000000000000000.log');
    writeRecoveryCheckpointSync(partitionDir, { recoveryPoint: 6, isCleanShutdown: false });
    fs.truncateSync(file, fs.statSync(file).size - 30);

    const back = await startNode(Number(lagging.name.slice(1)));
    const cut = back.logs.find((line) => line.msg === 'a torn tail left by a crash was cut from a log');
    expect(cut).toMatchObject({ kind: 'torn_tail', file, offset: 9 });
    await awaitIsr(leader, 't', [1, 2, 3]);
    const valuesOf = (node: ClusterNode) =>
      partitionOn(node, 't')!
        .log.read(0, 1 << 20)
        .records.map((record) => [record.offset, record.value!.toString()]);
    expect(valuesOf(back)).toEqual(valuesOf(leader));
    expect(valuesOf(back)).toHaveLength(11);
    const after = await leader.client.produce(produceRequest('t', ['record 11'], -1));
    expect(after.topics[0].partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 11 });
    expect(partitionOn(back, 't')!.logEndOffset).toBe(12);
  }, 90_000);

  it('keeps a node with another cluster’s secret from replicating: it leaves the ISR and copies nothing', async () => {
    // Debug: the leader logs each call it refuses for its node credentials.
    const nodes = [
      await startNode(1, { logLevel: 'debug' }),
      await startNode(2, { logLevel: 'debug', clusterSecret: `${TEST_CLUSTER_SECRET}-of-another-cluster` }),
    ];
    await allLive(nodes);
    const created = await nodes[0].client.createTopics({
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 2 }],
    });
    expect(created.topics[0].errorCode).toBe(ErrorCode.NONE);
    // Whichever of the two leads, the other's credentials do not verify under its secret.
    const leader = await leaderOf(nodes, 't');
    const follower = nodes.find((node) => node !== leader)!;
    await awaitIsr(leader, 't', [Number(leader.name.slice(1))]);
    const produced = await leader.client.produce(produceRequest('t', ['a', 'b'], 1));
    expect(produced.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
    const refusal = await eventually(
      () =>
        leader.logs.find(
          (line) =>
            line.msg === 'call refused: node credentials not accepted' &&
            String(line.reason).includes(WRONG_NODE_MESSAGE),
        ),
      'the leader to refuse the follower’s replication',
    );
    expect(refusal).toMatchObject({ method: expect.stringMatching(/Fetch|OffsetForLeaderEpoch/) });
    // The follower says so once as the run of refusals begins (then at a backoff), and its metric shows it.
    const leaderId = Number(leader.name.slice(1));
    await eventually(
      () =>
        follower.logs.find(
          (line) =>
            line.msg ===
              'the leader refuses to be fetched from; replication is paused and retried every second' &&
            line.leader === leaderId,
        ),
      'the follower to log that its leader refuses it',
    );
    const metrics = await follower.server.metrics.registry.metrics();
    expect(metrics).toContain(`cohort_follower_leader_reachable{leader="${leaderId}"} 0`);
    // Not one record reached the follower, and the leader serves what it has to consumers.
    expect(partitionOn(follower, 't')?.logEndOffset ?? 0).toBe(0);
    const read = await leader.client.fetch(fetchRequest('t', 0));
    expect(read.responses[0].partitions[0].records.map((r) => r.value.toString())).toEqual(['a', 'b']);
  }, 90_000);

  describe('with a token and mutual TLS', () => {
    let tls: TlsFixtures;
    beforeAll(() => {
      tls = makeTlsFixtures();
    });
    afterAll(() => tls.cleanup());

    it('replicates between nodes that prove themselves with the cluster secret and send no token', async () => {
      const token = 'a-long-enough-test-token-0123456789';
      const secured = {
        token,
        tlsCert: tls.serverCertPath,
        tlsKey: tls.serverKeyPath,
        tlsClientCa: tls.caCertPath,
        // acks=-1 then needs the follower in the ISR: only a follower that got through can answer it.
        minInsyncReplicas: 2,
      };
      const nodes = [await startNode(1, secured), await startNode(2, secured)];
      const channel = {
        credentials: credentials.createSsl(
          tls.read(tls.caCertPath),
          tls.read(tls.clientKeyPath),
          tls.read(tls.clientCertPath),
        ),
      };
      const metadata = new Metadata();
      metadata.set('authorization', `Bearer ${token}`);
      const clients = nodes.map((node) => tlsBrokerClient(node.target, channel));
      try {
        const created = await eventually(async () => {
          const answer = await clients[0].createTopics(
            { topics: [{ name: 'replicated', numPartitions: 1, replicationFactor: 2 }] },
            { metadata },
          );
          // Until both nodes are live the controller cannot place two replicas.
          return answer.topics[0].errorCode === ErrorCode.NONE ? answer : undefined;
        }, 'the topic to be created on two nodes');
        expect(created.topics[0].errorCode).toBe(ErrorCode.NONE);
        const leader = await leaderOf(nodes, 'replicated');
        const follower = nodes.find((node) => node !== leader)!;
        const produced = (await eventually(async () => {
          const answer = (await clients[nodes.indexOf(leader)].produce(
            {
              acks: -1,
              timeoutMs: 20_000,
              topics: [
                {
                  name: 'replicated',
                  partitions: [
                    {
                      partitionIndex: 0,
                      records: [
                        { timestampMs: '0', key: Buffer.alloc(0), value: Buffer.from('x'), headers: [] },
                      ],
                    },
                  ],
                },
              ],
            },
            { metadata },
          )) as { topics: { partitions: { errorCode: number }[] }[] };
          // NOT_ENOUGH_REPLICAS while the follower has not joined yet; nothing else is retried.
          const code = answer.topics[0].partitions[0].errorCode;
          return code === ErrorCode.NOT_ENOUGH_REPLICAS ? undefined : answer;
        }, 'an acks=-1 produce with both replicas in sync')) as {
          topics: { partitions: { errorCode: number }[] }[];
        };
        expect(produced.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
        expect(partitionOn(follower, 'replicated')!.logEndOffset).toBe(1);
      } finally {
        for (const client of clients) client.close();
      }
    }, 90_000);
  });
});
