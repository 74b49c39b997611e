import {
  credentials as grpcCredentials,
  Metadata,
  status as Status,
  type ChannelCredentials,
  type ChannelOptions,
  type Client,
  type ClientDuplexStream,
  type ClientReadableStream,
  type ServiceError,
  type StatusObject,
} from '@grpc/grpc-js';
import { CohortError, ErrorCode } from '../errors';
import { SYSTEM_TIME, type Time } from '../time';
import type * as b from './broker-messages';
import { brokerClient } from './broker-proto';
import type { BrokerTransport } from './broker-transport';
import {
  fetchFromWire,
  fetchToWire,
  listOffsetsFromWire,
  produceFromWire,
  produceToWire,
  type WireOf,
} from './broker-wire';
import type * as m from '../protocol/group-messages';
import type { FindCoordinatorRequest, FindCoordinatorResponse } from '../protocol/find-coordinator-messages';
import { errorFromCode } from './error-from-code';
import { errorFromStatus } from './error-from-status';
import type { GroupAdminTransport } from './group-admin-transport';
import { groupCoordinatorClient } from './group-coordinator-proto';
import type { CallOptions, GroupTransport, HeartbeatStream } from './group-transport';
import type { GroupWatchCall, GroupWatchTransport } from './group-watch';
import {
  ServerUnreachableError,
  unreachableReasonOf,
  type UnreachableReason,
} from './server-unreachable-error';

/** How soon `waitForServer` tries again after a refused connection or a name that did not resolve. */
const WAIT_FOR_SERVER_RETRY_MS = 250;

/**
 * grpc-js's description of a failed connection without its wrapping: "No connection established. Last
 * error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: " becomes "connect ECONNREFUSED 127.0.0.1:1".
 */
function connectionDetailOf(details: string): string {
  return (
    details
      .replace(/^No connection established\. Last error: /, '')
      .replace(/(\.)?\s*Resolution note:[\s\S]*$/, '')
      .replace(/^Error(?: \[[A-Z_]+\])?: /, '')
      .replace(/\s*\(\d{4}-\d\d-\d\dT[\d:.]+Z\)/, '')
      .replace(/:\.\.\/deps\/openssl\/\S*/g, '')
      .trim() || details
  );
}

/** TLS settings: PEM buffers. Omit `ca` to trust the system's roots; give `cert` and `key` for mutual TLS. */
export interface TlsOptions {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

/** Where and how to reach a cohort server. */
export interface GrpcTransportOptions {
  /** `host:port`, or `unix:/path/to.sock`. */
  readonly address: string;
  /** Sent as `authorization: Bearer <token>` on every call. */
  readonly token?: string;
  /** `true` for TLS with the system's roots; an object for a private CA or mutual TLS; absent for plaintext. */
  readonly tls?: boolean | TlsOptions;
  /** Extra grpc-js channel options. */
  readonly channelOptions?: ChannelOptions;
  /** Whose wall clock turns a call's timeout into a gRPC deadline. Default: the system clock. */
  readonly time?: Time;
}

type Unary<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: { deadline: Date },
  callback: (error: ServiceError | null, response: Res) => void,
) => { cancel(): void };

/**
 * Every transport of the SDK over gRPC — `GroupTransport`, `GroupAdminTransport` and `BrokerTransport` —
 * on one grpc-js channel shared by the GroupCoordinator and Broker stubs, with a deadline on each call and
 * the caller's abort signal cancelling it. Failures reject with a `CohortError` rebuilt from the gRPC status
 * number.
 */
export class GrpcTransport
  implements GroupTransport, GroupAdminTransport, GroupWatchTransport, BrokerTransport
{
  private readonly client: Client;
  private readonly broker: Client;
  private readonly token: string | undefined;
  private readonly time: Time;
  private readonly address: string;
  private readonly isTls: boolean;

  constructor(options: GrpcTransportOptions) {
    if (typeof options.address !== 'string' || options.address === '') {
      throw new RangeError('address must be "host:port" or "unix:/path"');
    }
    const Ctor = groupCoordinatorClient();
    const credentials = channelCredentials(options.tls);
    this.client = new Ctor(options.address, credentials, options.channelOptions ?? {});
    // The same channel (connection, TLS session, reconnect backoff) for the log's calls.
    const BrokerCtor = brokerClient();
    this.broker = new BrokerCtor(options.address, credentials, { channelOverride: this.client.getChannel() });
    this.token = options.token;
    this.time = options.time ?? SYSTEM_TIME;
    this.address = options.address;
    this.isTls = options.tls !== undefined && options.tls !== false;
  }

  /**
   * Resolves once the server answers a call, whatever the answer (a refused token still means the server is
   * there), or rejects with a `ServerUnreachableError` saying what failed once `timeoutMs` has passed
   * without one. A refused connection or a name that does not resolve is tried again meanwhile (the server
   * may be starting); a failed TLS handshake is not, since it fails the same way every time. Calls made
   * without it retry for their own timeouts instead; a tool that should fail fast asks first.
   */
  async waitForServer(timeoutMs: number): Promise<void> {
    const deadlineMs = this.time.nowMs() + timeoutMs;
    let last: { reason: UnreachableReason; detail: string; cause: ServiceError } | undefined;
    for (;;) {
      const remainingMs = deadlineMs - this.time.nowMs();
      if (remainingMs <= 0) break;
      const error = await this.describeNoGroups(remainingMs);
      if (error === null || (error.code !== Status.UNAVAILABLE && error.code !== Status.DEADLINE_EXCEEDED)) {
        return;
      }
      if (error.code === Status.DEADLINE_EXCEEDED) {
        last ??= { reason: 'no-answer', detail: `nothing within ${timeoutMs} ms`, cause: error };
        break;
      }
      const reason = unreachableReasonOf(error.details, this.isTls);
      last = { reason, detail: connectionDetailOf(error.details), cause: error };
      if (reason === 'tls-handshake') break;
      const pauseMs = Math.min(WAIT_FOR_SERVER_RETRY_MS, deadlineMs - this.time.nowMs());
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    throw new ServerUnreachableError(
      this.address,
      last?.reason ?? 'no-answer',
      last?.detail ?? `nothing within ${timeoutMs} ms`,
      last === undefined ? undefined : { cause: last.cause },
    );
  }

  joinGroup(request: m.JoinGroupRequest, options: CallOptions): Promise<m.JoinGroupResponse> {
    return this.unary('joinGroup', 'JoinGroup', request, options);
  }

  syncGroup(request: m.SyncGroupRequest, options: CallOptions): Promise<m.SyncGroupResponse> {
    return this.unary('syncGroup', 'SyncGroup', request, options);
  }

  heartbeat(request: m.HeartbeatRequest, options: CallOptions): Promise<m.HeartbeatResponse> {
    return this.unary('heartbeat', 'Heartbeat', request, options);
  }

  openHeartbeatStream(onPush: (code: ErrorCode) => void): HeartbeatStream {
    const metadata = new Metadata();
    if (this.token !== undefined) metadata.set('authorization', `Bearer ${this.token}`);
    // No deadline: the stream lives as long as the member's generation; each send has its own bound.
    const open = (this.client as unknown as Record<string, (metadata: Metadata) => HeartbeatCall>)
      .heartbeatStream;
    return new GrpcHeartbeatStream(open.call(this.client, metadata), onPush);
  }

  watchGroups(
    request: m.WatchGroupsRequest,
    onEvent: (event: m.GroupEvent) => void,
    onEnd: (error: CohortError | null) => void,
  ): GroupWatchCall {
    const metadata = new Metadata();
    if (this.token !== undefined) metadata.set('authorization', `Bearer ${this.token}`);
    // No deadline: a watch lasts until it is cancelled.
    const open = (
      this.client as unknown as Record<string, (request: unknown, metadata: Metadata) => WatchCall>
    ).watchGroups;
    const call = open.call(this.client, request, metadata);
    let isCancelled = false;
    let isEnded = false;
    const end = (error: CohortError | null): void => {
      if (isEnded) return;
      isEnded = true;
      onEnd(isCancelled ? null : error);
    };
    call.on('data', (event: m.GroupEvent) => {
      if (!isEnded) onEvent(event);
    });
    // grpc-js emits 'error' for every status but OK, and 'status' for all of them.
    call.on('error', (error: ServiceError) => end(errorFromStatus(error, WATCH_GROUPS)));
    call.on('status', (status: StatusObject) =>
      end(
        status.code === Status.OK
          ? errorFromCode(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${WATCH_GROUPS} was ended by the server`)
          : errorFromStatus(status, WATCH_GROUPS),
      ),
    );
    return {
      cancel: () => {
        isCancelled = true;
        call.cancel();
      },
      pause: () => call.pause(),
      resume: () => call.resume(),
    };
  }

  /**
   * FindCoordinator; resolves null when the server does not serve it (gRPC UNIMPLEMENTED: a cohort from
   * before clusters of coordinators, where the node asked coordinates every group it is sent).
   */
  async findCoordinator(
    request: FindCoordinatorRequest,
    options: CallOptions,
  ): Promise<FindCoordinatorResponse | null> {
    try {
      return await this.unary<FindCoordinatorRequest, FindCoordinatorResponse>(
        'findCoordinator',
        'FindCoordinator',
        request,
        options,
      );
    } catch (error) {
      if (
        error instanceof CohortError &&
        (error.cause as ServiceError | undefined)?.code === Status.UNIMPLEMENTED
      )
        return null;
      throw error;
    }
  }

  leaveGroup(request: m.LeaveGroupRequest, options: CallOptions): Promise<m.LeaveGroupResponse> {
    return this.unary('leaveGroup', 'LeaveGroup', request, options);
  }

  offsetCommit(request: m.OffsetCommitRequest, options: CallOptions): Promise<m.OffsetCommitResponse> {
    return this.unary('offsetCommit', 'OffsetCommit', request, options);
  }

  offsetFetch(request: m.OffsetFetchRequest, options: CallOptions): Promise<m.OffsetFetchResponse> {
    return this.unary('offsetFetch', 'OffsetFetch', request, options);
  }

  describeGroups(request: m.DescribeGroupsRequest, options: CallOptions): Promise<m.DescribeGroupsResponse> {
    return this.unary('describeGroups', 'DescribeGroups', request, options);
  }

  listGroups(request: m.ListGroupsRequest, options: CallOptions): Promise<m.ListGroupsResponse> {
    return this.unary('listGroups', 'ListGroups', request, options);
  }

  deleteGroups(request: m.DeleteGroupsRequest, options: CallOptions): Promise<m.DeleteGroupsResponse> {
    return this.unary('deleteGroups', 'DeleteGroups', request, options);
  }

  createTopics(request: b.CreateTopicsRequest, options: CallOptions): Promise<b.CreateTopicsResponse> {
    return this.unary('createTopics', 'CreateTopics', request, options, this.broker);
  }

  metadata(request: b.MetadataRequest, options: CallOptions): Promise<b.MetadataResponse> {
    return this.unary('metadata', 'Metadata', request, options, this.broker);
  }

  async produce(request: b.ProduceRequest, options: CallOptions): Promise<b.ProduceResponse> {
    const wire = await this.unary<object, WireOf<b.ProduceResponse>>(
      'produce',
      'Produce',
      produceToWire(request),
      options,
      this.broker,
    );
    return produceFromWire(wire);
  }

  async fetch(request: b.FetchRequest, options: CallOptions): Promise<b.FetchResponse> {
    const wire = await this.unary<object, WireOf<b.FetchResponse>>(
      'fetch',
      'Fetch',
      fetchToWire(request),
      options,
      this.broker,
    );
    return fetchFromWire(wire);
  }

  async listOffsets(request: b.ListOffsetsRequest, options: CallOptions): Promise<b.ListOffsetsResponse> {
    const wire = await this.unary<b.ListOffsetsRequest, WireOf<b.ListOffsetsResponse>>(
      'listOffsets',
      'ListOffsets',
      request,
      options,
      this.broker,
    );
    return listOffsetsFromWire(wire);
  }

  /** DescribeGroups of no group: the cheapest call there is; resolves with how it failed, or null. */
  private describeNoGroups(timeoutMs: number): Promise<ServiceError | null> {
    return new Promise((resolve) => {
      const metadata = new Metadata();
      if (this.token !== undefined) metadata.set('authorization', `Bearer ${this.token}`);
      const send = (this.client as unknown as Record<string, Unary<m.DescribeGroupsRequest, unknown>>)
        .describeGroups;
      send.call(
        this.client,
        { groups: [] },
        metadata,
        { deadline: new Date(this.time.nowMs() + timeoutMs) },
        (error) => resolve(error),
      );
    });
  }

  /** Closes the channel; calls still in flight end with CANCELLED. */
  close(): void {
    this.broker.close();
    this.client.close();
  }

  private unary<Req, Res>(
    method: string,
    rpc: string,
    request: Req,
    options: CallOptions,
    client: Client = this.client,
  ): Promise<Res> {
    const what = `${rpc} to ${client === this.broker ? 'the broker' : 'the group coordinator'}`;
    return new Promise<Res>((resolve, reject) => {
      const signal = options.signal;
      if (signal?.aborted) return reject(errorFromCode(ErrorCode.REQUEST_TIMED_OUT, `${what} was cancelled`));
      const metadata = new Metadata();
      if (this.token !== undefined) metadata.set('authorization', `Bearer ${this.token}`);
      const deadline = new Date(this.time.nowMs() + options.timeoutMs);
      const send = (client as unknown as Record<string, Unary<Req, Res>>)[method];
      const onAbort = (): void => call.cancel();
      const call = send.call(client, request, metadata, { deadline }, (error, response) => {
        signal?.removeEventListener('abort', onAbort);
        if (error) reject(errorFromStatus(error, what));
        else resolve(response);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

type WatchCall = ClientReadableStream<m.GroupEvent>;

const WATCH_GROUPS = 'WatchGroups to the group coordinator';

type HeartbeatCall = ClientDuplexStream<m.HeartbeatRequest, { errorCode: ErrorCode; sequence: number }>;

const HEARTBEAT_STREAM = 'HeartbeatStream to the group coordinator';

/** One HeartbeatStream call: answers settle sends in order (sequence 1, 2, ...), sequence 0 is a push. */
class GrpcHeartbeatStream implements HeartbeatStream {
  private readonly pending: { resolve: (code: ErrorCode) => void; reject: (error: CohortError) => void }[] =
    [];
  private ended: CohortError | null = null;
  private _unsupported = false;

  constructor(
    private readonly call: HeartbeatCall,
    onPush: (code: ErrorCode) => void,
  ) {
    call.on('data', (response: { errorCode: ErrorCode; sequence: number }) => {
      if (this.ended !== null) return;
      if (response.sequence === 0) onPush(response.errorCode);
      else this.pending.shift()?.resolve(response.errorCode);
    });
    // grpc-js emits 'error' for every status but OK, and 'status' for all of them.
    call.on('error', (error: ServiceError) => this.end(error.code, errorFromStatus(error, HEARTBEAT_STREAM)));
    call.on('status', (status: StatusObject) =>
      this.end(
        status.code,
        status.code === Status.OK
          ? errorFromCode(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${HEARTBEAT_STREAM} was ended by the server`)
          : errorFromStatus(status, HEARTBEAT_STREAM),
      ),
    );
  }

  get unsupported(): boolean {
    return this._unsupported;
  }

  send(request: m.HeartbeatRequest): Promise<ErrorCode> {
    if (this.ended !== null) return Promise.reject(this.ended);
    return new Promise<ErrorCode>((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.call.write(request);
    });
  }

  close(): void {
    if (this.ended !== null) return;
    this.end(
      Status.CANCELLED,
      errorFromCode(ErrorCode.REQUEST_TIMED_OUT, `${HEARTBEAT_STREAM} was cancelled`),
    );
    this.call.cancel();
  }

  private end(code: Status, error: CohortError): void {
    if (this.ended !== null) return;
    this.ended = error;
    this._unsupported = code === Status.UNIMPLEMENTED;
    for (const waiter of this.pending.splice(0)) waiter.reject(error);
  }
}

function channelCredentials(tls: boolean | TlsOptions | undefined): ChannelCredentials {
  if (tls === undefined || tls === false) return grpcCredentials.createInsecure();
  if (tls === true) return grpcCredentials.createSsl();
  return grpcCredentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null);
}
