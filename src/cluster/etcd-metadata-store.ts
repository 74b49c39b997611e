import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { checkEtcdEndpoints } from '../config/etcd-endpoints';
import { SYSTEM_TIME, type Time } from '../time';
import {
  MetadataStoreError,
  prefixEnd,
  type Compare,
  type KeyValue,
  type LeaseGrant,
  type LeaseId,
  type MetadataStore,
  type MetadataWatch,
  type RangeResponse,
  type TxnOp,
  type TxnOpResult,
  type TxnRequest,
  type TxnResponse,
  type WatchEvent,
  type WatchHandlers,
  type WatchOptions,
} from './metadata-store';

/**
 * A MetadataStore over etcd's v3 gRPC API: a thin client of our own over `proto/etcd/v3/` with grpc-js,
 * rather than the `etcd3` package, because the two things a cluster member must get exactly right are
 * the two that package decides for its callers (docs/cluster.md, "The etcd client"):
 *
 * - No retries, ever. A transaction whose connection failed may have been committed; re-sending it
 *   could apply it twice or apply a stale decision. Every failed write surfaces as
 *   `MetadataStoreError` with `isOutcomeUnknown`, and the caller re-reads.
 * - No lease bookkeeping. `keepAliveOnce` is one request on the shared keep-alive stream and its answer;
 *   the node session counts its own deadline on the monotonic clock from the moment it sent the request.
 *
 * Calls carry a deadline (`requestTimeoutMs`); streams rely on the channel's HTTP/2 keep-alive pings to
 * notice a dead connection. Only this file in cohort speaks gRPC to etcd.
 */
export interface EtcdMetadataStoreOptions {
  /** Client URLs, `http://host:port`. More than one must all be IPv4 addresses (grpc-js's ipv4: target). */
  readonly endpoints: readonly string[];
  /** Deadline of each unary call. */
  readonly requestTimeoutMs?: number;
  readonly time?: Time;
}

export const DEFAULT_ETCD_REQUEST_TIMEOUT_MS = 5_000;

const PROTO_FILE = 'etcd/v3/etcd_api_subset.proto';

/** The longest wait of the channel between two attempts to reach etcd again (see the constructor). */
export const MAX_RECONNECT_BACKOFF_MS = 1_000;

/** `proto/` holding the etcd subset, found walking up (src/cluster and dist/src/cluster sit at different depths). */
function findProtoDir(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, PROTO_FILE))) return candidate;
    if (dirname(dir) === dir) throw new Error(`cannot find proto/${PROTO_FILE} above ${from}`);
  }
}

interface EtcdServices {
  readonly KV: grpc.ServiceClientConstructor;
  readonly Watch: grpc.ServiceClientConstructor;
  readonly Lease: grpc.ServiceClientConstructor;
}

let services: EtcdServices | undefined;

function etcdServices(): EtcdServices {
  if (services === undefined) {
    const definition = loadSync(PROTO_FILE, {
      keepCase: false,
      // int64: revisions are turned into checked numbers, lease ids stay strings (they use 63 bits).
      longs: String,
      enums: Number,
      bytes: Buffer,
      defaults: true,
      arrays: true,
      oneofs: true,
      includeDirs: [findProtoDir(__dirname)],
    });
    const pkg = grpc.loadPackageDefinition(definition).etcdserverpb as grpc.GrpcObject;
    services = {
      KV: pkg.KV as grpc.ServiceClientConstructor,
      Watch: pkg.Watch as grpc.ServiceClientConstructor,
      Lease: pkg.Lease as grpc.ServiceClientConstructor,
    };
  }
  return services;
}

/** The grpc-js target for etcd client URLs. */
export function etcdTarget(endpoints: readonly string[]): string {
  const checked = checkEtcdEndpoints(endpoints);
  if (!checked.ok) throw new RangeError(checked.problem);
  const { hostPorts } = checked;
  if (hostPorts.length === 1) return `${hostPorts[0].host}:${hostPorts[0].port}`;
  return `ipv4:${hostPorts.map(({ host, port }) => `${host}:${port}`).join(',')}`;
}

const COMPARE_RESULT = { equal: 0, greater: 1, less: 2, notEqual: 3 } as const;
const COMPARE_TARGET = { version: 0, createRevision: 1, modRevision: 2, value: 3, lease: 4 } as const;
const EVENT_DELETE = 1;

/* The decoded shapes of the messages this client reads (proto-loader: camelCase, int64 as strings). */
interface WireKeyValue {
  key: Buffer;
  createRevision: string;
  modRevision: string;
  version: string;
  value: Buffer;
  lease: string;
}
interface WireHeader {
  revision: string;
}
interface WireRangeResponse {
  header: WireHeader;
  kvs: WireKeyValue[];
}
interface WireResponseOp {
  responseRange?: WireRangeResponse;
  responsePut?: { header: WireHeader };
  responseDeleteRange?: { header: WireHeader; deleted: string };
  response?: string;
}
interface WireWatchResponse {
  header: WireHeader;
  watchId: string;
  created: boolean;
  canceled: boolean;
  compactRevision: string;
  cancelReason: string;
  events: { type: number; kv: WireKeyValue | null }[];
}
interface WireKeepAliveResponse {
  ID: string;
  TTL: string;
}

function toNumber(int64: string, what: string): number {
  const value = Number(int64);
  if (!Number.isSafeInteger(value)) {
    throw new MetadataStoreError('invalidRequest', `etcd returned ${what} ${int64}, beyond 2^53 - 1`, {
      isOutcomeUnknown: false,
    });
  }
  return value;
}

function decodeKeyValue(kv: WireKeyValue): KeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value.toString('utf8'),
    createRevision: toNumber(kv.createRevision, 'a create revision'),
    modRevision: toNumber(kv.modRevision, 'a mod revision'),
    version: toNumber(kv.version, 'a version'),
    lease: kv.lease,
  };
}

function encodeCompare(compare: Compare): Record<string, unknown> {
  const wire: Record<string, unknown> = {
    result: COMPARE_RESULT[compare.result],
    target: COMPARE_TARGET[compare.target],
    ...keyRange(compare.key, compare.prefix),
  };
  switch (compare.target) {
    case 'createRevision':
    case 'modRevision':
    case 'version':
      wire[compare.target] = String(compare.operand);
      break;
    case 'value':
      wire.value = Buffer.from(compare.operand, 'utf8');
      break;
    case 'lease':
      wire.lease = compare.operand;
      break;
  }
  return wire;
}

function keyRange(key: string, prefix: boolean | undefined): { key: Buffer; rangeEnd?: Buffer } {
  const bytes = Buffer.from(key, 'utf8');
  return prefix === true ? { key: bytes, rangeEnd: prefixEnd(bytes) } : { key: bytes };
}

function encodeOp(op: TxnOp): Record<string, unknown> {
  switch (op.type) {
    case 'put':
      return {
        requestPut: {
          key: Buffer.from(op.key, 'utf8'),
          value: Buffer.from(op.value, 'utf8'),
          lease: op.lease ?? '0',
        },
      };
    case 'delete':
      return { requestDeleteRange: keyRange(op.key, op.prefix) };
    case 'get':
      return { requestRange: keyRange(op.key, op.prefix) };
  }
}

function decodeOpResult(op: TxnOp, wire: WireResponseOp): TxnOpResult {
  switch (op.type) {
    case 'put':
      return { type: 'put' };
    case 'delete':
      return {
        type: 'delete',
        deleted: toNumber(wire.responseDeleteRange?.deleted ?? '0', 'a delete count'),
      };
    case 'get':
      return { type: 'get', kvs: (wire.responseRange?.kvs ?? []).map(decodeKeyValue) };
  }
}

/** gRPC statuses after which a write certainly was not applied: etcd checked and refused it. */
const DEFINITE_STATUSES = new Set<grpc.status>([
  grpc.status.INVALID_ARGUMENT,
  grpc.status.NOT_FOUND,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.OUT_OF_RANGE,
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNAUTHENTICATED,
  grpc.status.ALREADY_EXISTS,
]);

function toStoreError(error: grpc.ServiceError, call: string, isWrite: boolean): MetadataStoreError {
  const what = `etcd ${call}: ${error.details || error.message}`;
  if (error.code === grpc.status.NOT_FOUND && /lease not found/.test(error.details)) {
    return new MetadataStoreError('leaseNotFound', what, { isOutcomeUnknown: false, cause: error });
  }
  if (error.code === grpc.status.OUT_OF_RANGE && /compacted/.test(error.details)) {
    return new MetadataStoreError('compacted', what, { isOutcomeUnknown: false, cause: error });
  }
  if (DEFINITE_STATUSES.has(error.code)) {
    return new MetadataStoreError('invalidRequest', what, { isOutcomeUnknown: false, cause: error });
  }
  // UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, UNKNOWN, INTERNAL: the request may have reached etcd and
  // been committed (etcd's own "request timed out" is UNAVAILABLE and means exactly that).
  return new MetadataStoreError('unavailable', what, { isOutcomeUnknown: isWrite, cause: error });
}

interface KeepAliveWaiter {
  resolve(value: { ttlSeconds: number }): void;
  reject(error: Error): void;
}

type UnaryMethod = (
  request: unknown,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response: unknown) => void,
) => grpc.ClientUnaryCall;

export class EtcdMetadataStore implements MetadataStore {
  private readonly channel: grpc.Channel;
  private readonly kv: grpc.Client;
  private readonly watchClient: grpc.Client;
  private readonly lease: grpc.Client;
  private readonly requestTimeoutMs: number;
  private readonly time: Time;
  private keepAliveStream: grpc.ClientDuplexStream<unknown, WireKeepAliveResponse> | null = null;
  /** Renewals in flight per lease, oldest first: etcd answers the requests of one stream in order. */
  private readonly keepAliveWaiters = new Map<LeaseId, KeepAliveWaiter[]>();
  /** Open watches, each with the function that ends it without telling its handlers. */
  private readonly watchCalls = new Map<grpc.ClientDuplexStream<unknown, WireWatchResponse>, () => void>();
  private isClosed = false;

  constructor(options: EtcdMetadataStoreOptions) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_ETCD_REQUEST_TIMEOUT_MS;
    this.time = options.time ?? SYSTEM_TIME;
    const { KV, Watch, Lease } = etcdServices();
    this.channel = new grpc.Channel(etcdTarget(options.endpoints), grpc.credentials.createInsecure(), {
      // Pings find a dead connection under a stream that would otherwise wait forever. etcd accepts
      // pings every 5 s or slower while a call is open (--grpc-keepalive-min-time).
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      'grpc.keepalive_permit_without_calls': 0,
      // Fail calls at once while the channel is down rather than queueing them past their purpose.
      'grpc.enable_retries': 0,
      // grpc-js backs off reconnecting up to 2 minutes by default (×1.6 per failed attempt): after an etcd
      // outage of a few seconds the channel would still be waiting when etcd is back, failing every
      // renewal at once, and a session that had time left expired (or, after a long outage, every node
      // registered again only seconds later). Reconnect at least every second instead: one TCP connect.
      'grpc.initial_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS / 10,
      'grpc.max_reconnect_backoff_ms': MAX_RECONNECT_BACKOFF_MS,
    });
    const clientOptions = { channelOverride: this.channel };
    this.kv = new KV('', grpc.credentials.createInsecure(), clientOptions);
    this.watchClient = new Watch('', grpc.credentials.createInsecure(), clientOptions);
    this.lease = new Lease('', grpc.credentials.createInsecure(), clientOptions);
  }

  private unary<T>(client: grpc.Client, method: string, request: unknown, isWrite: boolean): Promise<T> {
    if (this.isClosed) return Promise.reject(this.closedError());
    const call = (client as unknown as Record<string, UnaryMethod>)[method].bind(client);
    return new Promise<T>((resolve, reject) => {
      call(request, { deadline: this.time.nowMs() + this.requestTimeoutMs }, (error, response) => {
        if (error !== null) reject(toStoreError(error, method, isWrite));
        else resolve(response as T);
      });
    });
  }

  private closedError(): MetadataStoreError {
    return new MetadataStoreError('closed', 'the etcd client is closed', { isOutcomeUnknown: false });
  }

  async get(key: string): Promise<{ kv: KeyValue | undefined; revision: number }> {
    const response = await this.unary<WireRangeResponse>(this.kv, 'Range', keyRange(key, false), false);
    return {
      kv: response.kvs.length === 0 ? undefined : decodeKeyValue(response.kvs[0]),
      revision: toNumber(response.header.revision, 'a revision'),
    };
  }

  async range(prefix: string): Promise<RangeResponse> {
    const response = await this.unary<WireRangeResponse>(this.kv, 'Range', keyRange(prefix, true), false);
    return {
      kvs: response.kvs.map(decodeKeyValue),
      revision: toNumber(response.header.revision, 'a revision'),
    };
  }

  async put(key: string, value: string, options: { lease?: LeaseId } = {}): Promise<{ revision: number }> {
    const request = {
      key: Buffer.from(key, 'utf8'),
      value: Buffer.from(value, 'utf8'),
      lease: options.lease ?? '0',
    };
    const response = await this.unary<{ header: WireHeader }>(this.kv, 'Put', request, true);
    return { revision: toNumber(response.header.revision, 'a revision') };
  }

  async delete(key: string): Promise<{ revision: number; deleted: number }> {
    const response = await this.unary<{ header: WireHeader; deleted: string }>(
      this.kv,
      'DeleteRange',
      keyRange(key, false),
      true,
    );
    return {
      revision: toNumber(response.header.revision, 'a revision'),
      deleted: toNumber(response.deleted, 'a delete count'),
    };
  }

  async txn(request: TxnRequest): Promise<TxnResponse> {
    const failure = request.failure ?? [];
    const wire = {
      compare: request.compare.map(encodeCompare),
      success: request.success.map(encodeOp),
      failure: failure.map(encodeOp),
    };
    const isWrite = [...request.success, ...failure].some((op) => op.type !== 'get');
    const response = await this.unary<{
      header: WireHeader;
      succeeded: boolean;
      responses: WireResponseOp[];
    }>(this.kv, 'Txn', wire, isWrite);
    const ops = response.succeeded ? request.success : failure;
    return {
      succeeded: response.succeeded,
      revision: toNumber(response.header.revision, 'a revision'),
      results: ops.map((op, i) => decodeOpResult(op, response.responses[i] ?? {})),
    };
  }

  async compact(revision: number): Promise<void> {
    await this.unary(this.kv, 'Compact', { revision: String(revision), physical: false }, true);
  }

  watch(key: string, options: WatchOptions, handlers: WatchHandlers): MetadataWatch {
    let resolveCreated!: () => void;
    let rejectCreated!: (error: Error) => void;
    const created = new Promise<void>((resolve, reject) => {
      resolveCreated = resolve;
      rejectCreated = reject;
    });
    // A caller that never awaits `created` hears of a failure through onCancelled instead.
    created.catch(() => undefined);
    if (this.isClosed) {
      rejectCreated(this.closedError());
      return { created, cancel: () => undefined };
    }
    let isEnded = false;
    const call = (
      this.watchClient as unknown as { Watch(): grpc.ClientDuplexStream<unknown, WireWatchResponse> }
    ).Watch();
    const end = (reason: { compactRevision?: number; error?: Error } | null): void => {
      if (isEnded) return;
      isEnded = true;
      this.watchCalls.delete(call);
      call.cancel();
      if (reason === null) return;
      rejectCreated(
        reason.error ?? new Error(`watch cancelled at compaction revision ${reason.compactRevision}`),
      );
      handlers.onCancelled(reason);
    };
    this.watchCalls.set(call, () => end(null));
    call.on('data', (response: WireWatchResponse) => {
      if (isEnded) return;
      if (response.created) resolveCreated();
      if (response.events.length > 0) {
        const events: WatchEvent[] = response.events.map((event) => ({
          type: event.type === EVENT_DELETE ? 'delete' : 'put',
          kv: decodeKeyValue(event.kv!),
        }));
        handlers.onEvents(events);
      }
      if (response.canceled) {
        const compactRevision = toNumber(response.compactRevision, 'a compact revision');
        end(
          compactRevision > 0
            ? { compactRevision }
            : { error: new Error(`etcd cancelled the watch: ${response.cancelReason || 'no reason given'}`) },
        );
      }
    });
    call.on('error', (error: grpc.ServiceError) => end({ error: toStoreError(error, 'Watch', false) }));
    call.on('end', () =>
      end({
        error: new MetadataStoreError('unavailable', 'etcd ended the watch stream', {
          isOutcomeUnknown: false,
        }),
      }),
    );
    const range = keyRange(key, options.prefix);
    call.write({
      createRequest: {
        key: range.key,
        rangeEnd: range.rangeEnd ?? Buffer.alloc(0),
        startRevision: String(options.startRevision ?? 0),
      },
    });
    return { created, cancel: () => end(null) };
  }

  async grantLease(ttlSeconds: number): Promise<LeaseGrant> {
    const response = await this.unary<{ ID: string; TTL: string; error: string }>(
      this.lease,
      'LeaseGrant',
      { TTL: String(ttlSeconds), ID: '0' },
      true,
    );
    if (response.error !== '') {
      throw new MetadataStoreError('invalidRequest', `etcd LeaseGrant: ${response.error}`, {
        isOutcomeUnknown: false,
      });
    }
    return { id: response.ID, ttlSeconds: toNumber(response.TTL, 'a TTL') };
  }

  keepAliveOnce(id: LeaseId): Promise<{ ttlSeconds: number }> {
    if (this.isClosed) return Promise.reject(this.closedError());
    const stream = this.openKeepAliveStream();
    return new Promise((resolve, reject) => {
      let waiters = this.keepAliveWaiters.get(id);
      if (waiters === undefined) this.keepAliveWaiters.set(id, (waiters = []));
      waiters.push({ resolve, reject });
      stream.write({ ID: id });
    });
  }

  private openKeepAliveStream(): grpc.ClientDuplexStream<unknown, WireKeepAliveResponse> {
    if (this.keepAliveStream !== null) return this.keepAliveStream;
    const stream = (
      this.lease as unknown as { LeaseKeepAlive(): grpc.ClientDuplexStream<unknown, WireKeepAliveResponse> }
    ).LeaseKeepAlive();
    this.keepAliveStream = stream;
    const fail = (error: Error): void => {
      if (this.keepAliveStream !== stream) return;
      this.keepAliveStream = null;
      stream.cancel();
      const waiting = [...this.keepAliveWaiters.values()].flat();
      this.keepAliveWaiters.clear();
      for (const waiter of waiting) waiter.reject(error);
    };
    stream.on('data', (response: WireKeepAliveResponse) => {
      const waiters = this.keepAliveWaiters.get(response.ID);
      const waiter = waiters?.shift();
      if (waiters !== undefined && waiters.length === 0) this.keepAliveWaiters.delete(response.ID);
      waiter?.resolve({ ttlSeconds: Math.max(0, toNumber(response.TTL, 'a TTL')) });
    });
    stream.on('error', (error: grpc.ServiceError) => fail(toStoreError(error, 'LeaseKeepAlive', false)));
    stream.on('end', () =>
      fail(
        new MetadataStoreError('unavailable', 'etcd ended the keep-alive stream', {
          isOutcomeUnknown: false,
        }),
      ),
    );
    return stream;
  }

  async revokeLease(id: LeaseId): Promise<void> {
    try {
      await this.unary(this.lease, 'LeaseRevoke', { ID: id }, true);
    } catch (error) {
      if (error instanceof MetadataStoreError && error.kind === 'leaseNotFound') return;
      throw error;
    }
  }

  async leaseTimeToLive(id: LeaseId): Promise<number> {
    const response = await this.unary<{ TTL: string }>(
      this.lease,
      'LeaseTimeToLive',
      { ID: id, keys: false },
      false,
    );
    return toNumber(response.TTL, 'a TTL');
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const endWatch of [...this.watchCalls.values()]) endWatch();
    const stream = this.keepAliveStream;
    this.keepAliveStream = null;
    stream?.cancel();
    const waiting = [...this.keepAliveWaiters.values()].flat();
    this.keepAliveWaiters.clear();
    for (const waiter of waiting) waiter.reject(this.closedError());
    this.kv.close();
    this.watchClient.close();
    this.lease.close();
    this.channel.close();
  }
}
