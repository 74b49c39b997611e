import { Gauge, type Registry } from 'prom-client';
import type { PurgatoryStats } from '../../purgatory';

/** Something that owns purgatories: the group coordinator (Rebalance, Heartbeat), the log (Produce, Fetch). */
export interface PurgatoryOwner {
  purgatoryStats(): PurgatoryStats[];
}

/**
 * Kafka's two purgatory gauges, `PurgatorySize` and `NumDelayedOperations`, one series per purgatory,
 * read from their owners when the registry is scraped (never on the request path; each read is O(1)).
 */
export function registerPurgatoryMetrics(registry: Registry, owners: () => readonly PurgatoryOwner[]): void {
  const gauge = (name: string, help: string, value: (stats: PurgatoryStats) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: ['purgatory'],
      registers: [registry],
      collect() {
        this.reset();
        for (const owner of owners()) {
          for (const stats of owner.purgatoryStats()) this.set({ purgatory: stats.name }, value(stats));
        }
      },
    });
  };
  gauge(
    'cohort_purgatory_size',
    "Kafka's PurgatorySize: watcher entries of a purgatory (an operation counts once per key it waits on; " +
      'completed ones until purged).',
    (stats) => stats.watched,
  );
  gauge(
    'cohort_purgatory_delayed_operations',
    "Kafka's NumDelayedOperations: operations of a purgatory waiting for their timeout.",
    (stats) => stats.numDelayed,
  );
}
