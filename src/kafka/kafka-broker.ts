import type { GroupCoordinatorService } from '../group/group-protocol';
import type { BrokerService } from '../log/broker-protocol';
import type { FindCoordinatorRequest, FindCoordinatorResponse } from '../protocol/find-coordinator-messages';

/** A node as Kafka clients must reach it: the Kafka door's advertised address, never the gRPC one. */
export interface KafkaNode {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

/**
 * The core the Kafka door serves, the same one the gRPC door serves: one log, one coordinator, one view of
 * who coordinates which group. The server composes it (create-server.ts).
 */
export interface KafkaCore {
  readonly broker: BrokerService;
  readonly coordinator: GroupCoordinatorService;
  readonly findCoordinator: (request: FindCoordinatorRequest) => Promise<FindCoordinatorResponse>;
  /**
   * The Kafka address of a node, by id; undefined when not known. A single node knows only itself: the
   * door lists no other node (cluster mode over the Kafka door is a later step).
   */
  readonly kafkaNode: (nodeId: number) => KafkaNode | undefined;
  /** The controller clients send CreateTopics to: this node on a single node. */
  readonly controllerId: () => number;
  /** Metadata's cluster_id (v2+); null when none. */
  readonly clusterId: string | null;
  /** Create a topic a Metadata request names and the log does not have (Kafka's auto.create.topics.enable). */
  readonly isAutoCreateTopicsEnabled: boolean;
}
