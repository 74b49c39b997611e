import { ErrorCode } from '../../../src/errors';
import type { FetchRequest, ReplicaManager } from '../../../src/log';
import { Partition } from '../../../src/log/partition';
import { BrokerHarness, fetched, record, settle, track, values } from './broker-harness';
import { cancelOn } from '../../support/cancel-on';

describe('DelayedFetch', () => {
  let h: BrokerHarness;

  beforeEach(() => {
    h = new BrokerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  async function createTopic(
    broker: ReplicaManager,
    name: string,
    numPartitions = 1,
    replicationFactor = 1,
  ): Promise<void> {
    const { topics } = await broker.createTopics({ topics: [{ name, numPartitions, replicationFactor }] });
    expect(topics[0]!.errorCode).toBe(ErrorCode.NONE);
  }

  function consumerFetch(
    partitions: { topic: string; partitionIndex: number; fetchOffset: number }[],
    options: Partial<FetchRequest> = {},
  ): FetchRequest {
    const topics = new Map<
      string,
      { partitionIndex: number; fetchOffset: number; partitionMaxBytes: number }[]
    >();
    for (const p of partitions) {
      const list = topics.get(p.topic) ?? [];
      list.push({ partitionIndex: p.partitionIndex, fetchOffset: p.fetchOffset, partitionMaxBytes: 1 << 20 });
      topics.set(p.topic, list);
    }
    return {
      replicaId: -1,
      maxWaitMs: 5_000,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [...topics].map(([name, parts]) => ({ name, partitions: parts })),
      ...options,
    };
  }

  const unsynced = { flushMessages: 1_000_000 };

  it('a parked Fetch whose re-read fails rejects with the failure; the Produce that woke it is answered', async () => {
    const broker = h.leader({}, unsynced);
    await createTopic(broker, 't');
    const pending = track(broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }])));
    await settle();
    expect(broker.numDelayedFetch).toBe(1);
    // The first read parked the Fetch; the read at its completion fails (a bug, an I/O failure).
    const read = jest.spyOn(Partition.prototype, 'read').mockImplementation(() => {
      throw new Error('the disk went away');
    });
    try {
      const produced = await broker.produce({
        acks: 1,
        timeoutMs: 1_000,
        topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('a')] }] }],
      });
      expect(produced.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
      await expect(pending.value).rejects.toThrow('the disk went away');
    } finally {
      read.mockRestore();
    }
    expect(broker.numDelayedFetch).toBe(0);
  });

  it('answers at once when min_bytes are already there', async () => {
    const broker = h.leader({}, unsynced);
    await createTopic(broker, 't');
    await broker.produce({
      acks: 1,
      timeoutMs: 1_000,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('a')] }] }],
    });
    const response = await broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }]));
    expect(fetched(response)).toMatchObject({
      errorCode: ErrorCode.NONE,
      highWatermark: 1,
      logStartOffset: 0,
    });
    expect(values(fetched(response).records)).toEqual(['a']);
    expect(broker.numDelayedFetch).toBe(0);
  });

  it('waits until appends to several partitions together reach min_bytes', async () => {
    const broker = h.leader({}, unsynced);
    await createTopic(broker, 't', 2);
    const big = 'x'.repeat(100);
    // One 100-byte record makes a batch of about 150 bytes; min_bytes 250 needs two of them.
    const pending = track(
      broker.fetch(
        consumerFetch(
          [
            { topic: 't', partitionIndex: 0, fetchOffset: 0 },
            { topic: 't', partitionIndex: 1, fetchOffset: 0 },
          ],
          { minBytes: 250 },
        ),
      ),
    );
    expect(broker.numDelayedFetch).toBe(1);
    await broker.produce({
      acks: 0,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record(big)] }] }],
    });
    await settle();
    expect(pending.isSettled).toBe(false);
    await broker.produce({
      acks: 0,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 1, records: [record(big)] }] }],
    });
    const response = await pending.value;
    expect(response.responses[0]!.partitions.map((p) => values(p.records))).toEqual([[big], [big]]);
    expect(broker.numDelayedFetch).toBe(0);
    expect(broker.expired.consumerFetch).toBe(0);
  });

  it('answers after max_wait_ms with what arrived, possibly nothing, and not a millisecond earlier', async () => {
    const broker = h.leader({}, unsynced);
    await createTopic(broker, 't');
    const pending = track(
      broker.fetch(
        consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }], {
          maxWaitMs: 500,
          minBytes: 1_000,
        }),
      ),
    );
    await broker.produce({
      acks: 0,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('small')] }] }],
    });
    h.time.advance(499);
    await settle();
    expect(pending.isSettled).toBe(false);
    h.time.advance(1);
    const response = await pending.value;
    expect(values(fetched(response).records)).toEqual(['small']);
    expect(broker.expired.consumerFetch).toBe(1);

    const empty = track(
      broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 1 }], { maxWaitMs: 100 })),
    );
    h.time.advance(100);
    expect(fetched(await empty.value)).toMatchObject({
      errorCode: ErrorCode.NONE,
      highWatermark: 1,
      records: [],
    });
  });

  it('wakes a follower’s fetch on the append, and a consumer’s only when the HW moves', async () => {
    const broker = h.replicatedLeader({}, unsynced);
    h.leadTopic('t', 3);
    const follower = (
      replicaId: number,
      fetchOffset: number,
    ): ReturnType<typeof track<Awaited<ReturnType<ReplicaManager['fetch']>>>> =>
      track(broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset }], { replicaId })));
    const consumer = track(broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }])));
    const follower1 = follower(1, 0);
    const follower2 = follower(2, 0);
    expect(broker.numDelayedFetch).toBe(3);

    await broker.produce({
      acks: 1,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('r')] }] }],
    });
    expect(values(fetched(await follower1.value).records)).toEqual(['r']);
    expect(values(fetched(await follower2.value).records)).toEqual(['r']);
    expect(fetched(await follower1.value).highWatermark).toBe(0);
    await settle();
    expect(consumer.isSettled).toBe(false);

    // Follower 1 asks for offset 1: it has the record. The ISR still waits for follower 2.
    const next1 = follower(1, 1);
    await settle();
    expect(consumer.isSettled).toBe(false);
    // Follower 2 has it too: the HW moves to 1 and the consumer's fetch completes.
    const next2 = follower(2, 1);
    expect(values(fetched(await consumer.value).records)).toEqual(['r']);
    expect(fetched(await consumer.value).highWatermark).toBe(1);
    expect(next1.isSettled || next2.isSettled).toBe(false);
    h.time.advance(5_000);
    expect(fetched(await next2.value)).toMatchObject({ highWatermark: 1, records: [] });
  });

  it('answers a consumer at an offset between the HW and the LEO with nothing until the HW passes it', async () => {
    const broker = h.replicatedLeader({}, unsynced);
    h.leadTopic('t', 2);
    await broker.produce({
      acks: 1,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('a'), record('b')] }] }],
    });
    const immediate = await broker.fetch(
      consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 1 }], { maxWaitMs: 0 }),
    );
    expect(fetched(immediate)).toMatchObject({ errorCode: ErrorCode.NONE, highWatermark: 0, records: [] });
    const parked = track(broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 1 }])));
    await broker.fetch(
      consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 2 }], { replicaId: 1, maxWaitMs: 0 }),
    );
    expect(values(fetched(await parked.value).records)).toEqual(['b']);
  });

  it('answers at once with the error for an unknown partition or an offset out of range', async () => {
    const broker = h.leader({}, unsynced);
    await createTopic(broker, 't');
    const unknown = await broker.fetch(consumerFetch([{ topic: 'nope', partitionIndex: 0, fetchOffset: 0 }]));
    expect(fetched(unknown)).toMatchObject({
      errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      highWatermark: -1,
    });
    const missing = await broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 7, fetchOffset: 0 }]));
    expect(fetched(missing).errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    const outOfRange = await broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 5 }]));
    expect(fetched(outOfRange)).toMatchObject({
      errorCode: ErrorCode.OFFSET_OUT_OF_RANGE,
      highWatermark: 0,
      logStartOffset: 0,
    });
    const negative = await broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: -1 }]));
    expect(fetched(negative).errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
    expect(broker.numDelayedFetch).toBe(0);
  });

  it('refuses a follower fetch from a node that is not a replica, and bad sizes', async () => {
    const broker = h.replicatedLeader({}, unsynced);
    h.leadTopic('t', 2);
    const stranger = await broker.fetch(
      consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }], { replicaId: 2 }),
    );
    expect(fetched(stranger).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    const self = await broker.fetch(
      consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }], { replicaId: 0 }),
    );
    expect(fetched(self).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(await broker.fetch(consumerFetch([], { maxBytes: -1 }))).toEqual({
      errorCode: ErrorCode.INVALID_REQUEST,
      responses: [],
    });
    expect(await broker.fetch(consumerFetch([], { maxWaitMs: -5 }))).toEqual({
      errorCode: ErrorCode.INVALID_REQUEST,
      responses: [],
    });
    const badPartitionSize = await broker.fetch({
      ...consumerFetch([]),
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, fetchOffset: 0, partitionMaxBytes: -1 }] }],
    });
    expect(fetched(badPartitionSize).errorCode).toBe(ErrorCode.INVALID_FETCH_SIZE);
  });

  it('does not park a fetch whose caller has already gone', async () => {
    const broker = h.leader({}, unsynced);
    await createTopic(broker, 't');
    const controller = new AbortController();
    controller.abort();
    const parked = broker.fetch(
      consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }]),
      cancelOn(controller.signal),
    );
    await expect(parked).rejects.toMatchObject({ name: 'AbortError' });
    expect(broker.numDelayedFetch).toBe(0);
  });

  it('releases a parked fetch whose caller goes away, without answering it', async () => {
    const broker = h.leader({}, unsynced);
    await createTopic(broker, 't');
    const controller = new AbortController();
    const parked = broker.fetch(
      consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }]),
      cancelOn(controller.signal),
    );
    expect(broker.numDelayedFetch).toBe(1);
    controller.abort();
    await expect(parked).rejects.toMatchObject({ name: 'AbortError' });
    expect(broker.numDelayedFetch).toBe(0);
    // A later append finds nothing to answer and the clock finds nothing to expire.
    await broker.produce({
      acks: 0,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('a')] }] }],
    });
    h.time.advance(10_000);
    expect(broker.expired.consumerFetch).toBe(0);
  });

  it('answers every parked fetch with what is there when it shuts down', async () => {
    const broker = h.leader({}, unsynced);
    await createTopic(broker, 't');
    const parked = broker.fetch(
      consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }], { minBytes: 1_000_000 }),
    );
    await broker.produce({
      acks: 0,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('a')] }] }],
    });
    broker.shutdown();
    expect(values(fetched(await parked).records)).toEqual(['a']);
    const after = await broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }]));
    expect(fetched(after).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  });

  it('completes a parked fetch when the log rolls to a new segment under it', async () => {
    const broker = h.leader({}, { ...unsynced, segmentBytes: 1_024 });
    await createTopic(broker, 't');
    const big = 'y'.repeat(600);
    await broker.produce({
      acks: 0,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record(big)] }] }],
    });
    // min_bytes far above what the roll brings: it is the segment change that completes the fetch.
    const parked = track(
      broker.fetch(
        consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 1 }], { minBytes: 1_000_000 }),
      ),
    );
    await broker.produce({
      acks: 0,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record(big)] }] }],
    });
    expect(broker.getPartition('t-0')!.log.numberOfSegments).toBe(2);
    expect(values(fetched(await parked.value).records)).toEqual([big]);
  });

  it('reads the log once for many consumers woken at the same offset, and gives each the records', async () => {
    const broker = h.leader({}, unsynced);
    await createTopic(broker, 't');
    const parked = Array.from({ length: 50 }, () =>
      broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 0 }])),
    );
    expect(broker.numDelayedFetch).toBe(50);
    const read = jest.spyOn(broker.getPartition('t-0')!.log, 'read');
    await broker.produce({
      acks: 0,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('shared')] }] }],
    });
    const responses = await Promise.all(parked);
    expect(responses.map((r) => values(fetched(r).records))).toEqual(
      Array.from({ length: 50 }, () => ['shared']),
    );
    expect(read).toHaveBeenCalledTimes(1);
    // The next wake-up reads afresh.
    const next = broker.fetch(consumerFetch([{ topic: 't', partitionIndex: 0, fetchOffset: 1 }]));
    await broker.produce({
      acks: 0,
      timeoutMs: 0,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('later')] }] }],
    });
    expect(values(fetched(await next).records)).toEqual(['later']);
  });
});
