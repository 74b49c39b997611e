/**
 * A consumer: a `GroupMember` for the partitions, and a long-poll Fetch loop for their records (Kafka's
 * KafkaConsumer with its Fetcher and ConsumerCoordinator's offset handling, on one event loop).
 *
 * Positions. Each owned partition has a position: the offset of the next record to hand over. When the
 * member is assigned a partition, its position comes from the group's committed offset (OffsetFetch), or,
 * when nothing is committed, from ListOffsets (`autoOffsetReset`: earliest = log start, latest = high
 * watermark). A position moves past a record only once its handler resolved, so whatever is committed has
 * been processed (at-least-once).
 *
 * The loop. One Fetch in flight at a time, for every partition that has a position and is neither paused
 * nor being revoked nor backing off after an error, each from its position; the server holds it up to
 * `maxWaitMs` until records arrive. Each partition's records go to the handler in offset order, one call at
 * a time, under the member's stall guard (`GroupMember.process`). A response for a position that changed
 * meanwhile is dropped (Kafka's Fetcher does the same), so a partition revoked, lost or reset while its
 * Fetch was out never hands over stale records. New positions and `resume` cut the long poll short so the
 * next Fetch includes them at once.
 *
 * Commits. Fenced by generation (the member's OffsetCommit), one at a time in the order asked, so an older
 * commit never lands after a newer one. With `autoCommit`, every `autoCommitIntervalMs` while the group is
 * stable, and before a partition is given up in an orderly way (`revoked`, on a rebalance and on
 * `close()`): delivery on it stops first, then its position is committed, then the partition goes. A `lost`
 * partition is dropped without a commit: its new owner may already be ahead.
 */
import { EventEmitter } from 'node:events';
import { CohortError, ErrorCode } from '../errors';
import { SYSTEM_TIME, type Time } from '../time';
import type * as b from './broker-messages';
import type { BrokerTransport } from './broker-transport';
import type { CommittedEvent, ConsumerEvents } from './consumer-events';
import type { ConsumerRecord, RunHandlers } from './consumer-handlers';
import {
  resolveConsumerSettings,
  type ConsumerOptions,
  type ResolvedConsumerSettings,
} from './consumer-options';
import { errorFromCode } from './error-from-code';
import { ExponentialBackoff } from './exponential-backoff';
import { GroupMember, type OffsetToCommit } from './group-member';
import type { AssignedEvent, LostEvent, RevokedEvent } from './group-member-events';
import {
  resolveGroupMemberOptions,
  type GroupMemberOptions,
  type ResolvedGroupMemberOptions,
} from './group-member-options';
import type { GroupTransport } from './group-transport';
import { RetryingCaller } from './retrying-caller';
import type { ScheduledTask } from './scheduler';
import { TimeScheduler } from './time-scheduler';
import { compareTopicPartitions, topicPartitionKey, type TopicPartition } from './topic-partition';

/** What a `Consumer` runs on. */
export interface ConsumerDependencies {
  /** For the group member: join, sync, heartbeat, commits. */
  readonly groupTransport: GroupTransport;
  /** For Fetch, ListOffsets and Metadata. */
  readonly brokerTransport: BrokerTransport;
  /** Sent with JoinGroup; shown by `cohort groups describe`. */
  readonly clientId?: string;
  /** Default: the system clock. Tests pass a `ManualTime`. */
  readonly time?: Time;
  /** Source of jitter for backoffs, numbers in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
}

const CONSUMER_REPLICA_ID = -1;
const LATEST_TIMESTAMP = -1;
const EARLIEST_TIMESTAMP = -2;
const NO_KEY = null;

interface PartitionState {
  readonly tp: TopicPartition;
  readonly key: string;
  /** The next offset to hand over; null until known. */
  position: bigint | null;
  /** What this consumer last committed or read as committed. */
  committed: bigint | null;
  /** The position is outside the log: look it up by `autoOffsetReset`, not in the committed offsets. */
  needsReset: boolean;
  isInitializing: boolean;
  isRevoking: boolean;
  /** No Fetch or lookup for the partition before this (monotonic ms), after a retriable error. */
  retryAtMs: number;
}

/**
 * Consumes topics as a member of a group. Create it with `CohortClient.consumer`; it joins the group when
 * `run` is called.
 *
 * ```ts
 * const consumer = client.consumer({ groupId: 'billing', topics: ['orders'], autoOffsetReset: 'earliest' });
 * const running = consumer.run({
 *   eachMessage: async ({ partition, message }) => bill(partition, message.offset, message.value),
 * });
 * // ... later: leaves the group after committing what was processed; `running` then resolves.
 * await consumer.close();
 * ```
 */
export class Consumer extends EventEmitter<ConsumerEvents> {
  /** The consumer-specific settings in force, defaults filled in. */
  readonly settings: ResolvedConsumerSettings;
  /** The membership settings in force. */
  readonly memberOptions: ResolvedGroupMemberOptions;

  private readonly memberInput: GroupMemberOptions;
  private readonly groupTransport: GroupTransport;
  private readonly broker: BrokerTransport;
  private readonly time: Time;
  private readonly random: (() => number) | undefined;
  private readonly scheduler: TimeScheduler;
  private readonly caller: RetryingCaller;
  private readonly backoff: ExponentialBackoff;

  private _member: GroupMember | null = null;
  private handlers: RunHandlers | null = null;
  private isRunning = false;
  private readonly partitions = new Map<string, PartitionState>();
  private readonly pausedKeys = new Set<string>();
  private fetchScope: AbortController | null = null;
  private wakeUp: (() => void) | null = null;
  private fetchFailures = 0;
  /** The delivery of the last Fetch response, settled when it has handed everything over. */
  private delivering: Promise<void> = Promise.resolve();
  /** The tail of the commit queue. */
  private commits: Promise<unknown> = Promise.resolve();
  private autoCommitTask: ScheduledTask | null = null;
  private failure: Error | null = null;
  private closing: Promise<void> | null = null;
  private settleRun: { resolve(): void; reject(error: Error): void } | null = null;

  constructor(options: ConsumerOptions, dependencies: ConsumerDependencies) {
    super();
    this.settings = resolveConsumerSettings(options);
    this.groupTransport = dependencies.groupTransport;
    this.broker = dependencies.brokerTransport;
    this.time = dependencies.time ?? SYSTEM_TIME;
    this.random = dependencies.random;
    this.scheduler = new TimeScheduler(this.time);
    const {
      autoOffsetReset: _autoOffsetReset,
      autoCommit: _autoCommit,
      autoCommitIntervalMs: _autoCommitIntervalMs,
      maxWaitMs: _maxWaitMs,
      minBytes: _minBytes,
      maxBytes: _maxBytes,
      partitionMaxBytes: _partitionMaxBytes,
      partitionsPerTopic,
      ...membership
    } = options;
    this.memberInput = {
      ...membership,
      clientId: dependencies.clientId ?? '',
      partitionsPerTopic: partitionsPerTopic ?? (() => this.partitionCounts()),
    };
    // Checked now, not at run(): a mistake should surface where the consumer is made.
    this.memberOptions = resolveGroupMemberOptions(this.memberInput);
    this.backoff = new ExponentialBackoff({
      initialMs: this.memberOptions.retryBackoffMs,
      maxMs: this.memberOptions.retryBackoffMaxMs,
      ...(this.random ? { random: this.random } : {}),
    });
    this.caller = new RetryingCaller(this.time, this.scheduler, this.backoff);
  }

  /** The consumer's group member once `run` was called (its `memberId`, `generationId`, `state`); else null. */
  get member(): GroupMember | null {
    return this._member;
  }

  /**
   * Joins the group and hands every record of the partitions it gets to `eachMessage` (or, per partition
   * and Fetch, to `eachBatch`). Resolves when the consumer has stopped after `close()`; rejects with the
   * error that stopped it otherwise (a handler that threw, a fatal group error such as FENCED_INSTANCE_ID,
   * `autoOffsetReset: 'none'` without a committed offset). Call it once.
   */
  run(handlers: RunHandlers): Promise<void> {
    if (this.handlers !== null || this.closing !== null) {
      return Promise.reject(new Error('run() may be called once, before close()'));
    }
    const count = (handlers.eachMessage ? 1 : 0) + (handlers.eachBatch ? 1 : 0);
    if (count !== 1)
      return Promise.reject(new TypeError('run() needs exactly one of eachMessage or eachBatch'));
    this.handlers = handlers;
    this.isRunning = true;
    const done = new Promise<void>((resolve, reject) => (this.settleRun = { resolve, reject }));
    const member = new GroupMember(this.memberInput, {
      transport: this.groupTransport,
      time: this.time,
      ...(this.random ? { random: this.random } : {}),
    });
    this._member = member;
    member.on('assigned', (event) => this.onAssigned(event));
    member.on('revoked', (event) => this.onRevoked(event));
    member.on('lost', (event) => this.onLost(event));
    member.on('error', (error) => this.fail(error));
    member.on('closed', () => void this.close()); // e.g. the member's signal was aborted
    this.scheduleAutoCommit();
    this.fetchLoop().catch((error: unknown) =>
      this.fail(error instanceof Error ? error : new Error(String(error))),
    );
    return done;
  }

  /**
   * Commits offsets in the member's current generation: the positions of every owned partition that moved
   * since its last commit, or exactly `offsets` (each the offset of the NEXT record to consume). Rejects with
   * a `CohortError` when the generation is gone or the group is rebalancing (REBALANCE_IN_PROGRESS,
   * ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID): the partitions may belong to another member now.
   */
  async commit(offsets?: readonly OffsetToCommit[]): Promise<void> {
    if (this._member === null) throw new Error('commit() needs a running consumer: call run() first');
    const list = offsets ?? this.uncommitted(false);
    if (list.length === 0) return;
    await this.commitInOrder(list);
  }

  /**
   * Stops handing over records of `partitions` (owned ones only) until `resume`; positions stay where they
   * are. A handler already running for one of them finishes; the rest of its batch waits.
   */
  pause(partitions: readonly TopicPartition[]): void {
    for (const tp of partitions) {
      if (!this.partitions.has(topicPartitionKey(tp))) {
        throw new Error(`cannot pause ${tp.topic}-${tp.partition}: it is not assigned to this consumer`);
      }
    }
    for (const tp of partitions) this.pausedKeys.add(topicPartitionKey(tp));
  }

  /** Hands over records of `partitions` again, from where they stopped; the next Fetch includes them at once. */
  resume(partitions: readonly TopicPartition[]): void {
    let changed = false;
    for (const tp of partitions) changed = this.pausedKeys.delete(topicPartitionKey(tp)) || changed;
    if (changed) this.wake();
  }

  /** The paused partitions. */
  paused(): TopicPartition[] {
    return [...this.partitions.values()]
      .filter((s) => this.pausedKeys.has(s.key))
      .map((s) => s.tp)
      .sort(compareTopicPartitions);
  }

  /** The partitions owned now. */
  assignment(): TopicPartition[] {
    return [...this.partitions.values()].map((s) => s.tp).sort(compareTopicPartitions);
  }

  /** The offset of the next record handed over for `tp`; null if not owned or not known yet. */
  position(tp: TopicPartition): bigint | null {
    return this.partitions.get(topicPartitionKey(tp))?.position ?? null;
  }

  /**
   * Stops: no more records are handed over, the handler running finishes, the owned partitions are revoked
   * (`revoked`, and with `autoCommit` their positions are committed), and the member leaves the group (a
   * dynamic member sends LeaveGroup, so the others rebalance at once). Bounded by `timeoutMs` (default the
   * membership's `closeTimeoutMs`). Safe to call more than once. Do not await it inside a handler: it waits
   * for the handler.
   */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.closing ??= this.shutdown(options.timeoutMs ?? this.memberOptions.closeTimeoutMs);
    return this.closing;
  }

  // ---- the member's events ----

  private onAssigned(event: AssignedEvent): void {
    for (const tp of event.partitions) {
      const key = topicPartitionKey(tp);
      if (this.partitions.has(key)) continue;
      this.partitions.set(key, {
        tp: { topic: tp.topic, partition: tp.partition },
        key,
        position: null,
        committed: null,
        needsReset: false,
        isInitializing: false,
        isRevoking: false,
        retryAtMs: 0,
      });
    }
    this.wake();
    this.emitSafely('assigned', event);
  }

  private onRevoked(event: RevokedEvent): void {
    const states = event.partitions
      .map((tp) => this.partitions.get(topicPartitionKey(tp)))
      .filter((s): s is PartitionState => s !== undefined);
    for (const s of states) s.isRevoking = true;
    event.waitUntil(
      (async () => {
        // The delivery in progress stops before its next record of a revoked partition.
        await this.delivering;
        if (this.settings.autoCommit) {
          const offsets = states.filter((s) => this.isCurrent(s)).flatMap((s) => this.offsetToCommit(s));
          if (offsets.length > 0) await this.commitInOrder(offsets).catch(() => undefined);
        }
        await this.emitRevoked(event);
        for (const s of states) this.drop(s);
      })(),
    );
  }

  private onLost(event: LostEvent): void {
    for (const tp of event.partitions) {
      const s = this.partitions.get(topicPartitionKey(tp));
      if (s !== undefined) this.drop(s);
    }
    this.emitSafely('lost', event);
  }

  /** Our own `revoked`, after the consumer acted; its `waitUntil` promises are awaited before the partitions go. */
  private async emitRevoked(event: RevokedEvent): Promise<void> {
    const waits: PromiseLike<unknown>[] = [];
    let isSealed = false;
    this.emitSafely('revoked', {
      generationId: event.generationId,
      partitions: event.partitions,
      reason: event.reason,
      waitUntil: (work) => {
        if (isSealed) throw new Error('waitUntil must be called synchronously inside the revoked listener');
        waits.push(work);
      },
    });
    isSealed = true;
    await Promise.allSettled(waits);
  }

  // ---- the fetch loop ----

  private async fetchLoop(): Promise<void> {
    while (this.isRunning) {
      this.initializePositions();
      const fetched = this.fetchable();
      if (fetched.length === 0) {
        await this.idle();
        continue;
      }
      const request = this.fetchRequest(fetched);
      const scope = new AbortController();
      this.fetchScope = scope;
      const outcome = await this.caller.call(
        `Fetch for group "${this.memberOptions.groupId}"`,
        (options) => this.broker.fetch(request, options),
        this.settings.maxWaitMs + this.memberOptions.requestTimeoutMs,
        scope.signal,
      );
      this.fetchScope = null;
      if (!this.isRunning || outcome.kind === 'aborted') continue;
      if (outcome.kind === 'failed') {
        if (!outcome.error.retriable) return this.fail(outcome.error);
        await this.idle(this.backoff.backoffMs(this.fetchFailures++));
        continue;
      }
      this.fetchFailures = 0;
      if (outcome.response.errorCode !== ErrorCode.NONE) {
        return this.fail(errorFromCode(outcome.response.errorCode, 'Fetch'));
      }
      const asked = new Map(fetched.map((s) => [s.key, s.position as bigint]));
      const delivery = this.deliver(outcome.response, asked);
      this.delivering = delivery;
      await delivery;
    }
  }

  /** Partitions a Fetch may ask for now. */
  private fetchable(): PartitionState[] {
    const nowMs = this.time.monotonicMs();
    const out: PartitionState[] = [];
    for (const s of this.partitions.values()) {
      if (s.position !== null && !s.isRevoking && s.retryAtMs <= nowMs && !this.pausedKeys.has(s.key))
        out.push(s);
    }
    return out;
  }

  private fetchRequest(states: readonly PartitionState[]): b.FetchRequest {
    const byTopic = new Map<string, b.FetchPartition[]>();
    for (const s of states) {
      let list = byTopic.get(s.tp.topic);
      if (list === undefined) byTopic.set(s.tp.topic, (list = []));
      list.push({
        partitionIndex: s.tp.partition,
        fetchOffset: s.position as bigint,
        partitionMaxBytes: this.settings.partitionMaxBytes,
      });
    }
    return {
      replicaId: CONSUMER_REPLICA_ID,
      maxWaitMs: this.settings.maxWaitMs,
      minBytes: this.settings.minBytes,
      maxBytes: this.settings.maxBytes,
      topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
    };
  }

  /**
   * Waits until something changes (`wake`), `ms` pass, or the earliest partition backoff ends. Never
   * throws; resolves early on close.
   */
  private idle(ms?: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (!this.isRunning) return resolve();
      const nowMs = this.time.monotonicMs();
      let delayMs = ms ?? Infinity;
      for (const s of this.partitions.values()) {
        if (s.retryAtMs > nowMs) delayMs = Math.min(delayMs, s.retryAtMs - nowMs);
      }
      const done = (): void => {
        task?.cancel();
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      const task = delayMs === Infinity ? null : this.scheduler.schedule(delayMs, done);
      this.wakeUp = done;
    });
  }

  /** Something the loop should act on now: cut a long poll short, end an idle wait. */
  private wake(): void {
    this.fetchScope?.abort();
    this.wakeUp?.();
  }

  private async deliver(response: b.FetchResponse, asked: ReadonlyMap<string, bigint>): Promise<void> {
    const member = this._member as GroupMember;
    for (const topic of response.responses) {
      for (const data of topic.partitions) {
        if (!this.isRunning) return;
        const key = topicPartitionKey({ topic: topic.name, partition: data.partitionIndex });
        const state = this.partitions.get(key);
        const offset = asked.get(key);
        if (state === undefined || offset === undefined || state.position !== offset) continue; // stale
        if (data.errorCode !== ErrorCode.NONE) {
          this.onPartitionError(state, data.errorCode);
          continue;
        }
        let records = data.records;
        if (records.length > 0 && records[0].offset < offset)
          records = records.filter((r) => r.offset >= offset);
        if (records.length === 0 || !this.isDeliverable(state)) continue;
        try {
          await member.process((signal) => this.handOver(state, data.highWatermark, records, signal));
        } catch (error) {
          // Work on a partition that was lost or revoked meanwhile, or cut short by the member closing (its
          // signal was aborted), was abandoned on purpose; anything else is the handler's failure and stops
          // the consumer.
          const isMemberShut =
            member.state === 'closing' || member.state === 'closed' || member.state === 'failed';
          if (this.isRunning && this.isCurrent(state) && !isMemberShut) {
            return this.fail(error instanceof Error ? error : new Error(String(error)));
          }
        }
      }
    }
  }

  private async handOver(
    state: PartitionState,
    highWatermark: bigint,
    records: readonly b.WireRecord[],
    signal: AbortSignal,
  ): Promise<void> {
    const handlers = this.handlers as RunHandlers;
    const { topic, partition } = state.tp;
    if (handlers.eachMessage !== undefined) {
      for (const record of records) {
        if (!this.isDeliverable(state)) return;
        await handlers.eachMessage({
          topic,
          partition,
          message: consumerRecord(topic, partition, record),
          signal,
        });
        if (this.isCurrent(state)) state.position = record.offset + 1n;
      }
      return;
    }
    const messages = records.map((r) => consumerRecord(topic, partition, r));
    const first = records[0].offset;
    const last = records[records.length - 1].offset;
    await (handlers.eachBatch as NonNullable<RunHandlers['eachBatch']>)({
      batch: { topic, partition, highWatermark, messages },
      resolveOffset: (offset) => {
        if (typeof offset !== 'bigint' || offset < first || offset > last) {
          throw new RangeError(`resolveOffset(${String(offset)}) is outside the batch, ${first}..${last}`);
        }
        if (this.isCurrent(state) && state.position !== null && offset + 1n > state.position) {
          state.position = offset + 1n;
        }
      },
      isRunning: () => this.isDeliverable(state),
      signal,
    });
    if (this.isCurrent(state) && state.position !== null && last + 1n > state.position)
      state.position = last + 1n;
  }

  private onPartitionError(state: PartitionState, code: ErrorCode): void {
    const what = `Fetch of ${state.tp.topic}-${state.tp.partition} at offset ${state.position}`;
    if (code === ErrorCode.OFFSET_OUT_OF_RANGE) {
      if (this.settings.autoOffsetReset === 'none') {
        return this.fail(errorFromCode(code, `${what}, and autoOffsetReset is none`));
      }
      state.position = null;
      state.needsReset = true;
      return;
    }
    if (errorFromCode(code, what).retriable) {
      state.retryAtMs = this.time.monotonicMs() + this.memberOptions.retryBackoffMs;
      return;
    }
    this.fail(errorFromCode(code, what));
  }

  // ---- positions ----

  /** Starts looking up positions of partitions that have none (one lookup at a time per partition). */
  private initializePositions(): void {
    const nowMs = this.time.monotonicMs();
    const pending = [...this.partitions.values()].filter(
      (s) => s.position === null && !s.isInitializing && !s.isRevoking && s.retryAtMs <= nowMs,
    );
    if (pending.length === 0) return;
    for (const s of pending) s.isInitializing = true;
    void this.lookUpPositions(pending).finally(() => {
      for (const s of pending) s.isInitializing = false;
      this.wake();
    });
  }

  private async lookUpPositions(states: readonly PartitionState[]): Promise<void> {
    const member = this._member as GroupMember;
    const retryLater = (list: readonly PartitionState[]): void => {
      const atMs = this.time.monotonicMs() + this.memberOptions.retryBackoffMs;
      for (const s of list) s.retryAtMs = atMs;
    };
    const toReset = states.filter((s) => s.needsReset);
    const fromCommits = states.filter((s) => !s.needsReset);
    if (fromCommits.length > 0) {
      let committed;
      try {
        committed = await member.fetchOffsets(fromCommits.map((s) => s.tp));
      } catch {
        // A rebalance or an unreachable coordinator: the member sorts out its generation; try again shortly.
        return retryLater(fromCommits);
      }
      const byKey = new Map(committed.map((c) => [topicPartitionKey(c), c.offset]));
      for (const s of fromCommits) {
        const offset = byKey.get(s.key) ?? null;
        if (!this.isCurrent(s)) continue;
        if (offset === null) toReset.push(s);
        else {
          s.position = offset;
          s.committed = offset;
        }
      }
    }
    const lookups = toReset.filter((s) => this.isCurrent(s));
    if (lookups.length === 0) return;
    const reset = this.settings.autoOffsetReset;
    if (reset === 'none') {
      const names = lookups.map((s) => `${s.tp.topic}-${s.tp.partition}`).join(', ');
      return this.fail(
        new CohortError(
          ErrorCode.OFFSET_OUT_OF_RANGE,
          `no committed offset (or one outside the log) for ${names}, and autoOffsetReset is none`,
        ),
      );
    }
    const timestamp = reset === 'earliest' ? EARLIEST_TIMESTAMP : LATEST_TIMESTAMP;
    const byTopic = new Map<string, b.ListOffsetsPartition[]>();
    for (const s of lookups) {
      let list = byTopic.get(s.tp.topic);
      if (list === undefined) byTopic.set(s.tp.topic, (list = []));
      list.push({ partitionIndex: s.tp.partition, timestamp });
    }
    const request: b.ListOffsetsRequest = {
      topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
    };
    let response: b.ListOffsetsResponse;
    try {
      response = await this.caller.retry(
        'ListOffsets',
        (options) => this.broker.listOffsets(request, options),
        this.memberOptions.requestTimeoutMs,
      );
    } catch {
      return retryLater(lookups);
    }
    const answers = new Map<string, b.ListOffsetsPartitionResponse>();
    for (const t of response.topics) {
      for (const p of t.partitions)
        answers.set(topicPartitionKey({ topic: t.name, partition: p.partitionIndex }), p);
    }
    for (const s of lookups) {
      const answer = answers.get(s.key);
      if (!this.isCurrent(s)) continue;
      if (answer !== undefined && answer.errorCode === ErrorCode.NONE && answer.offset >= 0n) {
        s.position = answer.offset;
        s.needsReset = false;
      } else if (answer === undefined || errorFromCode(answer.errorCode, 'ListOffsets').retriable) {
        retryLater([s]);
      } else {
        return this.fail(errorFromCode(answer.errorCode, `ListOffsets of ${s.tp.topic}-${s.tp.partition}`));
      }
    }
  }

  /** Partition counts of every topic, for the assignor when this consumer leads. */
  private async partitionCounts(): Promise<Map<string, number>> {
    const response = await this.caller.retry(
      'Metadata',
      (options) => this.broker.metadata({ topics: [] }, options),
      this.memberOptions.requestTimeoutMs,
    );
    const counts = new Map<string, number>();
    for (const t of response.topics)
      if (t.errorCode === ErrorCode.NONE) counts.set(t.name, t.partitions.length);
    return counts;
  }

  // ---- commits ----

  private scheduleAutoCommit(): void {
    if (!this.settings.autoCommit || !this.isRunning) return;
    this.autoCommitTask = this.scheduler.schedule(this.settings.autoCommitIntervalMs, () => {
      this.autoCommitTask = null;
      void this.autoCommit().finally(() => this.scheduleAutoCommit());
    });
  }

  private async autoCommit(): Promise<void> {
    if (this._member?.state !== 'stable') return; // the revocation commits what a rebalance interrupts
    const offsets = this.uncommitted(true);
    if (offsets.length === 0) return;
    // A failure is retried at the next interval or covered by the revocation's commit.
    await this.commitInOrder(offsets).catch(() => undefined);
  }

  /** Positions that moved since their last commit (`skipRevoking`: leave revoking ones to the revocation). */
  private uncommitted(skipRevoking: boolean): OffsetToCommit[] {
    const out: OffsetToCommit[] = [];
    for (const s of this.partitions.values())
      if (!(skipRevoking && s.isRevoking)) out.push(...this.offsetToCommit(s));
    return out;
  }

  private offsetToCommit(s: PartitionState): OffsetToCommit[] {
    return s.position === null || s.position === s.committed
      ? []
      : [{ topic: s.tp.topic, partition: s.tp.partition, offset: s.position }];
  }

  /** Queues a commit behind those already asked for, so they reach the coordinator in order. */
  private commitInOrder(offsets: readonly OffsetToCommit[]): Promise<void> {
    const member = this._member as GroupMember;
    const run = this.commits.then(async () => {
      const generationId = member.generationId;
      await member.commitOffsets(offsets);
      for (const o of offsets) {
        const s = this.partitions.get(topicPartitionKey(o));
        if (s !== undefined) s.committed = o.offset;
      }
      const event: CommittedEvent = { generationId, offsets };
      this.emitSafely('committed', event);
    });
    this.commits = run.catch(() => undefined);
    return run;
  }

  // ---- close and failure ----

  private fail(error: Error): void {
    this.failure ??= error;
    void this.close();
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    const deadlineMs = this.time.monotonicMs() + Math.max(0, timeoutMs);
    const remainingMs = (): number => Math.max(0, deadlineMs - this.time.monotonicMs());
    this.isRunning = false;
    this.autoCommitTask?.cancel();
    this.wake();
    const member = this._member;
    if (member !== null) {
      const bound = new AbortController();
      await Promise.race([this.delivering, this.caller.sleep(remainingMs(), bound.signal)]);
      bound.abort();
      await member.close({ timeoutMs: remainingMs() });
    }
    this.partitions.clear();
    this.pausedKeys.clear();
    this.scheduler.shutdown();
    this.emitSafely('closed');
    if (this.failure !== null) this.settleRun?.reject(this.failure);
    else this.settleRun?.resolve();
  }

  // ---- plumbing ----

  private isCurrent(state: PartitionState): boolean {
    return this.partitions.get(state.key) === state;
  }

  private isDeliverable(state: PartitionState): boolean {
    return this.isRunning && this.isCurrent(state) && !state.isRevoking && !this.pausedKeys.has(state.key);
  }

  private drop(state: PartitionState): void {
    if (!this.isCurrent(state)) return;
    this.partitions.delete(state.key);
    this.pausedKeys.delete(state.key);
  }

  private emitSafely<K extends keyof ConsumerEvents>(name: K, ...args: ConsumerEvents[K]): void {
    try {
      (this.emit as (name: K, ...args: ConsumerEvents[K]) => boolean)(name, ...args);
    } catch (error) {
      // A listener's bug must not corrupt the consumer: report it as Node reports a timer callback's throw.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}

function consumerRecord(topic: string, partition: number, record: b.WireRecord): ConsumerRecord {
  return {
    topic,
    partition,
    offset: record.offset,
    timestampMs: record.timestampMs,
    key: record.key.length === 0 ? NO_KEY : record.key,
    value: record.value,
    valueIsNull: record.valueNull === true,
    headers: record.headers,
  };
}
