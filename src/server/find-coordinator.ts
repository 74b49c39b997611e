import { ErrorCode } from '../errors';
import type { BrokerNode, MetadataResponse } from '../log';
import {
  COORDINATOR_KEY_TYPE_GROUP,
  type Coordinator,
  type FindCoordinatorRequest,
  type FindCoordinatorResponse,
} from '../protocol/find-coordinator-messages';
import { groupPartitionFor } from '../protocol/group-placement';

export type { FindCoordinatorRequest, FindCoordinatorResponse };

/** The internal topic whose partition leaders coordinate the groups. */
export const GROUP_METADATA_TOPIC = '__consumer_offsets';

export interface FindCoordinatorOptions {
  /** This node's view of the cluster: Metadata for the internal topic (brokers and partition leaders). */
  readonly metadata: (topics: readonly string[]) => Promise<MetadataResponse>;
  /**
   * The topic does not exist in this node's view. Cluster mode creates it here, as Kafka creates its
   * offsets topic on the first FindCoordinator; the answer is COORDINATOR_NOT_AVAILABLE until the new
   * partitions have leaders (clients retry), its message saying why when the callback knows (too few
   * live nodes for the topic's replicas). Without it (single-node mode before the topic is hosted),
   * `localNode` coordinates every group.
   */
  readonly onMissingTopic?: () => string | undefined;
  /** Single-node mode: this node, once bound. */
  readonly localNode?: () => BrokerNode | undefined;
  /**
   * Cluster mode: false while this node's session may be gone (its leadership guard). Its view is then
   * stale by definition: a deposed coordinator would name itself and send every client into a
   * NOT_COORDINATOR loop until its view caught up, so it answers COORDINATOR_NOT_AVAILABLE instead and
   * the client asks again (another node of its list, or this one once it is back).
   */
  readonly isViewCurrent?: () => boolean;
}

const NO_NODE = { nodeId: -1, host: '', port: -1 } as const;

/**
 * Kafka's FindCoordinator (v4, batched keys): which node coordinates each group. Any node answers for any
 * key from its own view (the offsets topic's partition count and each partition's leader); only the owner
 * serves the group, so a stale answer costs the client one NOT_COORDINATOR and a new lookup, never a
 * second copy of the group.
 */
export function findCoordinatorHandler(
  options: FindCoordinatorOptions,
): (request: FindCoordinatorRequest) => Promise<FindCoordinatorResponse> {
  return async (request) => {
    if (request.keyType !== COORDINATOR_KEY_TYPE_GROUP) {
      const message = `key_type ${request.keyType} is not served: only 0 (groups) is`;
      return {
        coordinators: request.keys.map((key) => failed(key, ErrorCode.INVALID_REQUEST, message)),
      };
    }
    if (request.keys.length === 0) return { coordinators: [] };
    if (options.isViewCurrent?.() === false) {
      const message = "this node's cluster session may be lost: its view of the coordinators is stale";
      return {
        coordinators: request.keys.map((key) => failed(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, message)),
      };
    }
    const view = await options.metadata([GROUP_METADATA_TOPIC]);
    const topic = view.topics.find((t) => t.name === GROUP_METADATA_TOPIC);
    if (topic === undefined || topic.errorCode !== ErrorCode.NONE || topic.partitions.length === 0) {
      const local = options.onMissingTopic === undefined ? options.localNode?.() : undefined;
      if (local !== undefined) return { coordinators: request.keys.map((key) => located(key, local)) };
      const why = options.onMissingTopic?.();
      const message = `${GROUP_METADATA_TOPIC} does not exist yet${why === undefined ? '' : `: ${why}`}`;
      return {
        coordinators: request.keys.map((key) => failed(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, message)),
      };
    }
    const brokers = new Map(view.brokers.map((node) => [node.nodeId, node]));
    const partitions = topic.partitions;
    return {
      coordinators: request.keys.map((key) => {
        const partitionIndex = groupPartitionFor(key, partitions.length);
        const partition = partitions.find((p) => p.partitionIndex === partitionIndex);
        const leader = partition === undefined ? undefined : brokers.get(partition.leaderId);
        return leader === undefined
          ? failed(
              key,
              ErrorCode.COORDINATOR_NOT_AVAILABLE,
              `${GROUP_METADATA_TOPIC}-${partitionIndex} has no live leader`,
            )
          : located(key, leader);
      }),
    };
  };
}

function located(key: string, node: BrokerNode): Coordinator {
  return {
    key,
    nodeId: node.nodeId,
    host: node.host,
    port: node.port,
    errorCode: ErrorCode.NONE,
    errorMessage: '',
  };
}

function failed(key: string, errorCode: ErrorCode, errorMessage: string): Coordinator {
  return { key, ...NO_NODE, errorCode, errorMessage };
}
