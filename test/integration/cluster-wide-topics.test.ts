import { ErrorCode } from '../../src/errors';
import { startEtcd, type EtcdProcess } from '../support/etcd';
import { groupCoordinatorClient } from '../support/grpc-clients';
import { eventually, fetchRequest, LogCluster, produceRequest, type ClusterNode } from './log-cluster';

/**
 * Topics of more partitions than one etcd transaction holds (etcd takes 128 compares a transaction,
 * `--max-txn-ops`), on a real etcd: two cohort servers in cluster mode with a `__consumer_offsets` of
 * 200 partitions, a 200-partition topic created through the controller and another through the other
 * node, each produced to at its last partition, while Metadata on the other node never shows part of one.
 */
let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

const PARTITIONS = 200;

describe('cluster topics wider than one etcd transaction', () => {
  let cluster: LogCluster;

  beforeEach(() => {
    cluster = new LogCluster();
  });
  // Two servers closing some 1,200 logs between them: each writes its high-watermark checkpoint and
  // flushes, two fsyncs or more a log. Alone this takes seconds (timed step by step: the checkpoints took
  // 8 s of 8.4 s on one node with two suites running beside it); in a full in-band run it has taken 120 to
  // 420 s, for a reason not yet found (the jest process had grown to 1.2 GB by then).
  afterEach(() => cluster.cleanup(), 600_000);

  const startNode = (nodeId: number): Promise<ClusterNode> =>
    cluster.start(`n${nodeId}`, {
      etcdEndpoints: etcd.endpoints,
      clusterId: `wide-topics-${process.pid}`,
      nodeId,
      nodeSessionTimeoutMs: 4_000,
      replicaLagTimeMaxMs: 2_000,
      offsetsTopicNumPartitions: PARTITIONS,
      offsetsTopicReplicationFactor: 2,
    });

  /** How many partitions of `topic` Metadata on `node` lists, every few ms, until `stop` is called. */
  function recordPartitionCounts(
    node: ClusterNode,
    topic: string,
  ): { counts: number[]; stop(): Promise<void> } {
    const counts: number[] = [];
    let isRunning = true;
    const polling = (async () => {
      while (isRunning) {
        const { topics } = await node.client.metadata({ topics: [topic] });
        const found = topics.find((t) => t.name === topic);
        counts.push(found?.errorCode === ErrorCode.NONE ? found.partitions.length : 0);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    return {
      counts,
      stop: async () => {
        isRunning = false;
        await polling;
      },
    };
  }

  /** Creates the topic through `via`, then produces to its last partition and reads the record back. */
  async function createAndProduceToLast(via: ClusterNode, other: ClusterNode, topic: string): Promise<void> {
    const seenByOther = recordPartitionCounts(other, topic);
    const created = await via.client.createTopics({
      topics: [{ name: topic, numPartitions: PARTITIONS, replicationFactor: 2 }],
    });
    expect(created.topics[0]).toEqual({ name: topic, errorCode: ErrorCode.NONE, errorMessage: '' });
    const last = await eventually(async () => {
      const { topics } = await other.client.metadata({ topics: [topic] });
      const partitions = topics[0]?.partitions ?? [];
      const partition = partitions.find((p) => p.partitionIndex === PARTITIONS - 1);
      return partitions.length === PARTITIONS && partition !== undefined && partition.isrNodes.length === 2
        ? partition
        : undefined;
    }, `${topic}: ${PARTITIONS} partitions, the last one led with both nodes in sync`);
    await seenByOther.stop();
    expect(seenByOther.counts.filter((count) => count !== 0 && count !== PARTITIONS)).toEqual([]);

    const leader = [via, other].find((node) => node.name === `n${last.leaderId}`)!;
    // The other node's view may be ahead of the leader's own: a client retries NOT_LEADER_OR_FOLLOWER.
    const produced = await eventually(async () => {
      const answer = await leader.client.produce(
        produceRequest(topic, ['to the last partition'], -1, { partitionIndex: PARTITIONS - 1 }),
      );
      return answer.topics[0].partitions[0].errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER
        ? undefined
        : answer;
    }, `${topic}: the leader of the last partition to take a write`);
    expect(produced.topics[0].partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 0 });
    const fetched = await leader.client.fetch(fetchRequest(topic, 0, { partitionIndex: PARTITIONS - 1 }));
    expect(fetched.responses[0].partitions[0].records.map((r) => r.value.toString())).toEqual([
      'to the last partition',
    ]);
  }

  it('creates 200-partition topics through the controller and another node, and coordinates groups over 200 offsets partitions', async () => {
    const nodes = [await startNode(1), await startNode(2)];
    await eventually(async () => {
      const views = await Promise.all(nodes.map((node) => node.client.metadata({ topics: [] })));
      return views.every((view) => view.brokers.length === 2) ? true : undefined;
    }, 'both nodes to list two live nodes');
    const isController = (node: ClusterNode): boolean =>
      node.logs.some((line) => line.msg === 'became the cluster controller');
    const controller = await eventually(() => nodes.find(isController), 'a controller');
    const other = nodes.find((node) => node !== controller)!;

    await createAndProduceToLast(controller, other, 'wide-by-controller');
    await createAndProduceToLast(other, controller, 'wide-by-other');

    // __consumer_offsets of 200 partitions, created on the first FindCoordinator: a coordinator that
    // answers JoinGroup (MEMBER_ID_REQUIRED is the first step of a join, as in Kafka).
    const client = groupCoordinatorClient(other.target);
    try {
      const coordinator = await eventually(
        async () => {
          const { coordinators } = await client.findCoordinator({ keyType: 0, keys: ['wide-group'] });
          return coordinators[0]?.errorCode === ErrorCode.NONE ? coordinators[0] : undefined;
        },
        'a coordinator of wide-group',
        { attempts: 1_000 },
      );
      const atCoordinator = groupCoordinatorClient(`${coordinator.host}:${coordinator.port}`);
      try {
        const joined = await eventually(async () => {
          const answer = await atCoordinator.joinGroup({
            groupId: 'wide-group',
            memberId: '',
            sessionTimeoutMs: 10_000,
            rebalanceTimeoutMs: 10_000,
            protocolType: 'consumer',
            protocols: [{ name: 'range', metadata: Buffer.from('subscription') }],
          });
          return answer.errorCode === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS ? undefined : answer;
        }, 'the coordinator of wide-group to have loaded it');
        expect(joined.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
      } finally {
        atCoordinator.close();
      }
    } finally {
      client.close();
    }
    const warnings = nodes.flatMap((node) => node.logs.filter((line) => line.level >= 40).map((l) => l.msg));
    expect(warnings.filter((msg) => msg.includes('metadata store'))).toEqual([]);
  }, 120_000);
});
