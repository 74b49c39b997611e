import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { CONFIG_SCHEMA } from '../config';
import { checkEtcdEndpoints } from '../config/etcd-endpoints';
import { SYSTEM_TIME, type Time } from '../time';
import { accessHint, detailsOf, isRejectedToken, REJECTED_TOKEN, toStoreError } from './etcd-errors';
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
 * - No retries of writes, ever. A transaction whose connection failed may have been committed; re-sending
 *   it could apply it twice or apply a stale decision. Every failed write surfaces as `MetadataStoreError`
 *   (`isOutcomeUnknown` unless etcd certainly refused it), and the caller re-reads.
 * - No lease bookkeeping. `keepAliveOnce` is one request on the shared keep-alive stream and its answer;
 *   the node session counts its own deadline on the monotonic clock from the moment it sent the request.
 *
 * Calls carry a deadline (`requestTimeoutMs`); streams rely on the channel's HTTP/2 keep-alive pings to
 * notice a dead connection. Only this file in cohort speaks gRPC to etcd.
 *
 * Security (docs/operations.md, "Locking etcd down"). `https://` endpoints are reached over TLS: etcd's
 * certificate is checked against `tls.caCert` (else Node's built-in CAs) and must name the endpoint's
 * host; with several endpoints one channel dials them all under the first one's name, so a certificate
 * naming any of the configured hosts is accepted. `tls.cert` and `tls.key` answer etcd's
 * `--client-cert-auth`. With `credentials`, the client trades the user name and password for a token
 * (Auth.Authenticate) before its first call and sends it as the `token` metadata of every call and stream.
 * etcd stops accepting a token — "invalid auth token" when a simple token went unused for
 * `--auth-token-ttl` (300 s by default), a JWT expired or etcd restarted (simple tokens live in its memory);
 * "revision of auth store is old" when users or roles changed since it was issued; "user name is empty"
 * once auth was enabled after the client found it off — and the client then authenticates again:
 *
 * - a read (Range, a Txn of gets only, LeaseTimeToLive) and a keep-alive are sent once more with the new
 *   token: they change nothing, so a second attempt cannot do harm (etcd 3.4 checks no token on renewals
 *   and TTL reads at all; a version that does is covered);
 * - a write is not: it fails with `accessDenied` and `isOutcomeUnknown: false`, and the next call carries
 *   a new token. Its outcome is known: etcd reads the token before it proposes a write to raft and
 *   refuses it there ("invalid auth token": nothing proposed), and checks the user and the auth revision
 *   again when it applies the committed entry, refusing the whole request before it touches a key ("user
 *   name is empty", "revision of auth store is old", "permission denied": nothing applied). The caller
 *   decides again from a fresh read, as after any refusal.
 * - a watch's token is checked when the watch is created, not afterwards (etcd goes on delivering to a
 *   watch whose token has since expired: test/integration/etcd-security.test.ts shows it): a creation
 *   refused for its token is sent once more on a new stream with a new token, before `created` resolves,
 *   so nothing was delivered yet and nothing is missed.
 */
export interface EtcdMetadataStoreOptions {
  /**
   * Client URLs, all `http://host:port` or all `https://host:port`. More than one must all be IPv4
   * addresses (grpc-js's ipv4: target).
   */
  readonly endpoints: readonly string[];
  /** Deadline of each unary call. */
  readonly requestTimeoutMs?: number;
  readonly time?: Time;
  /** For https:// endpoints: whom to trust, and the client certificate to present. */
  readonly tls?: EtcdClientTls;
  /** etcd's user and password, when etcd has authentication enabled. */
  readonly credentials?: EtcdCredentials;
  /**
   * Told each time the client got a new token (`authenticated`), or learnt that etcd has authentication
   * off (`authDisabled`: it then calls without a token, and authenticates once etcd asks for one).
   */
  readonly onAuthentication?: (outcome: 'authenticated' | 'authDisabled') => void;
}

export interface EtcdClientTls {
  /** PEM CA certificates that signed etcd's server certificate; without, Node's built-in CAs. */
  readonly caCert?: Buffer;
  /** PEM certificate chain and private key presented to etcd (its `--client-cert-auth`): both or neither. */
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

export interface EtcdCredentials {
  readonly username: string;
  readonly password: string;
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
  readonly Auth: grpc.ServiceClientConstructor;
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
      Auth: pkg.Auth as grpc.ServiceClientConstructor,
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

/**
 * The channel's credentials: plain text for http:// endpoints, TLS for https://. grpc-js checks every
 * connection of an `ipv4:a,b,c` target against the name `a`, whichever member it reached; a certificate
 * that names any of the configured hosts is accepted instead, so that each member can keep a certificate
 * for its own address. It must still be signed by the trusted CAs: only a member (or whoever holds its
 * key) has one.
 */
function channelCredentials(
  endpoints: readonly string[],
  tls: EtcdClientTls | undefined,
): grpc.ChannelCredentials {
  const checked = checkEtcdEndpoints(endpoints);
  if (!checked.ok) throw new RangeError(checked.problem);
  if (!checked.isTls) {
    if (tls !== undefined) throw new RangeError('etcd TLS settings need https:// endpoints');
    return grpc.credentials.createInsecure();
  }
  if ((tls?.cert === undefined) !== (tls?.key === undefined)) {
    throw new RangeError('an etcd client certificate needs its key, and a key its certificate');
  }
  const hosts = checked.hostPorts.map(({ host }) => host);
  const verifyOptions =
    hosts.length === 1
      ? {}
      : {
          checkServerIdentity: (_host: string, certificate: PeerCertificate): Error | undefined => {
            let first: Error | undefined;
            for (const host of hosts) {
              const problem = checkServerIdentity(host, certificate);
              if (problem === undefined) return undefined;
              first ??= problem;
            }
            return first;
          },
        };
  return grpc.credentials.createSsl(tls?.caCert ?? null, tls?.key ?? null, tls?.cert ?? null, verifyOptions);
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

interface KeepAliveWaiter {
  resolve(value: { ttlSeconds: number }): void;
  reject(error: Error): void;
}

type UnaryMethod = (
  request: unknown,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response: unknown) => void,
) => grpc.ClientUnaryCall;

type KeepAliveStream = grpc.ClientDuplexStream<unknown, WireKeepAliveResponse>;
type WatchStream = grpc.ClientDuplexStream<unknown, WireWatchResponse>;

/** The metadata key etcd reads a call's token from. */
const TOKEN_METADATA_KEY = 'token';

/**
 * The token state: `undefined` while there is none (before the first call, after etcd refused the last
 * one), `NO_TOKEN` once etcd said authentication is off.
 */
const NO_TOKEN = '';

export class EtcdMetadataStore implements MetadataStore {
  private readonly channel: grpc.Channel;
  private readonly kv: grpc.Client;
  private readonly watchClient: grpc.Client;
  private readonly lease: grpc.Client;
  private readonly auth: grpc.Client;
  private readonly requestTimeoutMs: number;
  private readonly time: Time;
  private readonly credentials: EtcdCredentials | undefined;
  private readonly onAuthentication: (outcome: 'authenticated' | 'authDisabled') => void;
  /** The token calls carry (NO_TOKEN: none needed); undefined until authenticated. */
  private token: string | undefined;
  /** The Authenticate call under way: calls that need a token meanwhile wait for the same one. */
  private authenticating: Promise<string> | undefined;
  private keepAliveStream: KeepAliveStream | null = null;
  /** Renewals in flight per lease, oldest first: etcd answers the requests of one stream in order. */
  private readonly keepAliveWaiters = new Map<LeaseId, KeepAliveWaiter[]>();
  /** Per open watch (or one waiting for a token), the function that ends it without telling its handlers. */
  private readonly watchEnds = new Set<() => void>();
  private isClosed = false;

  constructor(options: EtcdMetadataStoreOptions) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_ETCD_REQUEST_TIMEOUT_MS;
    this.time = options.time ?? SYSTEM_TIME;
    this.credentials = options.credentials;
    this.onAuthentication = options.onAuthentication ?? (() => undefined);
    this.token = this.credentials === undefined ? NO_TOKEN : undefined;
    const { KV, Watch, Lease, Auth } = etcdServices();
    const credentials = channelCredentials(options.endpoints, options.tls);
    this.channel = new grpc.Channel(etcdTarget(options.endpoints), credentials, {
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
    // With channelOverride the clients use the channel's credentials; the ones passed here are ignored.
    const clientOptions = { channelOverride: this.channel };
    this.kv = new KV('', credentials, clientOptions);
    this.watchClient = new Watch('', credentials, clientOptions);
    this.lease = new Lease('', credentials, clientOptions);
    this.auth = new Auth('', credentials, clientOptions);
  }

  /** The token for the next call: at once when there is one (or none is needed), else once authenticated. */
  private tokenForCall(): string | Promise<string> {
    return this.token ?? this.authenticate();
  }

  /** The metadata of a call carrying `token`. */
  private metadataWith(token: string): grpc.Metadata {
    const metadata = new grpc.Metadata();
    if (token !== NO_TOKEN) metadata.set(TOKEN_METADATA_KEY, token);
    return metadata;
  }

  /** etcd refused `token`: the next call authenticates again (unless another call already did). */
  private forgetToken(token: string): void {
    if (this.credentials !== undefined && this.token === token) this.token = undefined;
  }

  /**
   * Whether a call that failed with `error` should be sent once more with a new token: etcd refused the
   * token, or refused a call sent without one because etcd had authentication off when the client
   * authenticated (turned on since, etcd takes a client certificate's CN as the user, or answers "user name
   * is empty"). Drops the refused token either way, so that the next call authenticates again.
   */
  private isRetriableAfterNewToken(error: unknown, token: string): boolean {
    if (this.credentials === undefined) return false;
    const details = detailsOf(error);
    if (!REJECTED_TOKEN.test(details) && !(token === NO_TOKEN && /permission denied/.test(details))) {
      return false;
    }
    this.forgetToken(token);
    return true;
  }

  /**
   * Trades the user name and password for a token; concurrent callers share one Authenticate. etcd with
   * authentication off answers FAILED_PRECONDITION: calls then go without a token (etcd's own client does
   * the same), and a refusal once it is turned on ("user name is empty") brings the client back here.
   */
  private authenticate(): Promise<string> {
    const credentials = this.credentials;
    if (credentials === undefined) return Promise.resolve(NO_TOKEN);
    this.authenticating ??= this.unaryOnce<{ token: string }>(
      this.auth,
      'Authenticate',
      { name: credentials.username, password: credentials.password },
      false,
      NO_TOKEN,
    )
      .then(
        ({ token }) => {
          if (this.isClosed) throw this.closedError();
          this.token = token;
          this.onAuthentication('authenticated');
          return token;
        },
        (error: unknown) => {
          const cause = error instanceof MetadataStoreError ? (error.cause as grpc.ServiceError) : undefined;
          if (cause?.code === grpc.status.FAILED_PRECONDITION && /not enabled/.test(cause.details)) {
            this.token = NO_TOKEN;
            this.onAuthentication('authDisabled');
            return NO_TOKEN;
          }
          if (cause?.code === grpc.status.INVALID_ARGUMENT && /authentication failed/.test(cause.details)) {
            // The password never appears in a message; the user name does, to say which one was refused.
            throw new MetadataStoreError(
              'accessDenied',
              `etcd refused the user name '${credentials.username}' or its password (${cause.details}): ` +
                `check ${CONFIG_SCHEMA.etcdUsername.flag} and the password of ` +
                `${CONFIG_SCHEMA.etcdPasswordFile.flag} or ${CONFIG_SCHEMA.etcdPassword.env}`,
              { isOutcomeUnknown: false, cause },
            );
          }
          throw error;
        },
      )
      .finally(() => {
        this.authenticating = undefined;
      });
    return this.authenticating;
  }

  private unaryOnce<T>(
    client: grpc.Client,
    method: string,
    request: unknown,
    isWrite: boolean,
    token: string,
  ): Promise<T> {
    if (this.isClosed) return Promise.reject(this.closedError());
    const call = (client as unknown as Record<string, UnaryMethod>)[method].bind(client);
    return new Promise<T>((resolve, reject) => {
      call(
        request,
        this.metadataWith(token),
        { deadline: this.time.nowMs() + this.requestTimeoutMs },
        (error, response) => {
          if (error !== null) reject(toStoreError(error, method, isWrite));
          else resolve(response as T);
        },
      );
    });
  }

  /**
   * One unary call with the current token. A read refused for its token is sent once more with a new one;
   * a write is not (see the class comment: it was certainly not applied, and the caller decides again).
   */
  private async unary<T>(
    client: grpc.Client,
    method: string,
    request: unknown,
    isWrite: boolean,
  ): Promise<T> {
    if (this.isClosed) throw this.closedError();
    const token = await this.tokenForCall();
    try {
      return await this.unaryOnce<T>(client, method, request, isWrite, token);
    } catch (error) {
      if (!this.isRetriableAfterNewToken(error, token) || isWrite) throw error;
      return this.unaryOnce<T>(client, method, request, isWrite, await this.tokenForCall());
    }
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
    let isCreated = false;
    let hasRetried = false;
    /** The stream of the current attempt; undefined while waiting for a token. */
    let call: WatchStream | undefined;
    const end = (reason: { compactRevision?: number; error?: Error } | null): void => {
      if (isEnded) return;
      isEnded = true;
      this.watchEnds.delete(endSilently);
      const current = call;
      call = undefined;
      current?.cancel();
      if (reason === null) return;
      rejectCreated(
        reason.error ?? new Error(`watch cancelled at compaction revision ${reason.compactRevision}`),
      );
      handlers.onCancelled(reason);
    };
    const endSilently = (): void => end(null);
    this.watchEnds.add(endSilently);
    const range = keyRange(key, options.prefix);

    /** A creation refused for its token, the first time: a new stream with a new token instead. */
    const retryWithNewToken = (current: WatchStream, token: string, refusal: unknown): boolean => {
      if (isCreated || hasRetried || !this.isRetriableAfterNewToken(refusal, token)) return false;
      hasRetried = true;
      call = undefined;
      current.cancel();
      open();
      return true;
    };

    const openWith = (token: string): void => {
      if (isEnded) return;
      const current = (this.watchClient as unknown as { Watch(metadata: grpc.Metadata): WatchStream }).Watch(
        this.metadataWith(token),
      );
      call = current;
      current.on('data', (response: WireWatchResponse) => {
        if (isEnded || call !== current) return;
        if (
          response.canceled &&
          !isCreated &&
          retryWithNewToken(current, token, { details: response.cancelReason })
        ) {
          return;
        }
        // etcd refuses a creation (no permission on the range, a token refused) with `created` and
        // `canceled` in one response: such a watch was never accepted.
        if (response.created && !response.canceled) {
          isCreated = true;
          resolveCreated();
        }
        if (response.events.length > 0) {
          const events: WatchEvent[] = response.events.map((event) => ({
            type: event.type === EVENT_DELETE ? 'delete' : 'put',
            kv: decodeKeyValue(event.kv!),
          }));
          handlers.onEvents(events);
        }
        if (response.canceled) {
          const compactRevision = toNumber(response.compactRevision, 'a compact revision');
          const reason = response.cancelReason || 'no reason given';
          end(
            compactRevision > 0
              ? { compactRevision }
              : { error: new Error(`etcd cancelled the watch: ${reason}${accessHint(reason)}`) },
          );
        }
      });
      current.on('error', (error: grpc.ServiceError) => {
        if (call !== current || retryWithNewToken(current, token, error)) return;
        end({ error: toStoreError(error, 'Watch', false) });
      });
      current.on('end', () => {
        if (call !== current) return;
        end({
          error: new MetadataStoreError('unavailable', 'etcd ended the watch stream', {
            isOutcomeUnknown: false,
          }),
        });
      });
      current.write({
        createRequest: {
          key: range.key,
          rangeEnd: range.rangeEnd ?? Buffer.alloc(0),
          startRevision: String(options.startRevision ?? 0),
        },
      });
    };

    const open = (): void => {
      const token = this.tokenForCall();
      if (typeof token === 'string') openWith(token);
      else token.then(openWith, (error: Error) => end({ error }));
    };
    open();
    return { created, cancel: endSilently };
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

  /**
   * One renewal. etcd 3.4 and 3.5 do not check the token of renewals; should a version refuse one for its
   * token (ending the stream with the refusal), the renewal is sent once more on a new stream with a new
   * token. A renewal sent twice is harmless: each renews the lease no earlier than the first was sent,
   * which is the moment the node session counts from.
   */
  async keepAliveOnce(id: LeaseId): Promise<{ ttlSeconds: number }> {
    try {
      return await this.keepAliveAttempt(id);
    } catch (error) {
      if (this.credentials === undefined || !isRejectedToken(error)) throw error;
      return this.keepAliveAttempt(id);
    }
  }

  private async keepAliveAttempt(id: LeaseId): Promise<{ ttlSeconds: number }> {
    if (this.isClosed) throw this.closedError();
    const token = await this.tokenForCall();
    if (this.isClosed) throw this.closedError();
    const stream = this.openKeepAliveStream(token);
    return new Promise((resolve, reject) => {
      let waiters = this.keepAliveWaiters.get(id);
      if (waiters === undefined) this.keepAliveWaiters.set(id, (waiters = []));
      waiters.push({ resolve, reject });
      stream.write({ ID: id });
    });
  }

  private openKeepAliveStream(token: string): KeepAliveStream {
    if (this.keepAliveStream !== null) return this.keepAliveStream;
    const stream = (
      this.lease as unknown as { LeaseKeepAlive(metadata: grpc.Metadata): KeepAliveStream }
    ).LeaseKeepAlive(this.metadataWith(token));
    this.keepAliveStream = stream;
    const fail = (error: Error): void => {
      if (this.keepAliveStream !== stream) return;
      this.keepAliveStream = null;
      stream.cancel();
      if (isRejectedToken(error)) this.forgetToken(token);
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
    for (const endWatch of [...this.watchEnds]) endWatch();
    const stream = this.keepAliveStream;
    this.keepAliveStream = null;
    stream?.cancel();
    const waiting = [...this.keepAliveWaiters.values()].flat();
    this.keepAliveWaiters.clear();
    for (const waiter of waiting) waiter.reject(this.closedError());
    this.kv.close();
    this.watchClient.close();
    this.lease.close();
    this.auth.close();
    this.channel.close();
  }
}
