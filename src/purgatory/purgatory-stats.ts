/**
 * Kafka's two gauges of one purgatory (kafka.server:type=DelayedOperationPurgatory), read on demand:
 * `watched` is PurgatorySize (watcher entries: an operation counts once per key, completed ones until
 * purged) and `numDelayed` is NumDelayedOperations (operations waiting for their timeout).
 */
export interface PurgatoryStats {
  /** Kafka's purgatory names: Produce, Fetch, Rebalance, Heartbeat. */
  readonly name: string;
  readonly watched: number;
  readonly numDelayed: number;
}
