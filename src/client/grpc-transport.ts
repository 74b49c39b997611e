import {
  credentials as grpcCredentials,
  Metadata,
  type ChannelCredentials,
  type ChannelOptions,
  type Client,
  type ServiceError,
} from '@grpc/grpc-js';
import { ErrorCode } from '../errors';
import { SYSTEM_TIME, type Time } from '../time';
import type * as m from './coordinator-messages';
import { errorFromCode } from './error-from-code';
import { errorFromStatus } from './error-from-status';
import { groupCoordinatorClient } from './group-coordinator-proto';
import type { CallOptions, GroupTransport } from './group-transport';

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
 * `GroupTransport` over gRPC: one grpc-js channel for every call, a deadline on each, and the caller's abort
 * signal cancelling the call. Failures reject with a `CohortError` rebuilt from the gRPC status number.
 */
export class GrpcTransport implements GroupTransport {
  private readonly client: Client;
  private readonly token: string | undefined;
  private readonly time: Time;

  constructor(options: GrpcTransportOptions) {
    if (typeof options.address !== 'string' || options.address === '') {
      throw new RangeError('address must be "host:port" or "unix:/path"');
    }
    const Ctor = groupCoordinatorClient();
    this.client = new Ctor(options.address, channelCredentials(options.tls), options.channelOptions ?? {});
    this.token = options.token;
    this.time = options.time ?? SYSTEM_TIME;
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

  leaveGroup(request: m.LeaveGroupRequest, options: CallOptions): Promise<m.LeaveGroupResponse> {
    return this.unary('leaveGroup', 'LeaveGroup', request, options);
  }

  offsetCommit(request: m.OffsetCommitRequest, options: CallOptions): Promise<m.OffsetCommitResponse> {
    return this.unary('offsetCommit', 'OffsetCommit', request, options);
  }

  offsetFetch(request: m.OffsetFetchRequest, options: CallOptions): Promise<m.OffsetFetchResponse> {
    return this.unary('offsetFetch', 'OffsetFetch', request, options);
  }

  /** Closes the channel; calls still in flight end with CANCELLED. */
  close(): void {
    this.client.close();
  }

  private unary<Req, Res>(method: string, rpc: string, request: Req, options: CallOptions): Promise<Res> {
    const what = `${rpc} to the group coordinator`;
    return new Promise<Res>((resolve, reject) => {
      const signal = options.signal;
      if (signal?.aborted) return reject(errorFromCode(ErrorCode.REQUEST_TIMED_OUT, `${what} was cancelled`));
      const metadata = new Metadata();
      if (this.token !== undefined) metadata.set('authorization', `Bearer ${this.token}`);
      const deadline = new Date(this.time.nowMs() + options.timeoutMs);
      const send = (this.client as unknown as Record<string, Unary<Req, Res>>)[method];
      const onAbort = (): void => call.cancel();
      const call = send.call(this.client, request, metadata, { deadline }, (error, response) => {
        signal?.removeEventListener('abort', onAbort);
        if (error) reject(errorFromStatus(error, what));
        else resolve(response);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function channelCredentials(tls: boolean | TlsOptions | undefined): ChannelCredentials {
  if (tls === undefined || tls === false) return grpcCredentials.createInsecure();
  if (tls === true) return grpcCredentials.createSsl();
  return grpcCredentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null);
}
