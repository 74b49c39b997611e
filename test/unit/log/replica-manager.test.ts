import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCode } from '../../../src/errors';
import type { ReplicaManager } from '../../../src/log';
import { MAX_PARTITIONS_PER_TOPIC } from '../../../src/log';
import { HIGH_WATERMARK_CHECKPOINT_FILE } from '../../../src/log/storage';
import {
  BrokerHarness,
  fetched,
  leaderConfig,
  produced,
  record,
  settle,
  until,
  values,
} from './broker-harness';

describe('ReplicaManager: topics, metadata, offsets and recovery', () => {
  let h: BrokerHarness;

  beforeEach(() => {
    h = new BrokerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  async function produce(broker: ReplicaManager, topic: string, ...records: string[]): Promise<number> {
    const response = await broker.produce({
      acks: 1,
      timeoutMs: 0,
      topics: [{ name: topic, partitions: [{ partitionIndex: 0, records: records.map((v) => record(v)) }] }],
    });
    expect(produced(response).errorCode).toBe(ErrorCode.NONE);
    return produced(response).baseOffset;
  }

  it('creates topics on a single node with itself as the one replica of each partition, and reports them', async () => {
    const broker = h.leader();
    broker.setLocalBroker({ nodeId: 0, host: '127.0.0.1', port: 7070 });
    const created = await broker.createTopics({
      topics: [
        { name: 'one', numPartitions: 2, replicationFactor: 1 },
        { name: 'defaults', numPartitions: -1, replicationFactor: -1 },
      ],
    });
    expect(created.topics).toEqual([
      { name: 'one', errorCode: ErrorCode.NONE, errorMessage: '' },
      { name: 'defaults', errorCode: ErrorCode.NONE, errorMessage: '' },
    ]);
    const metadata = await broker.metadata({ topics: [] });
    expect(metadata.brokers).toEqual([{ nodeId: 0, host: '127.0.0.1', port: 7070 }]);
    const partition = (partitionIndex: number) => ({
      partitionIndex,
      leaderId: 0,
      replicaNodes: [0],
      isrNodes: [0],
      errorCode: ErrorCode.NONE,
      leaderEpoch: 0,
    });
    expect(metadata.topics).toEqual([
      { name: 'one', errorCode: ErrorCode.NONE, partitions: [partition(0), partition(1)], errorMessage: '' },
      { name: 'defaults', errorCode: ErrorCode.NONE, partitions: [partition(0)], errorMessage: '' },
    ]);
    expect(
      (await broker.metadata({ topics: ['one', 'missing', 'bad/name'] })).topics.map((t) => t.errorCode),
    ).toEqual([ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION]);
  });

  it('refuses bad topics with Kafka’s codes and a reason', async () => {
    const broker = h.leader();
    await broker.createTopics({ topics: [{ name: 'taken', numPartitions: 1, replicationFactor: 1 }] });
    const response = await broker.createTopics({
      topics: [
        { name: 'taken', numPartitions: 1, replicationFactor: 1 },
        { name: 'zero', numPartitions: 0, replicationFactor: 1 },
        { name: 'huge', numPartitions: MAX_PARTITIONS_PER_TOPIC + 1, replicationFactor: 1 },
        { name: 'rf0', numPartitions: 1, replicationFactor: 0 },
        { name: 'rf2', numPartitions: 1, replicationFactor: 2 },
        { name: 'a/b', numPartitions: 1, replicationFactor: 1 },
        { name: '', numPartitions: 1, replicationFactor: 1 },
        { name: '__consumer_offsets', numPartitions: 1, replicationFactor: 1 },
        { name: 'twice', numPartitions: 1, replicationFactor: 1 },
        { name: 'twice', numPartitions: 1, replicationFactor: 1 },
      ],
    });
    expect(response.topics.map((t) => [t.name, t.errorCode])).toEqual([
      ['taken', ErrorCode.TOPIC_ALREADY_EXISTS],
      ['zero', ErrorCode.INVALID_PARTITIONS],
      ['huge', ErrorCode.INVALID_PARTITIONS],
      ['rf0', ErrorCode.INVALID_REPLICATION_FACTOR],
      ['rf2', ErrorCode.INVALID_REPLICATION_FACTOR],
      ['a/b', ErrorCode.INVALID_TOPIC_EXCEPTION],
      ['', ErrorCode.INVALID_TOPIC_EXCEPTION],
      ['__consumer_offsets', ErrorCode.INVALID_TOPIC_EXCEPTION],
      ['twice', ErrorCode.INVALID_REQUEST],
      ['twice', ErrorCode.INVALID_REQUEST],
    ]);
    // One node holds one replica: more need a cluster.
    expect(response.topics.find((t) => t.name === 'rf2')!.errorMessage).toMatch(
      /must be 1 .* on a single node, got 2; .*--etcd-endpoints/,
    );
    expect(broker.topicNames()).toEqual(['taken']);
  });

  it('lists the earliest and latest offsets and finds offsets by timestamp below the HW', async () => {
    const broker = h.leader();
    await broker.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }] });
    await produce(broker, 't', 'a', 'b');
    h.time.advance(1_000);
    await produce(broker, 't', 'c');
    const start = h.time.nowMs() - 1_000;
    const response = await broker.listOffsets({
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, timestamp: -1 },
            { partitionIndex: 0, timestamp: -2 },
            { partitionIndex: 0, timestamp: start + 1 },
            { partitionIndex: 0, timestamp: start + 5_000 },
            { partitionIndex: 0, timestamp: -3 },
            { partitionIndex: 4, timestamp: -1 },
          ],
        },
        { name: 'nope', partitions: [{ partitionIndex: 0, timestamp: -1 }] },
      ],
    });
    expect(response.topics.map((t) => t.partitions.map((p) => [p.errorCode, p.offset, p.timestamp]))).toEqual(
      [
        [
          [ErrorCode.NONE, 3, -1],
          [ErrorCode.NONE, 0, -1],
          [ErrorCode.NONE, 2, start + 1_000],
          [ErrorCode.NONE, -1, -1],
          [ErrorCode.INVALID_REQUEST, -1, -1],
          [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1],
        ],
        [[ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1]],
      ],
    );
  });

  it('recovers every topic and record after a restart, with the HW at the one checkpointed at close', async () => {
    const dataDir = h.dir('restart');
    const first = h.replicatedLeader({ dataDir });
    h.leadTopic('t', 2, 2);
    await produce(first, 't', 'a', 'b', 'c');
    // The follower has the first two records: the HW is 2 when the leader stops.
    first.getPartition('t-0')!.updateFollowerFetchState(1, 2, 0);
    expect(first.getPartition('t-0')!.highWatermark).toBe(2);
    await first.close();

    // The restarted node leads again, at the next epoch, as the controller re-elects it.
    const second = h.replicatedLeader({ dataDir });
    expect(second.topicNames()).toEqual(['t']);
    h.cluster.elect('t', 0, 0, [0, 1]);
    h.cluster.elect('t', 1, 0, [0, 1]);
    const partition = second.getPartition('t-0')!;
    expect([partition.logEndOffset, partition.highWatermark, partition.isr]).toEqual([3, 2, [0, 1]]);
    // A consumer reads below the HW only: the follower may lack offset 2.
    const beforeFollower = await second.fetch({
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }] },
      ],
    });
    expect(values(fetched(beforeFollower).records)).toEqual(['a', 'b']);
    // The follower reaches where the new epoch began (LEO 3): the HW passes offset 2.
    partition.updateFollowerFetchState(1, 3, 0);
    const response = await second.fetch({
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }] },
      ],
    });
    expect(values(fetched(response).records)).toEqual(['a', 'b', 'c']);
    expect(await produce(second, 't', 'd')).toBe(3);
  });

  it('opens a data directory of partitions with more replicas on a single node: it leads them, and the absent followers leave the ISR', async () => {
    // A directory a node of a cluster (or a leader of the removed fixed roles) wrote: replicas [0, 1].
    const dataDir = h.dir('from-a-cluster');
    const clustered = h.replicatedLeader({ dataDir });
    h.leadTopic('t', 2);
    await produce(clustered, 't', 'a', 'b');
    clustered.getPartition('t-0')!.updateFollowerFetchState(1, 1, 0);
    await clustered.close();

    const single = h.start(leaderConfig(dataDir));
    const partition = single.getPartition('t-0')!;
    expect([partition.isLeader, partition.replicas, partition.isr]).toEqual([true, [0, 1], [0, 1]]);
    expect([partition.logEndOffset, partition.highWatermark]).toEqual([2, 1]);
    // Nobody fetches as node 1: after the lag time (checked every half of it) only node 0 is in sync.
    h.time.advance(15_000);
    expect(partition.isr).toEqual([0]);
    expect(partition.highWatermark).toBe(2);
    const acked = await single.produce({
      acks: -1,
      timeoutMs: 60_000,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('c')] }] }],
    });
    expect(produced(acked)).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 2 });
  });

  it('writes nothing under the data directory until a topic is created', async () => {
    const dataDir = h.dir('untouched');
    const broker = h.start(leaderConfig(dataDir));
    await broker.metadata({ topics: [] });
    expect(fs.existsSync(dataDir)).toBe(false);
    await broker.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }] });
    expect(fs.readdirSync(dataDir).sort()).toEqual(['t-0', 'topics']);
    expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'topics', 't.json'), 'utf8'))).toEqual({
      name: 't',
      topicId: expect.any(String) as unknown,
      partitions: [{ partitionIndex: 0, replicas: [0] }],
    });
  });

  it('refuses to start over a registry file it cannot read, rather than forget a topic', () => {
    const dataDir = h.dir('broken');
    fs.mkdirSync(path.join(dataDir, 'topics'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'topics', 't.json'), '{"name": "t", "partitions": [');
    expect(() => h.start(leaderConfig(dataDir))).toThrow(/topic registry file .* is not JSON/);
  });

  it('checkpoints each partition’s HW every 5 s when it moved, and once more at close', async () => {
    const dataDir = h.dir('hw-checkpoint');
    const broker = h.replicatedLeader({ dataDir });
    h.leadTopic('t', 2, 2);
    await produce(broker, 't', 'a', 'b', 'c');
    const partition = broker.getPartition('t-0')!;
    const file = path.join(dataDir, 't-0', HIGH_WATERMARK_CHECKPOINT_FILE);
    const onDisk = (): unknown =>
      fs.existsSync(file)
        ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { highWatermark: number }).highWatermark
        : null;
    partition.updateFollowerFetchState(1, 2, 0);
    h.time.advance(4_999);
    expect(onDisk()).toBeNull();
    h.time.advance(1);
    // A write is several steps on the thread pool (open, write, fsync, rename, directory fsync).
    await until(() => onDisk() === 2, 'the periodic checkpoint', 200_000);
    const inode = fs.statSync(file).ino;
    // An unchanged HW is not written again.
    h.time.advance(5_000);
    await settle();
    expect(fs.statSync(file).ino).toBe(inode);
    partition.updateFollowerFetchState(1, 3, 0);
    await broker.close();
    expect(onDisk()).toBe(3);
    expect(h.errors).toEqual([]);
  });

  it('deletes segments past the retention time on its periodic check', async () => {
    const broker = h.start(
      leaderConfig(h.dir('retention'), {
        logConfig: { segmentBytes: 1_024, retentionMs: 60_000 },
      }),
      {
        retentionCheckIntervalMs: 10_000,
      },
    );
    await broker.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }] });
    const big = 'r'.repeat(600);
    await produce(broker, 't', big);
    await produce(broker, 't', big);
    await produce(broker, 't', big);
    const log = broker.getPartition('t-0')!.log;
    expect(log.numberOfSegments).toBe(3);
    h.time.advance(60_000);
    expect(log.numberOfSegments).toBe(3);
    h.time.advance(10_000);
    expect(log.numberOfSegments).toBe(1);
    expect(log.logStartOffset).toBe(2);
    const latest = await broker.listOffsets({
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp: -2 }] }],
    });
    expect(latest.topics[0]!.partitions[0]!.offset).toBe(2);
  });

  it('refuses Produce and ListOffsets as a follower, and reports its leader, replicas and ISR', async () => {
    const follower = h.clusterNode(1);
    h.liveNode(0);
    h.cluster.set('t', 0, { leader: 0, leaderEpoch: 2, isr: [0, 1], replicas: [0, 1] });
    expect(follower.getPartition('t-0')).toMatchObject({ isLeader: false, leaderId: 0 });
    const response = await follower.produce({
      acks: 1,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('a')] }] }],
    });
    expect(produced(response).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    const offsets = await follower.listOffsets({
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp: -1 }] }],
    });
    expect(offsets.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    const metadata = await follower.metadata({ topics: [] });
    expect(metadata.brokers.map((b) => b.nodeId)).toEqual([1, 0]);
    expect(metadata.topics[0]!.partitions[0]).toMatchObject({
      leaderId: 0,
      leaderEpoch: 2,
      replicaNodes: [0, 1],
      isrNodes: [0, 1],
    });
  });

  it('tells a partition that does not exist (UNKNOWN_TOPIC_OR_PARTITION) from one hosted elsewhere', async () => {
    // Node 2 learns topic t: partition 0 on [0, 1], partition 1 on [0, 2]. It hosts t-1 only; t-0 exists
    // on other replicas; t-2 and t--1 do not exist at all.
    const follower = h.clusterNode(2);
    h.liveNode(0);
    h.cluster.set('t', 0, { leader: 0, leaderEpoch: 0, isr: [0, 1], replicas: [0, 1] }, false);
    h.cluster.set('t', 1, { leader: 0, leaderEpoch: 0, isr: [0, 2], replicas: [0, 2] });
    expect(follower.getPartition('t-0')).toBeUndefined();
    expect(follower.getPartition('t-1')).toBeDefined();
    const indexes = [0, 2, -1];
    const expected = [
      ErrorCode.NOT_LEADER_OR_FOLLOWER,
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ];
    const fetchResponse = await follower.fetch({
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1_024,
      topics: [
        {
          name: 't',
          partitions: indexes.map((partitionIndex) => ({
            partitionIndex,
            fetchOffset: 0,
            partitionMaxBytes: 1_024,
          })),
        },
      ],
    });
    expect(fetchResponse.responses[0]!.partitions.map((p) => p.errorCode)).toEqual(expected);
    const produceResponse = await follower.produce({
      acks: 1,
      timeoutMs: 0,
      topics: [
        {
          name: 't',
          partitions: indexes.map((partitionIndex) => ({ partitionIndex, records: [record('a')] })),
        },
      ],
    });
    expect(produceResponse.topics[0]!.partitions.map((p) => p.errorCode)).toEqual(expected);
    const offsets = await follower.listOffsets({
      topics: [
        { name: 't', partitions: indexes.map((partitionIndex) => ({ partitionIndex, timestamp: -1 })) },
      ],
    });
    expect(offsets.topics[0]!.partitions.map((p) => p.errorCode)).toEqual(expected);
  });

  it('stops copying a partition the cluster no longer assigns it, and starts one it now does', async () => {
    const follower = h.clusterNode(1);
    h.liveNode(0);
    const assign = (replicas: number[][]): void => {
      replicas.forEach((replicaNodes, partitionIndex) =>
        h.cluster.set(
          't',
          partitionIndex,
          { leader: 0, leaderEpoch: 0, isr: replicaNodes, replicas: replicaNodes },
          false,
        ),
      );
      h.cluster.publish();
    };
    /** What a fetcher of leader 0 copies: an empty log has no epoch boundary to find, so it fetches next. */
    const copied = (): string[] => {
      expect(follower.epochBoundaryTargets(0)).toEqual([]);
      return follower.followerFetchTargets(0).map((t) => t.key);
    };
    assign([[0, 1], [0]]);
    expect(follower.followedLeaders()).toEqual(new Set([0]));
    expect(copied()).toEqual(['t-0']);
    assign([[0], [0, 1]]);
    expect(copied()).toEqual(['t-1']);
    expect(follower.getPartition('t-0')).toBeUndefined();
    const registry = JSON.parse(fs.readFileSync(path.join(h.dir('node-1'), 'topics', 't.json'), 'utf8')) as {
      partitions: { replicas: number[] }[];
    };
    expect(registry.partitions.map((p) => p.replicas)).toEqual([[0], [0, 1]]);
  });
});
