import { fencedTxn } from './controller-election';
import type { Compare, MetadataStore, TxnOp } from './metadata-store';
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
