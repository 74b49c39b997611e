import { ErrorCode } from '../../src/errors';
import { CohortCluster } from '../support/cohort-cluster';
import { groupCoordinatorClient } from '../support/grpc-clients';
import { brokerClient, eventually, fetchRequest, produceRequest, type BrokerClient } from './log-cluster';

/**
 * Topics of more partitions than one etcd transaction holds (etcd takes 128 compares a transaction,
 * `--max-txn-ops`), on a real etcd: two cohort nodes (real processes, as `npm start` runs them) with a
 * `__consumer_offsets` of 200 partitions, a 200-partition topic created through the controller and
 * another through the other node, each produced to at its last partition, while Metadata on the other
 * node never shows part of one.
 *
 * The nodes run as processes rather than inside the test's process: they host some 1,200 logs between
 * them, and closing that many in the one process the whole suite runs in took minutes late in a full run
 * (seconds when the file ran alone), where a process of its own stops in seconds whatever ran before.
 */
const PARTITIONS = 200;

interface Node {
  readonly nodeId: number;
  readonly client: BrokerClient;
}

describe('cluster topics wider than one etcd transaction', () => {
  let cluster: CohortCluster | undefined;
  const clients: BrokerClient[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await cluster?.stop();
    cluster = undefined;
  }, 120_000);

  /** How many partitions of `topic` Metadata on `node` lists, every few ms, until `stop` is called. */
  function recordPartitionCounts(node: Node, topic: string): { counts: number[]; stop(): Promise<void> } {
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
  async function createAndProduceToLast(via: Node, other: Node, topic: string): Promise<void> {
    const seenByOther = recordPartitionCounts(other, topic);
    const created = await via.client.createTopics({
      topics: [{ name: topic, numPartitions: PARTITIONS, replicationFactor: 2 }],
    });
    expect(created.topics[0]).toEqual({ name: topic, errorCode: ErrorCode.NONE, errorMessage: '' });
    const last = await eventually(
      async () => {
        const { topics } = await other.client.metadata({ topics: [topic] });
        const partitions = topics[0]?.partitions ?? [];
        const partition = partitions.find((p) => p.partitionIndex === PARTITIONS - 1);
        return partitions.length === PARTITIONS && partition !== undefined && partition.isrNodes.length === 2
          ? partition
          : undefined;
      },
      `${topic}: ${PARTITIONS} partitions, the last one led with both nodes in sync`,
      { attempts: 3_000 },
    );
    await seenByOther.stop();
    expect(seenByOther.counts.filter((count) => count !== 0 && count !== PARTITIONS)).toEqual([]);

    // Asked of the leader that Metadata names at each attempt: the other node's view may be ahead of the
    // leader's own, and a busy node may lose its leadership meanwhile (a client retries
    // NOT_LEADER_OR_FOLLOWER after refreshing its metadata, as this does).
    let leader = [via, other].find((node) => node.nodeId === last.leaderId)!;
    const produced = await eventually(
      async () => {
        const { topics } = await other.client.metadata({ topics: [topic] });
        const leaderId = topics[0]?.partitions.find((p) => p.partitionIndex === PARTITIONS - 1)?.leaderId;
        leader = [via, other].find((node) => node.nodeId === leaderId) ?? leader;
        const answer = await leader.client.produce(
          produceRequest(topic, ['to the last partition'], -1, { partitionIndex: PARTITIONS - 1 }),
        );
        return answer.topics[0].partitions[0].errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER
          ? undefined
          : answer;
      },
      `${topic}: the leader of the last partition to take a write`,
      { attempts: 3_000 },
    );
    expect(produced.topics[0].partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 0 });
    const fetched = await leader.client.fetch(fetchRequest(topic, 0, { partitionIndex: PARTITIONS - 1 }));
    expect(fetched.responses[0].partitions[0].records.map((r) => r.value.toString())).toEqual([
      'to the last partition',
    ]);
  }

  it('creates 200-partition topics through the controller and another node, and coordinates groups over 200 offsets partitions', async () => {
    const started = await CohortCluster.start({
      nodeCount: 2,
      sessionTimeoutMs: 6_000,
      // Not what this test is about: a follower busy with 1,200 logs on a loaded machine may lag a while.
      minInsyncReplicas: 1,
      replicaLagTimeMaxMs: 10_000,
      extraArgs: [
        '--offsets-topic-num-partitions',
        String(PARTITIONS),
        '--offsets-topic-replication-factor',
        '2',
      ],
    });
    cluster = started;
    const nodes: Node[] = started.nodeIds().map((nodeId) => {
      const client = brokerClient(started.node(nodeId).target);
      clients.push(client);
      return { nodeId, client };
    });
    const controllerId = await eventually(async () => {
      const views = await Promise.all(nodes.map((node) => node.client.metadata({ topics: [] })));
      const ids = new Set(views.map((view) => view.controllerId));
      return views.every((view) => view.brokers.length === 2) && ids.size === 1 && !ids.has(-1)
        ? views[0]!.controllerId
        : undefined;
    }, 'both nodes to list two live nodes and agree on a controller');
    const controller = nodes.find((node) => node.nodeId === controllerId)!;
    const other = nodes.find((node) => node !== controller)!;

    await createAndProduceToLast(controller, other, 'wide-by-controller');
    await createAndProduceToLast(other, controller, 'wide-by-other');

    // __consumer_offsets of 200 partitions, created on the first FindCoordinator: a coordinator that
    // answers JoinGroup (MEMBER_ID_REQUIRED is the first step of a join, as in Kafka). Asked again, as a
    // client does, while the coordinator is loading the group or has moved.
    const retried: number[] = [
      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
      ErrorCode.NOT_COORDINATOR,
    ];
    const client = groupCoordinatorClient(started.node(other.nodeId).target);
    try {
      const joined = await eventually(
        async () => {
          const { coordinators } = await client.findCoordinator({ keyType: 0, keys: ['wide-group'] });
          const coordinator = coordinators[0];
          if (coordinator?.errorCode !== ErrorCode.NONE) return undefined;
          const atCoordinator = groupCoordinatorClient(`${coordinator.host}:${coordinator.port}`);
          try {
            const answer = await atCoordinator.joinGroup({
              groupId: 'wide-group',
              memberId: '',
              sessionTimeoutMs: 10_000,
              rebalanceTimeoutMs: 10_000,
              protocolType: 'consumer',
              protocols: [{ name: 'range', metadata: Buffer.from('subscription') }],
            });
            return retried.includes(answer.errorCode) ? undefined : answer;
          } finally {
            atCoordinator.close();
          }
        },
        'a coordinator of wide-group that has loaded it',
        { attempts: 1_000 },
      );
      expect(joined.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    } finally {
      client.close();
    }
    const warnings = started
      .nodeIds()
      .flatMap((nodeId) => started.node(nodeId).process?.lines ?? [])
      .filter((line) => typeof line !== 'string' && line.level >= 40)
      .map((line) => (typeof line === 'string' ? line : line.msg));
    expect(warnings.filter((msg) => msg.includes('metadata store'))).toEqual([]);
  }, 180_000);
});
