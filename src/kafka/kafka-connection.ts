import type { Socket } from 'node:net';
import type { RequestContext } from '../group/group-protocol';
import type { BrokerRequestContext } from '../log/broker-protocol';
import { KafkaProtocolError } from './protocol/kafka-protocol-error';
import { decodeRequest, type DecodedRequest } from './protocol/kafka-request';
import type { Time } from '../time';

/**
 * Why a connection was ended by the door, as the refused-frames metric labels it. `acks-zero-error`: a
 * Produce with acks=0 failed for some partition, which only closing the connection can tell the producer.
 * `idle`: nothing went either way for the idle limit (a client stalled inside a frame included).
 */
export type RefusedFrameReason =
  'oversized' | 'malformed' | 'truncated' | 'unsupported' | 'acks-zero-error' | 'idle';

/** A request the connection hands on: decoded, served, answered. */
export type ServableRequest = Exclude<DecodedRequest, { kind: 'unsupported' }>;

/**
 * What serving a request yields: a whole response frame as the buffers to write in order (a Fetch answer's
 * record sets are the log's own buffers, not copies), or undefined for none (a Produce with acks=0, which
 * Kafka never answers), or an order to close the connection.
 */
export type ServedRequest =
  readonly Buffer[] | undefined | { readonly close: RefusedFrameReason; readonly detail: string };

/**
 * What every connection needs of its listener: one object shared by all of them (an idle member's
 * connection is what the door holds most of, so it holds no closures and no options of its own).
 */
export interface KafkaConnectionHost {
  /** The largest request accepted (its size prefix excluded): larger ones end the connection. */
  readonly maxRequestBytes: number;
  /** The clock idleness is measured on. */
  readonly time: Time;
  serve(request: ServableRequest, connection: KafkaConnection): Promise<ServedRequest>;
  /** The door ended the connection because of what the client sent (or did not send: `idle`). */
  onRefused(connection: KafkaConnection, reason: RefusedFrameReason, detail: string): void;
  onClosed(connection: KafkaConnection): void;
}

const NOTHING_TO_UNREGISTER = (): void => {};
/** Every socket's 'error' listener: the 'close' that follows an error is what ends the connection. */
const IGNORE_SOCKET_ERROR = (): void => {};

const SIZE_BYTES = 4;

/**
 * One client connection: reads size-prefixed frames, serves them one at a time and writes each answer
 * before the next request is served, so answers leave strictly in request order (kafka-python checks
 * correlation ids against the head of its queue) and a parked Fetch or JoinGroup holds the answers after
 * it, as in Kafka. Pipelined frames wait in a queue; while it holds more than one maximal request, the
 * socket stops reading (TCP pushes back on the client). An answer the socket cannot take at once (its
 * client does not read) holds the next request until it has drained, and reading stays paused meanwhile,
 * as Kafka mutes a channel until its response is sent: however many requests a client pipelines, its
 * connection holds one unsent answer and at most one maximal request's worth of queued frames beyond the
 * one being read. An oversized size prefix, an undecodable frame, an unknown key or version, or a frame cut
 * short by the end of the stream ends this connection only; the connection's going away releases whatever
 * it has parked. As in Kafka, a client's end of stream is its going away (no half-open connections): what
 * it had parked is released, nothing more is answered. A connection that neither reads nor writes for the
 * listener's idle limit (Kafka's connections.max.idle.ms) is ended by the listener's sweep
 * (`isIdleSince`), unless a request of its own is parked: a client stalled inside a frame included.
 *
 * The connection is also the context of each of its requests (its peer, "the connection went away"): an
 * idle member's connection is the door's commonest object, so it is one object with two closures, and
 * its queues and cancel listeners exist only while in use.
 */
export class KafkaConnection implements RequestContext, BrokerRequestContext {
  /** The bytes read and not yet split into frames: one buffer, or several until a frame is whole. */
  private chunks: Buffer[] | undefined;
  private bufferedBytes = 0;
  /** Frames read and not yet served (pipelined requests). */
  private frames: Buffer[] | undefined;
  private queuedBytes = 0;
  private isServing = false;
  /** An answer is still in the socket's buffer: nothing more is read or served until it drains. */
  private isDraining = false;
  private isClosed = false;
  /** The parked requests' "went away" listeners. */
  private cancelListeners: Set<() => void> | undefined;
  /** When bytes last went either way (the host's clock, monotonic). */
  private lastActiveMs: number;

  constructor(
    private readonly socket: Socket,
    private readonly host: KafkaConnectionHost,
  ) {
    socket.setNoDelay(true);
    this.lastActiveMs = host.time.monotonicMs();
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    // Node ends the socket when its client does (allowHalfOpen is off), then closes it.
    socket.on('error', IGNORE_SOCKET_ERROR);
    socket.on('close', () => this.onClose());
  }

  /** The peer's host, as DescribeGroups reports it (`client_host`); read when asked, not held. */
  get clientHost(): string {
    return (this.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  }

  /** The connection is gone: nothing more is written to it. */
  get isCancelled(): boolean {
    return this.isClosed;
  }

  onCancel(listener: () => void): () => void {
    if (this.isClosed) {
      listener();
      return NOTHING_TO_UNREGISTER;
    }
    const listeners = (this.cancelListeners ??= new Set());
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  /**
   * Whether nothing went either way since `sinceMs` on the host's clock, with no request of the
   * connection's own parked (a long poll or a join is the server's doing, not the client's stall).
   */
  isIdleSince(sinceMs: number): boolean {
    return !this.isClosed && !this.isServing && !this.isDraining && this.lastActiveMs <= sinceMs;
  }

  /** Ends the connection now (the listener is closing). */
  destroy(): void {
    this.socket.destroy();
  }

  /** Ends an idle connection, counted as refused for `idle`. */
  expireIdle(idleMs: number): void {
    const detail =
      this.bufferedBytes > 0
        ? `idle for ${idleMs} ms inside a frame (${this.bufferedBytes} bytes read)`
        : `idle for ${idleMs} ms`;
    this.refuse('idle', detail);
  }

  private onData(chunk: Buffer): void {
    if (this.isClosed) return;
    this.lastActiveMs = this.host.time.monotonicMs();
    let chunks = this.chunks;
    if (chunks === undefined) chunks = this.chunks = [chunk];
    else chunks.push(chunk);
    this.bufferedBytes += chunk.length;
    const { maxRequestBytes } = this.host;
    // Chunks are joined once per frame, when the whole frame is there (a large Produce arrives in many
    // chunks: joining at every chunk would copy it over and over).
    while (this.bufferedBytes >= SIZE_BYTES) {
      if (chunks[0]!.length < SIZE_BYTES) chunks = this.chunks = [Buffer.concat(chunks)];
      const size = chunks[0]!.readInt32BE(0);
      if (size < 0 || size > maxRequestBytes) {
        this.refuse('oversized', `a request of ${size} bytes (the most is ${maxRequestBytes})`);
        return;
      }
      if (this.bufferedBytes < SIZE_BYTES + size) break;
      const head: Buffer = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      (this.frames ??= []).push(head.subarray(SIZE_BYTES, SIZE_BYTES + size));
      this.queuedBytes += size;
      const rest: Buffer = head.subarray(SIZE_BYTES + size);
      this.bufferedBytes = rest.length;
      if (rest.length === 0) {
        this.chunks = undefined;
        break;
      }
      chunks = this.chunks = [rest];
    }
    if (this.queuedBytes > maxRequestBytes) this.socket.pause();
    this.serveNext();
  }

  private serveNext(): void {
    if (this.isServing || this.isDraining || this.isClosed) return;
    const frame = this.frames?.shift();
    if (frame === undefined) return;
    if (this.frames!.length === 0) this.frames = undefined;
    this.queuedBytes -= frame.length;
    this.resumeIfRoom();
    let request: DecodedRequest;
    try {
      request = decodeRequest(frame);
    } catch (error) {
      // Anything else would be a bug of the codec: it still ends only this connection, never the process.
      this.refuse('malformed', error instanceof KafkaProtocolError ? error.message : String(error));
      return;
    }
    if (request.kind === 'unsupported') {
      this.refuse('unsupported', `api key ${request.apiKey} version ${request.apiVersion}`);
      return;
    }
    this.isServing = true;
    this.host.serve(request, this).then(
      (served) => this.onServed(served),
      (error: unknown) => {
        // serve() answers every failure itself: a rejection is a bug, which ends this connection only.
        this.isServing = false;
        this.refuse('malformed', String(error));
      },
    );
  }

  private onServed(served: ServedRequest): void {
    this.isServing = false;
    if (this.isClosed) return;
    this.lastActiveMs = this.host.time.monotonicMs();
    if (served === undefined) {
      // Nothing to answer (acks=0).
    } else if ('close' in served) {
      this.refuse(served.close, served.detail);
      return;
    } else if (!this.write(served)) {
      this.isDraining = true;
      this.socket.pause();
      this.socket.once('drain', () => this.onDrained());
      return;
    }
    this.serveNext();
  }

  /**
   * Writes a frame's buffers as one writev when there are several (corked, so the socket does not write
   * each on its own); false when the socket's buffer is over its high-water mark.
   */
  private write(chunks: readonly Buffer[]): boolean {
    if (chunks.length === 1) return this.socket.write(chunks[0]!);
    this.socket.cork();
    let isRoomLeft = true;
    for (const chunk of chunks) isRoomLeft = this.socket.write(chunk);
    this.socket.uncork();
    return isRoomLeft;
  }

  private onDrained(): void {
    this.isDraining = false;
    if (this.isClosed) return;
    this.lastActiveMs = this.host.time.monotonicMs();
    this.resumeIfRoom();
    this.serveNext();
  }

  /** Reads again, unless an answer is draining or the queue holds more than one maximal request. */
  private resumeIfRoom(): void {
    if (this.isDraining || this.queuedBytes > this.host.maxRequestBytes) return;
    if (this.socket.isPaused()) this.socket.resume();
  }

  private refuse(reason: RefusedFrameReason, detail: string): void {
    if (this.isClosed) return;
    this.host.onRefused(this, reason, detail);
    this.onClose();
    this.socket.destroy();
  }

  private onClose(): void {
    if (this.isClosed) return;
    // The client ended its stream inside a frame (its end is its going away: Node closes after it).
    if (this.bufferedBytes > 0 && this.socket.readableEnded) {
      this.host.onRefused(this, 'truncated', `the stream ended inside a frame (${this.bufferedBytes} bytes)`);
    }
    this.isClosed = true;
    this.frames = undefined;
    this.chunks = undefined;
    this.bufferedBytes = 0;
    const listeners = this.cancelListeners;
    this.cancelListeners = undefined;
    // Releases every parked request of the connection (each listener once).
    if (listeners !== undefined) for (const listener of [...listeners]) listener();
    this.host.onClosed(this);
  }
}
