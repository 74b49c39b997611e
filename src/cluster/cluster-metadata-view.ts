import { EventEmitter } from 'node:events';
import type { ClusterMetadataUpdate, ClusterNodeAddress, PartitionLeadership } from '../log/partition-roles';
import { NO_LEADER_ID } from '../log/partition-roles';
import { TimerAction, type Timer } from '../timer';
import { ClusterIdentityError } from './cluster-identity';
import { readClusterState, type ClusterState } from './cluster-state';
import type { MetadataStore, MetadataWatch, WatchEvent } from './metadata-store';
import type { StoredPartitionState } from './partition-state';

/**
 * Every node's view of the cluster (Kafka's ZooKeeper-era MetadataCache, which each broker kept from the
 * controller's UpdateMetadata requests; here each node reads etcd itself): `nodes/`, `controller`,
 * `topics/` and `partitions/` read in one transaction, then the cluster's prefix watched from the next
 * revision, as the controller does (`readClusterState`, `ClusterState`). After the read and after every
 * batch of watch events, the view emits one complete `ClusterMetadataUpdate`: every live node, the
 * controller, every partition whose state exists, with its mod revision as `partitionEpoch`.
 *
 * - Coalesced: changes arriving together produce one update, built on a microtask after the first of
 *   them; the log layer applies by difference, so nothing depends on seeing each intermediate state.
 * - A watch that is cancelled (the history compacted, or the stream failed) makes the view read
 *   everything again, then watch from the new read's revision + 1.
 * - etcd unreachable: the view keeps its last update (the data path must not notice a short outage:
 *   etcd is not on it), and retries the read on the timer, the wait doubling from `retryBackoffMs` up
 *   to `maxRetryBackoffMs`.
 * - `resync()` drops what is in flight and reads again: an update emitted after it comes from a read
 *   that started after the call (a node whose new session registered needs a view at least that new).
 *
 * A topic is left out of the update until every partition of its assignment has a state. A topic is
 * created by writing its assignment first and its states after it, in slices of 127 (etcd's limit on a
 * transaction), possibly by a controller that dies halfway and its successor: in between, no node shows
 * the topic with fewer partitions than it has.
 *
 * With `clusterUuid`, a read or a watched change that finds etcd's cluster identity missing or another
 * cluster's (`cluster-identity.ts`: etcd lost its data, or is another cluster's) is not applied: the view
 * keeps its last update, reports ClusterIdentityError and reads again with the same backoff as when etcd
 * cannot be reached. An empty etcd must not make every topic vanish from the node.
 */
export interface ClusterMetadataViewOptions {
  readonly store: MetadataStore;
  readonly timer: Timer;
  readonly clusterId: string;
  /** The cluster's uuid every read must find in etcd; unchecked when absent (unit tests of the view alone). */
  readonly clusterUuid?: string;
  /** First wait before reading again after a failed read; 500 ms by default. */
  readonly retryBackoffMs?: number;
  /** The wait doubles after each failure up to this; 8,000 ms by default. */
  readonly maxRetryBackoffMs?: number;
  /** Told of failures the view recovers from by reading again (the server logs them). */
  readonly onError?: (error: unknown) => void;
}

export interface ClusterMetadataViewEvents {
  /** A complete view, at `revision` (the last etcd revision it reflects). */
  update: [ClusterMetadataUpdate, { readonly revision: number }];
}

export class ClusterMetadataView extends EventEmitter<ClusterMetadataViewEvents> {
  private readonly store: MetadataStore;
  private readonly timer: Timer;
  private readonly clusterId: string;
  private readonly clusterUuid: string | undefined;
  private readonly retryBackoffMs: number;
  private readonly maxRetryBackoffMs: number;
  private readonly onError: (error: unknown) => void;
  private cluster: ClusterState | undefined;
  private lastUpdate: ClusterMetadataUpdate | undefined;
  /** The partitions of the last update by `topic/p`, reused while unchanged. */
  private readonly leaderships = new Map<string, PartitionLeadership>();
  private atRevision = 0;
  private watch: MetadataWatch | undefined;
  /** Bumped by every read and by close: answers and events of an older read are ignored. */
  private generation = 0;
  private nextBackoffMs: number;
  private isUpdateScheduled = false;
  private isStarted = false;
  private isClosed = false;
  private readonly retryTask: TimerAction;

  constructor(options: ClusterMetadataViewOptions) {
    super();
    this.store = options.store;
    this.timer = options.timer;
    this.clusterId = options.clusterId;
    this.clusterUuid = options.clusterUuid;
    this.retryBackoffMs = options.retryBackoffMs ?? 500;
    this.maxRetryBackoffMs = options.maxRetryBackoffMs ?? 8_000;
    this.onError = options.onError ?? (() => undefined);
    this.nextBackoffMs = this.retryBackoffMs;
    this.retryTask = new TimerAction(() => this.read());
  }

  start(): void {
    if (this.isStarted) throw new Error('ClusterMetadataView.start: already started');
    this.isStarted = true;
    this.read();
  }

  /** Reads everything again now; what was in flight is dropped. */
  resync(): void {
    if (!this.isStarted || this.isClosed) return;
    this.read();
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.generation++;
    this.retryTask.cancel();
    this.watch?.cancel();
    this.watch = undefined;
  }

  /** The last update emitted, or undefined before the first read completed. */
  get current(): ClusterMetadataUpdate | undefined {
    return this.lastUpdate;
  }

  /** The cluster as last read and watched (undefined before the first read); not to be changed. */
  get state(): ClusterState | undefined {
    return this.cluster;
  }

  /** The etcd revision the view reflects (0 before the first read). */
  get revision(): number {
    return this.atRevision;
  }

  private read(): void {
    if (this.isClosed) return;
    const generation = ++this.generation;
    this.retryTask.cancel();
    this.watch?.cancel();
    this.watch = undefined;
    readClusterState(this.store, this.clusterId, this.onError).then(
      ({ state, revision }) => {
        if (generation !== this.generation) return;
        const identityProblem = this.identityProblem(state);
        if (identityProblem !== undefined) {
          this.retryLater(identityProblem);
          return;
        }
        this.nextBackoffMs = this.retryBackoffMs;
        this.cluster = state;
        this.atRevision = revision;
        this.watchFrom(revision + 1, generation);
        this.scheduleUpdate(generation);
      },
      (error: unknown) => {
        if (generation !== this.generation) return;
        // Unreachable: keep the last view (the log layer goes on with it) and try again later.
        this.retryLater(error);
      },
    );
  }

  private retryLater(error: unknown): void {
    this.onError(error);
    this.retryTask.delayMs = this.nextBackoffMs;
    this.nextBackoffMs = Math.min(this.nextBackoffMs * 2, this.maxRetryBackoffMs);
    this.timer.add(this.retryTask);
  }

  /** ClusterIdentityError when `state` does not hold this cluster's identity; undefined when it does. */
  private identityProblem(state: ClusterState): ClusterIdentityError | undefined {
    if (this.clusterUuid === undefined || state.identity === this.clusterUuid) return undefined;
    return new ClusterIdentityError(this.clusterId, this.clusterUuid, state.identity);
  }

  private watchFrom(startRevision: number, generation: number): void {
    this.watch = this.store.watch(
      `/${this.clusterId}/`,
      { prefix: true, startRevision },
      {
        onEvents: (events: readonly WatchEvent[]) => {
          if (generation !== this.generation || this.cluster === undefined) return;
          this.cluster.applyEvents(events);
          for (const event of events) this.atRevision = Math.max(this.atRevision, event.kv.modRevision);
          const identityProblem = this.identityProblem(this.cluster);
          if (identityProblem !== undefined) {
            // The identity went (or changed) under the watch: apply nothing more; read again later.
            this.generation++;
            this.watch?.cancel();
            this.watch = undefined;
            this.retryLater(identityProblem);
            return;
          }
          this.scheduleUpdate(generation);
        },
        onCancelled: (reason) => {
          if (generation !== this.generation) return;
          // Compacted or failed: changes may have been missed; read everything again.
          if (reason.error !== undefined) this.onError(reason.error);
          this.watch = undefined;
          this.read();
        },
      },
    );
  }

  private scheduleUpdate(generation: number): void {
    if (this.isUpdateScheduled) return;
    this.isUpdateScheduled = true;
    queueMicrotask(() => {
      this.isUpdateScheduled = false;
      if (generation !== this.generation || this.cluster === undefined) return;
      const update = toClusterMetadataUpdate(this.cluster, this.onError, this.leaderships);
      this.lastUpdate = update;
      this.emit('update', update, { revision: this.atRevision });
    });
  }
}

/** `host:port` (a bracketed IPv6 host too) → its parts; undefined when it is not one. */
export function parseAdvertisedAddress(address: string): { host: string; port: number } | undefined {
  const colon = address.lastIndexOf(':');
  if (colon <= 0) return undefined;
  let host = address.slice(0, colon);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const portText = address.slice(colon + 1);
  const port = Number(portText);
  if (host === '' || !/^\d+$/.test(portText) || port < 1 || port > 65_535) return undefined;
  return { host, port };
}

/**
 * A complete update from the cluster state: live nodes by id, partitions by topic then index. With a
 * `cache` (`topic/p` → the partition as last built), a partition unchanged since (same partition epoch,
 * same replicas) keeps its object, so a batch that changed one partition of 10,000 builds one, and the
 * log layer may compare by identity.
 */
export function toClusterMetadataUpdate(
  cluster: ClusterState,
  onError: (error: unknown) => void = () => undefined,
  cache: Map<string, PartitionLeadership> = new Map(),
): ClusterMetadataUpdate {
  const liveNodes: ClusterNodeAddress[] = [];
  for (const nodeId of [...cluster.liveNodes.keys()].sort((a, b) => a - b)) {
    const address = cluster.liveNodes.get(nodeId)!;
    const parsed = parseAdvertisedAddress(address);
    if (parsed === undefined) {
      onError(new Error(`nodes/${nodeId}: advertised address ${JSON.stringify(address)} is not HOST:PORT`));
      continue;
    }
    liveNodes.push({ nodeId, ...parsed });
  }
  const partitions: PartitionLeadership[] = [];
  for (const topic of [...cluster.topics.keys()].sort()) {
    const assignment = cluster.topics.get(topic)!;
    // A topic is in the update only once every partition of its assignment has a state: a node that
    // creates a topic writes its assignment first and the controller the partitions' states after, and a
    // view between the two must not show a topic of fewer partitions than it has (a group's partition is
    // its hash modulo the count, and a replica set grown one partition at a time is not the topic's).
    if (!assignment.partitions.every((_, i) => cluster.partitions.has(`${topic}/${i}`))) continue;
    assignment.partitions.forEach((replicas, partitionIndex) => {
      const name = `${topic}/${partitionIndex}`;
      const stored = cluster.partitions.get(name)!;
      let leadership = cache.get(name);
      if (
        leadership?.partitionEpoch !== stored.modRevision ||
        leadership.replicas !== replicas ||
        leadership.topicId !== assignment.topicId
      ) {
        leadership = toPartitionLeadership(topic, partitionIndex, replicas, stored, assignment.topicId);
        cache.set(name, leadership);
      }
      partitions.push(leadership);
    });
  }
  if (cache.size > partitions.length) {
    // Partitions went (a topic deleted): forget them.
    cache.clear();
    for (const p of partitions) cache.set(`${p.topic}/${p.partitionIndex}`, p);
  }
  return { liveNodes, controllerId: cluster.controller?.nodeId ?? NO_LEADER_ID, partitions };
}

/** A partition's stored state as the log layer sees it: its mod revision is the partition epoch. */
export function toPartitionLeadership(
  topic: string,
  partitionIndex: number,
  replicas: readonly number[],
  stored: StoredPartitionState,
  topicId?: string,
): PartitionLeadership {
  return {
    topic,
    ...(topicId === undefined ? {} : { topicId }),
    partitionIndex,
    replicas,
    leader: stored.state.leader,
    leaderEpoch: stored.state.leaderEpoch,
    isr: stored.state.isr,
    partitionEpoch: stored.modRevision,
  };
}
