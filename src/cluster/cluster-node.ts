import { EventEmitter } from 'node:events';
import {
  NO_LEADER_ID,
  type ClusterMetadataUpdate,
  type IsrChangeProposer,
  type LeadershipGuard,
  type PartitionLeadership,
  type PartitionRoleTarget,
} from '../log/partition-roles';
import type { Time } from '../time';
import { TimerAction, type Timer } from '../timer';
import { ClusterIdentityError } from './cluster-identity';
import { ClusterMetadataView } from './cluster-metadata-view';
import { Controller } from './controller';
import { ControllerElection, type ResignReason } from './controller-election';
import { EtcdIsrChangeProposer } from './etcd-isr-change-proposer';
import { MetadataStoreError, type LeaseId, type MetadataStore } from './metadata-store';
import { NodeSession, type SessionExpiryReason } from './node-session';
import { planTopic, writeTopicAssignment, type CreateTopicOutcome } from './replica-assignment';

/**
 * One cohort node in a cluster on etcd, Kafka's ZooKeeper-era broker with its `KafkaController`: it
 * composes the node's session (`NodeSession`, `nodes/<id>` on a lease), the controller election and
 * the controller (acting only while elected), every node's view of the cluster
 * (`ClusterMetadataView`) and the leader's ISR proposals (`EtcdIsrChangeProposer`), and drives the log
 * layer through `PartitionRoleTarget`.
 *
 * - The target is told the cluster's view only while the session is active. When the session expires
 *   (its monotonic deadline, before etcd could expire the lease), `resignLeadership()` is called at once,
 *   and nothing more is applied. When a new session registers, the view reads everything again, and the
 *   first update from that read is applied: by then etcd answered after the registration, so a node that
 *   was frozen past its TTL sees the leaders elected meanwhile and comes back as their follower, never
 *   as a leader it no longer is.
 * - `guard.isActive()` is the session's `isActive()`: the log layer reads it on every Produce and
 *   before every HW advance.
 * - `createTopic` works on any node. A node that is the controller writes the assignment (one fenced
 *   transaction) and then the initial states in fenced slices (`Controller.createTopic`). Any other node
 *   writes only the assignment, only if absent (Kafka's ZooKeeper-era brokers did the same), over the
 *   live nodes of its own view; the controller sees the new topic key on its watch and writes the
 *   missing partition states, in the same slices. Either way no view shows the topic before its last
 *   state exists. No request is forwarded: a node needs no route to the controller, and a controller
 *   change between the request and the write cannot lose it (the write is etcd's, conditioned on the
 *   key's absence).
 * - `close()` resigns the controller role (its key deleted), revokes the lease (the node's key goes at
 *   once, so the controller re-elects without waiting for the TTL) and stops the watches; idempotent,
 *   and bounded by `closeTimeoutMs` on the timer even when etcd does not answer.
 */
export interface ClusterNodeOptions {
  readonly store: MetadataStore;
  readonly time: Time;
  readonly timer: Timer;
  readonly clusterId: string;
  /**
   * The cluster's uuid, confirmed against etcd's (`establishClusterIdentity`): the node registers, and its
   * view applies, only while etcd holds this identity. Unchecked when absent (unit tests).
   */
  readonly clusterUuid?: string;
  readonly nodeId: number;
  /** `HOST:PORT` the node's peers and clients reach it at. */
  readonly advertisedAddress: string;
  readonly target: PartitionRoleTarget;
  /** `--node-session-timeout-ms`; NodeSession's default when absent. */
  readonly sessionTimeoutMs?: number;
  /** `--unclean-leader-election`; off by default. */
  readonly uncleanLeaderElection?: boolean;
  readonly autoLeaderRebalance?: boolean;
  readonly leaderImbalanceCheckIntervalMs?: number;
  /** Wait before retrying a failed read or campaign; 500 ms by default. */
  readonly retryBackoffMs?: number;
  /** The longest `close()` waits on etcd; 5,000 ms by default. */
  readonly closeTimeoutMs?: number;
  /** The random start of round-robin assignments; `Math.random` by default. */
  readonly random?: () => number;
  /** Told of failures the node recovers from (the server logs them at warn). */
  readonly onError?: (error: unknown) => void;
}

/** What changed in this node's roles with one applied update (one event per update, not per partition). */
export interface LeadershipChange {
  /** Partitions this node leads now and did not lead before (or leads at a new epoch). */
  readonly becameLeader: readonly PartitionLeadership[];
  /** Partitions this node now follows and did not follow before (or follows at a new epoch). */
  readonly becameFollower: readonly PartitionLeadership[];
  /** Partitions of this node's that have no leader now. */
  readonly offline: readonly PartitionLeadership[];
  /** How many partitions this node leads and follows after the update. */
  readonly leaderCount: number;
  readonly followerCount: number;
}

export interface ClusterNodeEvents {
  sessionRegistered: [{ readonly leaseId: LeaseId; readonly incarnation: number }];
  sessionLost: [
    { readonly leaseId: LeaseId; readonly incarnation: number; readonly reason: SessionExpiryReason },
  ];
  becameController: [{ readonly controllerEpoch: number }];
  resignedController: [{ readonly controllerEpoch: number; readonly reason: ResignReason }];
  /** Emitted after each applied update that changed what this node leads or follows. */
  leadershipChanged: [LeadershipChange];
  /** The first update since the current session registered was applied. */
  ready: [];
}

/**
 * `createTopic`'s answer: the controller's outcomes, `unavailable` (no session, or etcd did not tell:
 * worth asking again) or `refused` (etcd refused the write itself, as it would again: a bug, not a state
 * to wait out; Kafka's INVALID_REQUEST).
 */
export type ClusterCreateTopicOutcome =
  | Exclude<CreateTopicOutcome, { readonly outcome: 'notController' }>
  | { readonly outcome: 'unavailable' | 'refused'; readonly reason: string };

export class ClusterNode extends EventEmitter<ClusterNodeEvents> {
  readonly nodeId: number;
  /** True while this node may act as a leader (its session is active on the monotonic clock). */
  readonly guard: LeadershipGuard;
  readonly isrChangeProposer: IsrChangeProposer;
  private readonly store: MetadataStore;
  private readonly timer: Timer;
  private readonly clusterId: string;
  private readonly target: PartitionRoleTarget;
  private readonly session: NodeSession;
  private readonly election: ControllerElection;
  private readonly controller: Controller;
  private readonly view: ClusterMetadataView;
  private readonly random: () => number;
  private readonly onError: (error: unknown) => void;
  private readonly closeTimeoutMs: number;
  /** True once an update from a read after the current session's registration was applied. */
  private isApplying = false;
  /** What this node led and followed in the last update applied, `topic/p` → its leadership. */
  private localRoles = new Map<string, PartitionLeadership>();
  private isStarted = false;
  private closing: Promise<void> | undefined;

  constructor(options: ClusterNodeOptions) {
    super();
    this.nodeId = options.nodeId;
    this.store = options.store;
    this.timer = options.timer;
    this.clusterId = options.clusterId;
    this.target = options.target;
    this.random = options.random ?? Math.random;
    this.onError = options.onError ?? (() => undefined);
    this.closeTimeoutMs = options.closeTimeoutMs ?? 5_000;
    const { store, timer, clusterId, clusterUuid, nodeId } = options;
    this.session = new NodeSession({
      store,
      time: options.time,
      timer,
      clusterId,
      ...(clusterUuid === undefined ? {} : { clusterUuid }),
      nodeId,
      advertisedAddress: options.advertisedAddress,
      sessionTimeoutMs: options.sessionTimeoutMs,
    });
    this.election = new ControllerElection({
      store,
      session: this.session,
      timer,
      clusterId,
      nodeId,
      retryBackoffMs: options.retryBackoffMs,
    });
    this.controller = new Controller({
      store,
      election: this.election,
      timer,
      clusterId,
      uncleanLeaderElection: options.uncleanLeaderElection,
      autoLeaderRebalance: options.autoLeaderRebalance,
      leaderImbalanceCheckIntervalMs: options.leaderImbalanceCheckIntervalMs,
      retryBackoffMs: options.retryBackoffMs,
      random: this.random,
      onError: this.onError,
    });
    this.view = new ClusterMetadataView({
      store,
      timer,
      clusterId,
      ...(clusterUuid === undefined ? {} : { clusterUuid }),
      retryBackoffMs: options.retryBackoffMs,
      onError: (error) => {
        // etcd lost the identity (its keys deleted, its leases maybe not): nothing decided on this lease
        // may be acted on. Resign everything now; the session registers again once the identity is back.
        if (error instanceof ClusterIdentityError) this.session.abandon('identityLost');
        this.onError(error);
      },
    });
    const session = this.session;
    this.guard = { isActive: () => session.isActive() };
    this.isrChangeProposer = new EtcdIsrChangeProposer({
      store,
      clusterId,
      nodeId,
      session,
      cluster: () => this.view.state,
    });
  }

  /** Registers the session, campaigns for controller and starts the view. */
  start(): void {
    if (this.isStarted) throw new Error('ClusterNode.start: already started');
    this.isStarted = true;
    this.session.on('active', ({ leaseId, incarnation }) => {
      this.emit('sessionRegistered', { leaseId, incarnation });
      // Apply nothing older than this registration: read again, apply from that read on.
      this.isApplying = false;
      this.view.resync();
    });
    this.session.on('expired', (event) => this.onSessionExpired(event));
    this.session.on('registrationFailed', ({ error }) => this.onError(error));
    this.election.on('elected', ({ controllerEpoch }) => this.emit('becameController', { controllerEpoch }));
    this.election.on('resigned', (event) => this.emit('resignedController', event));
    this.view.on('update', (update) => this.onViewUpdate(update));
    this.controller.start();
    this.election.start();
    this.view.start();
    this.session.start();
  }

  /** True once the session is registered and the first view since then applied. */
  isReady(): boolean {
    return this.isApplying && this.session.isActive();
  }

  /** Resolves once the controller has handled every queued event (for tests and orderly shutdown). */
  idle(): Promise<void> {
    return this.controller.idle();
  }

  /** True while this node is the controller. */
  isController(): boolean {
    return this.election.isController();
  }

  /** The cluster as this node last read it (applied to the target or not). */
  get metadata(): ClusterMetadataUpdate | undefined {
    return this.view.current;
  }

  /**
   * Creates a topic from any node: `partitionCount` partitions of `replicationFactor` replicas assigned
   * round-robin over the live nodes. On the controller, the assignment and then the states in slices;
   * elsewhere the assignment only, whose states the controller then writes. `unavailable` when the node
   * has no session or no view yet, or when etcd's answer was lost and a read could not tell; `refused`
   * when etcd refused the request as invalid.
   */
  async createTopic(
    topic: string,
    partitionCount: number,
    replicationFactor: number,
  ): Promise<ClusterCreateTopicOutcome> {
    if (this.closing !== undefined) return { outcome: 'unavailable', reason: 'the node is shutting down' };
    if (this.controller.activeEpoch !== undefined) {
      const outcome = await this.controller
        .createTopic(topic, partitionCount, replicationFactor)
        .catch((error: unknown) => this.storeFailure(error));
      // Deposed meanwhile: write the assignment as any node does.
      if (outcome.outcome !== 'notController') return outcome;
    }
    const cluster = this.view.state;
    if (!this.session.isActive() || cluster === undefined) {
      return { outcome: 'unavailable', reason: 'this node is not registered in the cluster' };
    }
    const plan = planTopic(topic, partitionCount, replicationFactor, [...cluster.liveNodes.keys()], {
      random: this.random,
    });
    if (plan.outcome !== 'planned') return plan;
    try {
      return await writeTopicAssignment(this.store, this.clusterId, topic, plan.assignment);
    } catch (error) {
      return this.storeFailure(error);
    }
  }

  /** Resigns the controller role, revokes the lease and stops the watches. Idempotent; bounded. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    this.controller.close();
    this.view.close();
    // Both stop acting at once (their synchronous part); then the controller key's deletion (only at our
    // epoch) goes out before the lease's revocation, which takes nodes/<id> with it.
    const orderly = Promise.all([this.election.close(), this.session.close()]);
    let timeout: TimerAction | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timeout = new TimerAction(resolve);
      timeout.delayMs = this.closeTimeoutMs;
      this.timer.add(timeout);
    });
    await Promise.race([orderly, timedOut]);
    timeout?.cancel();
    this.isApplying = false;
  }

  private storeFailure(error: unknown): { outcome: 'unavailable' | 'refused'; reason: string } {
    if (!(error instanceof MetadataStoreError)) throw error;
    this.onError(error);
    if (error.kind === 'invalidRequest') {
      // etcd checked the request and refused it (too many operations, too large): sent again, it would be
      // refused again, so the client must not be told to retry. etcd's own words stay in the log.
      return { outcome: 'refused', reason: 'the cluster metadata store refused the request' };
    }
    return { outcome: 'unavailable', reason: error.message };
  }

  private onSessionExpired(event: {
    readonly leaseId: LeaseId;
    readonly incarnation: number;
    readonly reason: SessionExpiryReason;
  }): void {
    this.isApplying = false;
    // Before etcd could have let the lease go: no leader role survives the session.
    this.target.resignLeadership();
    const hadRoles = this.localRoles.size > 0;
    this.localRoles = new Map();
    this.emit('sessionLost', event);
    if (hadRoles) {
      this.emit('leadershipChanged', {
        becameLeader: [],
        becameFollower: [],
        offline: [],
        leaderCount: 0,
        followerCount: 0,
      });
    }
  }

  private onViewUpdate(viewed: ClusterMetadataUpdate): void {
    if (this.closing !== undefined || !this.session.isActive()) return;
    const isFirst = !this.isApplying;
    this.isApplying = true;
    const update = this.withoutLeadershipBeforeRegistration(viewed);
    this.target.applyClusterMetadata(update);
    this.noteLeadership(update);
    if (isFirst) this.emit('ready');
  }

  /**
   * A state naming this node leader that was decided before its current registration (its partition
   * epoch below the node key's mod revision: Kafka's broker epoch) is not this process's to act on: it
   * may have restarted and lost an unflushed tail since. Such a partition is applied without a leader
   * until the controller, which sees the re-registration, elects again one epoch up.
   */
  private withoutLeadershipBeforeRegistration(update: ClusterMetadataUpdate): ClusterMetadataUpdate {
    // Not (or no longer) registered in the view: nothing is ours to lead.
    const registeredAt = this.view.state?.registrations.get(this.nodeId) ?? Number.POSITIVE_INFINITY;
    const isStale = (p: PartitionLeadership): boolean =>
      p.leader === this.nodeId && p.partitionEpoch < registeredAt;
    if (!update.partitions.some(isStale)) return update;
    return {
      ...update,
      partitions: update.partitions.map((p) => (isStale(p) ? { ...p, leader: NO_LEADER_ID } : p)),
    };
  }

  /** Compares this node's roles with the last update's; one event for all that changed. */
  private noteLeadership(update: ClusterMetadataUpdate): void {
    const roles = new Map<string, PartitionLeadership>();
    const becameLeader: PartitionLeadership[] = [];
    const becameFollower: PartitionLeadership[] = [];
    const offline: PartitionLeadership[] = [];
    let leaderCount = 0;
    for (const partition of update.partitions) {
      if (!partition.replicas.includes(this.nodeId)) continue;
      const name = `${partition.topic}/${partition.partitionIndex}`;
      roles.set(name, partition);
      const before = this.localRoles.get(name);
      const isLeader = partition.leader === this.nodeId;
      if (isLeader) leaderCount++;
      if (
        before !== undefined &&
        before.leader === partition.leader &&
        before.leaderEpoch === partition.leaderEpoch
      )
        continue;
      if (isLeader) becameLeader.push(partition);
      else if (partition.leader < 0) offline.push(partition);
      else becameFollower.push(partition);
    }
    const removed = [...this.localRoles.keys()].some((name) => !roles.has(name));
    this.localRoles = roles;
    if (becameLeader.length + becameFollower.length + offline.length === 0 && !removed) return;
    this.emit('leadershipChanged', {
      becameLeader,
      becameFollower,
      offline,
      leaderCount,
      followerCount: roles.size - leaderCount,
    });
  }
}
