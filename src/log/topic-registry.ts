import { ErrorCode } from '../errors';
import type {
  BrokerNode,
  MetadataRequest,
  MetadataResponse,
  PartitionMetadata,
  TopicMetadata,
} from './broker-protocol';
import type { TopicAssignment } from './log-manager';
import { type Partition, sameIds } from './partition';
import type { PartitionLookup } from './partition-lookup';
import { NO_LEADER_ID } from './partition-roles';
import { RESERVED_TOPIC_NAMES, topicNameProblem } from './topic-partition';

/** One partition of a known topic: its replicas, what the cluster last said of it, and its log if hosted. */
export interface PartitionInfo {
  readonly partitionIndex: number;
  replicas: readonly number[];
  /** On a follower, for partitions not hosted here: what the leader last reported. */
  leaderId: number;
  leaderEpoch: number;
  isr: readonly number[];
  /** Set when this process hosts the partition. */
  partition: Partition | undefined;
}

export interface TopicState {
  readonly name: string;
  /** The topic's id (its incarnation), when it has one: see TopicAssignment.topicId. */
  readonly topicId: string | undefined;
  readonly partitions: PartitionInfo[];
}

const NO_NODES: readonly number[] = Object.freeze([]);

/** Metadata's answer for a topic named by a cluster node that has no view of the cluster yet. */
const NOT_A_MEMBER_MESSAGE =
  'this node is not yet a member of the cluster (not registered, or its first cluster view not applied): ' +
  'ask another node, or again shortly';

/**
 * What this node knows of the topics and the nodes (Kafka's MetadataCache), with the partitions it hosts
 * (Kafka's ReplicaManager.allPartitions): every topic with its assignment and, per partition, its log when
 * hosted here or what the cluster last said of it when not; the live nodes and the controller of the
 * cluster's last view; this process's own address. It answers Metadata and tells a partition not hosted
 * here from one that does not exist. ReplicaManager and CreateTopics change it; it opens and closes nothing.
 */
export class TopicRegistry implements PartitionLookup {
  private readonly topics = new Map<string, TopicState>();
  private readonly partitions = new Map<string, Partition>();
  /** Cluster mode: the live nodes of the latest applyClusterMetadata (Metadata's broker list). */
  private liveNodes: readonly BrokerNode[] | null = null;
  /** Cluster mode: the controller as the last view named it (Metadata's controller_id). */
  private controllerId = NO_LEADER_ID;
  private localBroker: BrokerNode | null = null;

  constructor(
    private readonly nodeId: number,
    private readonly isClusterMode: boolean,
  ) {}

  getPartition(key: string): Partition | undefined {
    return this.partitions.get(key);
  }

  /** The partitions this process hosts. A live view: do not hold it across an await. */
  hostedPartitions(): IterableIterator<Partition> {
    return this.partitions.values();
  }

  topic(name: string): TopicState | undefined {
    return this.topics.get(name);
  }

  /** Every known topic's state, in creation (or load) order. A live view. */
  topicStates(): IterableIterator<TopicState> {
    return this.topics.values();
  }

  /** Topic names, in creation (or load) order. */
  topicNames(): string[] {
    return [...this.topics.keys()];
  }

  /** The partition count of a known topic, or undefined. */
  partitionCount(name: string): number | undefined {
    return this.topics.get(name)?.partitions.length;
  }

  /** Whether the topic is known with exactly this assignment (id, partitions and their replicas). */
  hasAssignment(assignment: TopicAssignment): boolean {
    const state = this.topics.get(assignment.name);
    if (state === undefined) return false;
    if (state.partitions.length !== assignment.partitions.length) return false;
    if (state.topicId !== assignment.topicId) return false;
    return assignment.partitions.every((p, i) => {
      return sameIds(state.partitions[i]!.replicas, p.replicas);
    });
  }

  /** Registers a topic with the partitions opened for it here (`opened`, by partition index). */
  add(assignment: TopicAssignment, opened: Map<number, Partition>): void {
    const partitions = assignment.partitions.map(({ partitionIndex, replicas }): PartitionInfo => {
      const partition = opened.get(partitionIndex);
      if (partition !== undefined) this.partitions.set(partition.key, partition);
      return {
        partitionIndex,
        replicas,
        leaderId: partition?.leaderId ?? NO_LEADER_ID,
        leaderEpoch: partition?.leaderEpoch ?? 0,
        isr: NO_NODES,
        partition,
      };
    });
    this.topics.set(assignment.name, { name: assignment.name, topicId: assignment.topicId, partitions });
  }

  /** Forgets a topic's state before `add` replaces it (partitions kept open are re-added there). */
  remove(state: TopicState): void {
    this.topics.delete(state.name);
    for (const info of state.partitions) {
      if (info.partition !== undefined) this.partitions.delete(info.partition.key);
    }
  }

  /**
   * The error for a partition this process has no log of, as Kafka tells them apart:
   * UNKNOWN_TOPIC_OR_PARTITION when the topic or that partition index does not exist,
   * NOT_LEADER_OR_FOLLOWER when it exists on replicas that do not include this process.
   */
  unhostedPartitionError(topic: string, partitionIndex: number): ErrorCode {
    // A topic's partitions are indexed by partition index; any other index finds nothing.
    return this.topics.get(topic)?.partitions[partitionIndex] !== undefined
      ? ErrorCode.NOT_LEADER_OR_FOLLOWER
      : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
  }

  /** This process's address, for Metadata's broker list (known once the server is bound). */
  setLocalBroker(node: BrokerNode): void {
    this.localBroker = node;
  }

  /** Cluster mode: the live nodes and the controller of the view being applied. */
  setClusterNodes(liveNodes: readonly BrokerNode[], controllerId: number): void {
    this.liveNodes = liveNodes.map(({ nodeId, host, port }) => ({ nodeId, host, port }));
    this.controllerId = controllerId;
  }

  /**
   * The requested topics (every topic but the internal ones when none is named) and the brokers: this node
   * on a single node, the live nodes of the cluster's last view in cluster mode.
   *
   * A cluster node without a view yet (not registered: etcd down at its start, or its node id still held by
   * another process's session) knows neither the cluster's nodes nor its topics: its data directory may
   * hold topics deleted since and lack topics created since, and UNKNOWN_TOPIC_OR_PARTITION would tell a
   * client bootstrapped from it that an existing topic does not exist. It answers no brokers, as a node
   * that is not a member (Kafka's client drops a Metadata without brokers and asks again, another node if
   * it has one), and each named topic LEADER_NOT_AVAILABLE (retriable) with a message saying why; asked
   * for every topic, no topics. Once a member, a node answers from its last view even after losing
   * its session, as a Kafka broker answers from its metadata cache: the leaders it names refuse what they
   * no longer lead, and the client asks Metadata again.
   */
  metadata(request: MetadataRequest): MetadataResponse {
    if (this.isClusterMode && this.liveNodes === null) {
      const topics = request.topics.map((name): TopicMetadata => {
        const problem = topicNameProblem(name);
        return problem === null
          ? topicError(name, ErrorCode.LEADER_NOT_AVAILABLE, NOT_A_MEMBER_MESSAGE)
          : topicError(name, ErrorCode.INVALID_TOPIC_EXCEPTION, problem);
      });
      return { brokers: [], topics, controllerId: NO_LEADER_ID };
    }
    // Every topic but the internal ones (Kafka's clients exclude them by default, exclude.internal.topics;
    // the protocol here has no is_internal flag to let them): `__consumer_offsets` is listed when named.
    const names =
      request.topics.length === 0
        ? [...this.topics.keys()].filter((name) => !RESERVED_TOPIC_NAMES.has(name))
        : request.topics;
    const topics = names.map((name): TopicMetadata => {
      const state = this.topics.get(name);
      if (state === undefined) {
        const problem = topicNameProblem(name);
        return problem === null
          ? topicError(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, '')
          : topicError(name, ErrorCode.INVALID_TOPIC_EXCEPTION, problem);
      }
      return {
        name,
        errorCode: ErrorCode.NONE,
        partitions: state.partitions.map(partitionMetadata),
        errorMessage: '',
      };
    });
    const brokers: BrokerNode[] = [];
    if (this.liveNodes !== null) {
      // Cluster mode: every live node, as the cluster last told this one (Kafka's live brokers).
      for (const node of this.liveNodes) brokers.push(node);
    } else if (this.localBroker !== null) {
      brokers.push(this.localBroker);
    }
    const controllerId = this.isClusterMode ? this.controllerId : this.nodeId;
    return { brokers, topics, controllerId };
  }
}

function topicError(name: string, errorCode: ErrorCode, errorMessage: string): TopicMetadata {
  return { name, errorCode, partitions: [], errorMessage };
}

function partitionMetadata(info: PartitionInfo): PartitionMetadata {
  // A partition hosted here knows its own state; the registry has what the leader last reported.
  const state: Pick<PartitionInfo, 'leaderId' | 'leaderEpoch' | 'replicas' | 'isr'> = info.partition ?? info;
  return {
    partitionIndex: info.partitionIndex,
    leaderId: state.leaderId,
    replicaNodes: state.replicas,
    isrNodes: state.isr,
    errorCode: state.leaderId < 0 ? ErrorCode.LEADER_NOT_AVAILABLE : ErrorCode.NONE,
    leaderEpoch: state.leaderEpoch,
  };
}
