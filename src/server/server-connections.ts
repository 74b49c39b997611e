import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import type { ListenerAddress } from './call-read-budget';
import { watchAcceptedSockets } from './call-read-budget';

/** The listening server a connection was accepted by: grpc-js's HTTP/2 server. */
export interface ListeningServer {
  prependListener(event: 'stream', listener: (...args: unknown[]) => void): unknown;
  on(event: 'secureConnection', listener: (socket: TLSSocket) => void): unknown;
}

export interface ServerConnectionsOptions {
  /** Called once per listening server, before any stream of its first connection arrives. */
  readonly onServer?: (server: ListeningServer) => void;
}

/**
 * Every connection the gRPC listener accepted, so a drain can close the ones it no longer needs.
 *
 * grpc-js's graceful shutdown sends each connection GOAWAY and closes it as Node's HTTP/2 session does:
 * once its last stream is done the session ends its side of the socket (its bytes flushed, FIN sent)
 * and then waits for the client to close the other side. A client that never does — one that stopped
 * reading, or never spoke HTTP/2, or a TLS handshake left half done — holds the shutdown until its
 * timeout, and Node's server close with it. `closeWhenDone()` closes each connection instead as soon as
 * its session has finished with it (its socket's `finish`: no stream is open on it and everything it
 * wrote has been handed to the kernel), and at once one whose TLS handshake is not done (no session, so
 * no call). Connections with calls in flight are left to finish them.
 */
export class ServerConnections {
  private readonly sockets = new Set<Socket>();
  /** The TLS socket a session runs over, by the TCP socket under it. */
  private readonly secured = new WeakMap<Socket, TLSSocket>();
  private readonly servers = new Set<ListeningServer>();
  private readonly stopWatching: () => void;
  private isDraining = false;

  constructor(listener: ListenerAddress, options: ServerConnectionsOptions = {}) {
    this.stopWatching = watchAcceptedSockets(listener, (socket, server) => {
      const listening = server as unknown as ListeningServer;
      if (!this.servers.has(listening)) {
        this.servers.add(listening);
        if (listening instanceof TlsServer) {
          listening.on('secureConnection', (tlsSocket) => {
            const raw = (tlsSocket as TLSSocket & { _parent?: Socket })._parent;
            if (raw !== undefined) this.secured.set(raw, tlsSocket);
            if (this.isDraining && raw !== undefined) this.closeWhenDone(raw);
          });
        }
        options.onServer?.(listening);
      }
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      if (this.isDraining) this.closeWhenDone(socket);
    });
  }

  /** Connections open now. */
  get size(): number {
    return this.sockets.size;
  }

  /** From now on, closes every connection as soon as its HTTP/2 session is done with it. Idempotent. */
  closeWhenDone(): void;
  closeWhenDone(socket: Socket): void;
  closeWhenDone(socket?: Socket): void {
    if (socket === undefined) {
      if (this.isDraining) return;
      this.isDraining = true;
      for (const each of this.sockets) this.closeWhenDone(each);
      return;
    }
    const server = (socket as { server?: unknown }).server;
    const sessionSocket: Socket | undefined = server instanceof TlsServer ? this.secured.get(socket) : socket;
    if (sessionSocket === undefined) {
      // A TLS handshake still under way: there is no session yet, so no call to wait for.
      socket.destroy();
      return;
    }
    if (sessionSocket.destroyed || sessionSocket.writableFinished) {
      sessionSocket.destroy();
      socket.destroy();
      return;
    }
    sessionSocket.once('finish', () => {
      sessionSocket.destroy();
      socket.destroy();
    });
  }

  /** Stops watching for new connections (the ones already open are left as they are). */
  stop(): void {
    this.stopWatching();
  }
}
