import { Counter, Gauge, type Registry } from 'prom-client';
import type { ReplicaManagerListener } from '../../log';

/** What the log metrics read of one partition (the log layer's Partition has all of it). */
export interface PartitionView {
  readonly topic: string;
  readonly partitionIndex: number;
  readonly isLeader: boolean;
  readonly logStartOffset: number;
  readonly logEndOffset: number;
  readonly highWatermark: number;
  readonly isr: readonly number[];
  readonly replicas: readonly number[];
}

/** What the log metrics read on scrape: the ReplicaManager has it. */
export interface PartitionSource {
  hostedPartitions(): Iterable<PartitionView>;
  /** Each leader this node fetches from, and whether its fetches succeed (cluster mode). */
  followedLeaderLinks(): Iterable<{
    readonly leaderId: number;
    readonly status: { readonly isReplicating: boolean };
  }>;
  /** Delayed operations that expired, by kind (Kafka's ExpiresPerSec meters, as counts). */
  readonly expired: {
    readonly produce: number;
    readonly consumerFetch: number;
    readonly followerFetch: number;
  };
}

/**
 * The log's metrics: per partition its log start offset, log end offset (LEO), high watermark (HW), ISR and
 * replica counts, Kafka's UnderReplicatedPartitions, ISR shrinks and expands, and expired delayed
 * operations. Everything but the ISR counters is read from the replica manager when the registry is
 * scraped; the ISR counters move in its onIsrChange hook, which runs only when an ISR changes.
 */
export class LogMetrics {
  readonly listener: Required<Pick<ReplicaManagerListener, 'onIsrChange'>>;

  constructor(registry: Registry, source: () => PartitionSource | undefined) {
    const registers = [registry];
    const perPartition = (name: string, help: string, value: (p: PartitionView) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['topic', 'partition'],
        registers,
        collect() {
          this.reset();
          const partitions = source()?.hostedPartitions();
          if (partitions === undefined) return;
          for (const p of partitions)
            this.set({ topic: p.topic, partition: String(p.partitionIndex) }, value(p));
        },
      });
    };
    perPartition(
      'cohort_partition_log_start_offset',
      'Offset of the first record a partition still holds.',
      (p) => p.logStartOffset,
    );
    perPartition(
      'cohort_partition_log_end_offset',
      'Log end offset (LEO): the offset the next record of the partition gets.',
      (p) => p.logEndOffset,
    );
    perPartition(
      'cohort_partition_high_watermark',
      'High watermark (HW): consumers read below it; every in-sync replica has every record below it.',
      (p) => p.highWatermark,
    );
    perPartition(
      'cohort_partition_isr_size',
      'In-sync replicas of the partition (on a follower: as its leader last reported).',
      (p) => p.isr.length,
    );
    perPartition(
      'cohort_partition_replicas',
      'Replicas assigned to the partition.',
      (p) => p.replicas.length,
    );
    new Gauge({
      name: 'cohort_under_replicated_partitions',
      help: "Kafka's UnderReplicatedPartitions: partitions led here whose ISR is smaller than their replicas.",
      registers,
      collect() {
        let count = 0;
        for (const p of source()?.hostedPartitions() ?? []) {
          if (p.isLeader && p.isr.length < p.replicas.length) count++;
        }
        this.set(count);
      },
    });
    new Counter({
      name: 'cohort_delayed_operation_expirations_total',
      help: 'Delayed operations answered at their timeout, by kind (produce, consumer_fetch, follower_fetch).',
      labelNames: ['operation'],
      registers,
      collect() {
        const expired = source()?.expired;
        if (expired === undefined) return;
        // The replica manager keeps the running totals; the counter shows them as they are.
        this.reset();
        this.inc({ operation: 'produce' }, expired.produce);
        this.inc({ operation: 'consumer_fetch' }, expired.consumerFetch);
        this.inc({ operation: 'follower_fetch' }, expired.followerFetch);
      },
    });
    new Gauge({
      name: 'cohort_follower_leader_reachable',
      help:
        'Per leader this node fetches from: 1 while its fetches succeed, 0 from a failed round until the ' +
        'next one the leader answers.',
      labelNames: ['leader'],
      registers,
      collect() {
        this.reset();
        const links = source()?.followedLeaderLinks();
        if (links === undefined) return;
        for (const { leaderId, status } of links)
          this.set({ leader: String(leaderId) }, status.isReplicating ? 1 : 0);
      },
    });
    const shrinks = new Counter({
      name: 'cohort_isr_shrinks_total',
      help: "Kafka's IsrShrinksPerSec, as a count: a partition's ISR lost replicas.",
      registers,
    });
    const expands = new Counter({
      name: 'cohort_isr_expands_total',
      help: "Kafka's IsrExpandsPerSec, as a count: a partition's ISR gained replicas.",
      registers,
    });
    shrinks.inc(0);
    expands.inc(0);
    this.listener = {
      onIsrChange: (_topic: string, _partitionIndex: number, isr: readonly number[], previousIsr) => {
        if (isr.length < previousIsr.length) shrinks.inc();
        else if (isr.length > previousIsr.length) expands.inc();
      },
    };
  }
}
