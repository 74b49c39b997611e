import { EventEmitter } from 'node:events';
import type { Time } from '../time';
import { TimerAction, type Timer } from '../timer';
import {
  ClusterIdentityError,
  clusterIdentityKey,
  decodeClusterIdentity,
  encodeClusterIdentity,
  identityCompare,
} from './cluster-identity';
import { MetadataStoreError, type Compare, type LeaseId, type MetadataStore } from './metadata-store';

/**
 * A node's session with etcd, after etcd's `concurrency.Session`: one lease, kept alive, holding
 * `/<cluster-id>/nodes/<node-id>` = the advertised address. Roles a node takes — controller, partition
 * leader — are bound to the session's current lease, and end with it.
 *
 * The point of the class is *when the node stops believing it holds the lease*. etcd expires a lease
 * `ttl` after the last renewal it received; the node cannot know when that was, only when it sent each
 * renewal. A renewal sent at `s` and acknowledged reached etcd no earlier than `s`, so etcd keeps the
 * lease at least until `s + ttl`. The session's deadline is therefore
 *
 *     deadline = s(last acknowledged renewal) + ttl − safetyMargin          (monotonic clock)
 *
 * and when the deadline passes without a newer acknowledgement, the session is expired: `isActive()`
 * turns false at that instant (it reads the clock; it does not wait for a timer) and `expired` is
 * emitted from a timer armed for the deadline. Before etcd could have let the lease go and given a role
 * away, the node has stopped acting on it. The margin absorbs the rate difference between the node's
 * clock and etcd's.
 *
 * An expired session never comes back to life on the same lease, even when a late acknowledgement
 * arrives (a node resumed after SIGSTOP may see the answer to a renewal sent before it froze): it revokes
 * the old lease (best effort), grants a new one and registers again. Roles must be won again on the new
 * lease, so a node that was frozen comes back as a follower.
 *
 * Worked example (ttl 10 s, margin 1 s, renewals every 10/3 s): granted at 0 (requested at 0) →
 * deadline 9 s; a renewal sent at 3.33 s and acknowledged at 3.4 s → deadline 12.33 s; etcd freezes at
 * 5 s; renewals at 6.67 s and 10 s go unanswered; at 12.33 s the session expires. etcd, had it kept
 * running, would have expired the lease no earlier than 13.33 s.
 *
 * Single-threaded: every callback checks that it still belongs to the current lease (`incarnation`)
 * before it changes anything, since answers to an old lease's requests can arrive at any time.
 */

export const DEFAULT_NODE_SESSION_TIMEOUT_MS = 10_000;
const DEFAULT_RENEW_RETRY_MS = 500;

export interface NodeSessionOptions {
  readonly store: MetadataStore;
  readonly time: Time;
  readonly timer: Timer;
  readonly clusterId: string;
  readonly nodeId: number;
  readonly advertisedAddress: string;
  /**
   * The cluster's uuid (`cluster-identity.ts`): the node registers only in a transaction that finds etcd's
   * identity to be this one, so a node never joins an etcd that lost the cluster's metadata or holds
   * another cluster's. Registration then fails with ClusterIdentityError, and is retried. Unchecked when
   * absent (unit tests of the session alone).
   */
  readonly clusterUuid?: string;
  /** The lease's TTL (`--node-session-timeout-ms`); whole seconds are requested from etcd, rounded up. */
  readonly sessionTimeoutMs?: number;
  /** Subtracted from the deadline; a tenth of the timeout by default. */
  readonly safetyMarginMs?: number;
  /** Time between renewals; a third of the timeout by default (etcd's own client does the same). */
  readonly renewIntervalMs?: number;
  /** Wait before retrying a registration that failed; the renewal interval by default. */
  readonly retryBackoffMs?: number;
  /**
   * Wait before the next renewal after one failed (etcd unreachable), if sooner than the regular one:
   * 500 ms by default (etcd's own client retries its keep-alive stream after 500 ms), at most the interval.
   */
  readonly renewRetryMs?: number;
}

export type NodeSessionState = 'idle' | 'registering' | 'active' | 'expired' | 'closed';

export interface SessionActiveEvent {
  readonly leaseId: LeaseId;
  /** 1 for the first lease of this session object, +1 for each new lease after an expiry. */
  readonly incarnation: number;
  readonly ttlSeconds: number;
  readonly deadlineMs: number;
}

export type SessionExpiryReason =
  /** The deadline passed without an acknowledged renewal. */
  | 'deadline'
  /** etcd answered that the lease no longer exists (revoked, or expired on etcd's side). */
  | 'leaseLost'
  /** A late answer came in after the deadline had already passed. */
  | 'lateRenewal'
  /**
   * etcd no longer holds the cluster's identity (its data lost or deleted): the lease may live on, but
   * nothing this node decided on it may be acted on, and it registers again only once the identity is back.
   */
  | 'identityLost'
  | 'closed';

export interface SessionExpiredEvent {
  readonly leaseId: LeaseId;
  readonly incarnation: number;
  readonly reason: SessionExpiryReason;
}

export interface NodeSessionEvents {
  active: [SessionActiveEvent];
  expired: [SessionExpiredEvent];
  /** A registration attempt failed; the session retries after `retryBackoffMs`. */
  registrationFailed: [{ readonly error: unknown }];
}

/** `nodes/<id>` is held by a lease that is not this session's (another process with the same id?). */
export class NodeIdInUseError extends Error {
  constructor(
    readonly key: string,
    readonly holderLease: LeaseId,
  ) {
    super(
      `${key} is registered on lease ${holderLease}, which is not this node's; is another node using this id?`,
    );
    this.name = 'NodeIdInUseError';
  }
}

export function nodeKey(clusterId: string, nodeId: number): string {
  return `/${clusterId}/nodes/${nodeId}`;
}

export class NodeSession extends EventEmitter<NodeSessionEvents> {
  readonly key: string;
  readonly sessionTimeoutMs: number;
  readonly safetyMarginMs: number;
  readonly renewIntervalMs: number;
  readonly retryBackoffMs: number;
  readonly renewRetryMs: number;
  private readonly store: MetadataStore;
  private readonly time: Time;
  private readonly timer: Timer;
  private readonly advertisedAddress: string;
  private readonly clusterId: string;
  private readonly clusterUuid: string | undefined;
  /** The identity compare every registration write carries (none when no uuid was given). */
  private readonly identityCompares: readonly Compare[];
  private sessionState: NodeSessionState = 'idle';
  private currentLease: LeaseId | undefined;
  private currentIncarnation = 0;
  private deadline = 0;
  /** When the renewal task runs next (monotonic), while one is scheduled. */
  private nextRenewalMs = 0;
  /** Leases this session granted and has not seen revoked: its own keys may be taken over from them. */
  private readonly ownLeases = new Set<LeaseId>();
  private readonly renewTask = new TimerAction(() => this.renew());
  private readonly deadlineTask = new TimerAction(() => this.checkDeadline());
  private readonly retryTask = new TimerAction(() => void this.register());

  constructor(options: NodeSessionOptions) {
    super();
    const timeoutMs = options.sessionTimeoutMs ?? DEFAULT_NODE_SESSION_TIMEOUT_MS;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1000) {
      throw new RangeError(`nodeSessionTimeoutMs must be an integer of at least 1000, got ${timeoutMs}`);
    }
    if (!Number.isSafeInteger(options.nodeId) || options.nodeId < 0) {
      throw new RangeError(`nodeId must be a non-negative integer, got ${options.nodeId}`);
    }
    this.sessionTimeoutMs = timeoutMs;
    this.safetyMarginMs = options.safetyMarginMs ?? Math.floor(timeoutMs / 10);
    this.renewIntervalMs = options.renewIntervalMs ?? Math.floor(timeoutMs / 3);
    this.retryBackoffMs = options.retryBackoffMs ?? this.renewIntervalMs;
    this.renewRetryMs = Math.min(options.renewRetryMs ?? DEFAULT_RENEW_RETRY_MS, this.renewIntervalMs);
    if (this.safetyMarginMs < 0 || this.safetyMarginMs >= timeoutMs - this.renewIntervalMs) {
      throw new RangeError(
        `safetyMarginMs (${this.safetyMarginMs}) must leave room for a renewal: below ` +
          `sessionTimeoutMs - renewIntervalMs (${timeoutMs - this.renewIntervalMs})`,
      );
    }
    this.store = options.store;
    this.time = options.time;
    this.timer = options.timer;
    this.advertisedAddress = options.advertisedAddress;
    this.key = nodeKey(options.clusterId, options.nodeId);
    this.clusterId = options.clusterId;
    this.clusterUuid = options.clusterUuid;
    this.identityCompares =
      options.clusterUuid === undefined ? [] : [identityCompare(options.clusterId, options.clusterUuid)];
  }

  get state(): NodeSessionState {
    if (this.sessionState === 'active' && !this.isActive()) return 'expired';
    return this.sessionState;
  }

  /**
   * True while the current lease is certainly alive in etcd: registered, and the deadline not reached.
   * Reads the clock, so it turns false at the deadline even before the deadline's timer has run.
   */
  isActive(): boolean {
    return this.sessionState === 'active' && this.time.monotonicMs() < this.deadline;
  }

  /** The lease while active, else undefined. Roles bind their keys to it. */
  get leaseId(): LeaseId | undefined {
    return this.isActive() ? this.currentLease : undefined;
  }

  get incarnation(): number {
    return this.currentIncarnation;
  }

  /** The deadline on the monotonic clock (meaningful while active). */
  get deadlineMs(): number {
    return this.deadline;
  }

  /** Grants a lease and registers; retries until it succeeds or the session is closed. */
  start(): void {
    if (this.sessionState !== 'idle') throw new Error(`NodeSession.start: already ${this.sessionState}`);
    void this.register();
  }

  /**
   * Gives the current lease up at once, as if it had expired (roles drop, `expired` with `reason`), and
   * registers again on a new one; a session not active is left as it is.
   */
  abandon(reason: SessionExpiryReason): void {
    if (this.sessionState !== 'active') return;
    this.expire(reason);
  }

  /** Ends the session: expires it (roles drop), revokes the lease so its keys go at once. */
  async close(): Promise<void> {
    if (this.sessionState === 'closed') return;
    const lease = this.currentLease;
    const wasActive = this.sessionState === 'active';
    this.sessionState = 'closed';
    this.renewTask.cancel();
    this.deadlineTask.cancel();
    this.retryTask.cancel();
    if (wasActive && lease !== undefined) {
      this.emit('expired', { leaseId: lease, incarnation: this.currentIncarnation, reason: 'closed' });
    }
    await Promise.all([...this.ownLeases].map((id) => this.revokeQuietly(id)));
  }

  private async register(): Promise<void> {
    if (this.sessionState === 'closed') return;
    this.sessionState = 'registering';
    const incarnation = ++this.currentIncarnation;
    // A previous lease of ours may still hold the key; revoking it frees the key now rather than a TTL
    // from now. If etcd cannot be reached this fails, and registering will fail too and be retried.
    await Promise.all([...this.ownLeases].map((id) => this.revokeQuietly(id)));
    if (this.isStale(incarnation)) return;
    let activated: SessionActiveEvent | undefined;
    try {
      const sentAtMs = this.time.monotonicMs();
      const ttlSeconds = Math.ceil(this.sessionTimeoutMs / 1000);
      // A grant whose answer is lost leaves an orphan lease that nobody renews; it expires by itself.
      const grant = await this.store.grantLease(ttlSeconds);
      if (this.isStale(incarnation)) {
        void this.revokeQuietly(grant.id);
        return;
      }
      this.ownLeases.add(grant.id);
      this.currentLease = grant.id;
      // The grant counts as the first renewal: etcd started the TTL no earlier than sentAtMs.
      this.deadline = sentAtMs + this.effectiveTtlMs(grant.ttlSeconds) - this.safetyMarginMs;
      await this.putNodeKey(grant.id, incarnation);
      if (this.isStale(incarnation)) return;
      if (this.time.monotonicMs() >= this.deadline) {
        // Registering took the whole TTL (etcd answered that slowly): the lease was never usable, so
        // nothing expires; start over on a new one (which revokes this one first).
        void this.register();
        return;
      }
      this.sessionState = 'active';
      this.deadlineTask.delayMs = this.deadline - this.time.monotonicMs();
      this.timer.add(this.deadlineTask);
      this.scheduleRenewal();
      activated = { leaseId: grant.id, incarnation, ttlSeconds: grant.ttlSeconds, deadlineMs: this.deadline };
    } catch (error) {
      if (this.isStale(incarnation)) return;
      this.sessionState = 'expired';
      this.emit('registrationFailed', { error });
      this.retryTask.delayMs = this.retryBackoffMs;
      this.timer.add(this.retryTask);
    }
    // Outside the try: a listener that throws is the listener's bug, not a failed registration.
    if (activated !== undefined) this.emit('active', activated);
  }

  /**
   * Puts `nodes/<id>` on `lease` if the key is absent or held by one of this session's own leases, and
   * only while etcd's cluster identity is this node's (ClusterIdentityError otherwise). After an ambiguous
   * answer it re-reads: the key on our lease means the put applied.
   */
  private async putNodeKey(lease: LeaseId, incarnation: number): Promise<void> {
    const identityKey = clusterIdentityKey(this.clusterId);
    while (!this.isStale(incarnation)) {
      let response;
      try {
        response = await this.store.txn({
          compare: [
            { key: this.key, target: 'createRevision', result: 'equal', operand: 0 },
            ...this.identityCompares,
          ],
          success: [{ type: 'put', key: this.key, value: this.advertisedAddress, lease }],
          failure: [
            { type: 'get', key: this.key },
            { type: 'get', key: identityKey },
          ],
        });
      } catch (error) {
        if (!(error instanceof MetadataStoreError) || !error.isOutcomeUnknown) throw error;
        const { kv } = await this.store.get(this.key);
        if (kv?.lease === lease && kv.value === this.advertisedAddress) return;
        continue;
      }
      if (response.succeeded) return;
      const [nodeResult, identityResult] = response.results;
      this.checkIdentity(identityResult?.type === 'get' ? identityResult.kvs[0]?.value : undefined);
      const existing = nodeResult?.type === 'get' ? nodeResult.kvs[0] : undefined;
      if (existing === undefined) continue; // Deleted in between: try again.
      if (existing.lease === lease) return;
      if (!this.ownLeases.has(existing.lease)) throw new NodeIdInUseError(this.key, existing.lease);
      // Our previous lease still holds it (its revoke failed): take it over, unless it changed meanwhile.
      const takeover = await this.store.txn({
        compare: [
          { key: this.key, target: 'modRevision', result: 'equal', operand: existing.modRevision },
          ...this.identityCompares,
        ],
        success: [{ type: 'put', key: this.key, value: this.advertisedAddress, lease }],
      });
      if (takeover.succeeded) return;
    }
  }

  /** Throws ClusterIdentityError when etcd's identity (its value, undefined if missing) is not ours. */
  private checkIdentity(value: string | undefined): void {
    if (this.clusterUuid === undefined) return;
    const found = value === undefined ? undefined : (decodeClusterIdentity(value) ?? value);
    if (found !== this.clusterUuid) throw new ClusterIdentityError(this.clusterId, this.clusterUuid, found);
    // The uuid is ours but not in the form the compare holds it to (a key restored by hand): retried with
    // a backoff, rather than compared again at once for ever.
    if (value !== encodeClusterIdentity(this.clusterUuid)) {
      throw new ClusterIdentityError(this.clusterId, this.clusterUuid, undefined, value);
    }
  }

  private effectiveTtlMs(grantedTtlSeconds: number): number {
    // etcd may raise the TTL to its minimum; the node keeps to the shorter of the two.
    return Math.min(this.sessionTimeoutMs, grantedTtlSeconds * 1000);
  }

  private scheduleRenewal(delayMs = this.renewIntervalMs): void {
    this.renewTask.cancel();
    this.renewTask.delayMs = delayMs;
    this.nextRenewalMs = this.time.monotonicMs() + delayMs;
    this.timer.add(this.renewTask);
  }

  private renew(): void {
    if (!this.isActive()) {
      this.checkDeadline();
      return;
    }
    const lease = this.currentLease!;
    const incarnation = this.currentIncarnation;
    const sentAtMs = this.time.monotonicMs();
    this.scheduleRenewal();
    this.store.keepAliveOnce(lease).then(
      ({ ttlSeconds }) => this.onRenewed(incarnation, sentAtMs, ttlSeconds),
      () => this.onRenewalFailed(incarnation),
    );
  }

  /**
   * A failed renewal leaves the deadline as it was; the next one goes out after `renewRetryMs` rather
   * than a whole interval later. Waiting the interval, an etcd outage ending just after a failed renewal
   * would still cost the session up to two intervals of its TTL, and a restart of etcd shorter than the
   * TTL could expire every node (with the defaults, any outage over TTL − margin − 2 × interval).
   */
  private onRenewalFailed(incarnation: number): void {
    if (this.isStale(incarnation) || !this.isActive()) return;
    const retryAtMs = this.time.monotonicMs() + this.renewRetryMs;
    if (retryAtMs < this.nextRenewalMs) this.scheduleRenewal(this.renewRetryMs);
  }

  private onRenewed(incarnation: number, sentAtMs: number, ttlSeconds: number): void {
    if (this.isStale(incarnation) || this.sessionState !== 'active') return;
    if (this.time.monotonicMs() >= this.deadline) {
      // The answer came after the deadline (the process may have been frozen): whatever it says, the
      // lease may have lapsed in between, and a role given away. Never resume on it.
      this.expire('lateRenewal');
      return;
    }
    if (ttlSeconds <= 0) {
      this.expire('leaseLost');
      return;
    }
    const deadline = sentAtMs + this.effectiveTtlMs(ttlSeconds) - this.safetyMarginMs;
    if (deadline > this.deadline) {
      this.deadline = deadline;
      this.deadlineTask.delayMs = deadline - this.time.monotonicMs();
      this.timer.add(this.deadlineTask);
    }
  }

  private checkDeadline(): void {
    if (this.sessionState !== 'active') return;
    if (this.time.monotonicMs() >= this.deadline) {
      this.expire('deadline');
    } else {
      this.deadlineTask.delayMs = this.deadline - this.time.monotonicMs();
      this.timer.add(this.deadlineTask);
    }
  }

  private expire(reason: SessionExpiryReason): void {
    const lease = this.currentLease!;
    const incarnation = this.currentIncarnation;
    this.sessionState = 'expired';
    this.renewTask.cancel();
    this.deadlineTask.cancel();
    this.emit('expired', { leaseId: lease, incarnation, reason });
    // Come back on a new lease; `register` revokes this one first.
    if (this.sessionState === 'expired' && this.currentIncarnation === incarnation) void this.register();
  }

  private isStale(incarnation: number): boolean {
    return this.sessionState === 'closed' || incarnation !== this.currentIncarnation;
  }

  private async revokeQuietly(id: LeaseId): Promise<void> {
    try {
      await this.store.revokeLease(id);
      this.ownLeases.delete(id);
    } catch {
      // Unreachable etcd: the lease expires by itself within its TTL, and we stay ready to take our key
      // back from it.
    }
  }
}
