import { NO_LEADER_ID, type MetadataResponse } from '../log';
import type { Time } from '../time';
import { SystemTimer, TimerTask } from '../timer';

/**
 * How often the cluster panel's view is read again while a page is open, whether or not an event said it
 * changed: it catches what has no event (a topic created on a single node). Never faster than the lag.
 */
export const CLUSTER_BOARD_CHECK_INTERVAL_MS = 1_000;

/** One node as the cluster panel shows it. */
export interface ClusterPanelNode {
  readonly nodeId: number;
  /** Null for a node that replicas name but that is not live (its address is not known). */
  readonly host: string | null;
  readonly port: number | null;
  /** In the node's live set (cluster mode: registered in etcd; single-node mode: this node). */
  readonly isLive: boolean;
  /** The node this page talks to. */
  readonly isLocal: boolean;
  readonly isController: boolean;
  /** Partitions it leads. */
  readonly leaderCount: number;
}

/** One partition as the cluster panel shows it. */
export interface ClusterPanelPartition {
  readonly partition: number;
  /** NO_LEADER_ID (-1) while offline. */
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  /** No leader: nothing can be produced to or fetched from it. */
  readonly isOffline: boolean;
  /** Fewer in-sync replicas than replicas. */
  readonly isUnderReplicated: boolean;
}

export interface ClusterPanelTopic {
  readonly name: string;
  readonly partitions: readonly ClusterPanelPartition[];
}

/** Everything the cluster panel shows, as this node sees the cluster. */
export interface ClusterView {
  /** `single-node` without etcd: this node leads every partition; `cluster` with etcd. */
  readonly mode: 'single-node' | 'cluster';
  readonly localNodeId: number;
  /** The controller this node's view names; NO_LEADER_ID while there is none (and in single-node mode). */
  readonly controllerId: number;
  /** Live nodes, then nodes replicas name that are not live, by id. */
  readonly nodes: readonly ClusterPanelNode[];
  /** Topics by name, the server's own (`__consumer_offsets`) last. */
  readonly topics: readonly ClusterPanelTopic[];
  readonly partitionCount: number;
  readonly offlineCount: number;
  readonly underReplicatedCount: number;
}

/** What a page hears of the cluster: its view, on open and after each change. */
export interface ClusterListener {
  onCluster(view: ClusterView): void;
}

/** Where the panel reads the node's view: its own state, never etcd. */
export interface ClusterBoardSources {
  readonly localNodeId: number;
  /** Metadata of every topic (the ReplicaManager's: live nodes, leaders, epochs, replicas, ISR). */
  readonly metadata: () => Promise<MetadataResponse>;
  /** Cluster mode: the controller the node's last cluster view names. Absent in single-node mode. */
  readonly controllerId?: () => number | undefined;
}

export interface ClusterBoardOptions extends ClusterBoardSources {
  readonly time: Time;
  /** Reading the metadata failed (for the log); the panel keeps its last view. */
  readonly onError?: (error: unknown) => void;
}

/** The board's once-a-second check, re-added after each run. */
class CheckTick extends TimerTask {
  constructor(private readonly check: () => void) {
    super(CLUSTER_BOARD_CHECK_INTERVAL_MS);
  }

  run(): void {
    this.check();
  }
}

const isInternalTopic = (name: string): boolean => name.startsWith('__');

/**
 * The panel's view of one Metadata answer. `controllerId` is undefined in single-node mode; in cluster
 * mode NO_LEADER_ID while the node's view names no controller (or before its first view).
 */
export function clusterViewOf(
  metadata: MetadataResponse,
  localNodeId: number,
  controllerId: number | undefined,
): ClusterView {
  const leaderCounts = new Map<number, number>();
  const named = new Set<number>();
  let partitionCount = 0;
  let offlineCount = 0;
  let underReplicatedCount = 0;
  const topics: ClusterPanelTopic[] = [];
  for (const topic of metadata.topics) {
    if (topic.partitions.length === 0) continue;
    const partitions = topic.partitions.map((p): ClusterPanelPartition => {
      const isOffline = p.leaderId < 0;
      const isUnderReplicated = p.isrNodes.length < p.replicaNodes.length;
      partitionCount++;
      if (isOffline) offlineCount++;
      else leaderCounts.set(p.leaderId, (leaderCounts.get(p.leaderId) ?? 0) + 1);
      if (isUnderReplicated) underReplicatedCount++;
      for (const id of p.replicaNodes) named.add(id);
      return {
        partition: p.partitionIndex,
        leaderId: isOffline ? NO_LEADER_ID : p.leaderId,
        leaderEpoch: p.leaderEpoch,
        replicas: [...p.replicaNodes],
        isr: [...p.isrNodes],
        isOffline,
        isUnderReplicated,
      };
    });
    partitions.sort((a, b) => a.partition - b.partition);
    topics.push({ name: topic.name, partitions });
  }
  topics.sort((a, b) => {
    const internal = Number(isInternalTopic(a.name)) - Number(isInternalTopic(b.name));
    if (internal !== 0) return internal;
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
  const controller = controllerId ?? NO_LEADER_ID;
  const nodeOf = (nodeId: number, host: string | null, port: number | null): ClusterPanelNode => ({
    nodeId,
    host,
    port,
    isLive: host !== null,
    isLocal: nodeId === localNodeId,
    isController: nodeId === controller,
    leaderCount: leaderCounts.get(nodeId) ?? 0,
  });
  const live = [...metadata.brokers].sort((a, b) => a.nodeId - b.nodeId);
  const liveIds = new Set(live.map((b) => b.nodeId));
  const nodes = live.map((b) => nodeOf(b.nodeId, b.host, b.port));
  for (const id of [...named].sort((a, b) => a - b)) {
    if (!liveIds.has(id)) nodes.push(nodeOf(id, null, null));
  }
  return {
    mode: controllerId === undefined ? 'single-node' : 'cluster',
    localNodeId,
    controllerId: controller,
    nodes,
    topics,
    partitionCount,
    offlineCount,
    underReplicatedCount,
  };
}

/**
 * The live page's model of the cluster (its Cluster panel): nodes, the controller, and every partition's
 * leader, leader epoch, replicas and ISR, as this node sees them: its ReplicaManager's Metadata and, in
 * cluster mode, the controller its last cluster view names. Nothing is read from etcd: a page costs the
 * metadata store nothing.
 *
 * `changed()` is what the server calls when the view may have moved (a cluster view applied, the
 * session lost, an ISR change of this leader's). It only marks the view and schedules one read for the
 * next event-loop turn, so the log and the coordinator never wait on a page, and a burst of changes in a
 * turn costs one read. While a page is open the view is also read once a second (a topic created on a
 * single node has no event). A read whose view is the same as the last sends nothing; otherwise every
 * page gets the same view object (serialized once for all, page-stream.ts). Before any page opened,
 * nothing is read.
 */
export class ClusterBoard {
  private readonly listeners = new Set<ClusterListener>();
  /** Pages opened since the last read: they get its view even if it did not change. */
  private readonly waiting = new Set<ClusterListener>();
  private view: ClusterView | undefined;
  private signature = '';
  /** A change came since the last read (or no read yet). */
  private isStale = true;
  private isReadScheduled = false;
  private timer: SystemTimer | undefined;
  private readonly tick: TimerTask;
  private isClosed = false;

  constructor(private readonly options: ClusterBoardOptions) {
    this.tick = new CheckTick(() => this.onTick());
  }

  /**
   * Adds a page: it is handed the current view (at once if nothing changed since the last read, else
   * after the next read), then every change until the function returned is called. Undefined once closed.
   */
  open(listener: ClusterListener): (() => void) | undefined {
    if (this.isClosed) return undefined;
    if (this.timer === undefined) {
      this.timer = new SystemTimer({ name: 'admin-page-cluster', time: this.options.time });
      this.timer.add(this.tick);
    }
    this.listeners.add(listener);
    if (this.view !== undefined && !this.isStale) listener.onCluster(this.view);
    else {
      this.waiting.add(listener);
      this.scheduleRead();
    }
    return () => {
      this.listeners.delete(listener);
      this.waiting.delete(listener);
    };
  }

  /** The view may have changed: read it on the next turn if a page is open. Cheap, never waits. */
  changed(): void {
    this.isStale = true;
    if (this.listeners.size > 0) this.scheduleRead();
  }

  /** Stops the check and forgets the pages. Idempotent. */
  close(): void {
    this.isClosed = true;
    this.timer?.shutdown();
    this.timer = undefined;
    this.listeners.clear();
    this.waiting.clear();
  }

  private onTick(): void {
    if (this.isClosed) return;
    if (this.listeners.size > 0) this.scheduleRead();
    this.timer?.add(this.tick);
  }

  private scheduleRead(): void {
    if (this.isReadScheduled || this.isClosed) return;
    this.isReadScheduled = true;
    setImmediate(() => void this.read());
  }

  private async read(): Promise<void> {
    this.isReadScheduled = false;
    this.isStale = false;
    let view: ClusterView;
    try {
      const metadata = await this.options.metadata();
      const controller = this.options.controllerId;
      view = clusterViewOf(
        metadata,
        this.options.localNodeId,
        controller === undefined ? undefined : (controller() ?? NO_LEADER_ID),
      );
    } catch (error) {
      this.options.onError?.(error);
      return;
    }
    if (this.isClosed) return;
    const signature = JSON.stringify(view);
    const isChanged = signature !== this.signature;
    if (isChanged) {
      this.signature = signature;
      this.view = view;
    }
    const current = this.view!;
    const to = isChanged ? this.listeners : this.waiting;
    for (const listener of [...to]) listener.onCluster(current);
    this.waiting.clear();
  }
}
