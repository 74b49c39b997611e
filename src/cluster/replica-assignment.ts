import { topicNameProblem } from '../log/topic-partition';
import { fencedTxn } from './controller-election';
import {
  MetadataStoreError,
  type Compare,
  type KeyValue,
  type MetadataStore,
  type TxnOp,
} from './metadata-store';
import {
  encodePartitionState,
  initialPartitionState,
  partitionKey,
  topicKey,
  type PartitionState,
} from './partition-state';

/**
 * A topic's replica assignment, as Kafka kept it in `/brokers/topics/<t>`: `topics/<name>` =
 * `{"partitions":[[1,2,3],[2,3,1]]}`, partition p's replicas at index p, in preference order (the first
 * is the preferred leader). Every partition has the same number of distinct replicas.
 */
export interface ReplicaAssignment {
  readonly partitions: readonly (readonly number[])[];
}

export class InvalidReplicaAssignmentError extends Error {
  constructor(where: string, reason: string) {
    super(`${where}: invalid replica assignment: ${reason}`);
    this.name = 'InvalidReplicaAssignmentError';
  }
}

function checkAssignment(assignment: ReplicaAssignment, where: string): void {
  const { partitions } = assignment;
  if (!Array.isArray(partitions) || partitions.length === 0) {
    throw new InvalidReplicaAssignmentError(where, 'partitions must be a non-empty array');
  }
  const replicationFactor = Array.isArray(partitions[0]) ? partitions[0].length : 0;
  partitions.forEach((replicas, partition) => {
    if (
      !Array.isArray(replicas) ||
      replicas.length === 0 ||
      !replicas.every((id) => typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) ||
      new Set(replicas).size !== replicas.length
    ) {
      throw new InvalidReplicaAssignmentError(
        where,
        `partition ${partition}: replicas must be distinct node ids`,
      );
    }
    if (replicas.length !== replicationFactor) {
      throw new InvalidReplicaAssignmentError(
        where,
        `partition ${partition} has ${replicas.length} replicas, partition 0 has ${replicationFactor}`,
      );
    }
  });
}

export function encodeReplicaAssignment(assignment: ReplicaAssignment): string {
  checkAssignment(assignment, 'replica assignment');
  return JSON.stringify({ partitions: assignment.partitions });
}

export function decodeReplicaAssignment(key: string, value: string): ReplicaAssignment {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidReplicaAssignmentError(key, 'not JSON');
  }
  const partitions = (parsed as { partitions?: unknown } | null)?.partitions as number[][];
  const assignment = { partitions };
  checkAssignment(assignment, key);
  return { partitions: partitions.map((replicas) => [...replicas]) };
}

export type CreateTopicResult =
  | { readonly outcome: 'created'; readonly revision: number; readonly states: readonly PartitionState[] }
  /** The topic key, or a partition key of that name, already exists. */
  | { readonly outcome: 'exists' }
  | { readonly outcome: 'notController'; readonly currentEpoch: number };

/**
 * The controller creates a topic: its assignment and every partition's initial state (the first live
 * replica leads at epoch 0), in one transaction, only if none of those keys exists, and only at the
 * controller's epoch. Failed writes propagate `MetadataStoreError`; after one with `isOutcomeUnknown`,
 * read the topic key before trying again.
 */
export async function createTopic(
  store: MetadataStore,
  clusterId: string,
  controllerEpoch: number,
  topic: string,
  assignment: ReplicaAssignment,
  isAlive: (nodeId: number) => boolean,
): Promise<CreateTopicResult> {
  const key = topicKey(clusterId, topic);
  const states = assignment.partitions.map((replicas) =>
    initialPartitionState(replicas, isAlive, controllerEpoch),
  );
  const absent = (k: string): Compare => ({ key: k, target: 'createRevision', result: 'equal', operand: 0 });
  const compare: Compare[] = [absent(key)];
  const success: TxnOp[] = [{ type: 'put', key, value: encodeReplicaAssignment(assignment) }];
  states.forEach((state, partition) => {
    const stateKey = partitionKey(clusterId, topic, partition);
    compare.push(absent(stateKey));
    success.push({ type: 'put', key: stateKey, value: encodePartitionState(state) });
  });
  const result = await fencedTxn(store, clusterId, controllerEpoch, { compare, success });
  switch (result.outcome) {
    case 'applied':
      return { outcome: 'created', revision: result.response.revision, states };
    case 'conditionFailed':
      return { outcome: 'exists' };
    case 'notController':
      return result;
  }
}

export interface AssignReplicasOptions {
  /**
   * Where the round-robin starts in the sorted node list, and the initial shift of the followers. Kafka
   * picks both at random, so that topics created one after another do not all lead on the same node;
   * a test fixes them.
   */
  readonly startIndex?: number;
  readonly replicaShift?: number;
  /** The source of the random start when none is given; `Math.random` by default. */
  readonly random?: () => number;
}

/**
 * Kafka's `AdminUtils.assignReplicasToBrokers` without racks: partition p's first replica (its
 * preferred leader) is node `(p + startIndex) mod n` of the sorted live nodes, so leadership spreads
 * round-robin; its followers follow at an offset `1 + (shift + j) mod (n − 1)` from it, and the shift
 * moves on by one after every `n` partitions, so the followers of one node's partitions spread over
 * the others instead of always being its neighbours. Node ids 0..4, 10 partitions, factor 3, start 0:
 * [0,1,2] [1,2,3] [2,3,4] [3,4,0] [4,0,1] [0,2,3] [1,3,4] [2,4,0] [3,0,1] [4,1,2].
 */
export function assignReplicas(
  nodeIds: readonly number[],
  partitionCount: number,
  replicationFactor: number,
  options: AssignReplicasOptions = {},
): ReplicaAssignment {
  if (!Number.isSafeInteger(partitionCount) || partitionCount <= 0) {
    throw new InvalidReplicaAssignmentError(
      'assignReplicas',
      `partition count must be positive, got ${partitionCount}`,
    );
  }
  const nodes = [...new Set(nodeIds)].sort((a, b) => a - b);
  if (
    !Number.isSafeInteger(replicationFactor) ||
    replicationFactor <= 0 ||
    replicationFactor > nodes.length
  ) {
    throw new InvalidReplicaAssignmentError(
      'assignReplicas',
      `replication factor ${replicationFactor} must be between 1 and the ${nodes.length} live nodes`,
    );
  }
  const n = nodes.length;
  const random = options.random ?? Math.random;
  const startIndex = options.startIndex ?? Math.floor(random() * n);
  let shift = options.replicaShift ?? Math.floor(random() * n);
  const partitions: number[][] = [];
  for (let p = 0; p < partitionCount; p++) {
    if (p > 0 && p % n === 0) shift++;
    const first = (p + startIndex) % n;
    const replicas = [nodes[first]];
    for (let j = 0; j < replicationFactor - 1; j++) {
      replicas.push(nodes[(first + 1 + ((shift + j) % (n - 1))) % n]);
    }
    partitions.push(replicas);
  }
  return { partitions };
}

/** The answer to a request to create a topic, as the controller or any node gives it. */
export type CreateTopicOutcome =
  | { readonly outcome: 'created'; readonly assignment: ReplicaAssignment }
  | { readonly outcome: 'exists' }
  /** Kafka's INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR (above the live nodes). */
  | {
      readonly outcome: 'invalidTopic' | 'invalidPartitions' | 'invalidReplicationFactor';
      readonly reason: string;
    }
  /** Kafka's NOT_CONTROLLER: this node is not (or no longer) the controller. */
  | { readonly outcome: 'notController' };

/**
 * Checks a topic creation request and assigns its replicas round-robin over `liveNodeIds`
 * (`assignReplicas`): the assignment to write, or the outcome that refuses the request.
 */
export function planTopic(
  topic: string,
  partitionCount: number,
  replicationFactor: number,
  liveNodeIds: readonly number[],
  options: AssignReplicasOptions = {},
):
  | { readonly outcome: 'planned'; readonly assignment: ReplicaAssignment }
  | Extract<CreateTopicOutcome, { readonly reason: string }> {
  const topicProblem = topicNameProblem(topic);
  if (topicProblem !== null) return { outcome: 'invalidTopic', reason: topicProblem };
  if (!Number.isSafeInteger(partitionCount) || partitionCount <= 0) {
    return {
      outcome: 'invalidPartitions',
      reason: `partition count must be positive, got ${partitionCount}`,
    };
  }
  try {
    return {
      outcome: 'planned',
      assignment: assignReplicas(liveNodeIds, partitionCount, replicationFactor, options),
    };
  } catch (error) {
    if (!(error instanceof InvalidReplicaAssignmentError)) throw error;
    return { outcome: 'invalidReplicationFactor', reason: error.message };
  }
}

/**
 * After a topic creation whose answer was lost: reads the topic key. Our assignment there means it was
 * created (by us: another creator's round-robin start would differ, and if it did not, the topic is what
 * we asked for anyway); another one means it exists; none means the write did not apply, and the
 * ambiguous error is rethrown (so is it when the read fails too): nothing is assumed.
 */
export async function resolveTopicCreation(
  store: MetadataStore,
  clusterId: string,
  topic: string,
  assignment: ReplicaAssignment,
  ambiguous: MetadataStoreError,
): Promise<Extract<CreateTopicOutcome, { readonly outcome: 'created' | 'exists' }>> {
  let kv: KeyValue | undefined;
  try {
    ({ kv } = await store.get(topicKey(clusterId, topic)));
  } catch {
    throw ambiguous;
  }
  if (kv === undefined) throw ambiguous;
  if (kv.value !== encodeReplicaAssignment(assignment)) return { outcome: 'exists' };
  return { outcome: 'created', assignment };
}

/**
 * A topic created by a node that is not the controller, as Kafka's brokers did in the ZooKeeper era
 * (`AdminZkClient.createTopicWithAssignment`): only the assignment `topics/<name>` is written, only if
 * neither it nor any of its partition keys exists. The controller sees the new key on its watch and
 * writes every partition's initial state (at its epoch, fenced), as it does for any topic whose states
 * are missing. Resolves a lost answer by reading the topic key (`resolveTopicCreation`).
 */
export async function writeTopicAssignment(
  store: MetadataStore,
  clusterId: string,
  topic: string,
  assignment: ReplicaAssignment,
): Promise<Extract<CreateTopicOutcome, { readonly outcome: 'created' | 'exists' }>> {
  const key = topicKey(clusterId, topic);
  const absent = (k: string): Compare => ({ key: k, target: 'createRevision', result: 'equal', operand: 0 });
  const compare = [
    absent(key),
    ...assignment.partitions.map((_, p) => absent(partitionKey(clusterId, topic, p))),
  ];
  let response;
  try {
    response = await store.txn({
      compare,
      success: [{ type: 'put', key, value: encodeReplicaAssignment(assignment) }],
    });
  } catch (error) {
    if (!(error instanceof MetadataStoreError) || !error.isOutcomeUnknown) throw error;
    return resolveTopicCreation(store, clusterId, topic, assignment, error);
  }
  return response.succeeded ? { outcome: 'created', assignment } : { outcome: 'exists' };
}
