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
  /** Called once in each turn in which the budget stopped reading on a connection (for a metric). */
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
 * (a burst of JoinGroups on one connection), and libuv runs every ready read in the same turn: without this
 * budget, 5,000 calls on 4 connections took ~70 ms of the main thread's CPU (~90 ms of the process's) in a
 * single turn (bench:group, 2026-11-30; docs/performance.md, G3 and G5), and nothing else — a heartbeat, a
 * timer, a reply — ran meanwhile. `budgetServerAt` counts every HTTP/2 stream a server opens. Once
 * `maxCallsPerTurn` calls have arrived in a turn, every connection stops reading;
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

  /**
   * One call has arrived (bound: usable as an event listener). Cheap: an increment, and once a turn a
   * scheduled end-of-turn. Every further `maxCallsPerTurn` calls in the same turn stop reading again: the
   * HTTP/2 session may have restarted a connection meanwhile, when one of its writes completed.
   */
  readonly admit = (): void => {
    if (!this.isEnabled) return;
    if (this.admitted++ === 0) this.scheduleEndOfTurn(this.endOfTurn);
    if (this.admitted % this.maxCallsPerTurn === 0) this.pause();
  };

  private pause(): void {
    let stopped = 0;
    for (const connection of this.connections) {
      const handle = this.handleOf(connection);
      if (handle === undefined) continue;
      handle.readStop();
      stopped++;
    }
    if (!this.isPaused && stopped > 0) this.onPause();
    this.isPaused = true;
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

/** A Node server as its accepted sockets know it (`socket.server`): here grpc-js's HTTP/2 server. */
interface AcceptingServer {
  address(): string | { port: number } | null;
  on(event: 'stream', listener: () => void): unknown;
  off(event: 'stream', listener: () => void): unknown;
}

/** Where a server listens: a TCP port, or a Unix socket's path. */
export type ListenerAddress = { readonly port: number } | { readonly path: string };

const SERVER_SOCKET_CHANNEL = 'net.server.socket';

/**
 * Calls `onConnection` with every socket accepted on `port` (TCP) or at `path` (a Unix socket) by any
 * server in this process, from now until the returned function is called. grpc-js owns the listening
 * server and does not expose the sockets it accepts; Node publishes each of them on the
 * `net.server.socket` diagnostics channel, after the server (here grpc-js's HTTP/2 server) has taken it.
 */
export function watchAcceptedSockets(
  listener: ListenerAddress,
  onConnection: (socket: Socket, server: AcceptingServer) => void,
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
    const server = (socket as { server?: AcceptingServer | null } | undefined)?.server;
    if (socket !== undefined && server != null && isOurs(server)) onConnection(socket, server);
  };
  subscribe(SERVER_SOCKET_CHANNEL, onMessage);
  return () => {
    unsubscribe(SERVER_SOCKET_CHANNEL, onMessage);
  };
}

/**
 * Puts the server listening at `listener` under `budget`, from now until the returned function is called:
 * every connection it accepts is one the budget can stop, and every HTTP/2 stream opened on it (every
 * call, whatever its service, authenticated or not) counts against the budget as its headers arrive.
 */
export function budgetServerAt(budget: CallReadBudget, listener: ListenerAddress): () => void {
  if (!budget.isEnabled) return () => {};
  const counted = new Set<AcceptingServer>();
  const stopWatching = watchAcceptedSockets(listener, (socket, server) => {
    if (!counted.has(server)) {
      counted.add(server);
      server.on('stream', budget.admit);
    }
    budget.addConnection(socket);
  });
  return () => {
    stopWatching();
    for (const server of counted) server.off('stream', budget.admit);
    counted.clear();
  };
}
