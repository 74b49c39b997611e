import { ErrorCode } from '../../../src/errors';
import { BrokerHarness, record, settle } from './broker-harness';

describe('ReplicaManager statistics', () => {
  let h: BrokerHarness;

  beforeEach(() => {
    h = new BrokerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  it("reports Kafka's Produce and Fetch purgatory gauges: a parked Fetch counts until a record wakes it", async () => {
    const broker = h.leader({}, { flushMessages: 1_000_000 });
    const { topics } = await broker.createTopics({
      topics: [{ name: 't', numPartitions: 2, replicationFactor: 1 }],
    });
    expect(topics[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(broker.purgatoryStats()).toEqual([
      { name: 'Produce', watched: 0, numDelayed: 0 },
      { name: 'Fetch', watched: 0, numDelayed: 0 },
    ]);
    // One consumer Fetch parked on both partitions: one delayed operation, watched under two keys.
    const parked = broker.fetch({
      replicaId: -1,
      maxWaitMs: 10_000,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 },
            { partitionIndex: 1, fetchOffset: 0, partitionMaxBytes: 1 << 20 },
          ],
        },
      ],
    });
    expect(broker.purgatoryStats()[1]).toEqual({ name: 'Fetch', watched: 2, numDelayed: 1 });
    await broker.produce({
      acks: 1,
      timeoutMs: 1_000,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, records: [record('wake')] }] }],
    });
    await parked;
    await settle();
    expect(broker.purgatoryStats()[1]!.numDelayed).toBe(0);
  });

  it('lists every hosted partition with its log end offset, high watermark and ISR', async () => {
    const broker = h.replicatedLeader({}, { flushMessages: 1_000_000 });
    h.leadTopic('solo', 1);
    h.leadTopic('pair', 2);
    await broker.produce({
      acks: 1,
      timeoutMs: 1_000,
      topics: [
        { name: 'solo', partitions: [{ partitionIndex: 0, records: [record('a'), record('b')] }] },
        { name: 'pair', partitions: [{ partitionIndex: 0, records: [record('c')] }] },
      ],
    });
    const seen = [...broker.hostedPartitions()].map((p) => ({
      key: p.key,
      leo: p.logEndOffset,
      hw: p.highWatermark,
      isr: p.isr,
    }));
    // The pair's follower has not fetched: its record is not yet below the HW.
    expect(seen).toEqual([
      { key: 'solo-0', leo: 2, hw: 2, isr: [0] },
      { key: 'pair-0', leo: 1, hw: 0, isr: [0, 1] },
    ]);
  });
});
