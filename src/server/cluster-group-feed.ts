import { credentials as channelCredentials, makeClientConstructor, Metadata } from '@grpc/grpc-js';
import type { ChannelCredentials, Client, ClientReadableStream } from '@grpc/grpc-js';
import type { ErrorCode } from '../errors';
import type { GroupChange } from '../group';
import type { BrokerNode } from '../log/broker-protocol';
import type { GroupEventReason } from '../protocol/group-event-reason';
import type { DescribedGroup } from '../protocol/group-messages';
import type { Time } from '../time';
import { SystemTimer, TimerTask } from '../timer';
import type { RemoteGroupListener } from '../live/group-board';
import { loadCohortProtos } from './load-protos';

/** How long after a node's watch ended it is opened again, while the node is still live. */
export const FEED_REOPEN_DELAY_MS = 1_000;

/** A GroupEvent as proto-loader decodes it (load-protos.ts: int64 as decimal strings). */
interface GroupEventWire {
  group: {
    errorCode: number;
    errorMessage: string;
    groupId: string;
    groupState: string;
    protocolType: string;
    protocolData: string;
    members: {
      memberId: string;
      groupInstanceId: string;
      clientId: string;
      clientHost: string;
      memberMetadata: Buffer;
      memberAssignment: Buffer;
      lastHeartbeatMs: string;
    }[];
    generationId: number;
  } | null;
  reason: string;
  timestampMs: string;
  isSnapshot: boolean;
}

/** The change a GroupEvent tells of, as the local coordinator would have told it (GroupChange). */
export function groupChangeOf(wire: GroupEventWire): GroupChange | undefined {
  const g = wire.group;
  if (g === null) return undefined;
  const group: DescribedGroup = {
    errorCode: g.errorCode as ErrorCode,
    errorMessage: g.errorMessage,
    groupId: g.groupId,
    groupState: g.groupState,
    protocolType: g.protocolType,
    protocolData: g.protocolData,
    members: g.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      memberMetadata: m.memberMetadata,
      memberAssignment: m.memberAssignment,
      lastHeartbeatMs: Number(m.lastHeartbeatMs),
    })),
    generationId: g.generationId,
  };
  return {
    group,
    reason: wire.reason as GroupEventReason,
    timestampMs: Number(wire.timestampMs),
    isSnapshot: wire.isSnapshot,
  };
}

export interface ClusterGroupFeedOptions {
  readonly localNodeId: number;
  /** The live nodes of this node's last cluster view (its Metadata's brokers), this one included. */
  readonly liveNodes: () => readonly BrokerNode[];
  /** How to reach the other nodes: plaintext unless the cluster runs TLS (ServerSecurity.leaderCredentials). */
  readonly credentials?: ChannelCredentials;
  /** The cluster's bearer token, when calls need one. */
  readonly token?: string;
  /** The machine's clock: when a watch that ended is opened again. */
  readonly time: Time;
  /** A node's watch ended with an error (for the log, at debug: its node may just have died). */
  readonly onWatchEnded?: (nodeId: number, error: Error | undefined) => void;
}

/** One node's WatchGroups call. */
interface NodeWatch {
  readonly nodeId: number;
  readonly target: string;
  readonly client: Client;
  call: ClientReadableStream<GroupEventWire> | undefined;
  /** Told of at least one change since it opened: its end is a node lost. */
  isHeard: boolean;
  reopen: TimerTask | undefined;
}

class ReopenTask extends TimerTask {
  constructor(private readonly action: () => void) {
    super(FEED_REOPEN_DELAY_MS);
  }

  run(): void {
    this.action();
  }
}

const targetOf = (node: BrokerNode): string =>
  node.host.includes(':') ? `[${node.host}]:${node.port}` : `${node.host}:${node.port}`;

/**
 * Cluster mode: the groups the other nodes coordinate, for this node's live page (GroupBoard), so that any
 * node's page shows every group of the cluster, with its coordinator. A node's coordinator tells only of the
 * groups of the `__consumer_offsets` partitions it leads, so the feed opens one `WatchGroups` of every group
 * (docs/protocol.md, "Watching groups") on each other live node of this node's cluster view, and passes each
 * event on with the node it came from. When a partition moves, its old leader says `group-unloaded` (or its
 * watch ends, if it died) and the new leader's watch brings the group (`group-loaded`): the board follows
 * the group from one node to the other. A watch that ends is told (`onNodeLost`) and opened again a second
 * later while the node is in the view; a node that leaves the view has its watch cancelled.
 *
 * Nothing runs before the board subscribes (the first page, or the server's start when it keeps history),
 * and it costs each other node one watch, as one `cohort groups watch` of every group would.
 */
export class ClusterGroupFeed {
  private readonly watches = new Map<number, NodeWatch>();
  private listener: RemoteGroupListener | undefined;
  private timer: SystemTimer | undefined;

  constructor(private readonly options: ClusterGroupFeedOptions) {}

  /** Starts watching every other live node for `listener` (one listener); returns its unsubscribe. */
  subscribe(listener: RemoteGroupListener): () => void {
    this.close();
    this.listener = listener;
    this.timer = new SystemTimer({ name: 'admin-page-feed', time: this.options.time });
    this.sync();
    return () => {
      if (this.listener === listener) this.close();
    };
  }

  /** The cluster view changed: watch the nodes that joined, stop watching those that left. Cheap. */
  sync(): void {
    if (this.listener === undefined) return;
    const wanted = new Map<number, string>();
    for (const node of this.options.liveNodes())
      if (node.nodeId !== this.options.localNodeId) wanted.set(node.nodeId, targetOf(node));
    for (const watch of [...this.watches.values()]) {
      if (wanted.get(watch.nodeId) === watch.target) continue;
      this.stop(watch);
      this.listener.onNodeLost(watch.nodeId);
    }
    for (const [nodeId, target] of wanted) if (!this.watches.has(nodeId)) this.start(nodeId, target);
  }

  /** Cancels every watch. Idempotent. */
  close(): void {
    this.listener = undefined;
    for (const watch of [...this.watches.values()]) this.stop(watch);
    this.timer?.shutdown();
    this.timer = undefined;
  }

  private start(nodeId: number, target: string): void {
    const GroupCoordinator = makeClientConstructor(
      loadCohortProtos().groupCoordinator,
      'cohort.v1.GroupCoordinator',
    );
    const client = new GroupCoordinator(
      target,
      this.options.credentials ?? channelCredentials.createInsecure(),
      {
        // A node that comes back is found about as fast as the watch is opened again.
        'grpc.initial_reconnect_backoff_ms': 100,
        'grpc.max_reconnect_backoff_ms': FEED_REOPEN_DELAY_MS,
      },
    );
    const watch: NodeWatch = { nodeId, target, client, call: undefined, isHeard: false, reopen: undefined };
    this.watches.set(nodeId, watch);
    this.open(watch);
  }

  private open(watch: NodeWatch): void {
    watch.reopen = undefined;
    if (this.watches.get(watch.nodeId) !== watch || this.listener === undefined) return;
    const metadata = new Metadata();
    if (this.options.token !== undefined) metadata.set('authorization', `Bearer ${this.options.token}`);
    const method = (watch.client as unknown as Record<string, (r: unknown, m: Metadata) => unknown>)
      .WatchGroups!;
    const call = method.call(
      watch.client,
      { groupIds: [] },
      metadata,
    ) as ClientReadableStream<GroupEventWire>;
    watch.call = call;
    watch.isHeard = false;
    call.on('data', (event: GroupEventWire) => {
      if (watch.call !== call) return;
      const change = groupChangeOf(event);
      if (change === undefined) return;
      watch.isHeard = true;
      this.listener?.onChange(watch.nodeId, change);
    });
    let isEnded = false;
    const onEnd = (error: Error | undefined): void => {
      if (isEnded || watch.call !== call) return;
      isEnded = true;
      watch.call = undefined;
      this.options.onWatchEnded?.(watch.nodeId, error);
      if (watch.isHeard) this.listener?.onNodeLost(watch.nodeId);
      if (this.listener === undefined || this.timer === undefined) return;
      watch.reopen = new ReopenTask(() => this.open(watch));
      this.timer.add(watch.reopen);
    };
    call.on('error', (error: Error) => onEnd(error));
    call.on('end', () => onEnd(undefined));
  }

  private stop(watch: NodeWatch): void {
    this.watches.delete(watch.nodeId);
    watch.reopen?.cancel();
    watch.reopen = undefined;
    const call = watch.call;
    watch.call = undefined;
    if (call !== undefined) {
      call.on('error', () => undefined);
      call.cancel();
    }
    watch.client.close();
  }
}
