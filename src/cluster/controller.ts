import { TimerAction, type Timer } from '../timer';
import { readClusterState, type ClusterState } from './cluster-state';
import type { ControllerElection } from './controller-election';
import {
  decidePartition,
  electPreferredLeader,
  imbalancedNodes,
  type PartitionView,
} from './controller-decisions';
import { ControllerEventQueue } from './controller-event-queue';
import {
  MetadataStoreError,
  type MetadataStore,
  type MetadataWatch,
  type WatchEvent,
} from './metadata-store';
import {
  initialPartitionState,
  writePartitionState,
  type PartitionState,
  type StoredPartitionState,
} from './partition-state';
import {
  createPartitionStates,
  createTopicAssignment,
  PARTITION_STATES_PER_TXN,
  planTopic,
  resolveTopicCreation,
  type CreateTopicOutcome,
  type InitialPartitionState,
  type ReplicaAssignment,
} from './replica-assignment';

export type { CreateTopicOutcome } from './replica-assignment';

/** Kafka's `leader.imbalance.check.interval.seconds` (300 s). */
export const DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS = 300_000;
/** Kafka's `leader.imbalance.per.broker.percentage`. */
export const DEFAULT_LEADER_IMBALANCE_PER_NODE_PERCENTAGE = 10;

/** What the controller needs of the election: its events, and the epoch it holds right now. */
export type ControllerRole = Pick<ControllerElection, 'on' | 'off' | 'controllerEpoch'>;

export interface ControllerOptions {
  readonly store: MetadataStore;
  readonly election: ControllerRole;
  readonly timer: Timer;
  readonly clusterId: string;
  /** `--unclean-leader-election`: elect a live replica outside the ISR rather than stay offline. Off by default. */
  readonly uncleanLeaderElection?: boolean;
  /** Kafka's `auto.leader.rebalance.enable`; on by default. */
  readonly autoLeaderRebalance?: boolean;
  readonly leaderImbalanceCheckIntervalMs?: number;
  readonly leaderImbalancePerNodePercentage?: number;
  /** Wait before reading everything again after a read or write that failed; 500 ms by default. */
  readonly retryBackoffMs?: number;
  /** The random start of a new topic's round-robin assignment; `Math.random` by default. */
  readonly random?: () => number;
  /** Told of failures the controller recovers from by reading again (the server logs them). */
  readonly onError?: (error: unknown) => void;
}

/** The controller's view of the cluster, rebuilt from etcd on every election (Kafka's ControllerContext). */
interface ClusterView {
  readonly epoch: number;
  readonly cluster: ClusterState;
}

/**
 * How many times one partition is decided again after a stale write (or a lost answer that was not
 * applied) before the controller backs off and reads everything again. It never waits for the next
 * event instead: with no event coming, the partition would stay led by a dead node.
 */
const MAX_STALE_RETRIES = 3;

/**
 * The controller's decisions, after Kafka's ZooKeeper-era `KafkaController`: while `ControllerElection`
 * says this node is the controller at epoch e, it keeps every partition led by a live in-sync replica.
 *
 * - On election it reads `nodes/`, `topics/` and `partitions/` in one transaction (one revision), then
 *   watches the cluster's prefix from the next revision, so no change between the read and the watch is
 *   missed. Then it decides every partition (below) and creates the states missing for any topic, up to
 *   PARTITION_STATES_PER_TXN of them a transaction (etcd takes 128 compares, the epoch's included).
 * - Level-triggered decisions (`decidePartition`): after every batch of watch events, each partition
 *   whose leader is not alive gets a new one from its live ISR, in assignment order (or goes offline,
 *   leader -1, unless unclean election is on); a dead follower leaves the ISR; a node that returns and
 *   is in an offline partition's ISR leads it. Every election bumps the leader epoch.
 * - Every write is `writePartitionState` fenced by the controller epoch (the controller key's create
 *   revision) and the partition key's mod revision as read. `stale` brings the current state back and the
 *   partition is decided again from it; an ambiguous answer is resolved by a read (never assumed); a
 *   failure it cannot resolve drops the view and reads everything again after a backoff.
 * - Auto leader rebalance: every `leaderImbalanceCheckIntervalMs` on the timer, for each node whose
 *   share of partitions it is preferred for but does not lead exceeds the percentage, leadership moves
 *   back to it where it is alive and in the ISR.
 * - `createTopic`: Kafka's round-robin assignment over the live nodes. The assignment `topics/<name>` is
 *   written first, in one fenced transaction whatever the partition count; then the initial states, in
 *   fenced slices, as for any topic whose states are missing. No view shows the topic before its last
 *   state is written, and a controller that dies between the two leaves the rest to its successor.
 * - Events (election, watch batches, the rebalance check, topic creation) run one at a time through one
 *   queue (Kafka's ControllerEventManager). On `resigned` the controller stops at once: the view, the
 *   watch and the timer go, queued events of that generation do nothing (a topic creation answers
 *   `notController`), and an event in flight issues no further write
 *   (each write also checks the election's epoch locally first; etcd's fence refuses it anyway).
 *
 * Example: nodes 1–3 live, `t-0` assigned [1, 2, 3] with {leader 1, leaderEpoch 4, isr [1, 2, 3]}.
 * Node 1's key expires: {leader 2, epoch 5, isr [2, 3]}. Node 3 leaves: {leader 2, epoch 6, isr [2]}.
 * Node 2 leaves: offline, {leader -1, epoch 7, isr [2]}; node 1 returning changes nothing (not in the
 * ISR). Node 2 returns: {leader 2, epoch 8, isr [2]}. Once 2 has re-added 1 to its ISR, the next
 * imbalance check finds node 1 leading none of the partitions it is preferred for and moves `t-0` back:
 * {leader 1, epoch 9, isr [1, 2]}.
 */
export class Controller {
  private readonly store: MetadataStore;
  private readonly election: ControllerRole;
  private readonly timer: Timer;
  private readonly clusterId: string;
  private readonly uncleanLeaderElection: boolean;
  private readonly autoLeaderRebalance: boolean;
  private readonly leaderImbalanceCheckIntervalMs: number;
  private readonly maxImbalanceRatio: number;
  private readonly retryBackoffMs: number;
  private readonly random: () => number;
  private readonly onError: (error: unknown) => void;
  private readonly queue: ControllerEventQueue;
  private readonly prefix: string;
  private view: ClusterView | undefined;
  private watch: MetadataWatch | undefined;
  /** Bumped on every election and every step-down: work of an older generation stops. */
  private generation = 0;
  private isClosed = false;
  private readonly rebalanceTask = new TimerAction(() => this.onRebalanceTimer());
  private readonly resyncTask = new TimerAction(() => this.onResyncTimer());
  private resyncGeneration = 0;
  private readonly onElected = ({ controllerEpoch }: { controllerEpoch: number }): void =>
    this.becomeController(controllerEpoch);
  private readonly onResigned = (): void => this.stepDown();

  constructor(options: ControllerOptions) {
    this.store = options.store;
    this.election = options.election;
    this.timer = options.timer;
    this.clusterId = options.clusterId;
    this.uncleanLeaderElection = options.uncleanLeaderElection ?? false;
    this.autoLeaderRebalance = options.autoLeaderRebalance ?? true;
    this.leaderImbalanceCheckIntervalMs =
      options.leaderImbalanceCheckIntervalMs ?? DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS;
    this.maxImbalanceRatio =
      (options.leaderImbalancePerNodePercentage ?? DEFAULT_LEADER_IMBALANCE_PER_NODE_PERCENTAGE) / 100;
    this.retryBackoffMs = options.retryBackoffMs ?? 500;
    this.random = options.random ?? Math.random;
    this.onError = options.onError ?? (() => undefined);
    this.queue = new ControllerEventQueue((error) => this.onError(error));
    this.prefix = `/${this.clusterId}/`;
  }

  /** Acts whenever the election makes this node the controller, now included. */
  start(): void {
    this.election.on('elected', this.onElected);
    this.election.on('resigned', this.onResigned);
    const epoch = this.election.controllerEpoch;
    if (epoch !== undefined) this.becomeController(epoch);
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.election.off('elected', this.onElected);
    this.election.off('resigned', this.onResigned);
    this.stepDown();
  }

  /** The epoch this controller acts at, while it has a view of the cluster; else undefined. */
  get activeEpoch(): number | undefined {
    return this.view?.epoch;
  }

  /** Resolves once every queued event has been handled (for tests and orderly shutdown). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  /** The controller's view of a partition (undefined when it is not acting, or does not know it). */
  partitionState(topic: string, partition: number): StoredPartitionState | undefined {
    return this.view?.cluster.partitions.get(`${topic}/${partition}`);
  }

  /**
   * Creates a topic: `partitionCount` partitions of `replicationFactor` replicas, assigned round-robin
   * over the live nodes (`assignReplicas`), each partition's first live replica leading at epoch 0.
   * Answers once the assignment and the states are written; `created` also when a state write failed
   * after the assignment was (the topic exists; the states missing are written after a resync, or by the
   * next controller). Fails with the store's error when the assignment write's outcome could not be
   * resolved by a read.
   */
  createTopic(topic: string, partitionCount: number, replicationFactor: number): Promise<CreateTopicOutcome> {
    return new Promise((resolve, reject) => {
      const generation = this.generation;
      this.queue.put(async () => {
        try {
          resolve(await this.handleCreateTopic(generation, topic, partitionCount, replicationFactor));
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  // ---- election ----

  private becomeController(epoch: number): void {
    if (this.isClosed) return;
    this.stepDown();
    const generation = this.generation;
    this.queue.put(() => this.startup(generation, epoch));
  }

  /** Stops acting at once: nothing of this generation writes again. */
  private stepDown(): void {
    this.generation++;
    this.view = undefined;
    this.watch?.cancel();
    this.watch = undefined;
    this.rebalanceTask.cancel();
    this.resyncTask.cancel();
    // Events already queued stay queued but find their generation gone: they do nothing, and a
    // pending createTopic answers notController rather than never.
  }

  private isCurrent(generation: number, epoch?: number): boolean {
    if (generation !== this.generation) return false;
    return epoch === undefined || this.election.controllerEpoch === epoch;
  }

  // ---- reading the cluster ----

  /** Reads nodes/, topics/ and partitions/ at one revision, watches from the next, and decides. */
  private async startup(generation: number, epoch: number): Promise<void> {
    if (!this.isCurrent(generation, epoch)) return;
    let read;
    try {
      read = await readClusterState(this.store, this.clusterId, this.onError);
    } catch (error) {
      this.onError(error);
      this.resyncLater(generation);
      return;
    }
    if (!this.isCurrent(generation, epoch)) return;
    const view: ClusterView = { epoch, cluster: read.state };
    this.view = view;
    this.watch?.cancel();
    this.watch = this.store.watch(
      this.prefix,
      { prefix: true, startRevision: read.revision + 1 },
      {
        onEvents: (events) => {
          if (generation === this.generation)
            this.queue.put(() => this.onWatchEvents(generation, epoch, events));
        },
        onCancelled: (reason) => {
          if (generation !== this.generation) return;
          // Compacted or failed: the view may have missed changes; read everything again.
          if (reason.error !== undefined) this.onError(reason.error);
          this.watch = undefined;
          this.queue.put(() => this.startup(generation, epoch));
        },
      },
    );
    if (this.autoLeaderRebalance) {
      this.rebalanceTask.delayMs = this.leaderImbalanceCheckIntervalMs;
      this.timer.add(this.rebalanceTask);
    }
    await this.decideAll(generation, view);
  }

  private resyncLater(generation: number): void {
    if (!this.isCurrent(generation)) return;
    this.view = undefined;
    this.watch?.cancel();
    this.watch = undefined;
    this.rebalanceTask.cancel();
    this.resyncGeneration = generation;
    this.resyncTask.delayMs = this.retryBackoffMs;
    this.timer.add(this.resyncTask);
  }

  private onResyncTimer(): void {
    const generation = this.resyncGeneration;
    const epoch = this.election.controllerEpoch;
    if (generation !== this.generation || epoch === undefined) return;
    this.queue.put(() => this.startup(generation, epoch));
  }

  private async onWatchEvents(
    generation: number,
    epoch: number,
    events: readonly WatchEvent[],
  ): Promise<void> {
    const view = this.view;
    if (!this.isCurrent(generation, epoch) || view === undefined) return;
    view.cluster.applyEvents(events);
    await this.decideAll(generation, view);
  }

  // ---- deciding ----

  /** Decides every partition of every known topic, creating the states that are missing. */
  private async decideAll(generation: number, view: ClusterView): Promise<void> {
    const settles: (() => Promise<boolean>)[] = [];
    for (const [topic, assignment] of [...view.cluster.topics]) {
      settles.push(...this.topicSettles(generation, view, topic, assignment));
    }
    await settleConcurrently(settles);
  }

  /**
   * The work that settles one topic: one settlePartition for each partition whose state exists, and one
   * createMissingStates for each slice of PARTITION_STATES_PER_TXN partitions whose state does not.
   */
  private topicSettles(
    generation: number,
    view: ClusterView,
    topic: string,
    assignment: ReplicaAssignment,
  ): (() => Promise<boolean>)[] {
    const settles: (() => Promise<boolean>)[] = [];
    const missing: number[] = [];
    for (let partition = 0; partition < assignment.partitions.length; partition++) {
      if (view.cluster.partitions.has(`${topic}/${partition}`)) {
        settles.push(() =>
          this.settlePartition(generation, view, topic, partition, this.decider(view, assignment, partition)),
        );
      } else {
        missing.push(partition);
      }
    }
    for (let start = 0; start < missing.length; start += PARTITION_STATES_PER_TXN) {
      const slice = missing.slice(start, start + PARTITION_STATES_PER_TXN);
      settles.push(() => this.createMissingStates(generation, view, topic, assignment, slice));
    }
    return settles;
  }

  /** What the controller writes for a partition, from its state as known: its initial one if it has none. */
  private decider(
    view: ClusterView,
    assignment: ReplicaAssignment,
    partition: number,
  ): (known: StoredPartitionState | undefined) => PartitionState | undefined {
    const replicas = assignment.partitions[partition];
    const isAlive = (nodeId: number): boolean => view.cluster.isAlive(nodeId);
    const options = { controllerEpoch: view.epoch, uncleanLeaderElection: this.uncleanLeaderElection };
    return (known) =>
      known === undefined
        ? missingState(replicas, isAlive, view.epoch)
        : decidePartition(replicas, known.state, isAlive, options, (nodeId) =>
            view.cluster.hasRegisteredSince(nodeId, known.modRevision),
          );
  }

  /**
   * Creates the initial states of `partitions` (one slice of a topic) that are still missing, in one
   * fenced transaction, each key only if absent. If one exists already (the view was behind), the answer
   * was lost, or etcd refused the slice whole (its --max-txn-ops or --max-request-bytes set below the
   * defaults), each partition of the slice is settled on its own instead: a state this slice did write
   * reads back as it is, stale for a create, and is decided again from there. False when the controller
   * must stop, as settlePartition.
   */
  private async createMissingStates(
    generation: number,
    view: ClusterView,
    topic: string,
    assignment: ReplicaAssignment,
    partitions: readonly number[],
  ): Promise<boolean> {
    if (!this.isCurrent(generation, view.epoch)) return false;
    const isAlive = (nodeId: number): boolean => view.cluster.isAlive(nodeId);
    const states: InitialPartitionState[] = [];
    for (const partition of partitions) {
      if (view.cluster.partitions.has(`${topic}/${partition}`)) continue;
      const state = missingState(assignment.partitions[partition], isAlive, view.epoch);
      if (state !== undefined) states.push({ partition, state });
    }
    if (states.length === 0) return true;
    let result;
    try {
      result = await createPartitionStates(this.store, this.clusterId, view.epoch, topic, states);
    } catch (error) {
      const isRefused = error instanceof MetadataStoreError && error.kind === 'invalidRequest';
      if (!(error instanceof MetadataStoreError) || !(error.isOutcomeUnknown || isRefused)) {
        this.onError(error);
        this.resyncLater(generation);
        return false;
      }
      // A lost answer, applied or not: settled one by one below, where a lost create is resolved by a
      // read. A slice etcd refused whole (one run with limits below its defaults): one by one too.
      if (isRefused) this.onError(error);
      result = undefined;
    }
    if (!this.isCurrent(generation, view.epoch)) return false;
    if (result?.outcome === 'notController') {
      this.stepDown();
      return false;
    }
    if (result?.outcome === 'created') {
      for (const { partition, state } of states) {
        const name = `${topic}/${partition}`;
        const known = view.cluster.partitions.get(name);
        if (known === undefined || known.modRevision < result.revision) {
          view.cluster.partitions.set(name, { state, modRevision: result.revision });
        }
      }
      return true;
    }
    for (const { partition } of states) {
      const decide = this.decider(view, assignment, partition);
      if (!(await this.settlePartition(generation, view, topic, partition, decide))) return false;
    }
    return true;
  }

  /**
   * Writes what `decide` answers for one partition, from the state in the view, until it answers nothing
   * or the write applies; a stale write is decided again from the state etcd returned, up to
   * MAX_STALE_RETRIES times, then everything is read again after the backoff. False when the controller
   * must stop (deposed, stepped down, or a failure that needs everything read again).
   */
  private async settlePartition(
    generation: number,
    view: ClusterView,
    topic: string,
    partition: number,
    decide: (known: StoredPartitionState | undefined) => PartitionState | undefined,
  ): Promise<boolean> {
    const name = `${topic}/${partition}`;
    for (let attempt = 0; attempt <= MAX_STALE_RETRIES; attempt++) {
      if (!this.isCurrent(generation, view.epoch)) return false;
      const known = view.cluster.partitions.get(name);
      const next = decide(known);
      if (next === undefined) return true;
      let result;
      try {
        result = await writePartitionState(this.store, {
          clusterId: this.clusterId,
          topic,
          partition,
          expectedModRevision: known?.modRevision ?? 0,
          state: next,
          controllerEpoch: view.epoch,
        });
      } catch (error) {
        // The write's outcome could not be told even by a read: read everything again, then decide.
        this.onError(error);
        this.resyncLater(generation);
        return false;
      }
      if (!this.isCurrent(generation, view.epoch)) return false;
      switch (result.outcome) {
        case 'updated':
          view.cluster.partitions.set(name, result.stored);
          return true;
        case 'stale':
          if (result.current === undefined) view.cluster.partitions.delete(name);
          else view.cluster.partitions.set(name, result.current);
          break;
        case 'notController':
          // Deposed: etcd refused the write. The election learns it from its own watch; act no more.
          this.stepDown();
          return false;
      }
    }
    // Still undecided after every retry: read everything again after the backoff, then decide.
    this.resyncLater(generation);
    return false;
  }

  // ---- auto leader rebalance ----

  private onRebalanceTimer(): void {
    const generation = this.generation;
    this.queue.put(async () => {
      const view = this.view;
      if (!this.isCurrent(generation, view?.epoch) || view === undefined) return;
      await this.rebalance(generation, view);
      if (this.isCurrent(generation, view.epoch) && this.view === view) {
        this.rebalanceTask.delayMs = this.leaderImbalanceCheckIntervalMs;
        this.timer.add(this.rebalanceTask);
      }
    });
  }

  private async rebalance(generation: number, view: ClusterView): Promise<void> {
    const isAlive = (nodeId: number): boolean => view.cluster.isAlive(nodeId);
    const views: PartitionView[] = [];
    for (const [topic, assignment] of view.cluster.topics) {
      assignment.partitions.forEach((replicas, partition) => {
        const stored = view.cluster.partitions.get(`${topic}/${partition}`);
        if (stored !== undefined) views.push({ replicas, state: stored.state });
      });
    }
    const imbalanced = imbalancedNodes(views, this.maxImbalanceRatio);
    if (imbalanced.size === 0) return;
    const settles: (() => Promise<boolean>)[] = [];
    for (const [topic, assignment] of [...view.cluster.topics]) {
      for (let partition = 0; partition < assignment.partitions.length; partition++) {
        const replicas = assignment.partitions[partition];
        if (!imbalanced.has(replicas[0])) continue;
        settles.push(() =>
          this.settlePartition(generation, view, topic, partition, (known) =>
            known === undefined
              ? undefined
              : electPreferredLeader(replicas, known.state, isAlive, view.epoch),
          ),
        );
      }
    }
    await settleConcurrently(settles);
  }

  // ---- topics ----

  private async handleCreateTopic(
    generation: number,
    topic: string,
    partitionCount: number,
    replicationFactor: number,
  ): Promise<CreateTopicOutcome> {
    const view = this.view;
    if (!this.isCurrent(generation, view?.epoch) || view === undefined) return { outcome: 'notController' };
    const plan = planTopic(topic, partitionCount, replicationFactor, [...view.cluster.liveNodes.keys()], {
      random: this.random,
    });
    if (plan.outcome !== 'planned') return plan;
    const { assignment } = plan;
    try {
      const result = await createTopicAssignment(this.store, this.clusterId, view.epoch, topic, assignment);
      if (result.outcome === 'exists') return { outcome: 'exists' };
      if (result.outcome === 'notController') {
        if (generation === this.generation) this.stepDown();
        return { outcome: 'notController' };
      }
    } catch (error) {
      if (!(error instanceof MetadataStoreError) || !error.isOutcomeUnknown) throw error;
      const resolved = await resolveTopicCreation(this.store, this.clusterId, topic, assignment, error);
      if (resolved.outcome === 'exists') return resolved;
    }
    // The topic exists; no view shows it before its last state is written. The states, in slices: if
    // this controller stops or fails on the way, the resync or the next controller writes what is missing.
    if (this.isCurrent(generation, view.epoch) && this.view === view) {
      view.cluster.topics.set(topic, assignment);
      await settleConcurrently(this.topicSettles(generation, view, topic, assignment));
    }
    return { outcome: 'created', assignment };
  }
}

/**
 * The state of a partition whose topic exists without it (a creation cut short): its initial state, as
 * Kafka's `initializeLeaderAndIsrForPartitions`, once one of its replicas is alive to lead it.
 */
function missingState(
  replicas: readonly number[],
  isAlive: (nodeId: number) => boolean,
  controllerEpoch: number,
): PartitionState | undefined {
  return replicas.some(isAlive) ? initialPartitionState(replicas, isAlive, controllerEpoch) : undefined;
}

/**
 * Partition writes in flight at once. A node's death changes every partition it led or followed; one
 * write at a time took an etcd round trip (an fsync) each, about a second for 50 partitions before the
 * last moved partition had a leader. etcd folds concurrent proposals into one raft entry and one fsync.
 */
export const SETTLE_CONCURRENCY = 64;

/**
 * Runs `settles` (each one partition's settlePartition), at most SETTLE_CONCURRENCY at a time, until all
 * ran or one answered false (stop: deposed, stepped down, or everything to be read again) or threw;
 * writes already in flight then finish, each fenced by etcd as every write is, and none is started
 * after. Resolves (or rejects with the first throw) only once every worker is done, so the controller's
 * event queue never starts its next event while writes of this one are still being started.
 */
async function settleConcurrently(settles: readonly (() => Promise<boolean>)[]): Promise<void> {
  let next = 0;
  let isStopped = false;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (!isStopped && next < settles.length) {
      const settle = settles[next++]!;
      try {
        if (!(await settle())) isStopped = true;
      } catch (error) {
        isStopped = true;
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(SETTLE_CONCURRENCY, settles.length) }, worker));
  if (failure !== undefined) throw failure.error;
}
