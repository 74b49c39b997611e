import type { FollowerReplicas } from './follower-replicas';
import type { LeaderEndpoint } from './leader-endpoint';
import type { ClusterNodeAddress } from './partition-roles';
import { ReplicaFetcher } from './replica-fetcher';
import type { LeaderLinkStatus, ReplicaFetcherOptions } from './replica-fetcher';

/**
 * How this node reaches another: the server implements it over grpc-js (BrokerLeaderEndpoint, with the
 * node-to-node credentials), tests with in-memory leaders. Called once per fetcher.
 */
export type LeaderEndpointFactory = (leader: ClusterNodeAddress) => LeaderEndpoint;

/** A fetcher and the address it was made for. */
interface FetcherEntry {
  readonly host: string;
  readonly port: number;
  readonly fetcher: ReplicaFetcher;
}

/**
 * Cluster mode: one ReplicaFetcher per leader node this node follows partitions of (Kafka's
 * ReplicaFetcherManager, with one fetcher thread per source broker). After every cluster update
 * (`update`) a fetcher is started for each leader that leads some local follower and is live, stopped for
 * a leader that leads none any more or is gone, and replaced when the leader's address changed; the
 * others are woken, so partitions that just became followers (or saw a newer epoch) are fetched without
 * waiting out an idle interval. Each fetcher asks the follower replicas (PartitionFetchStates) for its
 * leader's partitions every round.
 */
export class ReplicaFetcherManager {
  private readonly fetchers = new Map<number, FetcherEntry>();
  private readonly stopping = new Set<Promise<void>>();
  private isShutdown = false;

  constructor(
    private readonly nodeId: number,
    private readonly followers: FollowerReplicas,
    private readonly createEndpoint: LeaderEndpointFactory,
    private readonly options: Omit<ReplicaFetcherOptions, 'leaderId'>,
  ) {}

  /** Fetchers to match the leaders this node's followers follow, at `liveNodes`' addresses. */
  update(liveNodes: readonly ClusterNodeAddress[]): void {
    if (this.isShutdown) return;
    const leaders = this.followers.followedLeaders();
    const addresses = new Map(liveNodes.map((node) => [node.nodeId, node]));
    for (const [leaderId, entry] of this.fetchers) {
      const node = addresses.get(leaderId);
      if (
        leaders.has(leaderId) &&
        node !== undefined &&
        node.host === entry.host &&
        node.port === entry.port
      ) {
        entry.fetcher.wake();
        continue;
      }
      this.fetchers.delete(leaderId);
      this.stop(entry.fetcher);
    }
    for (const leaderId of leaders) {
      if (leaderId === this.nodeId || this.fetchers.has(leaderId)) continue;
      // A leader that is not live cannot be fetched from; the next update that lists it starts one.
      const node = addresses.get(leaderId);
      if (node === undefined) continue;
      const fetcher = new ReplicaFetcher(this.nodeId, this.followers, this.createEndpoint(node), {
        ...this.options,
        leaderId,
      });
      this.fetchers.set(leaderId, { host: node.host, port: node.port, fetcher });
      fetcher.start();
    }
  }

  /** The fetcher copying from `leaderId`, if any (status, metrics, tests). */
  fetcherFor(leaderId: number): ReplicaFetcher | undefined {
    return this.fetchers.get(leaderId)?.fetcher;
  }

  /** How the link to each leader fetched from now stands (metrics). */
  leaderLinks(): { leaderId: number; status: LeaderLinkStatus }[] {
    return [...this.fetchers].map(([leaderId, entry]) => ({ leaderId, status: entry.fetcher.leaderStatus }));
  }

  /** The leaders fetched from now. */
  leaderIds(): number[] {
    return [...this.fetchers.keys()];
  }

  /** Stops every fetcher (the calls in flight are aborted) and waits for them. Idempotent. */
  async shutdown(): Promise<void> {
    this.isShutdown = true;
    for (const entry of this.fetchers.values()) this.stop(entry.fetcher);
    this.fetchers.clear();
    await Promise.all(this.stopping);
  }

  private stop(fetcher: ReplicaFetcher): void {
    const stopped = fetcher.stop().finally(() => this.stopping.delete(stopped));
    this.stopping.add(stopped);
  }
}
