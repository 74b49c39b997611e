import { ClusterTransport } from '../../../src/client/cluster-transport';
import { CohortAdmin, type TopicDescription } from '../../../src/client/cohort-admin';
import { Consumer } from '../../../src/client/consumer';
import { Producer } from '../../../src/client/producer';
import { ErrorCode } from '../../../src/errors';
import { ManualTime } from '../../../src/time';
import { FakeCluster } from './support/fake-cluster';
import { flush } from './support/scripted-transport';

function setUp() {
  const time = new ManualTime();
  // Topic t: partition 0 led by node 1, 1 by node 2, 2 by node 3.
  const cluster = new FakeCluster(time).addTopic('t', [1, 2, 3]);
  const transport = new ClusterTransport({
    bootstrap: ['node-1:7070'],
    connect: cluster.connect,
    time,
    random: () => 0.5,
  });
  const advance = async (ms: number): Promise<void> => {
    time.advance(ms);
    await flush();
  };
  return { time, cluster, transport, advance };
}

const options = { timeoutMs: 5_000 };
const record = (value: string) => ({
  offset: 0n,
  timestampMs: 0,
  key: Buffer.alloc(0),
  value: Buffer.from(value),
  headers: [],
});

describe('ClusterTransport: Produce, Fetch and ListOffsets go to each partition leader', () => {
  it('splits a Produce by leader and merges the answers', async () => {
    const { cluster, transport } = setUp();
    const response = await transport.produce(
      {
        acks: -1,
        timeoutMs: 1_000,
        topics: [
          {
            name: 't',
            partitions: [0, 1, 2].map((partitionIndex) => ({
              partitionIndex,
              records: [record(`v${partitionIndex}`)],
            })),
          },
        ],
      },
      options,
    );
    for (const id of [1, 2, 3]) {
      expect(
        cluster.node(id).produceCalls.map((r) => r.topics[0].partitions.map((p) => p.partitionIndex)),
      ).toEqual([[id - 1]]);
    }
    expect(response.topics.flatMap((t) => t.partitions.map((p) => [p.partitionIndex, p.errorCode]))).toEqual([
      [0, ErrorCode.NONE],
      [1, ErrorCode.NONE],
      [2, ErrorCode.NONE],
    ]);
    expect(cluster.node(2).log.values('t', 1)).toEqual(['v1']);
  });

  it('sends the leader epoch it knows with each Fetch and ListOffsets partition', async () => {
    const { cluster, transport } = setUp();
    cluster.elect('t', 1, 2); // epoch 1
    await transport.metadata({ topics: ['t'] }, options);
    await transport.listOffsets(
      { topics: [{ name: 't', partitions: [{ partitionIndex: 1, timestamp: -1 }] }] },
      options,
    );
    expect(cluster.node(2).listOffsetsCalls[0].topics[0].partitions[0].currentLeaderEpoch).toBe(1);
    await transport.fetch(
      {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [
          { name: 't', partitions: [{ partitionIndex: 1, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }] },
        ],
      },
      options,
    );
    expect(cluster.node(2).fetchCalls[0].topics[0].partitions[0].currentLeaderEpoch).toBe(1);
  });

  it.each([
    ['NOT_LEADER_OR_FOLLOWER', ErrorCode.NOT_LEADER_OR_FOLLOWER],
    ['FENCED_LEADER_EPOCH', ErrorCode.FENCED_LEADER_EPOCH],
    ['UNKNOWN_LEADER_EPOCH', ErrorCode.UNKNOWN_LEADER_EPOCH],
  ])('refreshes Metadata after %s and sends the retry to the new leader', async (_name, code) => {
    const { cluster, transport } = setUp();
    const fetchOf = (partitionIndex: number) => ({
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [{ name: 't', partitions: [{ partitionIndex, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }] }],
    });
    await transport.fetch(fetchOf(0), options); // learns the leaders
    const metadataBefore = cluster.node(1).metadataCalls.length;
    cluster.elect('t', 0, 2);
    cluster.node(1).nextPartitionCode = code; // what node 1 says, whatever its reason
    const failed = await transport.fetch(fetchOf(0), options);
    expect(failed.responses[0].partitions[0].errorCode).toBe(code);
    expect(cluster.node(1).metadataCalls).toHaveLength(metadataBefore);
    await transport.fetch(fetchOf(0), options);
    expect(cluster.node(1).metadataCalls).toHaveLength(metadataBefore + 1);
    expect(cluster.node(2).fetchCalls).toHaveLength(1);
    expect(cluster.node(2).fetchCalls[0].topics[0].partitions[0].currentLeaderEpoch).toBe(1);
  });

  it('spaces Metadata refreshes during an election by a backoff, and answers LEADER_NOT_AVAILABLE meanwhile', async () => {
    const { cluster, transport, advance } = setUp();
    await transport.metadata({ topics: ['t'] }, options);
    cluster.elect('t', 0, -1); // offline
    cluster.node(1).log.script('listOffsets', () => ({
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, offset: -1n, timestamp: -1 },
          ],
        },
      ],
    }));
    const ask = () =>
      transport.listOffsets(
        { topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp: -1 }] }] },
        options,
      );
    await ask(); // NOT_LEADER_OR_FOLLOWER: stale
    const refreshes = () => cluster.node(1).metadataCalls.length;
    const before = refreshes();
    const answer = await ask(); // refreshed: no leader
    expect(refreshes()).toBe(before + 1);
    expect(answer.topics[0].partitions[0].errorCode).toBe(ErrorCode.LEADER_NOT_AVAILABLE);
    await ask();
    await ask();
    expect(refreshes()).toBe(before + 1); // within the backoff (100 ms, then 200 ms)
    await advance(100);
    await ask();
    expect(refreshes()).toBe(before + 2);
    await advance(100);
    await ask();
    expect(refreshes()).toBe(before + 2);
    await advance(100);
    cluster.elect('t', 0, 3);
    const led = await ask();
    expect(refreshes()).toBe(before + 3);
    expect(led.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
    expect(cluster.node(3).listOffsetsCalls).toHaveLength(1);
  });

  it('answers the partitions of a node it cannot reach with a retriable code, and the others normally', async () => {
    const { cluster, transport } = setUp();
    await transport.metadata({ topics: ['t'] }, options);
    cluster.node(3).isDown = true;
    const response = await transport.produce(
      {
        acks: 1,
        timeoutMs: 1_000,
        topics: [
          {
            name: 't',
            partitions: [1, 2].map((partitionIndex) => ({ partitionIndex, records: [record('x')] })),
          },
        ],
      },
      options,
    );
    expect(response.topics[0].partitions.map((p) => [p.partitionIndex, p.errorCode]).sort()).toEqual([
      [1, ErrorCode.NONE],
      [2, ErrorCode.COORDINATOR_NOT_AVAILABLE],
    ]);
  });

  it('returns a Fetch as soon as one leader has records, cutting the other long polls short', async () => {
    const { cluster, transport, advance } = setUp();
    await transport.metadata({ topics: ['t'] }, options);
    const pending = transport.fetch(
      {
        replicaId: -1,
        maxWaitMs: 10_000,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [
          {
            name: 't',
            partitions: [0, 1].map((partitionIndex) => ({
              partitionIndex,
              fetchOffset: 0n,
              partitionMaxBytes: 1 << 20,
            })),
          },
        ],
      },
      options,
    );
    await flush();
    expect(cluster.node(1).log.parkedFetches + cluster.node(2).log.parkedFetches).toBe(2);
    cluster.node(2).log.append('t', 1, 'hello');
    await advance(1);
    const response = await pending;
    expect(
      response.responses.flatMap((t) => t.partitions.map((p) => [p.partitionIndex, p.records.length])),
    ).toEqual([[1, 1]]);
    expect(cluster.node(1).log.parkedFetches).toBe(0);
  });
});

describe('ClusterTransport: Metadata from a node not yet in the cluster', () => {
  it('asks the next node when one lists no brokers, and the one that knows the cluster first next time', async () => {
    const { time, cluster } = setUp();
    const transport = new ClusterTransport({
      bootstrap: ['node-1:7070', 'node-2:7070'],
      connect: cluster.connect,
      time,
    });
    cluster.node(1).isMember = false;
    const response = await transport.metadata({ topics: ['t'] }, options);
    expect(response.topics[0]).toMatchObject({ name: 't', errorCode: ErrorCode.NONE });
    expect(response.brokers).toHaveLength(3);
    await transport.metadata({ topics: ['t'] }, options);
    expect(cluster.node(1).metadataCalls).toHaveLength(1);
    expect(cluster.node(2).metadataCalls).toHaveLength(2);
  });

  it('fails with the retriable LEADER_NOT_AVAILABLE when no node it knows is a member yet', async () => {
    const { cluster, transport } = setUp();
    cluster.node(1).isMember = false;
    await expect(transport.metadata({ topics: ['t'] }, options)).rejects.toMatchObject({
      code: ErrorCode.LEADER_NOT_AVAILABLE,
      retriable: true,
      message: expect.stringContaining('node-1:7070 is not yet a member of the cluster'),
    });
    expect(transport.leaders.leaderOf('t', 0)).toEqual({ kind: 'unknown' });
  });

  it('lets an admin and a producer bootstrapped from it wait for the cluster, not take the topic for missing', async () => {
    const { time, cluster, transport, advance } = setUp();
    cluster.node(1).isMember = false;
    const admin = new CohortAdmin(
      { requestTimeoutMs: 30_000 },
      { groupTransport: transport, brokerTransport: transport, time, random: () => 0.5 },
    );
    const producer = new Producer({ acks: -1, lingerMs: 0 }, { transport, time, random: () => 0.5 });
    const outcomes: unknown[] = [undefined, undefined];
    const settle = (i: number) => (value: unknown) => (outcomes[i] = value);
    admin.describeTopics(['t']).then(settle(0), settle(0));
    // No partition given: the producer needs the topic's partition count from Metadata.
    producer.send({ topic: 't', value: 'v' }).then(settle(1), settle(1));
    for (let i = 0; i < 10; i++) await advance(100);
    expect(outcomes).toEqual([undefined, undefined]);
    expect(cluster.node(1).metadataCalls.length).toBeGreaterThan(2);
    cluster.node(1).isMember = true;
    for (let i = 0; i < 20 && outcomes.includes(undefined); i++) await advance(100);
    const [described] = outcomes[0] as TopicDescription[];
    expect(described).toMatchObject({ name: 't', error: null });
    expect(described!.partitions).toHaveLength(3);
    expect(outcomes[1]).toMatchObject({ topic: 't', offset: 0n });
    await producer.close();
  });
});

describe('Producer over ClusterTransport: a failover loses no acks=-1 record', () => {
  it('retries a batch refused by the old leader at the new one, and acknowledges it once', async () => {
    const { time, cluster, transport, advance } = setUp();
    const producer = new Producer({ acks: -1, lingerMs: 0 }, { transport, time, random: () => 0.5 });
    const first = await (async () => {
      const sent = producer.send({ topic: 't', partition: 0, value: 'before' });
      await advance(0);
      return sent;
    })();
    expect(first.offset).toBe(0n);
    // Node 1 dies; node 2 takes over partition 0.
    cluster.node(1).isDown = true;
    cluster.elect('t', 0, 2);
    cluster.node(2).log.append('t', 0, 'before'); // what the new leader replicated
    const sent = producer.send({ topic: 't', partition: 0, value: 'after' });
    for (let i = 0; i < 20 && cluster.node(2).log.values('t', 0).length < 2; i++) await advance(100);
    const metadata = await sent;
    expect(metadata.offset).toBe(1n);
    expect(cluster.node(2).log.values('t', 0)).toEqual(['before', 'after']);
    await producer.close();
  });
});

describe('Consumer over ClusterTransport: a leader change mid-stream', () => {
  it('fetches each partition from its leader, and after NOT_LEADER_OR_FOLLOWER from the new one', async () => {
    const { time, cluster, transport, advance } = setUp();
    cluster.coordinate('g', 3);
    const consumer = new Consumer(
      {
        groupId: 'g',
        topics: ['t'],
        sessionTimeoutMs: 10_000,
        heartbeatIntervalMs: 3_000,
        rebalanceTimeoutMs: 20_000,
        autoOffsetReset: 'earliest',
        maxWaitMs: 500,
      },
      { groupTransport: transport, brokerTransport: transport, time, random: () => 0.5, clientId: 'c' },
    );
    const seen: string[] = [];
    void consumer.run({
      eachMessage: async ({ partition, message }) => {
        seen.push(`${partition}:${message.offset}=${message.value.toString()}`);
      },
    });
    cluster.node(1).log.append('t', 0, 'a');
    cluster.node(2).log.append('t', 1, 'b');
    for (let i = 0; i < 5 && seen.length < 2; i++) await advance(100);
    expect(seen.sort()).toEqual(['0:0=a', '1:0=b']);
    expect(cluster.node(3).callsOf('joinGroup')).toHaveLength(1); // the group at its coordinator

    // Node 2 takes over partition 0 (it has 'a', replicated) and gets 'c'; node 1 now refuses it.
    const asked = (): number =>
      cluster.node(1).fetchCalls.filter((r) => r.topics[0]?.partitions.some((p) => p.partitionIndex === 0))
        .length;
    const askedBefore = asked();
    cluster.elect('t', 0, 2);
    cluster.node(2).log.append('t', 0, 'a', 'c');
    for (let i = 0; i < 20 && seen.length < 3; i++) await advance(100);
    expect(asked()).toBeGreaterThan(askedBefore); // the old leader was asked, and refused
    expect(seen).toContain('0:1=c');
    expect(seen.filter((s) => s.startsWith('0:'))).toEqual(['0:0=a', '0:1=c']);
    const atNewLeader = cluster
      .node(2)
      .fetchCalls.flatMap((r) => r.topics[0].partitions)
      .filter((p) => p.partitionIndex === 0);
    expect(atNewLeader.length).toBeGreaterThan(0);
    expect(atNewLeader.every((p) => p.currentLeaderEpoch === 1)).toBe(true);
    await consumer.close();
  });
});
