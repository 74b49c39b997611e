import type { KeyValue, MetadataStore, WatchEvent } from './metadata-store';
import { clusterIdentityKey, decodeClusterIdentity } from './cluster-identity';
import { controllerKey } from './controller-election';
import {
  decodePartitionState,
  InvalidPartitionStateError,
  type StoredPartitionState,
} from './partition-state';
import {
  decodeReplicaAssignment,
  InvalidReplicaAssignmentError,
  type ReplicaAssignment,
} from './replica-assignment';

/**
 * The cluster's metadata as one node holds it in memory, built from etcd's keys under `/<cluster-id>/`
 * (Kafka's ControllerContext on the controller, its MetadataCache on every broker): the live nodes and
 * their advertised addresses (`nodes/<id>`), the controller (`controller`), every topic's replica
 * assignment (`topics/<name>`) and every partition's state with its mod revision
 * (`partitions/<topic>/<p>`).
 *
 * The controller and every node's metadata view build it the same way: `readClusterState` reads all of
 * it in one transaction (one revision), then each batch of watch events from the next revision is
 * applied with `applyEvents`, so nothing between the read and the watch is missed. A key that does not
 * decode is reported and left out: nothing is decided from it.
 */
export class ClusterState {
  /** Live node id → its advertised address (`host:port`). */
  readonly liveNodes = new Map<number, string>();
  /**
   * Live node id → the revision of its current registration: the mod revision of `nodes/<id>`, which
   * only a registration writes (Kafka's broker epoch). A node whose registration is newer than a
   * partition state has restarted since that state was decided.
   */
  readonly registrations = new Map<number, number>();
  readonly topics = new Map<string, ReplicaAssignment>();
  /** `topic/partition` → its state and mod revision. */
  readonly partitions = new Map<string, StoredPartitionState>();
  /** The controller key as last read: its node id and epoch (create revision), undefined while absent. */
  controller: { readonly nodeId: number | undefined; readonly epoch: number } | undefined;
  /**
   * The cluster's uuid as `cluster` names it (its raw value when that is not an identity), undefined while
   * the key is absent: an etcd that lost its data has none (`cluster-identity.ts`).
   */
  identity: string | undefined;
  private readonly prefix: string;

  constructor(
    clusterId: string,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {
    this.prefix = `/${clusterId}/`;
  }

  isAlive(nodeId: number): boolean {
    return this.liveNodes.has(nodeId);
  }

  /** Whether `nodeId` registered (again) after `revision`: a state of that revision predates it. */
  hasRegisteredSince(nodeId: number, revision: number): boolean {
    return (this.registrations.get(nodeId) ?? 0) > revision;
  }

  applyEvents(events: readonly WatchEvent[]): void {
    for (const event of events) {
      if (event.type === 'put') this.applyPut(event.kv);
      else this.applyDelete(event.kv);
    }
  }

  applyPut(kv: KeyValue): void {
    try {
      this.applyValidPut(kv);
    } catch (error) {
      if (!(error instanceof InvalidPartitionStateError || error instanceof InvalidReplicaAssignmentError)) {
        throw error;
      }
      this.onError(error);
    }
  }

  applyDelete(kv: KeyValue): void {
    const rest = kv.key.slice(this.prefix.length);
    if (rest === 'controller') this.controller = undefined;
    else if (rest === 'cluster') this.identity = undefined;
    else if (rest.startsWith('nodes/')) {
      const id = Number(rest.slice('nodes/'.length));
      this.liveNodes.delete(id);
      this.registrations.delete(id);
    } else if (rest.startsWith('topics/')) this.topics.delete(rest.slice('topics/'.length));
    else if (rest.startsWith('partitions/')) this.partitions.delete(rest.slice('partitions/'.length));
  }

  private applyValidPut(kv: KeyValue): void {
    const rest = kv.key.slice(this.prefix.length);
    if (rest === 'controller') {
      this.controller = { nodeId: parseControllerNodeId(kv.value), epoch: kv.createRevision };
    } else if (rest === 'cluster') {
      this.identity = decodeClusterIdentity(kv.value) ?? kv.value;
    } else if (rest.startsWith('nodes/')) {
      const id = Number(rest.slice('nodes/'.length));
      if (Number.isSafeInteger(id) && id >= 0) {
        this.liveNodes.set(id, kv.value);
        this.registrations.set(id, kv.modRevision);
      }
    } else if (rest.startsWith('topics/')) {
      this.topics.set(rest.slice('topics/'.length), decodeReplicaAssignment(kv.key, kv.value));
    } else if (rest.startsWith('partitions/')) {
      const name = rest.slice('partitions/'.length);
      const known = this.partitions.get(name);
      // Our own write may have reached the state before its watch event; an older event changes nothing.
      if (known !== undefined && known.modRevision > kv.modRevision) return;
      this.partitions.set(name, {
        state: decodePartitionState(kv.key, kv.value),
        modRevision: kv.modRevision,
      });
    }
  }
}

function parseControllerNodeId(value: string): number | undefined {
  try {
    const parsed = JSON.parse(value) as { nodeId?: unknown } | null;
    return typeof parsed?.nodeId === 'number' ? parsed.nodeId : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads `cluster`, `nodes/`, `controller`, `topics/` and `partitions/` in one transaction: one revision, so the
 * caller watches from `revision + 1` and misses nothing. Rejects with the store's error (a read: no
 * effect).
 */
export async function readClusterState(
  store: MetadataStore,
  clusterId: string,
  onError?: (error: unknown) => void,
): Promise<{ readonly state: ClusterState; readonly revision: number }> {
  const prefix = `/${clusterId}/`;
  const response = await store.txn({
    compare: [],
    success: [
      { type: 'get', key: clusterIdentityKey(clusterId) },
      { type: 'get', key: `${prefix}nodes/`, prefix: true },
      { type: 'get', key: controllerKey(clusterId) },
      { type: 'get', key: `${prefix}topics/`, prefix: true },
      { type: 'get', key: `${prefix}partitions/`, prefix: true },
    ],
  });
  const state = new ClusterState(clusterId, onError);
  for (const result of response.results) {
    if (result.type !== 'get') continue;
    for (const kv of result.kvs) state.applyPut(kv);
  }
  return { state, revision: response.revision };
}
