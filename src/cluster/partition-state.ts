import { topicNameProblem } from '../log/topic-partition';
import { controllerKey } from './controller-election';
import {
  MetadataStoreError,
  type Compare,
  type KeyValue,
  type MetadataStore,
  type TxnOp,
} from './metadata-store';

/**
 * A partition's leadership in etcd, as Kafka kept it in ZooKeeper (`/brokers/topics/<t>/partitions/<p>/state`):
 * `partitions/<topic>/<p>` = `{leader, leaderEpoch, isr, controllerEpoch}`. The leader epoch goes up by
 * one with every change of leader and is stored with the data in the log, so replicas can truncate to
 * the epoch boundary (KIP-101); `controllerEpoch` records which controller wrote the state.
 *
 * Every change is a transaction conditioned on the key's mod revision as read (Kafka's zkVersion): the
 * controller's leader elections also compare the controller key's create revision with its epoch, so a
 * deposed controller cannot write; a leader's ISR changes compare only the mod revision, which any
 * leader change moves, so a deposed leader cannot write either. A write that loses the race gets the
 * current state back (`stale`) and decides again from it. After an ambiguous answer the state is read
 * again, never assumed.
 *
 * Decisions are pure functions (`electLeader`, `shrinkIsr`, `expandIsr`), tested without a store:
 * - Leader election, Kafka's offline-partition strategy: the first replica in assignment order that is
 *   alive and in the ISR; the new ISR is the live part of the old one. With none, the partition has no
 *   leader (-1) and keeps its ISR, so the last in-sync replica can lead when it returns. Unclean
 *   election (off by default) would take the first live replica outside the ISR, with an ISR of itself,
 *   losing whatever it had not replicated.
 * - ISR shrink and expand are the leader's, at its leader epoch; the leader never leaves its own ISR, and
 *   only assigned replicas join it.
 *
 * Example: replicas [1, 2, 3], state {leader 1, epoch 4, isr [1, 2, 3]}. Node 1 dies, 2 and 3 live:
 * electLeader → {leader 2, epoch 5, isr [2, 3]}. Then 3 falls behind: shrinkIsr by 2 at epoch 5 →
 * {leader 2, epoch 5, isr [2]}. Node 2 dies too: electLeader → {leader -1, epoch 6, isr [2]}; 3 cannot
 * lead cleanly. 2 returns: electLeader → {leader 2, epoch 7, isr [2]}.
 */

/** Kafka's LeaderAndIsr.NoLeader. */
export const NO_LEADER = -1;

export interface PartitionState {
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly isr: readonly number[];
  readonly controllerEpoch: number;
}

export interface StoredPartitionState {
  readonly state: PartitionState;
  /** The key's mod revision when read: the condition for the next write. */
  readonly modRevision: number;
}

export class InvalidPartitionStateError extends Error {
  constructor(key: string, reason: string) {
    super(`${key}: invalid partition state: ${reason}`);
    this.name = 'InvalidPartitionStateError';
  }
}

function checkTopic(topic: string): void {
  // Kafka's topic rules keep '/' out of a name, so a key names one topic only.
  const problem = topicNameProblem(topic);
  if (problem !== null) throw new RangeError(problem);
}

export function topicKey(clusterId: string, topic: string): string {
  checkTopic(topic);
  return `/${clusterId}/topics/${topic}`;
}

export function partitionKey(clusterId: string, topic: string, partition: number): string {
  if (!Number.isSafeInteger(partition) || partition < 0) {
    throw new RangeError(`partition must be a non-negative integer, got ${partition}`);
  }
  return `${partitionsPrefix(clusterId, topic)}${partition}`;
}

/** The prefix of every partition key of `topic` (and of no other topic's: a name holds no '/'). */
export function partitionsPrefix(clusterId: string, topic: string): string {
  checkTopic(topic);
  return `/${clusterId}/partitions/${topic}/`;
}

/** The JSON value, keys in a fixed order. */
export function encodePartitionState(state: PartitionState): string {
  checkPartitionState(state, 'partition state');
  return JSON.stringify({
    leader: state.leader,
    leaderEpoch: state.leaderEpoch,
    isr: state.isr,
    controllerEpoch: state.controllerEpoch,
  });
}

function isNodeId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function checkPartitionState(state: PartitionState, where: string): void {
  if (!(isNodeId(state.leader) || state.leader === NO_LEADER)) {
    throw new InvalidPartitionStateError(
      where,
      `leader must be a node id or ${NO_LEADER}, got ${state.leader}`,
    );
  }
  if (!isNodeId(state.leaderEpoch)) {
    throw new InvalidPartitionStateError(
      where,
      `leaderEpoch must be a non-negative integer, got ${state.leaderEpoch}`,
    );
  }
  if (!isNodeId(state.controllerEpoch)) {
    throw new InvalidPartitionStateError(
      where,
      `controllerEpoch must be a non-negative integer, got ${state.controllerEpoch}`,
    );
  }
  if (
    !Array.isArray(state.isr) ||
    !state.isr.every(isNodeId) ||
    new Set(state.isr).size !== state.isr.length
  ) {
    throw new InvalidPartitionStateError(
      where,
      `isr must be distinct node ids, got ${JSON.stringify(state.isr)}`,
    );
  }
  if (state.leader !== NO_LEADER && !state.isr.includes(state.leader)) {
    throw new InvalidPartitionStateError(
      where,
      `leader ${state.leader} is not in isr ${JSON.stringify(state.isr)}`,
    );
  }
}

export function decodePartitionState(key: string, value: string): PartitionState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidPartitionStateError(key, 'not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidPartitionStateError(key, 'not an object');
  }
  const { leader, leaderEpoch, isr, controllerEpoch } = parsed as Record<string, unknown>;
  const state = { leader, leaderEpoch, isr, controllerEpoch } as PartitionState;
  checkPartitionState(state, key);
  return {
    leader: state.leader,
    leaderEpoch: state.leaderEpoch,
    isr: [...state.isr],
    controllerEpoch: state.controllerEpoch,
  };
}

function storedState(kv: KeyValue): StoredPartitionState {
  return { state: decodePartitionState(kv.key, kv.value), modRevision: kv.modRevision };
}

// ---- decisions ----

export interface LeaderElectionOptions {
  /** Elect a live replica outside the ISR when none inside is alive, losing its missing records. Off by default. */
  readonly uncleanLeaderElection?: boolean;
  readonly controllerEpoch: number;
}

/**
 * The controller's leader election for a partition whose leader is gone or must change. `replicas` is
 * the assignment, in preference order. Always bumps the leader epoch, even to "no leader": whoever led
 * before must see its epoch fenced.
 */
export function electLeader(
  replicas: readonly number[],
  current: PartitionState,
  isAlive: (nodeId: number) => boolean,
  options: LeaderElectionOptions,
): PartitionState {
  const leaderEpoch = current.leaderEpoch + 1;
  const { controllerEpoch } = options;
  const liveIsr = current.isr.filter(isAlive);
  const clean = replicas.find((replica) => liveIsr.includes(replica));
  if (clean !== undefined) {
    // The ISR keeps its order; replicas no longer alive leave it, and the leader is in it by choice.
    return { leader: clean, leaderEpoch, isr: liveIsr, controllerEpoch };
  }
  if (options.uncleanLeaderElection === true) {
    const unclean = replicas.find(isAlive);
    if (unclean !== undefined) return { leader: unclean, leaderEpoch, isr: [unclean], controllerEpoch };
  }
  // Nobody in sync is alive: no leader, and the ISR stays as it was so its last member can lead again.
  return { leader: NO_LEADER, leaderEpoch, isr: current.isr, controllerEpoch };
}

/** The initial state of a new partition: the first live replica leads, every live replica is in sync. */
export function initialPartitionState(
  replicas: readonly number[],
  isAlive: (nodeId: number) => boolean,
  controllerEpoch: number,
): PartitionState {
  const live = replicas.filter(isAlive);
  return { leader: live.length === 0 ? NO_LEADER : live[0], leaderEpoch: 0, isr: live, controllerEpoch };
}

export type IsrChange =
  | { readonly outcome: 'changed'; readonly state: PartitionState }
  /** Nothing to do: the ISR already is what was asked. */
  | { readonly outcome: 'unchanged' }
  /** The caller is not the leader at `leaderEpoch` (Kafka: FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER). */
  | { readonly outcome: 'notLeader' }
  | { readonly outcome: 'invalid'; readonly reason: string };

/** The leader drops replicas that fell out of sync. */
export function shrinkIsr(
  current: PartitionState,
  leaderId: number,
  leaderEpoch: number,
  outOfSync: readonly number[],
): IsrChange {
  if (current.leader !== leaderId || current.leaderEpoch !== leaderEpoch) return { outcome: 'notLeader' };
  if (outOfSync.includes(leaderId))
    return { outcome: 'invalid', reason: 'the leader cannot leave its own ISR' };
  const isr = current.isr.filter((replica) => !outOfSync.includes(replica));
  if (isr.length === current.isr.length) return { outcome: 'unchanged' };
  return { outcome: 'changed', state: { ...current, isr } };
}

/** The leader adds a replica that caught up. Only assigned replicas may join. */
export function expandIsr(
  current: PartitionState,
  replicas: readonly number[],
  leaderId: number,
  leaderEpoch: number,
  caughtUp: number,
): IsrChange {
  if (current.leader !== leaderId || current.leaderEpoch !== leaderEpoch) return { outcome: 'notLeader' };
  if (!replicas.includes(caughtUp))
    return { outcome: 'invalid', reason: `${caughtUp} is not a replica of the partition` };
  if (current.isr.includes(caughtUp)) return { outcome: 'unchanged' };
  // Assignment order, so the ISR reads the same whichever order replicas caught up in.
  const isr = replicas.filter((replica) => replica === caughtUp || current.isr.includes(replica));
  return { outcome: 'changed', state: { ...current, isr } };
}

// ---- conditional writes ----

export type PartitionWriteResult =
  | { readonly outcome: 'updated'; readonly stored: StoredPartitionState }
  /** The key changed since it was read (or, for a create, exists): decide again from `current`. */
  | { readonly outcome: 'stale'; readonly current: StoredPartitionState | undefined }
  /** A controller write whose epoch is no longer the controller's: nothing was written. */
  | { readonly outcome: 'notController'; readonly currentEpoch: number };

export interface PartitionWrite {
  readonly clusterId: string;
  readonly topic: string;
  readonly partition: number;
  /** The mod revision the decision was made from; 0 to create the key (only if absent). */
  readonly expectedModRevision: number;
  readonly state: PartitionState;
  /** Set for the controller's writes: the epoch it must still hold. Leaders' ISR changes leave it out. */
  readonly controllerEpoch?: number;
}

/** The read of a partition's state, with its mod revision. */
export async function readPartitionState(
  store: MetadataStore,
  clusterId: string,
  topic: string,
  partition: number,
): Promise<StoredPartitionState | undefined> {
  const { kv } = await store.get(partitionKey(clusterId, topic, partition));
  return kv === undefined ? undefined : storedState(kv);
}

/**
 * Writes `write.state` if the key's mod revision is still `expectedModRevision` (or, with 0, the key is
 * absent), and for a controller write, if the controller key's create revision is still its epoch. After
 * an answer that was lost, reads the key: our value at a newer revision means the write applied; anything
 * else is `stale`. If that read fails too, the ambiguous error is rethrown.
 */
export async function writePartitionState(
  store: MetadataStore,
  write: PartitionWrite,
): Promise<PartitionWriteResult> {
  const key = partitionKey(write.clusterId, write.topic, write.partition);
  const value = encodePartitionState(write.state);
  const compare: Compare[] = [];
  const failure: TxnOp[] = [{ type: 'get', key }];
  if (write.controllerEpoch !== undefined) {
    const fence = controllerKey(write.clusterId);
    compare.push({ key: fence, target: 'createRevision', result: 'equal', operand: write.controllerEpoch });
    failure.push({ type: 'get', key: fence });
  }
  compare.push(
    write.expectedModRevision === 0
      ? { key, target: 'createRevision', result: 'equal', operand: 0 }
      : { key, target: 'modRevision', result: 'equal', operand: write.expectedModRevision },
  );
  let response;
  try {
    response = await store.txn({ compare, success: [{ type: 'put', key, value }], failure });
  } catch (error) {
    if (!(error instanceof MetadataStoreError) || !error.isOutcomeUnknown) throw error;
    return resolveAmbiguous(store, key, value, write, error);
  }
  if (response.succeeded) {
    return { outcome: 'updated', stored: { state: write.state, modRevision: response.revision } };
  }
  const [partitionRead, controllerRead] = response.results;
  if (write.controllerEpoch !== undefined) {
    const currentEpoch = controllerRead?.type === 'get' ? (controllerRead.kvs[0]?.createRevision ?? 0) : 0;
    if (currentEpoch !== write.controllerEpoch) return { outcome: 'notController', currentEpoch };
  }
  const kv = partitionRead?.type === 'get' ? partitionRead.kvs[0] : undefined;
  return { outcome: 'stale', current: kv === undefined ? undefined : storedState(kv) };
}

async function resolveAmbiguous(
  store: MetadataStore,
  key: string,
  value: string,
  write: PartitionWrite,
  ambiguous: MetadataStoreError,
): Promise<PartitionWriteResult> {
  let kv: KeyValue | undefined;
  try {
    ({ kv } = await store.get(key));
  } catch {
    throw ambiguous;
  }
  if (kv !== undefined && kv.value === value && kv.modRevision > write.expectedModRevision) {
    return { outcome: 'updated', stored: { state: write.state, modRevision: kv.modRevision } };
  }
  return { outcome: 'stale', current: kv === undefined ? undefined : storedState(kv) };
}
