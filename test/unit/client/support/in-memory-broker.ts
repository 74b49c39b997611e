import type * as b from '../../../../src/client/broker-messages';
import type { BrokerTransport } from '../../../../src/client/broker-transport';
import type { CallOptions } from '../../../../src/client/group-transport';
import { TimeScheduler } from '../../../../src/client/time-scheduler';
import { CohortError, ErrorCode } from '../../../../src/errors';
import type { Time } from '../../../../src/time';

type Method = keyof BrokerTransport;

/** A scripted outcome for the next call of a method: a rejection, or a response computed from the request. */
export type BrokerReply<K extends Method> =
  | CohortError
  | ((request: Parameters<BrokerTransport[K]>[0]) => Awaited<ReturnType<BrokerTransport[K]>> | undefined);

interface ParkedFetch {
  readonly request: b.FetchRequest;
  readonly resolve: (response: b.FetchResponse) => void;
  readonly cancel: () => void;
}

/**
 * A single-node log in memory for the SDK's unit tests: topics with partitions, Produce appends (the high
 * watermark is the log end at once, as on a node without followers), Fetch long-polls on the given clock
 * (answered when a requested partition has records, or after `maxWaitMs`), ListOffsets and Metadata. Every
 * call is recorded; `script` makes the next call of a method fail or answer differently. Answers are
 * promises, so callers see them after a microtask, as with a network.
 */
export class InMemoryBroker implements BrokerTransport {
  readonly calls: { method: Method; request: unknown; options: CallOptions }[] = [];
  private readonly logs = new Map<string, b.WireRecord[][]>();
  private readonly parked = new Set<ParkedFetch>();
  private readonly scripts = new Map<Method, BrokerReply<Method>[]>();
  private readonly scheduler: TimeScheduler;
  private readonly holding = new Map<Method, (() => void)[]>();

  constructor(private readonly time: Time) {
    this.scheduler = new TimeScheduler(time);
  }

  /** Creates a topic directly (no call recorded). */
  addTopic(name: string, partitions: number): this {
    this.logs.set(
      name,
      Array.from({ length: partitions }, () => []),
    );
    return this;
  }

  /** Appends records with these values directly, waking parked fetches; returns their offsets. */
  append(topic: string, partition: number, ...values: string[]): bigint[] {
    const log = this.partitionLog(topic, partition);
    const offsets = values.map((value) => {
      const offset = BigInt(log.length);
      log.push({
        offset,
        timestampMs: this.time.nowMs(),
        key: Buffer.alloc(0),
        value: Buffer.from(value),
        headers: [],
      });
      return offset;
    });
    this.wakeFetches();
    return offsets;
  }

  /** Every value of a partition, in offset order. */
  values(topic: string, partition: number): string[] {
    return this.partitionLog(topic, partition).map((r) => r.value.toString());
  }

  /** The records of a partition. */
  records(topic: string, partition: number): readonly b.WireRecord[] {
    return this.partitionLog(topic, partition);
  }

  /** Queues outcomes for the next calls of `method`, in order. */
  script<K extends Method>(method: K, ...replies: BrokerReply<K>[]): this {
    const queue = this.scripts.get(method) ?? [];
    queue.push(...(replies as BrokerReply<Method>[]));
    this.scripts.set(method, queue);
    return this;
  }

  /** From now on, calls of `method` (not Fetch) are answered only after `release(method)`. */
  hold(method: Exclude<Method, 'fetch'>): void {
    if (!this.holding.has(method)) this.holding.set(method, []);
  }

  /** Answers the held calls of `method`, in order, and stops holding. Returns how many there were. */
  release(method: Exclude<Method, 'fetch'>): number {
    const held = this.holding.get(method) ?? [];
    this.holding.delete(method);
    for (const answer of held) answer();
    return held.length;
  }

  /** Recorded calls of one method, oldest first. */
  callsOf<K extends Method>(
    method: K,
  ): { request: Parameters<BrokerTransport[K]>[0]; options: CallOptions }[] {
    return this.calls.filter((c) => c.method === method) as never;
  }

  /** Fetches waiting on the server right now. */
  get parkedFetches(): number {
    return this.parked.size;
  }

  createTopics(request: b.CreateTopicsRequest, options: CallOptions): Promise<b.CreateTopicsResponse> {
    return this.answer('createTopics', request, options, () => ({
      topics: request.topics.map((t) => {
        if (this.logs.has(t.name)) {
          return {
            name: t.name,
            errorCode: ErrorCode.TOPIC_ALREADY_EXISTS,
            errorMessage: `Topic '${t.name}' already exists.`,
          };
        }
        this.addTopic(t.name, t.numPartitions === -1 ? 1 : t.numPartitions);
        return { name: t.name, errorCode: ErrorCode.NONE, errorMessage: '' };
      }),
    }));
  }

  metadata(request: b.MetadataRequest, options: CallOptions): Promise<b.MetadataResponse> {
    return this.answer('metadata', request, options, () => {
      const names = request.topics.length > 0 ? request.topics : [...this.logs.keys()];
      return {
        controllerId: 0,
        brokers: [{ nodeId: 0, host: '127.0.0.1', port: 7070 }],
        topics: names.map((name) => {
          const log = this.logs.get(name);
          if (log === undefined)
            return {
              name,
              errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
              partitions: [],
              errorMessage: '',
            };
          return {
            name,
            errorCode: ErrorCode.NONE,
            partitions: log.map((_, partitionIndex) => ({
              partitionIndex,
              leaderId: 0,
              replicaNodes: [0],
              isrNodes: [0],
              errorCode: ErrorCode.NONE,
              leaderEpoch: 0,
            })),
            errorMessage: '',
          };
        }),
      };
    });
  }

  produce(request: b.ProduceRequest, options: CallOptions): Promise<b.ProduceResponse> {
    return this.answer('produce', request, options, () => {
      const response = {
        topics: request.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => {
            const log = this.logs.get(t.name)?.[p.partitionIndex];
            if (log === undefined) {
              return {
                partitionIndex: p.partitionIndex,
                errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                baseOffset: -1n,
                logAppendTimeMs: -1,
                logStartOffset: -1n,
              };
            }
            const baseOffset = BigInt(log.length);
            p.records.forEach((r, i) =>
              log.push({
                ...r,
                offset: baseOffset + BigInt(i),
                timestampMs: r.timestampMs || this.time.nowMs(),
              }),
            );
            return {
              partitionIndex: p.partitionIndex,
              errorCode: ErrorCode.NONE,
              baseOffset,
              logAppendTimeMs: this.time.nowMs(),
              logStartOffset: 0n,
            };
          }),
        })),
      };
      this.wakeFetches();
      return response;
    });
  }

  fetch(request: b.FetchRequest, options: CallOptions): Promise<b.FetchResponse> {
    this.calls.push({ method: 'fetch', request, options });
    const scripted = this.scripted('fetch', request);
    if (scripted !== undefined) return scripted;
    const now = this.read(request);
    if (now.hasRecords || now.hasError || request.maxWaitMs === 0) return Promise.resolve(now.response);
    return new Promise<b.FetchResponse>((resolve, reject) => {
      const entry: ParkedFetch = {
        request,
        resolve: (response) => {
          finish();
          resolve(response);
        },
        cancel: () => {
          finish();
          reject(new CohortError(ErrorCode.REQUEST_TIMED_OUT, 'Fetch cancelled'));
        },
      };
      const expiry = this.scheduler.schedule(request.maxWaitMs, () =>
        entry.resolve(this.read(request).response),
      );
      const onAbort = (): void => entry.cancel();
      const finish = (): void => {
        expiry.cancel();
        this.parked.delete(entry);
        options.signal?.removeEventListener('abort', onAbort);
      };
      this.parked.add(entry);
      options.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  listOffsets(request: b.ListOffsetsRequest, options: CallOptions): Promise<b.ListOffsetsResponse> {
    return this.answer('listOffsets', request, options, () => ({
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => {
          const log = this.logs.get(t.name)?.[p.partitionIndex];
          if (log === undefined) {
            return {
              partitionIndex: p.partitionIndex,
              errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
              offset: -1n,
              timestamp: -1,
            };
          }
          const offset = p.timestamp === -2 ? 0n : BigInt(log.length);
          return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE, offset, timestamp: -1 };
        }),
      })),
    }));
  }

  private partitionLog(topic: string, partition: number): b.WireRecord[] {
    const log = this.logs.get(topic)?.[partition];
    if (log === undefined) throw new Error(`no partition ${topic}-${partition}`);
    return log;
  }

  private read(request: b.FetchRequest): {
    response: b.FetchResponse;
    hasRecords: boolean;
    hasError: boolean;
  } {
    let hasRecords = false;
    let hasError = false;
    const responses = request.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p): b.FetchPartitionData => {
        const log = this.logs.get(t.name)?.[p.partitionIndex];
        if (log === undefined) {
          hasError = true;
          return {
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            highWatermark: -1n,
            logStartOffset: -1n,
            records: [],
          };
        }
        const hw = BigInt(log.length);
        if (p.fetchOffset > hw || p.fetchOffset < 0n) {
          hasError = true;
          return {
            partitionIndex: p.partitionIndex,
            errorCode: ErrorCode.OFFSET_OUT_OF_RANGE,
            highWatermark: hw,
            logStartOffset: 0n,
            records: [],
          };
        }
        const records = log.slice(Number(p.fetchOffset));
        if (records.length > 0) hasRecords = true;
        return {
          partitionIndex: p.partitionIndex,
          errorCode: ErrorCode.NONE,
          highWatermark: hw,
          logStartOffset: 0n,
          records,
        };
      }),
    }));
    return { response: { errorCode: ErrorCode.NONE, responses }, hasRecords, hasError };
  }

  private wakeFetches(): void {
    for (const entry of [...this.parked]) {
      const now = this.read(entry.request);
      if (now.hasRecords || now.hasError) entry.resolve(now.response);
    }
  }

  private scripted<K extends Method>(
    method: K,
    request: Parameters<BrokerTransport[K]>[0],
  ): Promise<Awaited<ReturnType<BrokerTransport[K]>>> | undefined {
    const reply = this.scripts.get(method)?.shift() as BrokerReply<K> | undefined;
    if (reply === undefined) return undefined;
    if (reply instanceof CohortError) return Promise.reject(reply);
    const response = reply(request);
    return response === undefined ? undefined : Promise.resolve(response);
  }

  private answer<K extends Method>(
    method: K,
    request: Parameters<BrokerTransport[K]>[0],
    options: CallOptions,
    compute: () => Awaited<ReturnType<BrokerTransport[K]>>,
  ): Promise<Awaited<ReturnType<BrokerTransport[K]>>> {
    this.calls.push({ method, request, options });
    const held = this.holding.get(method);
    if (held !== undefined) {
      return new Promise((resolve, reject) =>
        held.push(() =>
          (this.scripted(method, request) ?? Promise.resolve().then(compute)).then(resolve, reject),
        ),
      );
    }
    return this.scripted(method, request) ?? Promise.resolve().then(compute);
  }
}
