import type { Socket } from 'node:net';
import type { RequestContext } from '../group/group-protocol';
import type { BrokerRequestContext } from '../log/broker-protocol';
import { KafkaProtocolError } from './protocol/kafka-protocol-error';
import { decodeRequest, type DecodedRequest } from './protocol/kafka-request';

/**
 * Why a connection was ended by the door, as the refused-frames metric labels it. `acks-zero-error`: a
 * Produce with acks=0 failed for some partition, which only closing the connection can tell the producer.
 */
export type RefusedFrameReason = 'oversized' | 'malformed' | 'truncated' | 'unsupported' | 'acks-zero-error';

/** A request the connection hands on: decoded, served, answered. */
export type ServableRequest = Exclude<DecodedRequest, { kind: 'unsupported' }>;

/**
 * What serving a request yields: the bytes of a whole response frame, or undefined for none (a Produce
 * with acks=0, which Kafka never answers), or an order to close the connection.
 */
export type ServedRequest =
  Buffer | undefined | { readonly close: RefusedFrameReason; readonly detail: string };

export interface KafkaConnectionOptions {
  /** The largest request accepted (its size prefix excluded): larger ones end the connection. */
  readonly maxRequestBytes: number;
  readonly serve: (request: ServableRequest, context: KafkaRequestContext) => Promise<ServedRequest>;
  /** The door ended the connection because of what the client sent. */
  readonly onRefused: (reason: RefusedFrameReason, detail: string) => void;
  readonly onClosed: () => void;
}

const NOTHING_TO_UNREGISTER = (): void => {};

/** The context of every request of one connection: its peer, and "the connection went away". */
export class KafkaRequestContext implements RequestContext, BrokerRequestContext {
  private readonly listeners = new Set<() => void>();
  private isGone = false;

  constructor(readonly clientHost: string) {}

  /** The connection is gone: nothing more is written to it. */
  get isCancelled(): boolean {
    return this.isGone;
  }

  onCancel(listener: () => void): () => void {
    if (this.isGone) {
      listener();
      return NOTHING_TO_UNREGISTER;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Releases every parked request of the connection (each listener once). */
  cancelAll(): void {
    if (this.isGone) return;
    this.isGone = true;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener();
  }
}

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
 * it had parked is released, nothing more is answered.
 */
export class KafkaConnection {
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;
  private readonly frames: Buffer[] = [];
  private queuedBytes = 0;
  private isServing = false;
  /** An answer is still in the socket's buffer: nothing more is read or served until it drains. */
  private isDraining = false;
  private isClosed = false;
  private readonly context: KafkaRequestContext;

  constructor(
    private readonly socket: Socket,
    private readonly options: KafkaConnectionOptions,
  ) {
    socket.setNoDelay(true);
    this.context = new KafkaRequestContext((socket.remoteAddress ?? '').replace(/^::ffff:/, ''));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('end', () => {
      if (this.bufferedBytes > 0)
        this.refuse('truncated', `the stream ended inside a frame (${this.bufferedBytes} bytes)`);
      else socket.end();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => this.onClose());
  }

  /** Ends the connection now (the listener is closing). */
  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.isClosed) return;
    this.chunks.push(chunk);
    this.bufferedBytes += chunk.length;
    // Chunks are joined once per frame, when the whole frame is there (a large Produce arrives in many
    // chunks: joining at every chunk would copy it over and over).
    while (this.bufferedBytes >= SIZE_BYTES) {
      if (this.chunks[0]!.length < SIZE_BYTES) this.chunks = [Buffer.concat(this.chunks)];
      const size = this.chunks[0]!.readInt32BE(0);
      if (size < 0 || size > this.options.maxRequestBytes) {
        this.refuse('oversized', `a request of ${size} bytes (the most is ${this.options.maxRequestBytes})`);
        return;
      }
      if (this.bufferedBytes < SIZE_BYTES + size) break;
      const head = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      this.frames.push(head.subarray(SIZE_BYTES, SIZE_BYTES + size));
      this.queuedBytes += size;
      const rest = head.subarray(SIZE_BYTES + size);
      this.chunks = rest.length === 0 ? [] : [rest];
      this.bufferedBytes = rest.length;
    }
    if (this.queuedBytes > this.options.maxRequestBytes) this.socket.pause();
    this.serveNext();
  }

  private serveNext(): void {
    if (this.isServing || this.isDraining || this.isClosed) return;
    const frame = this.frames.shift();
    if (frame === undefined) return;
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
    this.options.serve(request, this.context).then(
      (served) => {
        this.isServing = false;
        if (this.isClosed) return;
        if (served === undefined) {
          // Nothing to answer (acks=0).
        } else if ('close' in served) {
          this.refuse(served.close, served.detail);
          return;
        } else if (!this.socket.write(served)) {
          this.isDraining = true;
          this.socket.pause();
          this.socket.once('drain', () => {
            this.isDraining = false;
            if (this.isClosed) return;
            this.resumeIfRoom();
            this.serveNext();
          });
          return;
        }
        this.serveNext();
      },
      (error: unknown) => {
        // serve() answers every failure itself: a rejection is a bug, which ends this connection only.
        this.isServing = false;
        this.refuse('malformed', String(error));
      },
    );
  }

  /** Reads again, unless an answer is draining or the queue holds more than one maximal request. */
  private resumeIfRoom(): void {
    if (this.isDraining || this.queuedBytes > this.options.maxRequestBytes) return;
    if (this.socket.isPaused()) this.socket.resume();
  }

  private refuse(reason: RefusedFrameReason, detail: string): void {
    if (this.isClosed) return;
    this.options.onRefused(reason, detail);
    this.onClose();
    this.socket.destroy();
  }

  private onClose(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.frames.length = 0;
    this.chunks = [];
    this.context.cancelAll();
    this.options.onClosed();
  }
}
