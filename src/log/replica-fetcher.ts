import { ErrorCode } from '../errors';
import type { Time } from '../time';
import type { Timer } from '../timer';
import { TimerAction, TimerTask } from '../timer';
import type { FetchRequest, FetchResponse, OffsetForLeaderEpochRequest } from './broker-protocol';
import { LeaderRefusedCall, type LeaderEndpoint } from './leader-endpoint';
import type {
  EpochBoundaryOutcome,
  EpochBoundaryTarget,
  FetchedPartitionOutcome,
  FollowerFetchTarget,
  FollowerReplicas,
} from './follower-replicas';
import { topicPartitionKey } from './topic-partition';

/** Kafka's replica.fetch.wait.max.ms. */
export const DEFAULT_REPLICA_FETCH_WAIT_MAX_MS = 500;
/** Kafka's replica.fetch.max.bytes (per partition) and replica.fetch.response.max.bytes. */
export const DEFAULT_REPLICA_FETCH_MAX_BYTES = 1024 * 1024;
export const DEFAULT_REPLICA_FETCH_RESPONSE_MAX_BYTES = 10 * 1024 * 1024;
/** Kafka's replica.fetch.backoff.ms. */
export const DEFAULT_REPLICA_FETCH_BACKOFF_MS = 1_000;
/**
 * How long a fetcher with nothing to copy waits before it looks again; `wake()` (a new follower partition,
 * a newer epoch) ends the wait early.
 */
export const DEFAULT_IDLE_INTERVAL_MS = 1_000;
/**
 * While rounds keep failing, `onLeaderFailure` is told again after twice the backoff, then after each
 * doubling of that interval, up to this: an unreachable leader is one log line a minute, not one a second.
 */
export const LEADER_FAILURE_REPORT_MAX_INTERVAL_MS = 60_000;
/**
 * OffsetForLeaderEpoch exchanges in one round at most: each answer that leaves a partition at an
 * intermediate epoch boundary asks again with an older epoch, so the exchange ends; the bound keeps one
 * round from holding the loop on a long history.
 */
const MAX_EPOCH_BOUNDARY_PASSES = 16;

/** A run of failed rounds: the leader could not be reached, or refused the fetch. */
export interface LeaderFailure {
  /** The node this fetcher copies from. */
  readonly leaderId: number;
  /** Why the latest round failed. */
  readonly error: unknown;
  /** `unreachable`: a call to the leader failed; `refused`: the leader answered the fetch with an error. */
  readonly kind: 'unreachable' | 'refused';
  /** Rounds failed in a row, this one included. */
  readonly failedRounds: number;
  /** Since the first failed round of the run, on the fetcher's monotonic clock. */
  readonly failingForMs: number;
}

/** How replication from the leader stands (for readiness and metrics). */
export interface LeaderLinkStatus {
  /** False from a failed round until the next call the leader answers. */
  readonly isReplicating: boolean;
  /** The current run of failures; undefined while replicating. */
  readonly failure: LeaderFailure | undefined;
  /** Failed rounds since the fetcher started, for a counter. */
  readonly failedRoundsTotal: number;
}

export interface ReplicaFetcherOptions {
  readonly time: Time;
  /** Runs the fetcher's waits (backoff, idle); driven by `time`. */
  readonly timer: Timer;
  readonly fetchMaxWaitMs?: number;
  readonly backoffMs?: number;
  readonly idleIntervalMs?: number;
  /** A partition's fetched records could not be applied; that partition backs off. */
  readonly onError?: (error: unknown, what: string) => void;
  /**
   * A round failed (the leader is unreachable, or refused the fetch) and the fetcher backs off: called for
   * the first failure of a run, then again at a growing interval while the failures go on (twice the
   * backoff, doubling, up to LEADER_FAILURE_REPORT_MAX_INTERVAL_MS), so a log line per call neither floods
   * the log nor goes silent. `leaderStatus` has every round.
   */
  readonly onLeaderFailure?: (failure: LeaderFailure) => void;
  /** The leader answered again after a run of failures (the run that ended is given). */
  readonly onLeaderRecovered?: (failure: LeaderFailure) => void;
  /**
   * The node this fetcher copies from. The cluster tells this node who leads what (applyClusterMetadata):
   * the fetcher copies only the partitions following that leader, with their leader epoch, and first
   * truncates each new follower to its epoch boundary (OffsetForLeaderEpoch).
   */
  readonly leaderId: number;
}

/** Targets grouped by topic, in first-seen order, each partition as `toPartition` writes it. */
function byTopic<T extends { readonly topic: string }, P>(
  targets: readonly T[],
  toPartition: (target: T) => P,
): { name: string; partitions: P[] }[] {
  const topics = new Map<string, { name: string; partitions: P[] }>();
  for (const target of targets) {
    let topic = topics.get(target.topic);
    if (topic === undefined) {
      topic = { name: target.topic, partitions: [] };
      topics.set(target.topic, topic);
    }
    topic.partitions.push(toPartition(target));
  }
  return [...topics.values()];
}

/** Each target's current leader epoch by partition key. */
function sentLeaderEpochs(
  targets: readonly { readonly key: string; readonly currentLeaderEpoch: number }[],
): Map<string, number> {
  return new Map(targets.map((target) => [target.key, target.currentLeaderEpoch]));
}

/**
 * The first wait before asking a leader again about a partition it answered UNKNOWN_LEADER_EPOCH for
 * (it has not yet applied its election, which it learns from the same etcd watch as this follower);
 * doubled per answer in a row, up to the backoff. A full backoff (1 s) there held a new group
 * coordinator's load, which waits for its followers' first fetch, for most of a second.
 */
export const LEADER_EPOCH_CATCH_UP_MS = 50;

/** Resolves a promise when the timer runs it, or when cancelled (stop). */
class Wakeup extends TimerTask {
  private resolve: (() => void) | null = null;

  wait(timer: Timer): Promise<void> {
    return new Promise((resolve) => {
      this.resolve = resolve;
      timer.add(this);
    });
  }

  override run(): void {
    const resolve = this.resolve;
    this.resolve = null;
    resolve?.();
  }

  override cancel(): void {
    super.cancel();
    this.run();
  }
}

/**
 * The follower's replication loop (Kafka's ReplicaFetcherThread, one per leader, as a task on the event
 * loop; ReplicaFetcherManager keeps one per leader node). Each round:
 *
 * 1. truncates each partition that has just become a follower of this leader to its epoch boundary
 *    (OffsetForLeaderEpoch, KIP-101/279);
 * 2. sends one long-poll Fetch for every partition it copies, each from its LEO, with its node id as
 *    `replica_id`, `min_bytes` 1 and `max_wait_ms` `fetchMaxWaitMs`: the leader answers as soon as
 *    there is a record, or after the wait with none. The fetch offsets are how the leader learns this
 *    replica's progress, so the next Fetch, sent right after appending, is what moves the leader's HW;
 * 3. appends the records and takes the leader's HW (PartitionFetchStates.applyFetchedPartition).
 *
 * A partition whose response carries an error (other than OFFSET_OUT_OF_RANGE, which truncates) sits out
 * for `backoffMs`, so one bad partition never turns the long poll into a busy loop; a failed round (the
 * leader is down) waits `backoffMs` before the next, as Kafka's replica.fetch.backoff.ms does: a leader
 * that comes back is found within a second. What is reported of a run of failures backs off instead
 * (`onLeaderFailure`), and `leaderStatus` shows it meanwhile. `stop()` aborts the call in flight.
 */
export class ReplicaFetcher {
  private readonly time: Time;
  private readonly timer: Timer;
  private readonly fetchMaxWaitMs: number;
  private readonly backoffMs: number;
  private readonly idleIntervalMs: number;
  private readonly onError: (error: unknown, what: string) => void;
  private readonly onLeaderFailure: (failure: LeaderFailure) => void;
  private readonly onLeaderRecovered: (failure: LeaderFailure) => void;
  private readonly leaderId: number;
  /** The current run of failed rounds, if any. */
  private failure: LeaderFailure | undefined;
  private failingSinceMs = 0;
  private nextReportAtMs = 0;
  private reportIntervalMs = 0;
  private failedRoundsTotal = 0;
  private readonly controller = new AbortController();
  /** Aborts the Fetch in flight alone (see `wake`); undefined while none is. */
  private fetchInFlight: AbortController | undefined;
  private isFetchInterrupted = false;
  /** A wake() came while the round was not in its Fetch (see `wake`). */
  private isWokenMidRound = false;
  private readonly wakeup = new Wakeup(0);
  /** Partitions sitting out after an error, until this time. */
  private readonly retryAtMs = new Map<string, number>();
  /** UNKNOWN_LEADER_EPOCH answers in a row, by partition (see LEADER_EPOCH_CATCH_UP_MS). */
  private readonly catchUpAttempts = new Map<string, number>();
  /** Wakes the loop when the earliest partition waiting for its leader to catch up is due. */
  private readonly catchUpWakeup = new TimerAction(() => this.onCatchUpDue());
  private running: Promise<void> | null = null;
  private isStopped = false;
  /** Completed fetch rounds, for tests and metrics. */
  rounds = 0;

  constructor(
    private readonly nodeId: number,
    private readonly followers: FollowerReplicas,
    private readonly leader: LeaderEndpoint,
    options: ReplicaFetcherOptions,
  ) {
    this.time = options.time;
    this.timer = options.timer;
    this.fetchMaxWaitMs = options.fetchMaxWaitMs ?? DEFAULT_REPLICA_FETCH_WAIT_MAX_MS;
    this.backoffMs = options.backoffMs ?? DEFAULT_REPLICA_FETCH_BACKOFF_MS;
    this.idleIntervalMs = options.idleIntervalMs ?? DEFAULT_IDLE_INTERVAL_MS;
    this.onError = options.onError ?? (() => undefined);
    this.onLeaderFailure = options.onLeaderFailure ?? (() => undefined);
    this.onLeaderRecovered = options.onLeaderRecovered ?? (() => undefined);
    this.leaderId = options.leaderId;
  }

  get leaderStatus(): LeaderLinkStatus {
    return {
      isReplicating: this.failure === undefined,
      failure: this.failure,
      failedRoundsTotal: this.failedRoundsTotal,
    };
  }

  start(): void {
    this.running ??= this.run();
  }

  /**
   * The partitions to fetch changed (new followers, newer epochs): ends a wait (idle or backoff) now, and
   * cuts short a long-poll Fetch in flight when a partition now waits for its epoch-boundary truncation
   * (it just became a follower of this leader), so that its first fetch goes out at once rather than
   * after up to `fetchMaxWaitMs`. That first fetch is what lets a newly elected leader's HW advance, and
   * a new group coordinator waits for it before serving its groups. The cut-short call is not a failure:
   * no backoff, nothing reported; records it was bringing come in the next round, from the same offsets.
   */
  wake(): void {
    if (this.isStopped) return;
    this.wakeup.cancel();
    // Mid-round (its OffsetForLeaderEpoch in flight): the round checks, before it parks a Fetch, whether
    // this wake brought a partition to truncate, and starts over if so.
    if (this.fetchInFlight === undefined) this.isWokenMidRound = true;
    if (this.fetchInFlight !== undefined && this.hasDuePendingTruncation()) {
      this.isFetchInterrupted = true;
      this.fetchInFlight.abort();
    }
  }

  /** Ends the loop: aborts the call in flight, cancels any wait, closes the endpoint. Idempotent. */
  async stop(): Promise<void> {
    if (!this.isStopped) {
      this.isStopped = true;
      this.controller.abort();
      this.fetchInFlight?.abort();
      this.catchUpWakeup.cancel();
      this.wakeup.cancel();
    }
    await this.running;
    this.leader.close();
  }

  private async run(): Promise<void> {
    while (!this.isStopped) {
      let isBackoff = false;
      try {
        isBackoff = await this.round();
      } catch (error) {
        if (this.isStopped) break;
        this.roundFailed(error, error instanceof LeaderRefusedCall ? 'refused' : 'unreachable');
        isBackoff = true;
      }
      this.rounds++;
      if (isBackoff && !this.isStopped) await this.sleep(this.backoffMs);
    }
  }

  /** One round; true asks for a backoff before the next. */
  private async round(): Promise<boolean> {
    const signal = this.controller.signal;
    this.isWokenMidRound = false;
    await this.truncateToEpochBoundaries(this.leaderId, signal);
    if (this.isStopped) return false;
    if (this.isWokenMidRound && this.hasDuePendingTruncation()) return false;
    const targets = this.fetchableTargets();
    if (targets.length === 0) {
      // Nothing to copy yet: wait for a wake() (new followers, newer epochs) or the end of a backoff.
      this.leaderAnswered();
      await this.sleep(this.idleIntervalMs);
      return false;
    }
    const request = this.fetchRequest(targets);
    // The epoch each partition's fetch was sent in: an answer may come back after the epoch moved.
    const sentEpochs = sentLeaderEpochs(targets);
    const inFlight = new AbortController();
    this.fetchInFlight = inFlight;
    this.isFetchInterrupted = false;
    let response: FetchResponse;
    try {
      response = await this.leader.fetch(request, inFlight.signal);
    } catch (error) {
      if (this.isFetchInterrupted && !this.isStopped) return false;
      throw error;
    } finally {
      this.fetchInFlight = undefined;
    }
    if (this.isStopped) return false;
    if (response.errorCode !== ErrorCode.NONE) {
      this.roundFailed(
        new Error(
          `the leader refused the fetch with error ${ErrorCode[response.errorCode] ?? response.errorCode}`,
        ),
        'refused',
      );
      return true;
    }
    this.leaderAnswered();
    const nowMs = this.time.monotonicMs();
    for (const topic of response.responses) {
      for (const data of topic.partitions) {
        const key = topicPartitionKey(topic.name, data.partitionIndex);
        let outcome: FetchedPartitionOutcome;
        try {
          outcome = this.followers.applyFetchedPartition(key, data, sentEpochs.get(key));
        } catch (error) {
          this.onError(error, `applying fetched records of ${key} failed`);
          outcome = 'retry';
        }
        this.afterOutcome(key, outcome, nowMs);
      }
    }
    return false;
  }

  /**
   * Asks the leader where the history of each new follower partition parts from its own and truncates
   * there (PartitionFetchStates.applyEpochEndOffset), again while answers leave partitions at an
   * intermediate boundary. A partition whose answer is an error sits out for `backoffMs`.
   */
  private async truncateToEpochBoundaries(leaderId: number, signal: AbortSignal): Promise<void> {
    for (let pass = 0; pass < MAX_EPOCH_BOUNDARY_PASSES; pass++) {
      const nowMs = this.time.monotonicMs();
      const targets = this.followers
        .epochBoundaryTargets(leaderId)
        .filter((target) => this.isDue(target.key, nowMs));
      if (targets.length === 0) return;
      const sentEpochs = sentLeaderEpochs(targets);
      const response = await this.leader.offsetForLeaderEpoch(
        this.offsetForLeaderEpochRequest(targets),
        signal,
      );
      if (this.isStopped) return;
      let isAgain = false;
      const answeredMs = this.time.monotonicMs();
      for (const topic of response.topics) {
        for (const data of topic.partitions) {
          const key = topicPartitionKey(topic.name, data.partition);
          let outcome: EpochBoundaryOutcome;
          try {
            outcome = this.followers.applyEpochEndOffset(key, data, sentEpochs.get(key));
          } catch (error) {
            this.onError(error, `truncating ${key} to its epoch boundary failed`);
            outcome = 'retry';
          }
          this.afterOutcome(key, outcome, answeredMs);
          if (outcome === 'again') isAgain = true;
        }
      }
      if (!isAgain) return;
    }
  }

  private offsetForLeaderEpochRequest(targets: readonly EpochBoundaryTarget[]): OffsetForLeaderEpochRequest {
    const topics = byTopic(targets, (target) => ({
      partition: target.partitionIndex,
      currentLeaderEpoch: target.currentLeaderEpoch,
      leaderEpoch: target.leaderEpoch,
    }));
    return { replicaId: this.nodeId, topics };
  }

  /** Counts a failed round and reports it when the run is new or the report interval has passed. */
  private roundFailed(error: unknown, kind: LeaderFailure['kind']): void {
    const nowMs = this.time.monotonicMs();
    this.failedRoundsTotal++;
    const previous = this.failure;
    if (previous === undefined) {
      this.failingSinceMs = nowMs;
      this.reportIntervalMs = 2 * this.backoffMs;
      this.nextReportAtMs = nowMs;
    }
    const failure: LeaderFailure = {
      leaderId: this.leaderId,
      error,
      kind,
      failedRounds: (previous?.failedRounds ?? 0) + 1,
      failingForMs: nowMs - this.failingSinceMs,
    };
    this.failure = failure;
    if (nowMs < this.nextReportAtMs) return;
    this.nextReportAtMs = nowMs + this.reportIntervalMs;
    this.reportIntervalMs = Math.min(2 * this.reportIntervalMs, LEADER_FAILURE_REPORT_MAX_INTERVAL_MS);
    this.onLeaderFailure(failure);
  }

  private leaderAnswered(): void {
    const ended = this.failure;
    if (ended === undefined) return;
    this.failure = undefined;
    this.onLeaderRecovered({ ...ended, failingForMs: this.time.monotonicMs() - this.failingSinceMs });
  }

  private fetchableTargets(): FollowerFetchTarget[] {
    const nowMs = this.time.monotonicMs();
    return this.followers
      .followerFetchTargets(this.leaderId)
      .filter((target) => this.isDue(target.key, nowMs));
  }

  /** Sets the partition's sit-out after an answer: a backoff, a shorter wait for a leader catching up, or none. */
  private afterOutcome(
    key: string,
    outcome: FetchedPartitionOutcome | EpochBoundaryOutcome,
    nowMs: number,
  ): void {
    if (outcome === 'retry') {
      this.catchUpAttempts.delete(key);
      this.retryAtMs.set(key, nowMs + this.backoffMs);
    } else if (outcome === 'retrySoon') {
      const attempts = this.catchUpAttempts.get(key) ?? 0;
      this.catchUpAttempts.set(key, attempts + 1);
      const waitMs = Math.min(this.backoffMs, LEADER_EPOCH_CATCH_UP_MS * 2 ** attempts);
      this.retryAtMs.set(key, nowMs + waitMs);
      // The loop may be parked in a long poll or an idle wait meanwhile: onCatchUpDue ends either.
      if (!this.catchUpWakeup.isPending || this.catchUpWakeup.deadlineMs > nowMs + waitMs) {
        this.catchUpWakeup.delayMs = waitMs;
        this.timer.add(this.catchUpWakeup);
      }
    } else if (this.catchUpAttempts.size > 0) this.catchUpAttempts.delete(key);
  }

  /**
   * The catch-up timer: a partition that waited for its leader to catch up (UNKNOWN_LEADER_EPOCH) is due.
   * Ends the idle wait and cuts a long poll in flight short, whichever phase the partition is in (a log
   * with no epoch yet goes straight to Fetch), and re-arms for the next such partition.
   */
  private onCatchUpDue(): void {
    if (this.isStopped) return;
    const nowMs = this.time.monotonicMs();
    let nextAtMs = Infinity;
    let isAnyDue = false;
    for (const key of this.catchUpAttempts.keys()) {
      const atMs = this.retryAtMs.get(key);
      if (atMs === undefined || atMs <= nowMs) isAnyDue = true;
      else nextAtMs = Math.min(nextAtMs, atMs);
    }
    if (nextAtMs !== Infinity) {
      this.catchUpWakeup.delayMs = nextAtMs - nowMs;
      this.timer.add(this.catchUpWakeup);
    }
    if (!isAnyDue) return;
    this.wakeup.cancel();
    if (this.fetchInFlight !== undefined) {
      this.isFetchInterrupted = true;
      this.fetchInFlight.abort();
    }
  }

  /** Whether a partition of this leader, not sitting out, waits for its epoch-boundary truncation. */
  private hasDuePendingTruncation(): boolean {
    const nowMs = this.time.monotonicMs();
    return this.followers.hasPendingTruncation(this.leaderId, (key) => this.isDueAt(key, nowMs));
  }

  /** Whether the partition's sit-out, if any, is over at `nowMs` (changes nothing). */
  private isDueAt(key: string, nowMs: number): boolean {
    const retryAt = this.retryAtMs.get(key);
    return retryAt === undefined || retryAt <= nowMs;
  }

  /** False while the partition sits out a backoff. */
  private isDue(key: string, nowMs: number): boolean {
    if (!this.isDueAt(key, nowMs)) return false;
    this.retryAtMs.delete(key);
    return true;
  }

  private fetchRequest(targets: readonly FollowerFetchTarget[]): FetchRequest {
    const topics = byTopic(targets, (target) => ({
      partitionIndex: target.partitionIndex,
      fetchOffset: target.fetchOffset,
      partitionMaxBytes: DEFAULT_REPLICA_FETCH_MAX_BYTES,
      currentLeaderEpoch: target.currentLeaderEpoch,
    }));
    return {
      replicaId: this.nodeId,
      maxWaitMs: this.fetchMaxWaitMs,
      minBytes: 1,
      maxBytes: DEFAULT_REPLICA_FETCH_RESPONSE_MAX_BYTES,
      topics,
    };
  }

  private sleep(ms: number): Promise<void> {
    if (this.isStopped) return Promise.resolve();
    this.wakeup.delayMs = ms;
    return this.wakeup.wait(this.timer);
  }
}
