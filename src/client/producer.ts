/**
 * A producer: records accumulate in per-partition batches and go out in Produce requests (Kafka's
 * RecordAccumulator and Sender, on one event loop).
 *
 * Batching. A record joins the open batch of its partition; a batch is ready once it holds
 * `batchSizeBytes`, once its first record has waited `lingerMs`, during `flush()`, or when its retry
 * backoff ends. When no Produce is in flight, every partition's first ready batch goes out in one request.
 * One request in flight at a time (Kafka's max.in.flight.requests.per.connection = 1, against cohort's
 * single leader): a retried batch is never overtaken by a later one, so records of a partition are written
 * in the order they were sent.
 *
 * Partitions. A record naming a partition goes there. Otherwise the partitioner chooses, which needs the
 * topic's partition count: records of a topic not seen yet wait while one Metadata call per topic finds it.
 *
 * Outcomes. Each `send` resolves with the record's offset (the batch's base offset plus its index) once
 * `acks` are satisfied. Retriable failures (NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, an unreachable server,
 * ...) retry the batch with backoff until the record's `deliveryTimeoutMs`; other codes reject it. As in
 * Kafka without idempotence, a retry after a timeout may write a record twice.
 */
import { CohortError, ErrorCode } from '../errors';
import { SYSTEM_TIME, type Time } from '../time';
import type * as b from './broker-messages';
import type { BrokerTransport } from './broker-transport';
import { errorFromCode } from './error-from-code';
import { ExponentialBackoff } from './exponential-backoff';
import { createDefaultPartitioner, type Partitioner } from './partitioner';
import {
  resolveProducerOptions,
  type ProducerOptions,
  type ResolvedProducerOptions,
} from './producer-options';
import { RetryingCaller } from './retrying-caller';
import type { Scheduler } from './scheduler';
import { TimeScheduler } from './time-scheduler';
import { topicPartitionKey } from './topic-partition';

/** A record to send. Strings are sent as UTF-8. */
export interface ProducerRecord {
  readonly topic: string;
  /** Null or absent for a record without a key (spread over the partitions round robin). */
  readonly key?: Buffer | string | null;
  /** Null is Kafka's null value (a tombstone on a compacted topic): Kafka consumers read null, this SDK's `valueIsNull`. */
  readonly value: Buffer | string | null;
  /** The partition to write to; default: the partitioner's choice. */
  readonly partition?: number;
  readonly headers?: readonly { readonly key: string; readonly value: Buffer | string }[];
  /** Milliseconds since the epoch; default: the time of the append on the server. */
  readonly timestampMs?: number;
}

/** Where a record was written. */
export interface RecordMetadata {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** The record's timestamp: the one it was sent with, or the time of the append. */
  readonly timestampMs: number;
}

/** What a `Producer` runs on. */
export interface ProducerDependencies {
  readonly transport: BrokerTransport;
  /** Default: the system clock. Tests pass a `ManualTime`. */
  readonly time?: Time;
  /** Source of jitter for backoffs, numbers in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
  /** Runs the producer's timers (lingering, backoffs, deadlines). Default: a `TimeScheduler` on `time`. */
  readonly scheduler?: Scheduler;
}

interface PendingRecord {
  readonly topic: string;
  readonly record: b.WireRecord;
  readonly sizeBytes: number;
  readonly deadlineMs: number;
  readonly resolve: (metadata: RecordMetadata) => void;
  readonly reject: (error: Error) => void;
}

interface Batch {
  readonly topic: string;
  readonly partition: number;
  readonly key: string;
  readonly records: PendingRecord[];
  sizeBytes: number;
  readonly createdMs: number;
  isClosed: boolean;
  attempts: number;
  retryAtMs: number;
}

/** Framing each record costs beyond its key, value and headers (offset, timestamp, lengths). */
const RECORD_OVERHEAD_BYTES = 20;
/** How much longer than the server's ack wait a Produce call may take before we give up on it. */
const PRODUCE_CALL_GRACE_MS = 1_000;
const NO_BYTES = Buffer.alloc(0);

/**
 * Sends records to cohort's log in batches. Create it with `CohortClient.producer`.
 *
 * ```ts
 * const producer = client.producer({ acks: -1 });
 * const { partition, offset } = await producer.send({ topic: 'orders', key: 'customer-7', value: '{"total":12}' });
 * await producer.close(); // sends what is still waiting, then stops
 * ```
 */
export class Producer {
  /** The settings in force, defaults filled in. */
  readonly options: ResolvedProducerOptions;

  private readonly transport: BrokerTransport;
  private readonly time: Time;
  private readonly scheduler: Scheduler;
  /** Set when the producer owns its scheduler: close() stops it. */
  private readonly ownScheduler: TimeScheduler | null;
  private readonly caller: RetryingCaller;
  private readonly backoff: ExponentialBackoff;
  private readonly partitioner: Partitioner;

  /** Each partition's batches, oldest first; only the last may be open. */
  private readonly batches = new Map<string, Batch[]>();
  private readonly partitionCounts = new Map<string, number>();
  /** Records whose topic's partition count is being looked up. */
  private readonly awaitingMetadata = new Map<string, PendingRecord[]>();
  private readonly pending = new Set<Promise<RecordMetadata>>();
  private inFlight: AbortController | null = null;
  private flushing = 0;
  private isClosed = false;
  /** Aborted once closed: ends metadata lookups and their backoffs. */
  private readonly lifetime = new AbortController();
  private closing: Promise<void> | null = null;
  /** Moments (monotonic ms) at which some batch becomes ready, each with a timer armed. */
  private readonly wakeups = new Set<number>();

  constructor(options: ProducerOptions, dependencies: ProducerDependencies) {
    this.options = resolveProducerOptions(options);
    this.transport = dependencies.transport;
    this.time = dependencies.time ?? SYSTEM_TIME;
    this.ownScheduler = dependencies.scheduler === undefined ? new TimeScheduler(this.time) : null;
    this.scheduler = dependencies.scheduler ?? (this.ownScheduler as TimeScheduler);
    this.backoff = new ExponentialBackoff({
      initialMs: this.options.retryBackoffMs,
      maxMs: this.options.retryBackoffMaxMs,
      ...(dependencies.random ? { random: dependencies.random } : {}),
    });
    this.caller = new RetryingCaller(this.time, this.scheduler, this.backoff);
    this.partitioner = options.partitioner ?? createDefaultPartitioner();
  }

  /**
   * Queues a record; resolves with where it was written once `acks` are satisfied, or rejects with a
   * `CohortError` (e.g. UNKNOWN_TOPIC_OR_PARTITION for a topic that never appeared, MESSAGE_TOO_LARGE, or
   * the last retriable error once `deliveryTimeoutMs` passed). Sends resolve in order within a partition.
   * Throws a TypeError or RangeError at once for a record that cannot be sent at all.
   */
  send(record: ProducerRecord): Promise<RecordMetadata> {
    if (this.isClosed) {
      return Promise.reject(new Error('the producer is closed: create another one to send more records'));
    }
    const wire = toWireRecord(record);
    const partition = record.partition;
    if (partition !== undefined) {
      const count = this.partitionCounts.get(record.topic);
      if (!Number.isSafeInteger(partition) || partition < 0 || (count !== undefined && partition >= count)) {
        throw new RangeError(
          `partition ${partition} does not exist in topic "${record.topic}"${count !== undefined ? ` (${count} partitions)` : ''}`,
        );
      }
    }
    let entry!: PendingRecord;
    const promise = new Promise<RecordMetadata>((resolve, reject) => {
      entry = {
        topic: record.topic,
        record: wire,
        sizeBytes: sizeOf(wire),
        deadlineMs: this.time.monotonicMs() + this.options.deliveryTimeoutMs,
        resolve,
        reject,
      };
    });
    this.pending.add(promise);
    const forget = (): void => void this.pending.delete(promise);
    promise.then(forget, forget);
    if (partition !== undefined) this.append(entry, partition);
    else this.place(entry);
    this.trySend();
    return promise;
  }

  /** Sends every queued record now, without lingering; resolves when each has succeeded or failed. */
  async flush(): Promise<void> {
    const waiting = [...this.pending];
    if (waiting.length === 0) return;
    this.flushing++;
    try {
      this.trySend();
      await Promise.allSettled(waiting);
    } finally {
      this.flushing--;
    }
  }

  /**
   * Refuses new sends, sends what is queued (as `flush` does) for at most `timeoutMs` (default
   * `requestTimeoutMs`), then rejects whatever is left with REQUEST_TIMED_OUT. Safe to call more than once.
   */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.closing ??= (async () => {
      this.isClosed = true;
      const bound = new AbortController();
      await Promise.race([
        this.flush(),
        this.caller.sleep(options.timeoutMs ?? this.options.requestTimeoutMs, bound.signal),
      ]);
      bound.abort();
      this.lifetime.abort();
      this.inFlight?.abort();
      const error = errorFromCode(
        ErrorCode.REQUEST_TIMED_OUT,
        'the producer closed before the record was acknowledged',
      );
      for (const list of this.batches.values())
        for (const batch of list) for (const r of batch.records) r.reject(error);
      for (const list of this.awaitingMetadata.values()) for (const r of list) r.reject(error);
      this.batches.clear();
      this.awaitingMetadata.clear();
      this.ownScheduler?.shutdown();
    })();
    return this.closing;
  }

  // ---- partitions ----

  private place(entry: PendingRecord): void {
    const count = this.partitionCounts.get(entry.topic);
    if (count !== undefined) return this.append(entry, this.choose(entry, count));
    let waiting = this.awaitingMetadata.get(entry.topic);
    if (waiting !== undefined) return void waiting.push(entry);
    this.awaitingMetadata.set(entry.topic, (waiting = [entry]));
    void this.lookUpPartitions(entry.topic);
  }

  private choose(entry: PendingRecord, count: number): number {
    const key = entry.record.key.length === 0 ? null : entry.record.key;
    const partition = this.partitioner({ topic: entry.topic, key }, count);
    if (!Number.isSafeInteger(partition) || partition < 0 || partition >= count) {
      throw new RangeError(
        `the partitioner chose partition ${partition} of "${entry.topic}", which has ${count}`,
      );
    }
    return partition;
  }

  /** Finds a topic's partition count, retrying until the oldest waiting record's delivery timeout. */
  private async lookUpPartitions(topic: string): Promise<void> {
    for (let failures = 0; ; failures++) {
      const waiting = this.awaitingMetadata.get(topic);
      if (waiting === undefined || waiting.length === 0) {
        this.awaitingMetadata.delete(topic);
        return;
      }
      const what = `Metadata of topic "${topic}"`;
      const outcome = await this.caller.call(
        what,
        (options) => this.transport.metadata({ topics: [topic] }, options),
        this.options.requestTimeoutMs,
        this.lifetime.signal,
      );
      let error: CohortError;
      if (outcome.kind === 'response') {
        const found = outcome.response.topics.find((t) => t.name === topic);
        if (found !== undefined && found.errorCode === ErrorCode.NONE && found.partitions.length > 0) {
          this.partitionCounts.set(topic, found.partitions.length);
          const ready = this.awaitingMetadata.get(topic) ?? [];
          this.awaitingMetadata.delete(topic);
          for (const entry of ready) {
            try {
              this.append(entry, this.choose(entry, found.partitions.length));
            } catch (e) {
              entry.reject(e as Error);
            }
          }
          this.trySend();
          return;
        }
        error = errorFromCode(found?.errorCode || ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, what);
      } else if (outcome.kind === 'failed') {
        error = outcome.error;
      } else {
        return;
      }
      const nowMs = this.time.monotonicMs();
      const list = this.awaitingMetadata.get(topic) ?? [];
      // Records past their delivery timeout, or facing an error no retry can fix, fail now.
      const keep = list.filter((entry) => {
        if (error.retriable && entry.deadlineMs > nowMs) return true;
        entry.reject(error);
        return false;
      });
      if (keep.length === 0) {
        this.awaitingMetadata.delete(topic);
        return;
      }
      this.awaitingMetadata.set(topic, keep);
      if (!(await this.caller.sleep(this.backoff.backoffMs(failures), this.lifetime.signal))) return;
    }
  }

  // ---- batches ----

  private append(entry: PendingRecord, partition: number): void {
    const key = topicPartitionKey({ topic: entry.topic, partition });
    let list = this.batches.get(key);
    if (list === undefined) this.batches.set(key, (list = []));
    let batch = list[list.length - 1];
    if (
      batch === undefined ||
      batch.isClosed ||
      batch.sizeBytes + entry.sizeBytes > this.options.batchSizeBytes
    ) {
      if (batch !== undefined) batch.isClosed = true;
      batch = {
        topic: entry.topic,
        partition,
        key,
        records: [],
        sizeBytes: 0,
        createdMs: this.time.monotonicMs(),
        isClosed: false,
        attempts: 0,
        retryAtMs: 0,
      };
      list.push(batch);
      this.wakeAt(this.readyAtMs(batch));
    }
    batch.records.push(entry);
    batch.sizeBytes += entry.sizeBytes;
    if (batch.sizeBytes >= this.options.batchSizeBytes) batch.isClosed = true;
  }

  /** When `batch` may go out (monotonic ms): at once if full, flushing, closing or retried, else after lingering. */
  private readyAtMs(batch: Batch): number {
    const sendableMs =
      batch.attempts > 0 || batch.isClosed || this.flushing > 0 || this.isClosed
        ? 0
        : batch.createdMs + this.options.lingerMs;
    return Math.max(sendableMs, batch.retryAtMs);
  }

  /** Arms one timer per distinct moment a batch becomes ready. */
  private wakeAt(atMs: number): void {
    if (this.wakeups.has(atMs)) return;
    this.wakeups.add(atMs);
    this.scheduler.schedule(Math.max(0, atMs - this.time.monotonicMs()), () => {
      this.wakeups.delete(atMs);
      this.trySend();
    });
  }

  // ---- the sender ----

  private trySend(): void {
    if (this.inFlight !== null) return;
    const nowMs = this.time.monotonicMs();
    const sending: Batch[] = [];
    for (const list of this.batches.values()) {
      const first = list[0];
      if (first === undefined) continue;
      const readyAtMs = this.readyAtMs(first);
      if (readyAtMs <= nowMs) sending.push(first);
      // A timer may fire a little before the clock (whole milliseconds) shows its moment: look again then.
      else this.wakeAt(readyAtMs);
    }
    if (sending.length === 0) return;
    for (const batch of sending) {
      batch.isClosed = true;
      batch.attempts++;
    }
    const scope = new AbortController();
    this.inFlight = scope;
    void this.produce(sending, scope).finally(() => {
      if (this.inFlight === scope) this.inFlight = null;
      this.trySend();
    });
  }

  private async produce(sending: readonly Batch[], scope: AbortController): Promise<void> {
    const byTopic = new Map<string, b.ProducePartitionData[]>();
    for (const batch of sending) {
      let list = byTopic.get(batch.topic);
      if (list === undefined) byTopic.set(batch.topic, (list = []));
      list.push({ partitionIndex: batch.partition, records: batch.records.map((r) => r.record) });
    }
    const request: b.ProduceRequest = {
      acks: this.options.acks,
      timeoutMs: this.options.requestTimeoutMs,
      topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
    };
    const outcome = await this.caller.call(
      'Produce',
      (options) => this.transport.produce(request, options),
      this.options.requestTimeoutMs + PRODUCE_CALL_GRACE_MS,
      scope.signal,
    );
    if (outcome.kind === 'aborted') return; // closing: close() rejects what is left
    if (outcome.kind === 'failed') {
      for (const batch of sending) this.onBatchError(batch, outcome.error);
      return;
    }
    const answers = new Map<string, b.ProducePartitionResponse>();
    for (const t of outcome.response.topics) {
      for (const p of t.partitions)
        answers.set(topicPartitionKey({ topic: t.name, partition: p.partitionIndex }), p);
    }
    for (const batch of sending) {
      const answer = answers.get(batch.key);
      const what = `Produce to ${batch.topic}-${batch.partition}`;
      if (answer === undefined) {
        this.onBatchError(
          batch,
          errorFromCode(ErrorCode.UNKNOWN_SERVER_ERROR, `${what}: no answer for the partition`),
        );
      } else if (answer.errorCode !== ErrorCode.NONE) {
        this.onBatchError(batch, errorFromCode(answer.errorCode, what));
      } else {
        this.complete(batch, answer);
      }
    }
  }

  private complete(batch: Batch, answer: b.ProducePartitionResponse): void {
    this.removeBatch(batch);
    batch.records.forEach((r, i) =>
      r.resolve({
        topic: batch.topic,
        partition: batch.partition,
        offset: answer.baseOffset + BigInt(i),
        timestampMs: r.record.timestampMs > 0 ? r.record.timestampMs : answer.logAppendTimeMs,
      }),
    );
  }

  private onBatchError(batch: Batch, error: CohortError): void {
    const nowMs = this.time.monotonicMs();
    const waitMs = this.backoff.backoffMs(batch.attempts - 1);
    if (error.retriable && !this.isClosed) {
      // Records whose time is up fail; the rest of the batch is tried again, still first in its partition.
      const expired = batch.records.filter((r) => r.deadlineMs <= nowMs + waitMs);
      if (expired.length < batch.records.length) {
        for (const r of expired) r.reject(error);
        const kept = batch.records.filter((r) => r.deadlineMs > nowMs + waitMs);
        batch.records.length = 0;
        batch.records.push(...kept);
        batch.retryAtMs = nowMs + waitMs;
        this.wakeAt(batch.retryAtMs);
        return;
      }
    }
    this.removeBatch(batch);
    for (const r of batch.records) r.reject(error);
  }

  private removeBatch(batch: Batch): void {
    const list = this.batches.get(batch.key);
    if (list === undefined) return;
    const i = list.indexOf(batch);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.batches.delete(batch.key);
  }
}

function bytes(value: Buffer | string | null | undefined, what: string): Buffer {
  if (value === null || value === undefined) return NO_BYTES;
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (Buffer.isBuffer(value)) return value;
  throw new TypeError(`${what} must be a Buffer, a string or null`);
}

function toWireRecord(record: ProducerRecord): b.WireRecord {
  if (typeof record.topic !== 'string' || record.topic === '')
    throw new TypeError('topic must be a non-empty string');
  const timestampMs = record.timestampMs ?? 0;
  if (!Number.isSafeInteger(timestampMs) || timestampMs < 0) {
    throw new RangeError(
      `timestampMs must be a non-negative whole number of milliseconds, got ${timestampMs}`,
    );
  }
  return {
    offset: 0n,
    timestampMs,
    key: bytes(record.key, 'key'),
    value: bytes(record.value, 'value'),
    headers: (record.headers ?? []).map((h) => ({ key: h.key, value: bytes(h.value, `header "${h.key}"`) })),
    valueNull: record.value === null,
  };
}

function sizeOf(record: b.WireRecord): number {
  let size = RECORD_OVERHEAD_BYTES + record.key.length + record.value.length;
  for (const h of record.headers) size += Buffer.byteLength(h.key) + h.value.length;
  return size;
}
