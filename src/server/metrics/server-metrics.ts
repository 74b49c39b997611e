import { Counter, Gauge, Registry } from 'prom-client';
import type { GroupCoordinatorListener } from '../../group';
import type { ReplicaManagerListener } from '../../log';
import type { Time } from '../../time';
import type { CallObservers } from '../unary-handler';
import { REAL_STOPWATCH, registerCallMetrics, type Stopwatch } from './call-metrics';
import { type ConsumerLagSources, registerConsumerLagMetrics } from './consumer-lag-metrics';
import { GroupMetrics, type GroupStatsSource } from './group-metrics';
import { LogMetrics, type PartitionSource } from './log-metrics';
import { registerNodeMetrics } from './node-metrics';
import { type PurgatoryOwner, registerPurgatoryMetrics } from './purgatory-metrics';
import { RecoveryMetrics } from './recovery-metrics';
import { RuntimeMetrics } from './runtime-metrics';

/** What the metrics read when scraped; each part is optional (a test's fake coordinator has none). */
export interface MetricsSources {
  readonly coordinator?: PurgatoryOwner & GroupStatsSource;
  readonly log?: PurgatoryOwner & PartitionSource;
  readonly consumerLag?: ConsumerLagSources;
}

export interface ServerMetricsOptions {
  /** The server's clock, for rebalance durations. */
  readonly time: Time;
  /** The clock of call latency; default the real one (see Stopwatch). */
  readonly stopwatch?: Stopwatch;
  /** This node's id (`--node-id`), a label of `cohort_build_info`. Default 0, the default node id. */
  readonly nodeId?: number;
}

/**
 * Every metric of one server, in a registry of its own (not prom-client's global one, so one process —
 * a test run — can hold several servers). Hooks (`callObservers`, `groupListener`, `logListener`) feed
 * what happens on the request path; everything else is read from `sources` when the registry is scraped.
 * docs/operations.md lists every metric.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly callObservers: CallObservers;
  readonly groupListener: GroupCoordinatorListener;
  readonly logListener: Required<Pick<ReplicaManagerListener, 'onIsrChange'>>;
  /** What storage recovery repaired (fed by storageRecoveryLog). */
  readonly recovery: RecoveryMetrics;
  private readonly runtime: RuntimeMetrics;
  private readonly unauthenticated: Counter;
  private readonly readPauses: Counter;
  private readonly kafkaRefusedConnections: Counter;
  private readonly kafkaConnections: Gauge;
  private sources: MetricsSources = {};

  constructor(options: ServerMetricsOptions) {
    this.callObservers = registerCallMetrics(this.registry, options.stopwatch ?? REAL_STOPWATCH);
    registerPurgatoryMetrics(this.registry, () => {
      const owners: PurgatoryOwner[] = [];
      if (this.sources.coordinator !== undefined) owners.push(this.sources.coordinator);
      if (this.sources.log !== undefined) owners.push(this.sources.log);
      return owners;
    });
    this.groupListener = new GroupMetrics(
      this.registry,
      options.time,
      () => this.sources.coordinator,
    ).listener;
    this.logListener = new LogMetrics(this.registry, () => this.sources.log).listener;
    registerConsumerLagMetrics(this.registry, () => this.sources.consumerLag);
    this.recovery = new RecoveryMetrics(this.registry);
    this.runtime = new RuntimeMetrics(this.registry);
    registerNodeMetrics(this.registry, options.nodeId ?? 0);
    this.unauthenticated = new Counter({
      name: 'cohort_unauthenticated_calls_total',
      help: 'Calls ended with UNAUTHENTICATED: no bearer token, or not the right one.',
      registers: [this.registry],
    });
    this.readPauses = new Counter({
      name: 'cohort_read_pauses_total',
      help:
        'Event-loop turns in which maxCallsPerLoopTurn calls had arrived and every connection paused ' +
        'reading until the next turn.',
      registers: [this.registry],
    });
    this.kafkaRefusedConnections = new Counter({
      name: 'cohort_kafka_refused_connections_total',
      help:
        'Kafka connections ended because of what the client sent: oversized (a size prefix past ' +
        '--kafka-max-request-bytes), malformed (a frame that does not decode), truncated (the stream ended inside ' +
        'a frame), unsupported (an API key or version not served), acks-zero-error (a Produce with acks=0 ' +
        'failed for a partition: closing the connection is how Kafka tells the producer).',
      labelNames: ['reason'],
      registers: [this.registry],
    });
    for (const reason of ['oversized', 'malformed', 'truncated', 'unsupported', 'acks-zero-error']) {
      this.kafkaRefusedConnections.inc({ reason }, 0);
    }
    this.kafkaConnections = new Gauge({
      name: 'cohort_kafka_connections',
      help: 'Connections open on the Kafka listener, idle ones included.',
      registers: [this.registry],
    });
  }

  /** The number of connections open on the Kafka listener changed. */
  onKafkaConnections(open: number): void {
    this.kafkaConnections.set(open);
  }

  /** The Kafka door ended a connection because of what its client sent (kafka-connection.ts). */
  onKafkaRefusedConnection(reason: string): void {
    this.kafkaRefusedConnections.inc({ reason });
  }

  /** The per-turn read budget was spent: connections pause until the next turn. */
  onReadPause(): void {
    this.readPauses.inc();
  }

  /** A call was refused for want of the right bearer token. */
  onUnauthenticatedCall(): void {
    this.unauthenticated.inc();
  }

  /** Where scrapes read from; set once the server's parts exist. */
  setSources(sources: MetricsSources): void {
    this.sources = sources;
  }

  /** Starts what samples in the background (the event-loop monitor). */
  start(): void {
    this.runtime.start();
  }

  /** Stops it; the registry can still be scraped. Idempotent. */
  stop(): void {
    this.runtime.stop();
  }

  /** The Prometheus text exposition of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
