import { ErrorCode } from '../errors';
import type { Time } from '../time';
import type { MetadataResponse } from './broker-messages';
import { ExponentialBackoff } from './exponential-backoff';
import { nodeAddress } from './node-address';

/** Where one partition is led: the node to send its Produce, Fetch and ListOffsets to, and at what epoch. */
export interface PartitionLeader {
  readonly nodeId: number;
  /** Undefined when the leader is not among the brokers Metadata listed. */
  readonly address: string | undefined;
  readonly leaderEpoch: number;
}

/** What the cache knows of one partition: its leader, or none (-1: offline, an election under way). */
export type LeaderLookup =
  | { readonly kind: 'leader'; readonly leader: PartitionLeader }
  | { readonly kind: 'no-leader' }
  | { readonly kind: 'unknown' };

/** Kafka's retry.backoff.ms and retry.backoff.max.ms, for Metadata refreshes after a leader error. */
export const METADATA_REFRESH_BACKOFF_MS = 100;
export const METADATA_REFRESH_BACKOFF_MAX_MS = 1_000;

/** Partition-level codes after which the client's view of the leader is wrong (Kafka's Metadata refresh). */
export function isStaleLeaderCode(code: ErrorCode): boolean {
  return (
    code === ErrorCode.NOT_LEADER_OR_FOLLOWER ||
    code === ErrorCode.LEADER_NOT_AVAILABLE ||
    code === ErrorCode.FENCED_LEADER_EPOCH ||
    code === ErrorCode.UNKNOWN_LEADER_EPOCH ||
    code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
  );
}

/**
 * The client's view of the cluster from Metadata (Kafka's client-side `Metadata`): the nodes and their
 * addresses, and each partition's leader and leader epoch.
 *
 * A topic is marked stale when a call on one of its partitions answers a leader error (NOT_LEADER_OR_FOLLOWER,
 * FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, LEADER_NOT_AVAILABLE) or its leader cannot be reached. A stale
 * or never-seen topic is refreshed before the next call that needs it, but stale refreshes are spaced by a
 * jittered exponential backoff (100 ms doubling to 1 s), so a leader election in progress costs a few
 * Metadata calls, not one per retry; meanwhile calls go to the last leader known and retry on its answer.
 *
 * Addresses: a Metadata that lists a single node, from a cohort never seen with more, is a one-node
 * cohort, reached at the address the answer came through whatever it advertises (so a port mapping, a unix
 * socket or a server bound to 0.0.0.0 work as they always did). Otherwise a node is dialled at its
 * advertised host:port (a wildcard host at the host of the connection that told us).
 */
export class PartitionLeaders {
  private readonly addresses = new Map<number, string>();
  private readonly topics = new Map<string, readonly { leaderId: number; leaderEpoch: number }[]>();
  private readonly stale = new Set<string>();
  private readonly backoff: ExponentialBackoff;
  private isCluster = false;
  private staleRefreshes = 0;
  private nextStaleRefreshMs = -Infinity;

  constructor(
    private readonly time: Time,
    random?: () => number,
  ) {
    this.backoff = new ExponentialBackoff({
      initialMs: METADATA_REFRESH_BACKOFF_MS,
      maxMs: METADATA_REFRESH_BACKOFF_MAX_MS,
      ...(random !== undefined ? { random } : {}),
    });
  }

  /** Takes in a Metadata answer that came through the connection to `via`. */
  update(response: MetadataResponse, via: string): void {
    // Once a Metadata has listed several nodes, this is a cluster: a one-node answer is then a node that
    // sees only one live node (perhaps not itself), so it is dialled where it says.
    if (response.brokers.length > 1) this.isCluster = true;
    const single = response.brokers.length === 1 && !this.isCluster;
    for (const broker of response.brokers) {
      this.addresses.set(broker.nodeId, single ? via : nodeAddress(broker.host, broker.port, via));
    }
    for (const topic of response.topics) {
      if (topic.errorCode !== ErrorCode.NONE) {
        this.topics.delete(topic.name);
        continue;
      }
      const partitions: { leaderId: number; leaderEpoch: number }[] = [];
      for (const p of topic.partitions) {
        partitions[p.partitionIndex] = {
          leaderId: p.errorCode === ErrorCode.LEADER_NOT_AVAILABLE ? -1 : p.leaderId,
          leaderEpoch: p.leaderEpoch,
        };
      }
      this.topics.set(topic.name, partitions);
      this.stale.delete(topic.name);
    }
  }

  /** The address of node `nodeId`, if Metadata listed it. */
  addressOf(nodeId: number): string | undefined {
    return this.addresses.get(nodeId);
  }

  /** The id of the node Metadata listed at `address`, if any. */
  nodeIdAt(address: string): number | undefined {
    for (const [nodeId, at] of this.addresses) if (at === address) return nodeId;
    return undefined;
  }

  /** Every node address known, in node id order. */
  knownAddresses(): string[] {
    return [...this.addresses].sort(([a], [b]) => a - b).map(([, address]) => address);
  }

  leaderOf(topic: string, partition: number): LeaderLookup {
    const p = this.topics.get(topic)?.[partition];
    if (p === undefined) return { kind: 'unknown' };
    if (p.leaderId < 0) return { kind: 'no-leader' };
    return {
      kind: 'leader',
      leader: { nodeId: p.leaderId, address: this.addresses.get(p.leaderId), leaderEpoch: p.leaderEpoch },
    };
  }

  /** The view of `topic` is wrong: refresh it before the next call that needs it (within the backoff). */
  markStale(topic: string): void {
    this.stale.add(topic);
  }

  /** Every topic whose leaders went through `address` is stale (the node could not be reached). */
  markNodeStale(address: string): void {
    for (const [name, partitions] of this.topics) {
      if (partitions.some((p) => p !== undefined && this.addresses.get(p.leaderId) === address))
        this.stale.add(name);
    }
  }

  /** Calls routed by the current view came back without leader errors: the next refresh needs no wait. */
  confirm(): void {
    this.staleRefreshes = 0;
  }

  /**
   * Which of `topics` need a Metadata refresh now: those never seen, and the stale ones once the backoff
   * since the last stale refresh is over. Calling it with a non-empty answer counts as that refresh.
   */
  topicsToRefresh(topics: Iterable<string>): string[] {
    const unknown: string[] = [];
    const stale: string[] = [];
    for (const topic of new Set(topics)) {
      if (!this.topics.has(topic)) unknown.push(topic);
      else if (this.stale.has(topic)) stale.push(topic);
    }
    const nowMs = this.time.monotonicMs();
    if (stale.length > 0 && nowMs >= this.nextStaleRefreshMs) {
      this.nextStaleRefreshMs = nowMs + this.backoff.backoffMs(this.staleRefreshes++);
      return [...unknown, ...stale];
    }
    return unknown;
  }
}
