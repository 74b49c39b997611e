import type { Logger } from 'pino';
import type { CohortConfig } from '../config';
import { KAFKA_LISTEN_OFF, parseListenAddress } from '../config';
import {
  KafkaListener,
  type KafkaBoundAddress,
  type KafkaCore,
  type KafkaNode,
  type WireTraceEntry,
} from '../kafka';
import type { Time } from '../time';
import type { ServerMetrics } from './metrics/server-metrics';

/** The `service` label of the Kafka door's requests in cohort_rpc_duration_seconds. */
export const KAFKA_SERVICE_LABEL = 'kafka';

export interface KafkaDoorOptions {
  readonly time: Time;
  readonly logger: Logger;
  readonly metrics: ServerMetrics;
  /** Record the (client id, api key, version) of every Kafka request. */
  readonly isWireTraced: boolean;
  /** The same core the gRPC door serves, but for the node addresses this door knows itself. */
  readonly core: Pick<KafkaCore, 'broker' | 'coordinator' | 'findCoordinator' | 'controllerId'>;
  /** A cluster node: its Kafka listener lists only itself, which start() warns of. */
  readonly isClusterNode: boolean;
}

/**
 * The Kafka door: the same coordinator, log and coordinator lookup as the gRPC door, behind Kafka's wire
 * protocol. Kafka clients are told this node's Kafka address (advertised, or the bound one), never its gRPC
 * address; a single node knows only its own, so cluster mode lists no other node to them yet. Undefined
 * when `kafkaListen` is off.
 */
export function kafkaDoorOf(config: CohortConfig, options: KafkaDoorOptions): KafkaDoor | undefined {
  const kafkaListen =
    config.kafkaListen === '' || config.kafkaListen === KAFKA_LISTEN_OFF
      ? undefined
      : parseListenAddress(config.kafkaListen);
  return kafkaListen === undefined ? undefined : new KafkaDoor(config, kafkaListen, options);
}

/** The Kafka listener with the address it advertises, known once it is bound. */
export class KafkaDoor {
  private readonly listener: KafkaListener;
  private advertised: KafkaNode | undefined;

  constructor(
    private readonly config: CohortConfig,
    listen: { readonly host: string; readonly port: number },
    private readonly options: KafkaDoorOptions,
  ) {
    const { time, logger, metrics, core } = options;
    this.listener = new KafkaListener({
      host: listen.host,
      port: listen.port,
      maxRequestBytes: config.kafkaMaxRequestBytes,
      connectionsMaxIdleMs: config.kafkaConnectionsMaxIdleMs,
      time,
      logger,
      onRefusedConnection: (reason) => metrics.onKafkaRefusedConnection(reason),
      onOpenConnections: (open) => metrics.onKafkaConnections(open),
      // Kafka requests in cohort_rpc_duration_seconds, as service="kafka", method=the API's name.
      observe: (apiName) => metrics.callObservers(KAFKA_SERVICE_LABEL, apiName),
      isWireTraced: options.isWireTraced,
      core: {
        ...core,
        kafkaNode: (nodeId) => (nodeId === config.nodeId ? this.advertised : undefined),
        clusterId: config.clusterId,
        isAutoCreateTopicsEnabled: config.kafkaAutoCreateTopics,
      },
    });
  }

  /** The bound address once started. */
  get address(): KafkaBoundAddress | undefined {
    return this.listener.address;
  }

  /** The Kafka requests served so far, when wire-traced (empty otherwise). */
  get wireTrace(): readonly WireTraceEntry[] {
    return this.listener.wireTrace;
  }

  /** Binds, then advertises `kafkaAdvertisedAddress` or, by default, the bound address. */
  async start(): Promise<void> {
    const bound = await this.listener.start();
    const advertised = parseListenAddress(this.config.kafkaAdvertisedAddress);
    this.advertised = {
      nodeId: this.config.nodeId,
      // IPv6 hosts go to Kafka clients without brackets.
      host: (advertised?.host ?? bound.host).replace(/^\[(.*)\]$/, '$1'),
      port: advertised?.port ?? bound.port,
    };
    if (this.options.isClusterNode) {
      // Nodes do not yet tell each other their Kafka addresses (docs/kafka-clients.md, "Not yet").
      this.options.logger.warn(
        { kafkaAddress: bound.address },
        'the Kafka listener lists only this node: Kafka clients cannot reach leaders or coordinators on other nodes of the cluster',
      );
    }
  }

  /** Ends every connection: whatever they had parked is released, nothing more is read from them. */
  close(): Promise<void> {
    return this.listener.close();
  }
}
