import { ErrorCode } from '../../../src/errors';
import type { ProduceRequest, ReplicaManager } from '../../../src/log';
import { BrokerHarness, produced, record, settle, track, until } from './broker-harness';
import { cancelOn } from '../../support/cancel-on';

const LAG_MS = 10_000;

describe('DelayedProduce and acks', () => {
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
    replicationFactor: number,
    numPartitions = 1,
  ) {
    const { topics } = await broker.createTopics({ topics: [{ name, numPartitions, replicationFactor }] });
    expect(topics[0]!.errorCode).toBe(ErrorCode.NONE);
  }

  function produceRequest(
    acks: number,
    values: string[],
    options: Partial<ProduceRequest> = {},
  ): ProduceRequest {
    return {
      acks,
      timeoutMs: 30_000,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: values.map((v) => record(v)) }] }],
      ...options,
    };
  }

  /** A follower's fetch of t-0 from `fetchOffset`, answered at once. */
  async function followerFetch(
    broker: ReplicaManager,
    replicaId: number,
    fetchOffset: number,
  ): Promise<void> {
    const response = await broker.fetch({
      replicaId,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, fetchOffset, partitionMaxBytes: 1 << 20 }] }],
    });
    expect(response.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
  }

  it('completes acks=-1 once every in-sync follower has fetched past the records', async () => {
    const broker = h.replicatedLeader();
    h.leadTopic('t', 3);
    const pending = track(broker.produce(produceRequest(-1, ['a', 'b'])));
    await followerFetch(broker, 1, 2);
    await settle();
    expect(pending.isSettled).toBe(false);
    expect(broker.numDelayedProduce).toBe(1);
    await followerFetch(broker, 2, 1);
    await settle();
    expect(pending.isSettled).toBe(false);
    await followerFetch(broker, 2, 2);
    expect(produced(await pending.value)).toMatchObject({
      errorCode: ErrorCode.NONE,
      baseOffset: 0,
      logStartOffset: 0,
    });
    expect(broker.numDelayedProduce).toBe(0);
  });

  it('acknowledges acks=-1 and acks=1 only after the leader’s fsync covers the records', async () => {
    const broker = h.leader();
    await createTopic(broker, 't', 1);
    const log = broker.getPartition('t-0')!.log;
    const one = await broker.produce(produceRequest(1, ['a']));
    expect(produced(one).errorCode).toBe(ErrorCode.NONE);
    expect(log.recoveryPoint).toBeGreaterThanOrEqual(1);
    const all = await broker.produce(produceRequest(-1, ['b']));
    expect(produced(all)).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 1 });
    expect(log.recoveryPoint).toBeGreaterThanOrEqual(2);
  });

  it('answers acks=0 at once with the offsets, before any fsync', async () => {
    const broker = h.leader();
    await createTopic(broker, 't', 1);
    const log = broker.getPartition('t-0')!.log;
    const response = await broker.produce(produceRequest(0, ['a', 'b']));
    expect(produced(response)).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 0 });
    expect(log.logEndOffset).toBe(2);
    expect(log.recoveryPoint).toBe(0);
    await log.flush();
    expect(log.recoveryPoint).toBe(2);
  });

  it('completes a waiting acks=-1 when a silent follower leaves the ISR after the lag time', async () => {
    const broker = h.replicatedLeader({ replicaLagTimeMaxMs: LAG_MS });
    h.leadTopic('t', 3);
    const pending = track(broker.produce(produceRequest(-1, ['a'])));
    await followerFetch(broker, 1, 1);
    h.time.advance(LAG_MS);
    await settle();
    expect(pending.isSettled).toBe(false);
    // The ISR check runs every half of the lag: by 1.5 × lag, follower 2 (never fetched) is out.
    h.time.advance(LAG_MS / 2);
    expect(produced(await pending.value).errorCode).toBe(ErrorCode.NONE);
    expect(h.isrChanges).toEqual([{ topic: 't', partitionIndex: 0, isr: [0, 1] }]);
    const metadata = await broker.metadata({ topics: ['t'] });
    expect(metadata.topics[0]!.partitions[0]).toMatchObject({
      leaderId: 0,
      replicaNodes: [0, 1, 2],
      isrNodes: [0, 1],
    });
  });

  it('fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrinks below the minimum, then refuses new acks=-1', async () => {
    const broker = h.replicatedLeader({ replicaLagTimeMaxMs: LAG_MS, minInsyncReplicas: 3 });
    h.leadTopic('t', 3);
    const pending = track(broker.produce(produceRequest(-1, ['a'])));
    await followerFetch(broker, 1, 1);
    // The leader's fsync is done before the ISR shrinks: the shrink alone must answer the produce. The
    // recovery point moves only once the leader-epoch file holds epoch 0 (several steps on the thread pool).
    await until(() => broker.getPartition('t-0')!.log.recoveryPoint >= 1, 'the fsync', 200_000);
    await settle();
    expect(pending.isSettled).toBe(false);
    h.time.advance(LAG_MS + LAG_MS / 2);
    expect(produced(await pending.value).errorCode).toBe(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND);
    // Held by the leader and follower 1 only, below the minimum of 3: not readable (KAFKA-15583).
    expect(broker.getPartition('t-0')!.highWatermark).toBe(0);
    const refused = await broker.produce(produceRequest(-1, ['b']));
    expect(produced(refused)).toMatchObject({ errorCode: ErrorCode.NOT_ENOUGH_REPLICAS, baseOffset: -1 });
    expect(broker.getPartition('t-0')!.logEndOffset).toBe(1);
    // acks=1 does not need the ISR.
    expect(produced(await broker.produce(produceRequest(1, ['c']))).errorCode).toBe(ErrorCode.NONE);
  });

  it('answers REQUEST_TIMED_OUT when the ISR does not confirm in time, keeping the records', async () => {
    const broker = h.replicatedLeader();
    h.leadTopic('t', 3);
    const pending = track(broker.produce(produceRequest(-1, ['a'], { timeoutMs: 1_000 })));
    await followerFetch(broker, 1, 1);
    h.time.advance(999);
    await settle();
    expect(pending.isSettled).toBe(false);
    h.time.advance(1);
    expect(produced(await pending.value)).toMatchObject({
      errorCode: ErrorCode.REQUEST_TIMED_OUT,
      baseOffset: 0,
    });
    expect(broker.expired.produce).toBe(1);
    expect(broker.getPartition('t-0')!.logEndOffset).toBe(1);
  });

  it('waits on every partition of the request and answers each with its own outcome', async () => {
    const broker = h.replicatedLeader();
    h.leadTopic('t', 2, 2);
    const pending = track(
      broker.produce({
        acks: -1,
        timeoutMs: 1_000,
        topics: [
          {
            name: 't',
            partitions: [
              { partitionIndex: 0, records: [record('p0')] },
              { partitionIndex: 1, records: [record('p1')] },
              { partitionIndex: 9, records: [record('nowhere')] },
            ],
          },
          { name: 'unknown', partitions: [{ partitionIndex: 0, records: [record('x')] }] },
        ],
      }),
    );
    await followerFetch(broker, 1, 1); // t-0 replicated, t-1 not
    await broker.getPartition('t-0')!.log.flush(0); // and fsynced on the leader
    await settle();
    h.time.advance(1_000);
    const response = await pending.value;
    expect(response.topics.map((t) => t.partitions.map((p) => [p.partitionIndex, p.errorCode]))).toEqual([
      [
        [0, ErrorCode.NONE],
        [1, ErrorCode.REQUEST_TIMED_OUT],
        [9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      ],
      [[0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]],
    ]);
  });

  it('refuses invalid acks, negative timeouts, oversized and empty batches with their codes', async () => {
    const broker = h.leader({}, { maxMessageBytes: 1_000 });
    await createTopic(broker, 't', 1);
    expect(produced(await broker.produce(produceRequest(2, ['a']))).errorCode).toBe(
      ErrorCode.INVALID_REQUIRED_ACKS,
    );
    expect(produced(await broker.produce(produceRequest(1, ['a'], { timeoutMs: -1 }))).errorCode).toBe(
      ErrorCode.INVALID_REQUEST,
    );
    expect(produced(await broker.produce(produceRequest(1, ['z'.repeat(2_000)]))).errorCode).toBe(
      ErrorCode.MESSAGE_TOO_LARGE,
    );
    expect(produced(await broker.produce(produceRequest(1, []))).errorCode).toBe(ErrorCode.INVALID_RECORD);
    const badTimestamp = await broker.produce({
      ...produceRequest(1, []),
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, records: [{ ...record('a'), timestampMs: -5 }] }] },
      ],
    });
    expect(produced(badTimestamp).errorCode).toBe(ErrorCode.INVALID_TIMESTAMP);
    expect(broker.getPartition('t-0')!.logEndOffset).toBe(0);
  });

  it('does not park an acks=-1 whose caller has already gone; the records stay', async () => {
    const broker = h.replicatedLeader();
    h.leadTopic('t', 3);
    const controller = new AbortController();
    controller.abort();
    const parked = broker.produce(produceRequest(-1, ['a']), cancelOn(controller.signal));
    await expect(parked).rejects.toMatchObject({ name: 'AbortError' });
    expect(broker.numDelayedProduce).toBe(0);
    expect(broker.getPartition('t-0')!.logEndOffset).toBe(1);
  });

  it('releases a parked acks=-1 whose caller goes away; the records stay', async () => {
    const broker = h.replicatedLeader();
    h.leadTopic('t', 3);
    const controller = new AbortController();
    const parked = broker.produce(produceRequest(-1, ['a']), cancelOn(controller.signal));
    await until(() => broker.numDelayedProduce === 1, 'the produce to park');
    controller.abort();
    await expect(parked).rejects.toMatchObject({ name: 'AbortError' });
    expect(broker.numDelayedProduce).toBe(0);
    expect(broker.getPartition('t-0')!.logEndOffset).toBe(1);
  });

  it('answers a parked acks=-1 with REQUEST_TIMED_OUT when the broker shuts down', async () => {
    const broker = h.replicatedLeader();
    h.leadTopic('t', 3);
    const parked = broker.produce(produceRequest(-1, ['a']));
    await until(() => broker.numDelayedProduce === 1, 'the produce to park');
    broker.shutdown();
    expect(produced(await parked).errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    expect(produced(await broker.produce(produceRequest(1, ['b']))).errorCode).toBe(
      ErrorCode.NOT_LEADER_OR_FOLLOWER,
    );
  });
});
