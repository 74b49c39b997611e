/**
 * The contract between the cluster layer (src/cluster, the only code that talks to etcd) and the log
 * layer, after Kafka's ZooKeeper-era LeaderAndIsr / UpdateMetadata requests and AlterPartition. The
 * cluster layer reads who leads, at which epoch, with which ISR, and tells the log layer; the log layer
 * never learns where that came from. The reverse direction is the leader's ISR change, which must be
 * committed in etcd before the log layer acts on it.
 *
 * Single-node mode implements none of this: its partitions have one replica, which leads at epoch 0.
 */

/** No leader (the partition is offline). */
export const NO_LEADER_ID = -1;

/** One partition's state as the cluster decided it (Kafka's LeaderAndIsrPartitionState). */
export interface PartitionLeadership {
  readonly topic: string;
  /** The topic's id (its incarnation), when the cluster gave it one: see ReplicaAssignment.topicId. */
  readonly topicId?: string;
  readonly partitionIndex: number;
  /** Assignment order; the first is the preferred leader. */
  readonly replicas: readonly number[];
  /** NO_LEADER_ID when the partition has no leader. */
  readonly leader: number;
  /** Goes up by one with every leader election (never with an ISR change alone). */
  readonly leaderEpoch: number;
  /** In replica order; always holds the leader when there is one. */
  readonly isr: readonly number[];
  /**
   * The version of this state in the metadata store (etcd's mod revision of the partition key, Kafka's
   * zkVersion / partition epoch). An ISR change names the version it was decided from, and the store
   * refuses it if the state moved since.
   */
  readonly partitionEpoch: number;
}

/** A live node and the address its peers and clients reach it at. */
export interface ClusterNodeAddress {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

/**
 * The cluster as this node last read it. Every update is complete (all topics this cluster knows, with
 * every partition), so the log layer applies it by difference and a lost update cannot leave it behind.
 */
export interface ClusterMetadataUpdate {
  readonly liveNodes: readonly ClusterNodeAddress[];
  /** The controller's node id, or NO_LEADER_ID while there is none. */
  readonly controllerId: number;
  readonly partitions: readonly PartitionLeadership[];
}

/** What the cluster layer drives in the log layer (implemented by ReplicaManager). */
export interface PartitionRoleTarget {
  /**
   * Applies the cluster's view: creates the local replicas of partitions assigned to this node, makes
   * each the leader (at its epoch, with its ISR) or a follower of the named leader, and stops fetching
   * what this node no longer replicates. States older than what a partition already holds (a lower
   * leader epoch, or the same epoch at a lower partition epoch) are ignored. Never waits on I/O of the
   * metadata store; may return before local files are opened.
   */
  applyClusterMetadata(update: ClusterMetadataUpdate): void;
  /**
   * The node's session is gone (its lease could not be renewed before the monotonic deadline): stop
   * acting as leader of anything at once. Produce answers NOT_LEADER_OR_FOLLOWER, parked acks=-1 produces
   * complete with it, and no HW advances, until a later `applyClusterMetadata` names this node again.
   */
  resignLeadership(): void;
}

/**
 * One partition replica as this node's data directory holds it, for rebuilding the cluster's metadata
 * from the nodes' logs after etcd lost it (docs/operations.md, "When etcd loses the cluster's metadata").
 */
export interface LocalReplicaState {
  readonly topic: string;
  readonly partitionIndex: number;
  /**
   * The highest leader epoch this replica knows: its last batch's (its leader-epoch cache), or the one it
   * was told by the cluster if higher (an election no write followed); -1 for a log with none.
   */
  readonly leaderEpoch: number;
  readonly logEndOffset: number;
  /** The topic id its `partition.metadata` names; absent for a directory written before topic ids. */
  readonly topicId?: string;
  /** How many partitions the topic had as this node last knew it (its registry), when it knows. */
  readonly partitionCount?: number;
}

/** The outcome of an ISR change the leader proposed. */
export type IsrChangeResult =
  /** Committed; `state` is the partition's new state (its partitionEpoch the store's new version). */
  | { readonly kind: 'committed'; readonly state: PartitionLeadership }
  /**
   * Refused: the state moved since `partitionEpoch` (another leader, another ISR). `state` is the current
   * one when the store could tell, else null; the leader acts on it only through `applyClusterMetadata`.
   */
  | { readonly kind: 'stale'; readonly state: PartitionLeadership | null }
  /** Unknown (the store did not answer, or this node has no session): nothing may be assumed. */
  | { readonly kind: 'failed'; readonly error: unknown };

/**
 * How a leader changes its ISR (Kafka's AlterPartition, here a compare on the partition key in etcd).
 * The log layer calls it and keeps serving meanwhile: a shrink is not used for the high watermark until
 * it is committed, an expansion counts only once committed too. At most one proposal per partition is in
 * flight. This is the only place the data path reaches the metadata store, and it never waits on it:
 * Produce, Fetch and the HW go on with the committed ISR.
 */
export interface IsrChangeProposer {
  proposeIsr(
    topic: string,
    partitionIndex: number,
    leaderEpoch: number,
    partitionEpoch: number,
    isr: readonly number[],
  ): Promise<IsrChangeResult>;
}

/**
 * Whether this node may act as a leader right now: true while its session with the metadata store is
 * active on the node's monotonic clock (deadline = last acknowledged renewal's send time + TTL − margin).
 * Read on every Produce and before every HW advance; it reads a clock, nothing more.
 */
export interface LeadershipGuard {
  isActive(): boolean;
}
