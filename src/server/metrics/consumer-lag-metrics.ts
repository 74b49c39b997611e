import { Gauge, type Registry } from 'prom-client';
import type { CommittedOffsetsReader } from '../../group';
import { topicPartitionKey } from '../../log';
import type { PartitionView } from './log-metrics';

/**
 * Committed offsets (the coordinator shards', read through the router) and the partitions they point into
 * (the log).
 */
export interface ConsumerLagSources {
  readonly offsets: CommittedOffsetsReader;
  readonly partition: (key: string) => PartitionView | undefined;
}

interface LagSample {
  readonly group: string;
  readonly topic: string;
  readonly partition: string;
  readonly committed: number;
  readonly lag: number;
}

/**
 * Consumer lag, as `kafka-consumer-groups --describe` shows it: for every committed offset of every group,
 * the partition's high watermark minus the committed offset (never below 0), per partition and summed per
 * group. Computed when the registry is scraped, walking every committed offset once per scrape; a committed
 * offset for a partition this process does not host has no lag to report and is left out.
 */
export function registerConsumerLagMetrics(
  registry: Registry,
  sources: () => ConsumerLagSources | undefined,
): void {
  const registers = [registry];
  const samples = (): LagSample[] => {
    const found = sources();
    if (found === undefined) return [];
    const result: LagSample[] = [];
    for (const group of found.offsets.groupIds()) {
      for (const { topic, partition, offset } of found.offsets.list(group)) {
        const hosted = found.partition(topicPartitionKey(topic, partition));
        if (hosted === undefined) continue;
        const committed = offset.committedOffset;
        result.push({
          group,
          topic,
          partition: String(partition),
          committed,
          lag: Math.max(0, hosted.highWatermark - committed),
        });
      }
    }
    return result;
  };
  new Gauge({
    name: 'cohort_consumer_committed_offset',
    help: 'The offset a group committed for a partition (the next record it will consume).',
    labelNames: ['group', 'topic', 'partition'],
    registers,
    collect() {
      this.reset();
      for (const s of samples())
        this.set({ group: s.group, topic: s.topic, partition: s.partition }, s.committed);
    },
  });
  new Gauge({
    name: 'cohort_consumer_lag',
    help: "A group's lag on a partition: its high watermark minus the committed offset.",
    labelNames: ['group', 'topic', 'partition'],
    registers,
    collect() {
      this.reset();
      for (const s of samples()) this.set({ group: s.group, topic: s.topic, partition: s.partition }, s.lag);
    },
  });
  new Gauge({
    name: 'cohort_group_committed_partitions',
    help: 'Partitions a group has committed offsets for (groupMaxCommittedPartitions bounds it).',
    labelNames: ['group'],
    registers,
    collect() {
      this.reset();
      const found = sources();
      if (found === undefined) return;
      for (const group of found.offsets.groupIds())
        this.set({ group }, found.offsets.committedPartitions(group));
    },
  });
  new Gauge({
    name: 'cohort_consumer_group_lag',
    help: "A group's lag summed over the partitions it has committed offsets for.",
    labelNames: ['group'],
    registers,
    collect() {
      this.reset();
      const byGroup = new Map<string, number>();
      for (const s of samples()) byGroup.set(s.group, (byGroup.get(s.group) ?? 0) + s.lag);
      for (const [group, lag] of byGroup) this.set({ group }, lag);
    },
  });
}
