import { ServerInterceptingCall, status as grpcStatus } from '@grpc/grpc-js';
import type { ServerInterceptingCallInterface, ServerInterceptor } from '@grpc/grpc-js';

/** How many streaming calls may be open at once. */
export interface StreamingCallLimits {
  /** On one client connection (one HTTP/2 session). */
  readonly maxPerConnection: number;
  /** On the whole server. */
  readonly maxTotal: number;
}

export const STREAMING_CALLS_PER_CONNECTION_MESSAGE =
  'too many streaming calls open on this connection; close one first';
export const STREAMING_CALLS_TOTAL_MESSAGE = 'too many streaming calls open on this server; try again later';
export const STREAMING_CALLS_SHUTTING_DOWN_MESSAGE = 'the server is shutting down';

interface OpenCall {
  readonly connection: object | string;
  readonly call: ServerInterceptingCall;
  /** Its handler ends it on a drain (with OK), not `endAll`. */
  readonly isEndedByOwner: boolean;
}

/**
 * Which connection a call arrived on. The first interceptor of a grpc-js server is handed the call grpc-js
 * made from the HTTP/2 stream, whose session is the connection; grpc-js has no public name for it (its
 * peer address, `ip:port`, is one too on TCP, but every client of a Unix socket shares the same one).
 */
function connectionOf(call: ServerInterceptingCallInterface): object | string {
  const session = (call as { stream?: { session?: unknown } }).stream?.session;
  if (typeof session === 'object' && session !== null) return session;
  return call.getPeer();
}

/**
 * Keeps the streaming calls of a server — health `Watch` and reflection, which need no token, and any
 * other call whose request or response is a stream — within bounds, and ends them all on a drain.
 *
 * A unary call ends by itself once answered; a stream stays open as long as its client likes. Without a
 * bound, anyone who can open a connection (no token needed for health) can hold any number of them, each
 * with its buffers and watcher; and a graceful shutdown, which waits for every open call, would wait for
 * each of them until the shutdown timeout. So: a call beyond `maxPerConnection` on its connection, or
 * beyond `maxTotal` on the server, ends with RESOURCE_EXHAUSTED before its handler runs; and `endAll()`
 * ends every open one with UNAVAILABLE (after what its handler already wrote) and refuses new ones the
 * same way.
 *
 * `interceptor` must be the server's first interceptor (it tells connections apart through the call
 * grpc-js hands the first one). Unary calls pass through it untouched, at no cost.
 */
export class StreamingCalls {
  private readonly open = new Set<OpenCall>();
  private readonly perConnection = new Map<object | string, number>();
  private isDraining = false;

  /**
   * `exemptMethods`: paths of streaming methods this leaves alone, because something else bounds and ends
   * them. Member streams (`HeartbeatStream`) are: one per group member, a member needs the token, and
   * `HeartbeatStreams.endAll()` ends each with OK after the answers it owes. A cap of a few per connection
   * would refuse a process that runs many members over one channel.
   *
   * `endedByOwner`: paths of streaming methods that are counted like the others but that `endAll()` leaves
   * to their handlers, which end them on a drain with OK (`WatchGroups`: GroupWatches.endAll()). New ones
   * are refused during a drain all the same.
   */
  constructor(
    private readonly limits: StreamingCallLimits,
    private readonly onRefused?: (path: string, reason: string, peer: string) => void,
    private readonly exemptMethods: ReadonlySet<string> = new Set(),
    private readonly endedByOwner: ReadonlySet<string> = new Set(),
  ) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`${name} must be an integer >= 1, got ${String(value)}`);
      }
    }
  }

  /** Streaming calls open now. */
  get openCount(): number {
    return this.open.size;
  }

  /**
   * Ends every open streaming call with UNAVAILABLE (but those ended by their owner) and refuses new ones
   * from now on; idempotent.
   */
  endAll(): void {
    this.isDraining = true;
    for (const entry of [...this.open]) {
      if (entry.isEndedByOwner) continue;
      entry.call.sendStatus({ code: grpcStatus.UNAVAILABLE, details: STREAMING_CALLS_SHUTTING_DOWN_MESSAGE });
    }
  }

  readonly interceptor: ServerInterceptor = (methodDescriptor, call) => {
    // Unary: nothing to bound; grpc-js takes any ServerInterceptingCallInterface here.
    if (
      (!methodDescriptor.requestStream && !methodDescriptor.responseStream) ||
      this.exemptMethods.has(methodDescriptor.path)
    ) {
      return call as ServerInterceptingCall;
    }
    const connection = connectionOf(call);
    let entry: OpenCall | undefined;
    const release = (): void => {
      if (entry === undefined || !this.open.delete(entry)) return;
      const count = (this.perConnection.get(connection) ?? 1) - 1;
      if (count === 0) this.perConnection.delete(connection);
      else this.perConnection.set(connection, count);
    };
    const intercepting: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            const refusal = this.refusal(connection);
            if (refusal !== undefined) {
              this.onRefused?.(methodDescriptor.path, refusal.details, call.getPeer());
              call.sendStatus(refusal);
              return;
            }
            entry = {
              connection,
              call: intercepting,
              isEndedByOwner: this.endedByOwner.has(methodDescriptor.path),
            };
            this.open.add(entry);
            this.perConnection.set(connection, (this.perConnection.get(connection) ?? 0) + 1);
            nextMetadata(metadata);
          },
          onCancel: () => {
            release();
          },
        });
      },
      sendStatus: (status, next) => {
        release();
        next(status);
      },
    });
    return intercepting;
  };

  private refusal(connection: object | string): { code: grpcStatus; details: string } | undefined {
    if (this.isDraining) {
      return { code: grpcStatus.UNAVAILABLE, details: STREAMING_CALLS_SHUTTING_DOWN_MESSAGE };
    }
    if (this.open.size >= this.limits.maxTotal) {
      return { code: grpcStatus.RESOURCE_EXHAUSTED, details: STREAMING_CALLS_TOTAL_MESSAGE };
    }
    if ((this.perConnection.get(connection) ?? 0) >= this.limits.maxPerConnection) {
      return { code: grpcStatus.RESOURCE_EXHAUSTED, details: STREAMING_CALLS_PER_CONNECTION_MESSAGE };
    }
    return undefined;
  }
}
