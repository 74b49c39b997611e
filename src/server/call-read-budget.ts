import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { resolve } from 'node:path';

/**
 * The libuv stream under a connection: what Node's HTTP/2 session reads from once it has taken the socket
 * over. `writeQueueSize` is the bytes libuv has not written yet (non-zero while a write is in progress).
 */
export interface StreamHandle {
  readStop(): number;
  readStart(): number;
  readonly writeQueueSize: number;
}

/** What the budget needs of a connection (a net.Socket has all of it). */
export interface BudgetedConnection {
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
}

export interface CallReadBudgetOptions {
  /** Runs `endOfTurn` once the current event-loop turn's I/O is done. Default: setImmediate. */
  readonly scheduleEndOfTurn?: (endOfTurn: () => void) => void;
  /** The handle a connection reads through. Default: the socket's libuv handle (`socket._handle`). */
  readonly handleOf?: (connection: BudgetedConnection) => StreamHandle | undefined;
  /**
   * Runs `retry` after about `ms` milliseconds: how a connection left to the HTTP/2 session because a write
   * was in progress is checked again. Default: an unref'd setTimeout.
   */
  readonly scheduleRetry?: (retry: () => void, ms: number) => void;
  /** Called each turn in which the budget stopped reading (for a metric). */
  readonly onPause?: () => void;
}

/** How long a connection with a write in progress is left to the HTTP/2 session before it is checked. */
export const WRITE_WAIT_RECHECK_MS = 10;

function unrefTimeout(retry: () => void, ms: number): void {
  setTimeout(retry, ms).unref();
}

/** A net.Socket's libuv handle: the only way to stop reading from a socket an HTTP/2 session consumes. */
function socketHandle(connection: BudgetedConnection): StreamHandle | undefined {
  const handle = (connection as { _handle?: Partial<StreamHandle> | null })._handle;
  return typeof handle?.readStop === 'function' && typeof handle.readStart === 'function'
    ? (handle as StreamHandle)
    : undefined;
}

/**
 * Caps how many calls the server reads in one event-loop turn. One socket read can carry hundreds of calls
 * (a burst of JoinGroups on one connection), and libuv runs every ready read in the same turn: 5,000 calls
 * on 4 connections took ~90 ms of CPU in a single turn, and nothing else — a heartbeat, a timer, a reply —
 * ran meanwhile. Once `maxCallsPerTurn` calls have arrived in a turn, every connection stops reading;
 * at the end of the turn they read again, so the rest of the burst arrives over the next turns with the
 * loop free in between. Like Kafka's network threads muting a channel, this only delays reading: TCP and
 * HTTP/2 flow control hold the rest on the client's side, and no call is refused.
 *
 * Reading stops after the socket read in progress: the calls already in its buffer are still taken, so a
 * turn reads the budget plus at most one read's worth (64 KiB) of calls.
 *
 * Node's HTTP/2 session also stops reading while one of its writes is in progress (its defence against
 * peers that do not read their responses, CVE-2019-9511..9518), and starts again when the write is done.
 * The end of a turn must not undo that: a connection with bytes still queued for writing is left to the
 * session, which starts reading again itself when the write completes. Such a connection is checked again
 * every WRITE_WAIT_RECHECK_MS and started once its writes are done, so none can stay stopped for good
 * whatever the session's own state.
 */
export class CallReadBudget {
  private readonly connections = new Set<BudgetedConnection>();
  private readonly scheduleEndOfTurn: (endOfTurn: () => void) => void;
  private readonly handleOf: (connection: BudgetedConnection) => StreamHandle | undefined;
  private readonly scheduleRetry: (retry: () => void, ms: number) => void;
  private readonly onPause: () => void;
  /** Stopped by the budget, left to the HTTP/2 session because a write was in progress. */
  private readonly waitingForWrites = new Set<BudgetedConnection>();
  private isRetryScheduled = false;
  private admitted = 0;
  private isPaused = false;

  constructor(
    readonly maxCallsPerTurn: number,
    options: CallReadBudgetOptions = {},
  ) {
    if (!Number.isSafeInteger(maxCallsPerTurn) || maxCallsPerTurn < 0) {
      throw new RangeError(`maxCallsPerTurn must be an integer >= 0, got ${maxCallsPerTurn}`);
    }
    this.scheduleEndOfTurn = options.scheduleEndOfTurn ?? setImmediate;
    this.handleOf = options.handleOf ?? socketHandle;
    this.scheduleRetry = options.scheduleRetry ?? unrefTimeout;
    this.onPause = options.onPause ?? ((): void => {});
  }

  /** Whether a cap is set (0 means none: calls are read as fast as they come). */
  get isEnabled(): boolean {
    return this.maxCallsPerTurn > 0;
  }

  /** The connections being read; a closed one leaves on its own. */
  get connectionCount(): number {
    return this.connections.size;
  }

  /** Reads of this connection count against the budget from now on, until it closes. */
  addConnection(connection: BudgetedConnection): void {
    if (!this.isEnabled || connection.destroyed || this.connections.has(connection)) return;
    this.connections.add(connection);
    connection.once('close', () => {
      this.connections.delete(connection);
      this.waitingForWrites.delete(connection);
    });
    // A connection accepted in a turn that has already spent its budget waits with the others.
    if (this.isPaused) this.handleOf(connection)?.readStop();
  }

  /** One call has arrived. Cheap: an increment, and once a turn a scheduled end-of-turn. */
  admit(): void {
    if (!this.isEnabled) return;
    if (this.admitted++ === 0) this.scheduleEndOfTurn(this.endOfTurn);
    if (this.admitted === this.maxCallsPerTurn) this.pause();
  }

  private pause(): void {
    this.isPaused = true;
    for (const connection of this.connections) this.handleOf(connection)?.readStop();
    this.onPause();
  }

  private readonly endOfTurn = (): void => {
    this.admitted = 0;
    if (!this.isPaused) return;
    this.isPaused = false;
    for (const connection of this.connections) this.resume(connection);
  };

  /** Reads `connection` again, unless a write is in progress (then the session restarts it; see above). */
  private resume(connection: BudgetedConnection): void {
    this.waitingForWrites.delete(connection);
    if (connection.destroyed) return;
    const handle = this.handleOf(connection);
    if (handle === undefined) return;
    if (handle.writeQueueSize === 0) {
      handle.readStart();
      return;
    }
    this.waitingForWrites.add(connection);
    if (!this.isRetryScheduled) {
      this.isRetryScheduled = true;
      this.scheduleRetry(this.retryWaiting, WRITE_WAIT_RECHECK_MS);
    }
  }

  private readonly retryWaiting = (): void => {
    this.isRetryScheduled = false;
    // While the budget is spent, the end of the turn resumes every connection anyway.
    if (this.isPaused) return;
    for (const connection of [...this.waitingForWrites]) this.resume(connection);
  };
}

/** grpc-js's handler of one method, whatever its kind: the call, and for unary calls the callback. */
type MethodHandler = (call: unknown, callback?: unknown) => unknown;

/**
 * `service` with every method handler counting its call against `budget` before it runs. A budget with no
 * cap leaves the service as it is.
 */
export function budgetedService<S extends object>(service: S, budget: CallReadBudget): S {
  if (!budget.isEnabled) return service;
  const wrapped: Record<string, unknown> = {};
  for (const [name, handler] of Object.entries(service)) {
    if (typeof handler !== 'function') {
      wrapped[name] = handler;
      continue;
    }
    const handle = handler as MethodHandler;
    // Two parameters, not a rest parameter: no array per call on the heartbeat path.
    wrapped[name] = (call: unknown, callback?: unknown): unknown => {
      budget.admit();
      return handle(call, callback);
    };
  }
  return wrapped as S;
}

/** A Node server as its accepted sockets know it (`socket.server`). */
interface AcceptingServer {
  address(): string | { port: number } | null;
}

const SERVER_SOCKET_CHANNEL = 'net.server.socket';

/**
 * Calls `onConnection` with every socket accepted on `port` (TCP) or at `path` (a Unix socket) by any
 * server in this process, from now until the returned function is called. grpc-js owns the listening
 * server and does not expose the sockets it accepts; Node publishes each of them on the
 * `net.server.socket` diagnostics channel, after the server (here grpc-js's HTTP/2 server) has taken it.
 */
export function watchAcceptedSockets(
  listener: { readonly port: number } | { readonly path: string },
  onConnection: (socket: Socket) => void,
): () => void {
  const isOurs = (server: AcceptingServer | null | undefined): boolean => {
    const address = server?.address();
    if (address === null || address === undefined) return false;
    return 'path' in listener
      ? typeof address === 'string' && resolve(address) === resolve(listener.path)
      : typeof address === 'object' && address.port === listener.port;
  };
  const onMessage = (message: unknown): void => {
    const socket = (message as { socket?: Socket }).socket;
    if (socket !== undefined && isOurs((socket as { server?: AcceptingServer | null }).server)) {
      onConnection(socket);
    }
  };
  subscribe(SERVER_SOCKET_CHANNEL, onMessage);
  return () => {
    unsubscribe(SERVER_SOCKET_CHANNEL, onMessage);
  };
}
