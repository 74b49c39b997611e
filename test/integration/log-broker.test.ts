import { status } from '@grpc/grpc-js';
import { ErrorCode } from '../../src/errors';
import { brokerLeaderEndpointFactory } from '../../src/server';
import { eventually, fetchRequest, LogCluster, produceRequest } from './log-cluster';

describe('the Broker service of one cohort server', () => {
  let cluster: LogCluster;

  beforeEach(() => {
    cluster = new LogCluster();
  });

  afterEach(async () => {
    await cluster.cleanup();
  });

  it('returns a consumer’s long-poll Fetch as soon as a produce moves the HW', async () => {
    const leader = await cluster.start('leader');
    await leader.client.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }] });
    // A minute of max wait, longer than the test may run: only the produce can answer it in time.
    const parked = leader.client.fetch(fetchRequest('t', 0, { maxWaitMs: 60_000 }));
    await eventually(
      () => (leader.server.replicaManager.numDelayedFetch === 1 ? true : undefined),
      'the fetch to park',
    );
    const produced = await leader.client.produce(produceRequest('t', ['wake up'], 1));
    expect(produced.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    const fetched = await parked;
    expect(fetched.responses[0]!.partitions[0]).toMatchObject({
      errorCode: ErrorCode.NONE,
      highWatermark: 1,
    });
    expect(fetched.responses[0]!.partitions[0]!.records.map((r) => r.value.toString())).toEqual(['wake up']);
  });

  it('serves a consumer whose Fetch leaves replica_id and the byte limits at their proto3 defaults', async () => {
    const leader = await cluster.start('leader');
    await leader.client.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }] });
    await leader.client.produce(produceRequest('t', ['a', 'b', 'c'], 1));
    // Only the topic, partition and offset: replica_id 0, max_bytes 0, partition_max_bytes 0 on the wire.
    const response = await leader.client.fetch({
      replicaId: 0,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, fetchOffset: 0, partitionMaxBytes: 0 }] }],
    });
    const partition = response.responses[0]!.partitions[0]!;
    expect(partition.errorCode).toBe(ErrorCode.NONE);
    expect(partition.records.map((r) => r.value.toString())).toEqual(['a', 'b', 'c']);
  });

  it('checks a current_leader_epoch only when one is sent, and answers OffsetForLeaderEpoch', async () => {
    const leader = await cluster.start('leader');
    await leader.client.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }] });
    await leader.client.produce(produceRequest('t', ['a', 'b'], 1));
    // One node leads at epoch 0: absent (a client that predates the field) and -1 mean "no check", and
    // 0 is an epoch like any other, which proto3's default would have hidden.
    const fetchAt = async (currentLeaderEpoch?: number) => {
      const request = fetchRequest('t', 0);
      const partition = { ...request.topics[0]!.partitions[0]!, currentLeaderEpoch };
      const response = await leader.client.fetch({
        ...request,
        topics: [{ name: 't', partitions: [partition] }],
      });
      return response.responses[0]!.partitions[0]!;
    };
    expect((await fetchAt(undefined)).records).toHaveLength(2);
    expect((await fetchAt(-1)).errorCode).toBe(ErrorCode.NONE);
    expect((await fetchAt(0)).records).toHaveLength(2);
    expect((await fetchAt(1)).errorCode).toBe(ErrorCode.UNKNOWN_LEADER_EPOCH);
    const listAt = async (currentLeaderEpoch?: number) =>
      (
        await leader.client.listOffsets({
          topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp: -1, currentLeaderEpoch }] }],
        })
      ).topics[0]!.partitions[0]!;
    expect(await listAt(undefined)).toMatchObject({ errorCode: ErrorCode.NONE, offset: 2 });
    expect((await listAt(0)).errorCode).toBe(ErrorCode.NONE);
    expect((await listAt(3)).errorCode).toBe(ErrorCode.UNKNOWN_LEADER_EPOCH);
    const epochs = await leader.client.offsetForLeaderEpoch({
      replicaId: -1,
      topics: [
        {
          name: 't',
          partitions: [
            { partition: 0, leaderEpoch: 0 },
            { partition: 1, leaderEpoch: 0 },
          ],
        },
      ],
    });
    expect(epochs.topics[0]!.partitions).toEqual([
      { errorCode: ErrorCode.NONE, partition: 0, leaderEpoch: 0, endOffset: 2 },
      { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partition: 1, leaderEpoch: -1, endOffset: -1 },
    ]);
    // A follower's connection (what a ReplicaFetcher uses) asks the same over gRPC, and reads the epoch
    // each record was written in.
    const port = Number(leader.target.split(':')[1]);
    const endpoint = brokerLeaderEndpointFactory()({ nodeId: 0, host: '127.0.0.1', port });
    try {
      const signal = new AbortController().signal;
      const viaEndpoint = await endpoint.offsetForLeaderEpoch(
        { replicaId: -1, topics: [{ name: 't', partitions: [{ partition: 0, leaderEpoch: 0 }] }] },
        signal,
      );
      expect(viaEndpoint.topics[0]!.partitions[0]).toEqual({
        errorCode: ErrorCode.NONE,
        partition: 0,
        leaderEpoch: 0,
        endOffset: 2,
      });
      const records = await endpoint.fetch(
        { replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 1 << 20, topics: fetchRequest('t', 0).topics },
        signal,
      );
      expect(records.responses[0]!.partitions[0]!.records.map((r) => [r.offset, 'leaderEpoch' in r])).toEqual(
        [
          [0, true],
          [1, true],
        ],
      );
    } finally {
      endpoint.close();
    }
    // A replica id the caller has not proven (no node credentials) is not answered as a follower; a
    // proven node that is no replica of the partition is refused too (test/unit/log/replica-manager-cluster).
    const stranger = await leader.client.offsetForLeaderEpoch({
      replicaId: 7,
      topics: [{ name: 't', partitions: [{ partition: 0, leaderEpoch: 0 }] }],
    });
    expect(stranger.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
  });

  it('round-trips keys, headers, timestamps and offsets, and lists offsets', async () => {
    const leader = await cluster.start('leader');
    await leader.client.createTopics({ topics: [{ name: 't', numPartitions: 2, replicationFactor: -1 }] });
    const produced = await leader.client.produce({
      acks: -1,
      timeoutMs: 1_000,
      topics: [
        {
          name: 't',
          partitions: [
            {
              partitionIndex: 1,
              records: [
                {
                  timestampMs: 1_700_000_000_123,
                  key: Buffer.from('k'),
                  value: Buffer.from('v'),
                  headers: [{ key: 'h', value: Buffer.from([1, 2]) }],
                },
                { timestampMs: 0, key: Buffer.alloc(0), value: Buffer.from('no key'), headers: [] },
              ],
            },
          ],
        },
      ],
    });
    expect(produced.topics[0]!.partitions[0]).toMatchObject({
      partitionIndex: 1,
      errorCode: ErrorCode.NONE,
      baseOffset: 0,
    });
    const fetched = await leader.client.fetch(fetchRequest('t', 0, { partitionIndex: 1 }));
    const [first, second] = fetched.responses[0]!.partitions[0]!.records;
    expect(first).toEqual({
      offset: 0,
      timestampMs: 1_700_000_000_123,
      key: Buffer.from('k'),
      value: Buffer.from('v'),
      headers: [{ key: 'h', value: Buffer.from([1, 2]) }],
      // One node leads at epoch 0.
      leaderEpoch: 0,
      valueNull: false,
    });
    expect(second!.offset).toBe(1);
    expect(second!.key).toEqual(Buffer.alloc(0));
    expect(second!.timestampMs).toBeGreaterThan(1_700_000_000_123);
    const offsets = await leader.client.listOffsets({
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 1, timestamp: -1 },
            { partitionIndex: 1, timestamp: -2 },
            { partitionIndex: 1, timestamp: 1_700_000_000_000 },
          ],
        },
      ],
    });
    expect(offsets.topics[0]!.partitions.map((p) => [p.errorCode, p.offset])).toEqual([
      [ErrorCode.NONE, 2],
      [ErrorCode.NONE, 0],
      [ErrorCode.NONE, 0],
    ]);
  });

  it('answers bad input with Kafka’s error codes, and unreadable int64 with INVALID_ARGUMENT', async () => {
    const leader = await cluster.start('leader', { logSegmentBytes: 1_024 });
    await leader.client.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }] });
    const code = async (request: Parameters<typeof leader.client.produce>[0]) =>
      (await leader.client.produce(request)).topics[0]!.partitions[0]!.errorCode;
    expect(await code(produceRequest('t', ['a'], 5))).toBe(ErrorCode.INVALID_REQUIRED_ACKS);
    expect(await code(produceRequest('nope', ['a'], 1))).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect(await code(produceRequest('t', ['x'.repeat(2_000)], 1))).toBe(ErrorCode.RECORD_LIST_TOO_LARGE);
    const outOfRange = await leader.client.fetch(fetchRequest('t', 9, { maxWaitMs: 10_000 }));
    expect(outOfRange.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
    const created = await leader.client.createTopics({
      topics: [{ name: 't', numPartitions: 1, replicationFactor: 2 }],
    });
    expect(created.topics[0]!.errorCode).toBe(ErrorCode.TOPIC_ALREADY_EXISTS);
    await expect(
      leader.client.fetch({
        ...fetchRequest('t', 0),
        topics: [
          {
            name: 't',
            partitions: [
              {
                partitionIndex: 0,
                fetchOffset: '9007199254740993' as unknown as number,
                partitionMaxBytes: 1,
              },
            ],
          },
        ],
      }),
    ).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
  });

  // A parked acks=-1 Produce needs a follower that does not fetch: the replica manager's shutdown, which
  // answers this Fetch, answers it too (delayed-produce.test.ts, "when the broker shuts down").
  it('answers a parked Fetch when the server closes, and releases one whose caller cancels', async () => {
    const leader = await cluster.start('leader');
    await leader.client.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }] });
    const controller = new AbortController();
    const cancelled = leader.client.fetch(fetchRequest('t', 0, { maxWaitMs: 60_000 }), {
      signal: controller.signal,
    });
    await eventually(
      () => (leader.server.replicaManager.numDelayedFetch === 1 ? true : undefined),
      'the fetch to park',
    );
    controller.abort();
    await expect(cancelled).rejects.toMatchObject({ code: status.CANCELLED });
    await eventually(
      () => (leader.server.replicaManager.numDelayedFetch === 0 ? true : undefined),
      'the fetch to be released',
    );

    const fetch = leader.client.fetch(fetchRequest('t', 0, { maxWaitMs: 60_000 }));
    await eventually(
      () => (leader.server.replicaManager.numDelayedFetch === 1 ? true : undefined),
      'the fetch to park',
    );
    const closed = cluster.stop('leader');
    expect((await fetch).responses[0]!.partitions[0]).toMatchObject({
      errorCode: ErrorCode.NONE,
      records: [],
    });
    await closed;
  });
});
