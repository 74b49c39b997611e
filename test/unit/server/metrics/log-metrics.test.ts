import { ServerMetrics } from '../../../../src/server/metrics/server-metrics';
import type { PartitionView } from '../../../../src/server/metrics/log-metrics';
import type { TopicPartitionOffset } from '../../../../src/group';
import { ManualTime } from '../../../../src/time';
import { samplesOf, valueOf } from './metrics-reader';

function partition(topic: string, partitionIndex: number, view: Partial<PartitionView> = {}): PartitionView {
  return {
    topic,
    partitionIndex,
    isLeader: true,
    logStartOffset: 0,
    logEndOffset: 0,
    highWatermark: 0,
    isr: [0],
    replicas: [0],
    ...view,
  };
}

function committed(topic: string, partitionIndex: number, offset: number): TopicPartitionOffset {
  return {
    topic,
    partition: partitionIndex,
    offset: { committedOffset: offset, committedLeaderEpoch: -1, metadata: '', commitTimestampMs: 0 },
  };
}

describe('log and consumer lag metrics', () => {
  const metrics = new ServerMetrics({ time: new ManualTime() });
  const partitions = new Map<string, PartitionView>([
    [
      'orders-0',
      partition('orders', 0, { logEndOffset: 120, highWatermark: 100, isr: [0, 1], replicas: [0, 1, 2] }),
    ],
    ['orders-1', partition('orders', 1, { logStartOffset: 10, logEndOffset: 40, highWatermark: 40 })],
    ['mirror-0', partition('mirror', 0, { isLeader: false, isr: [5], replicas: [5, 0] })],
  ]);
  const expired = { produce: 2, consumerFetch: 7, followerFetch: 0 };
  const links = [
    { leaderId: 5, status: { isReplicating: true } },
    { leaderId: 7, status: { isReplicating: false } },
  ];
  const offsets = new Map<string, TopicPartitionOffset[]>([
    ['billing', [committed('orders', 0, 90), committed('orders', 1, 40)]],
    // Ahead of the HW (a follower's view may lag): no negative lag. And a partition not hosted here.
    ['audit', [committed('orders', 0, 105), committed('elsewhere', 0, 3)]],
  ]);
  metrics.setSources({
    log: {
      purgatoryStats: () => [
        { name: 'Produce', watched: 3, numDelayed: 1 },
        { name: 'Fetch', watched: 8, numDelayed: 4 },
      ],
      hostedPartitions: () => partitions.values(),
      followedLeaderLinks: () => links,
      expired,
    },
    consumerLag: {
      offsets: {
        groupIds: () => offsets.keys(),
        list: (groupId) => offsets.get(groupId) ?? [],
        committedPartitions: (groupId) => offsets.get(groupId)?.length ?? 0,
      },
      partition: (key) => partitions.get(key),
    },
  });

  it('reports each partition its offsets, ISR and replicas, and counts the under-replicated ones it leads', async () => {
    const samples = await samplesOf(metrics.registry);
    const orders0 = { topic: 'orders', partition: '0' };
    expect(valueOf(samples, 'cohort_partition_log_end_offset', orders0)).toBe(120);
    expect(valueOf(samples, 'cohort_partition_high_watermark', orders0)).toBe(100);
    expect(valueOf(samples, 'cohort_partition_isr_size', orders0)).toBe(2);
    expect(valueOf(samples, 'cohort_partition_replicas', orders0)).toBe(3);
    expect(valueOf(samples, 'cohort_partition_log_start_offset', { topic: 'orders', partition: '1' })).toBe(
      10,
    );
    // orders-0 leads with 2 of 3 in sync; mirror-0 is short too, but it is followed here, not led.
    expect(valueOf(samples, 'cohort_under_replicated_partitions')).toBe(1);
    expect(valueOf(samples, 'cohort_purgatory_delayed_operations', { purgatory: 'Fetch' })).toBe(4);
    expect(valueOf(samples, 'cohort_purgatory_size', { purgatory: 'Produce' })).toBe(3);
    expect(
      valueOf(samples, 'cohort_delayed_operation_expirations_total', { operation: 'consumer_fetch' }),
    ).toBe(7);
  });

  it('computes consumer lag against the high watermark, per partition and per group, on every scrape', async () => {
    let samples = await samplesOf(metrics.registry);
    expect(
      valueOf(samples, 'cohort_consumer_lag', { group: 'billing', topic: 'orders', partition: '0' }),
    ).toBe(10);
    expect(
      valueOf(samples, 'cohort_consumer_lag', { group: 'billing', topic: 'orders', partition: '1' }),
    ).toBe(0);
    expect(valueOf(samples, 'cohort_consumer_group_lag', { group: 'billing' })).toBe(10);
    expect(valueOf(samples, 'cohort_consumer_lag', { group: 'audit', topic: 'orders', partition: '0' })).toBe(
      0,
    );
    expect(
      valueOf(samples, 'cohort_consumer_committed_offset', {
        group: 'audit',
        topic: 'orders',
        partition: '0',
      }),
    ).toBe(105);
    expect(samples.filter((s) => s.labels.topic === 'elsewhere')).toEqual([]);
    // Every committed partition counts toward groupMaxCommittedPartitions, hosted here or not.
    expect(valueOf(samples, 'cohort_group_committed_partitions', { group: 'audit' })).toBe(2);

    // The consumer catches up and the log moves on: the next scrape sees both.
    offsets.set('billing', [committed('orders', 0, 100), committed('orders', 1, 40)]);
    partitions.set('orders-1', partition('orders', 1, { logEndOffset: 55, highWatermark: 55 }));
    samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_consumer_group_lag', { group: 'billing' })).toBe(15);
  });

  it('shows per followed leader whether its fetches succeed', async () => {
    const samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_follower_leader_reachable', { leader: '5' })).toBe(1);
    expect(valueOf(samples, 'cohort_follower_leader_reachable', { leader: '7' })).toBe(0);
  });

  it('counts ISR shrinks and expansions from the log listener', async () => {
    metrics.logListener.onIsrChange('orders', 0, [0], [0, 1]);
    metrics.logListener.onIsrChange('orders', 0, [0, 1], [0]);
    metrics.logListener.onIsrChange('orders', 1, [0], [0, 2]);
    const samples = await samplesOf(metrics.registry);
    expect(valueOf(samples, 'cohort_isr_shrinks_total')).toBe(2);
    expect(valueOf(samples, 'cohort_isr_expands_total')).toBe(1);
  });
});
