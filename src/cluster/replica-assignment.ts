import { randomUUID } from 'node:crypto';
import { topicNameProblem } from '../log/topic-partition';
import { fencedTxn } from './controller-election';
import {
  ETCD_MAX_TXN_OPS,
  MetadataStoreError,
  type Compare,
  type KeyValue,
  type MetadataStore,
  type TxnOp,
} from './metadata-store';
import {
  encodePartitionState,
  partitionKey,
  partitionsPrefix,
  topicKey,
  type PartitionState,
} from './partition-state';

/**
 * The most bytes a topic's replica assignment may take. It is one etcd key, written in one request, and
 * etcd refuses a request above 1.5 MiB (ETCD_MAX_REQUEST_BYTES); 1 MiB leaves the rest of the request
 * room. Measured: 10,000 partitions (MAX_PARTITIONS_PER_TOPIC) of 3 replicas take 80,016 bytes on
 * one-digit node ids and 350,016 on ten-digit ones (INT32_MAX, the largest); 10,000 partitions pass the
 * limit only from 10 replicas on ten-digit ids, or from 26 on three-digit ones.
 */
export const MAX_REPLICA_ASSIGNMENT_BYTES = 1024 * 1024;

/**
 * Initial partition states the controller creates in one transaction: a compare for each key's absence
 * plus the controller epoch's own compare, within etcd's ETCD_MAX_TXN_OPS (128) compares.
 */
export const PARTITION_STATES_PER_TXN = ETCD_MAX_TXN_OPS - 1;

/**
 * A topic's replica assignment, as Kafka kept it in `/brokers/topics/<t>`: `topics/<name>` =
 * `{"partitions":[[1,2,3],[2,3,1]]}`, partition p's replicas at index p, in preference order (the first
 * is the preferred leader). Every partition has the same number of distinct replicas.
 */
export interface ReplicaAssignment {
  readonly partitions: readonly (readonly number[])[];
  /**
   * The topic's identity (Kafka's topic id), made when the topic is created: a topic deleted and created
   * again under the same name is another topic, and a replica's directory of the earlier one is never
   * read as the new one's (`partition.metadata`). Absent in topics created before topic ids.
   */
  readonly topicId?: string;
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
  return JSON.stringify(
    assignment.topicId === undefined
      ? { partitions: assignment.partitions }
      : { partitions: assignment.partitions, topicId: assignment.topicId },
  );
}

export function decodeReplicaAssignment(key: string, value: string): ReplicaAssignment {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidReplicaAssignmentError(key, 'not JSON');
  }
  const { partitions, topicId } = (parsed ?? {}) as { partitions?: number[][]; topicId?: unknown };
  checkAssignment({ partitions: partitions! }, key);
  if (topicId !== undefined && (typeof topicId !== 'string' || topicId === '')) {
    throw new InvalidReplicaAssignmentError(key, 'topicId must be a non-empty string');
  }
  const copied = partitions!.map((replicas) => [...replicas]);
  return topicId === undefined ? { partitions: copied } : { partitions: copied, topicId };
}

export type CreateTopicResult =
  | { readonly outcome: 'created'; readonly revision: number }
  /** The topic key, or a partition key of that name, already exists. */
  | { readonly outcome: 'exists' }
  | { readonly outcome: 'notController'; readonly currentEpoch: number };

/**
 * "Neither `topics/<name>` nor any key under `partitions/<name>/` exists": two compares, whatever the
 * partition count (the second one over the prefix).
 */
function topicAbsent(clusterId: string, topic: string): Compare[] {
  return [
    { key: topicKey(clusterId, topic), target: 'createRevision', result: 'equal', operand: 0 },
    {
      key: partitionsPrefix(clusterId, topic),
      prefix: true,
      target: 'createRevision',
      result: 'equal',
      operand: 0,
    },
  ];
}

/**
 * The controller creates a topic: its assignment `topics/<name>`, only if neither it nor any partition key
 * of that name exists, and only at the controller's epoch. One transaction of three compares and one put,
 * whatever the partition count: the topic exists from this write on, but no node's view shows it until
 * every partition has its state (`toClusterMetadataUpdate`). The controller writes those next, in slices
 * (`createPartitionStates`); one that dies first leaves them to its successor, which writes the missing
 * states of every topic it reads. Failed writes propagate `MetadataStoreError`; after one with
 * `isOutcomeUnknown`, read the topic key (`resolveTopicCreation`).
 */
export async function createTopicAssignment(
  store: MetadataStore,
  clusterId: string,
  controllerEpoch: number,
  topic: string,
  assignment: ReplicaAssignment,
): Promise<CreateTopicResult> {
  const result = await fencedTxn(store, clusterId, controllerEpoch, {
    compare: topicAbsent(clusterId, topic),
    success: [{ type: 'put', key: topicKey(clusterId, topic), value: encodeReplicaAssignment(assignment) }],
  });
  switch (result.outcome) {
    case 'applied':
      return { outcome: 'created', revision: result.response.revision };
    case 'conditionFailed':
      return { outcome: 'exists' };
    case 'notController':
      return result;
  }
}

/** One partition's initial state, to be created. */
export interface InitialPartitionState {
  readonly partition: number;
  readonly state: PartitionState;
}

export type CreatePartitionStatesResult =
  | { readonly outcome: 'created'; readonly revision: number }
  /** One of the keys exists already (the caller's view is behind): nothing was written. */
  | { readonly outcome: 'exists' }
  | { readonly outcome: 'notController'; readonly currentEpoch: number };

/**
 * The controller creates initial states of partitions of one topic, at most PARTITION_STATES_PER_TXN of
 * them: one transaction, every key only if absent, at the controller's epoch. All are written or none.
 * Failed writes propagate `MetadataStoreError`; after one with `isOutcomeUnknown` the caller reads (a key
 * holding our state at a later revision was written).
 */
export async function createPartitionStates(
  store: MetadataStore,
  clusterId: string,
  controllerEpoch: number,
  topic: string,
  states: readonly InitialPartitionState[],
): Promise<CreatePartitionStatesResult> {
  if (states.length === 0 || states.length > PARTITION_STATES_PER_TXN) {
    throw new RangeError(
      `createPartitionStates: 1 to ${PARTITION_STATES_PER_TXN} states a transaction, got ${states.length}`,
    );
  }
  const compare: Compare[] = [];
  const success: TxnOp[] = [];
  for (const { partition, state } of states) {
    const key = partitionKey(clusterId, topic, partition);
    compare.push({ key, target: 'createRevision', result: 'equal', operand: 0 });
    success.push({ type: 'put', key, value: encodePartitionState(state) });
  }
  const result = await fencedTxn(store, clusterId, controllerEpoch, { compare, success });
  switch (result.outcome) {
    case 'applied':
      return { outcome: 'created', revision: result.response.revision };
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
  let assignment: ReplicaAssignment;
  try {
    assignment = assignReplicas(liveNodeIds, partitionCount, replicationFactor, options);
  } catch (error) {
    if (!(error instanceof InvalidReplicaAssignmentError)) throw error;
    return { outcome: 'invalidReplicationFactor', reason: error.message };
  }
  const assignmentBytes = Buffer.byteLength(encodeReplicaAssignment(assignment));
  if (assignmentBytes > MAX_REPLICA_ASSIGNMENT_BYTES) {
    return {
      outcome: 'invalidPartitions',
      reason:
        `${partitionCount} partitions of ${replicationFactor} replicas need a replica assignment of ` +
        `${assignmentBytes} bytes, above the ${MAX_REPLICA_ASSIGNMENT_BYTES} a topic may take: ` +
        'ask for fewer partitions or replicas',
    };
  }
  return { outcome: 'planned', assignment: { ...assignment, topicId: newTopicId() } };
}

/** A new topic's id: random, as Kafka's (a UUID). */
export function newTopicId(): string {
  return randomUUID();
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
 * neither it nor any of its partition keys exists (two compares, whatever the partition count). The
 * controller sees the new key on its watch and writes every partition's initial state (at its epoch,
 * fenced, in slices), as it does for any topic whose states are missing. Resolves a lost answer by
 * reading the topic key (`resolveTopicCreation`).
 */
export async function writeTopicAssignment(
  store: MetadataStore,
  clusterId: string,
  topic: string,
  assignment: ReplicaAssignment,
): Promise<Extract<CreateTopicOutcome, { readonly outcome: 'created' | 'exists' }>> {
  let response;
  try {
    response = await store.txn({
      compare: topicAbsent(clusterId, topic),
      success: [{ type: 'put', key: topicKey(clusterId, topic), value: encodeReplicaAssignment(assignment) }],
    });
  } catch (error) {
    if (!(error instanceof MetadataStoreError) || !error.isOutcomeUnknown) throw error;
    return resolveTopicCreation(store, clusterId, topic, assignment, error);
  }
  return response.succeeded ? { outcome: 'created', assignment } : { outcome: 'exists' };
}
