import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { HpackDecoder, type HeaderField } from '../support/hpack-decoder';
import { literalField } from '../support/hpack-literals';
import { asError, decodeOnlyMessage, framedMessage, GRPC_PREFIX_BYTES } from './grpc-framing';
import type { UnaryChannels } from './unary-channels';

/**
 * Unary gRPC calls over HTTP/2 spoken directly on TCP sockets: the rebalance bench's default client.
 *
 * Why: the bench's client and the server share the machine's two cores, so every millisecond of client CPU
 * lengthens a round as much as one of the server's. Node's http2 client costs its side about as much CPU as
 * the server spends answering (per stream it builds a Duplex, an AsyncResource and header objects, and it
 * makes garbage the client's GC then collects): at 1,000 members the client spent 166 ms of CPU per round
 * against the server's 159. This client keeps per call only what a call needs: one write of a HEADERS
 * frame (a block encoded once per path and connection) and the DATA, and a frame parser that collects the
 * answer's DATA and reads `grpc-status` from the trailers through an HPACK decoder.
 *
 * What it implements of HTTP/2 (RFC 9113), as a client that opens streams and never accepts any:
 * - the connection preface and SETTINGS (push disabled), SETTINGS acknowledgements, PING answers;
 * - flow control both ways with HTTP/2's default windows (65,535 bytes per stream and per connection, as
 *   Node's client and grpc-js keep them): DATA waits for the server's WINDOW_UPDATE when a window is spent,
 *   and the client returns what it has read once half a window is used, as nghttp2 does;
 * - the server's INITIAL_WINDOW_SIZE and MAX_FRAME_SIZE settings; header blocks split over CONTINUATION;
 *   padding; RST_STREAM (fails the call), GOAWAY (fails the calls the server will not answer, and any new
 *   call), and a closed socket (fails every open call).
 * Besides unary calls it opens bidi streams (`openStream`, for HeartbeatStream): one gRPC message per
 * `send`, each message of the answer handed over as it arrives, a half-close with `end`; such a stream is
 * not held to the call timeout.
 * It does not limit concurrent streams (cohort's server sets no limit), and it never compresses.
 */
export class RawHttp2Channels implements UnaryChannels {
  private readonly connections: RawHttp2Connection[] = [];

  /**
   * `callTimeoutMs`: a call not answered by then fails (and its stream is cancelled), so no run hangs;
   * `now` is the clock that judges it (tests pass their own and call `failOverdueCalls`).
   */
  constructor(
    target: string,
    count: number,
    callTimeoutMs = DEFAULT_CALL_TIMEOUT_MS,
    now: () => number = () => performance.now(),
  ) {
    const at = target.lastIndexOf(':');
    const host = target.slice(0, at).replace(/^\[|\]$/g, '');
    const port = Number(target.slice(at + 1));
    for (let i = 0; i < count; i++) {
      this.connections.push(new RawHttp2Connection(host, port, target, callTimeoutMs, now));
    }
  }

  get size(): number {
    return this.connections.length;
  }

  call<Res>(
    channel: number,
    path: string,
    request: Buffer,
    decode: (bytes: Buffer) => Res,
    onSent?: () => void,
  ): Promise<Res> {
    if (this.connections.length === 0) return Promise.reject(new Error('the channels are closed'));
    return this.connections[channel % this.connections.length].call(path, request, decode, onSent);
  }

  /** A bidi stream on connection `channel % size` (see RawHttp2Connection.openStream). */
  openStream(channel: number, path: string, sink: StreamSink): RawBidiStream {
    if (this.connections.length === 0) throw new Error('the channels are closed');
    return this.connections[channel % this.connections.length].openStream(path, sink);
  }

  /** Fails the calls older than the call timeout. Runs every second on its own; exposed for tests. */
  failOverdueCalls(): void {
    for (const connection of this.connections) connection.failOverdueCalls();
  }

  close(): void {
    for (const connection of this.connections.splice(0)) connection.close();
  }
}

const FRAME_HEADER_BYTES = 9;
/** Long enough for a 5,000-member rebalance on a loaded machine; a hung server fails the run instead. */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
const DEFAULT_WINDOW_BYTES = 65_535;
const DEFAULT_MAX_FRAME_BYTES = 16_384;
/** Return read bytes to the server once this many are unacknowledged: half the window, as nghttp2 does. */
const WINDOW_UPDATE_THRESHOLD = DEFAULT_WINDOW_BYTES >>> 1;
const MAX_STREAM_ID = 2 ** 31 - 1;
const MAX_WINDOW_BYTES = 2 ** 31 - 1;
const MAX_FRAME_BYTES_LIMIT = 16_777_215;
const CANCEL = 0x8;

const enum FrameType {
  DATA = 0x0,
  HEADERS = 0x1,
  RST_STREAM = 0x3,
  SETTINGS = 0x4,
  PUSH_PROMISE = 0x5,
  PING = 0x6,
  GOAWAY = 0x7,
  WINDOW_UPDATE = 0x8,
  CONTINUATION = 0x9,
}

// Frame flags (RFC 9113 §6): ACK shares END_STREAM's bit, on SETTINGS and PING frames.
const FLAG_END_STREAM = 0x1;
const FLAG_ACK = 0x1;
const FLAG_END_HEADERS = 0x4;
const FLAG_PADDED = 0x8;
const FLAG_PRIORITY = 0x20;

const SETTINGS_ENABLE_PUSH = 0x2;
const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
const SETTINGS_MAX_FRAME_SIZE = 0x5;

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** What a bidi stream's opener hears: each message, then the end (undefined for grpc-status OK). */
export interface StreamSink {
  onMessage(message: Buffer): void;
  onEnd(error: Error | undefined): void;
}

/** The sending half of a bidi stream opened with `openStream`. */
export interface RawBidiStream {
  /** Sends `message` (protobuf bytes, not yet framed) as one gRPC message. */
  send(message: Buffer): void;
  /** Half-closes: the server answers what it was sent, then ends the stream. */
  end(): void;
}

/** One call in flight: its request still to send, and its answer as it arrives. */
interface OpenStream {
  readonly id: number;
  readonly path: string;
  readonly startedAtMs: number;
  readonly resolve: (value: never) => void;
  readonly reject: (error: Error) => void;
  readonly decode: (bytes: Buffer) => unknown;
  readonly onSent: (() => void) | undefined;
  /**
   * The gRPC-framed messages still to send, oldest first, and how much of the first is sent. A unary call
   * holds its one request; a bidi stream adds one per `send`.
   */
  readonly outbox: Buffer[];
  sentBytes: number;
  /** END_STREAM goes with the last byte of the outbox: always for a unary call, once `end` for a stream. */
  isOutboxFinal: boolean;
  /** A stream's closing empty DATA frame is written. */
  hasSentEnd: boolean;
  /** Set on a bidi stream: it is told each message as it arrives, and the end, instead of one answer. */
  readonly sink: StreamSink | undefined;
  sendWindow: number;
  isQueued: boolean;
  readonly chunks: Buffer[];
  receivedUnacked: number;
  httpStatus: string | undefined;
  grpcStatus: string | undefined;
  grpcMessage: string;
}

class RawHttp2Connection {
  private readonly socket: Socket;
  private readonly streams = new Map<number, OpenStream>();
  private readonly headerBlocks = new Map<string, Buffer>();
  private readonly decoder = new HpackDecoder();
  private nextStreamId = 1;
  private sendWindow = DEFAULT_WINDOW_BYTES;
  private peerInitialWindow = DEFAULT_WINDOW_BYTES;
  private peerMaxFrame = DEFAULT_MAX_FRAME_BYTES;
  private receivedUnacked = 0;
  /** Streams with DATA waiting for window, in the order they started waiting. */
  private blocked: OpenStream[] = [];
  private unread: Buffer | undefined;
  /** A header block split over CONTINUATION frames, until its END_HEADERS. */
  private continuing: { streamId: number; endStream: boolean; parts: Buffer[] } | undefined;
  private isCorked = false;
  /** Set once the connection can take no new call (GOAWAY, error, close). */
  private failure: Error | undefined;

  private readonly deadlineSweep: NodeJS.Timeout;

  constructor(
    host: string,
    port: number,
    private readonly authority: string,
    private readonly callTimeoutMs: number,
    private readonly now: () => number,
  ) {
    this.socket = connect({ host, port, noDelay: true });
    // One timer per connection, not per call: streams are kept in the order they opened.
    this.deadlineSweep = setInterval(this.failOverdueCalls, Math.min(1_000, callTimeoutMs));
    this.deadlineSweep.unref();
    this.socket.on('data', this.onData);
    this.socket.on('error', (error) => this.fail(error));
    this.socket.on('close', () => this.fail(new Error('connection closed')));
    const settings = Buffer.alloc(6);
    settings.writeUInt16BE(SETTINGS_ENABLE_PUSH, 0);
    settings.writeUInt32BE(0, 2);
    this.write(Buffer.concat([PREFACE, frame(FrameType.SETTINGS, 0, 0, settings)]));
  }

  call<Res>(
    path: string,
    request: Buffer,
    decode: (bytes: Buffer) => Res,
    onSent?: () => void,
  ): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const stream = this.start(path, resolve as (value: never) => void, reject, decode, onSent, undefined);
      if (stream === undefined) return;
      stream.outbox.push(framedMessage(request));
      stream.isOutboxFinal = true;
      this.sendData(stream);
    });
  }

  /**
   * A bidi gRPC stream on `path`: `sink` hears every message as it arrives and then the end. It is not
   * held to the call timeout (a member stream lives as long as its member).
   */
  openStream(path: string, sink: StreamSink): RawBidiStream {
    const stream = this.start(
      path,
      () => sink.onEnd(undefined),
      (error) => sink.onEnd(error),
      identity,
      undefined,
      sink,
    );
    return {
      send: (message) => {
        if (stream === undefined || stream.isOutboxFinal || this.streams.get(stream.id) !== stream) return;
        stream.outbox.push(framedMessage(message));
        this.sendData(stream);
      },
      end: () => {
        if (stream === undefined || stream.isOutboxFinal || this.streams.get(stream.id) !== stream) return;
        stream.isOutboxFinal = true;
        this.sendData(stream);
      },
    };
  }

  /** Opens a stream (its HEADERS written) or rejects at once; undefined when it could not open. */
  private start(
    path: string,
    resolve: (value: never) => void,
    reject: (error: Error) => void,
    decode: (bytes: Buffer) => unknown,
    onSent: (() => void) | undefined,
    sink: StreamSink | undefined,
  ): OpenStream | undefined {
    if (this.failure !== undefined) {
      reject(this.failure);
      return undefined;
    }
    const id = this.nextStreamId;
    if (id > MAX_STREAM_ID) {
      reject(new Error('stream ids exhausted on this connection'));
      return undefined;
    }
    this.nextStreamId += 2;
    const block = this.headerBlockFor(path);
    const stream: OpenStream = {
      id,
      path,
      startedAtMs: this.now(),
      resolve,
      reject,
      decode,
      onSent,
      outbox: [],
      sentBytes: 0,
      isOutboxFinal: false,
      hasSentEnd: false,
      sink,
      sendWindow: this.peerInitialWindow,
      isQueued: false,
      chunks: [],
      receivedUnacked: 0,
      httpStatus: undefined,
      grpcStatus: undefined,
      grpcMessage: '',
    };
    this.streams.set(id, stream);
    // HEADERS are not flow-controlled; the DATA follows as far as the windows allow.
    this.write(frame(FrameType.HEADERS, FLAG_END_HEADERS, id, block));
    return stream;
  }

  close(): void {
    clearInterval(this.deadlineSweep);
    const goaway = Buffer.alloc(8);
    this.write(frame(FrameType.GOAWAY, 0, 0, goaway));
    this.socket.end();
  }

  readonly failOverdueCalls = (): void => {
    const now = this.now();
    for (const stream of this.streams.values()) {
      if (stream.sink !== undefined) continue; // a bidi stream has no deadline
      if (now - stream.startedAtMs < this.callTimeoutMs) break;
      this.streams.delete(stream.id);
      this.write(frame(FrameType.RST_STREAM, 0, stream.id, uint32(CANCEL)));
      stream.reject(new Error(`${stream.path}: no answer within ${this.callTimeoutMs} ms`));
    }
  };

  private headerBlockFor(path: string): Buffer {
    let block = this.headerBlocks.get(path);
    if (block === undefined) {
      // Static-table entries 3 (:method POST) and 6 (:scheme http), then literals that are not indexed, so
      // the server's decoder table never changes: :path (name 4), :authority (name 1), content-type
      // (name 31) and te (a literal name).
      block = Buffer.concat([
        Buffer.from([0x83, 0x86]),
        literalField(4, path),
        literalField(1, this.authority),
        literalField(31, 'application/grpc'),
        literalField('te', 'trailers'),
      ]);
      this.headerBlocks.set(path, block);
    }
    return block;
  }

  private sendData(stream: OpenStream): void {
    const { outbox } = stream;
    while (outbox.length > 0) {
      const body = outbox[0];
      const n = Math.min(
        body.length - stream.sentBytes,
        stream.sendWindow,
        this.sendWindow,
        this.peerMaxFrame,
      );
      if (n <= 0) {
        if (!stream.isQueued) {
          stream.isQueued = true;
          this.blocked.push(stream);
        }
        return;
      }
      const from = stream.sentBytes;
      stream.sentBytes += n;
      stream.sendWindow -= n;
      this.sendWindow -= n;
      const isWhole = stream.sentBytes === body.length;
      if (isWhole) {
        outbox.shift();
        stream.sentBytes = 0;
      }
      // A unary call ends with its request; a stream ends with an empty frame once `end` was called.
      const isLast = isWhole && outbox.length === 0 && stream.isOutboxFinal && stream.sink === undefined;
      this.write(frameHeader(FrameType.DATA, isLast ? FLAG_END_STREAM : 0, stream.id, n));
      this.write(body.subarray(from, from + n), isLast ? stream.onSent : undefined);
    }
    if (stream.sink !== undefined && stream.isOutboxFinal && !stream.hasSentEnd) {
      stream.hasSentEnd = true;
      this.write(frameHeader(FrameType.DATA, FLAG_END_STREAM, stream.id, 0));
    }
  }

  /** After a WINDOW_UPDATE or a larger initial window: the waiting streams, oldest first. */
  private resumeBlocked(): void {
    const waiting = this.blocked;
    this.blocked = [];
    for (const stream of waiting) {
      stream.isQueued = false;
      if (this.streams.get(stream.id) === stream) this.sendData(stream);
    }
  }

  /** Writes go out together once per turn of the event loop: one system call for a burst of calls. */
  private write(bytes: Buffer, callback?: () => void): void {
    if (!this.isCorked) {
      this.isCorked = true;
      this.socket.cork();
      process.nextTick(this.uncork);
    }
    if (callback === undefined) this.socket.write(bytes);
    // Node also runs the callback, with an error, for bytes a destroyed socket never sent.
    else this.socket.write(bytes, (error) => error == null && callback());
  }

  private readonly uncork = (): void => {
    this.isCorked = false;
    this.socket.uncork();
  };

  private readonly onData = (data: Buffer): void => {
    const bytes = this.unread === undefined ? data : Buffer.concat([this.unread, data]);
    this.unread = undefined;
    let offset = 0;
    try {
      while (bytes.length - offset >= FRAME_HEADER_BYTES) {
        const length = bytes.readUIntBE(offset, 3);
        if (bytes.length - offset < FRAME_HEADER_BYTES + length) break;
        const type = bytes[offset + 3];
        const flags = bytes[offset + 4];
        const streamId = bytes.readUInt32BE(offset + 5) & MAX_STREAM_ID;
        const start = offset + FRAME_HEADER_BYTES;
        offset = start + length;
        this.onFrame(type, flags, streamId, bytes.subarray(start, offset));
      }
    } catch (error) {
      this.fail(asError(error));
      this.socket.destroy();
      return;
    }
    if (offset < bytes.length) this.unread = bytes.subarray(offset);
  };

  private onFrame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (this.continuing !== undefined && type !== FrameType.CONTINUATION) {
      throw new Error(`HTTP/2: frame type ${type} inside a header block`);
    }
    switch (type) {
      case FrameType.DATA:
        this.onDataFrame(flags, streamId, payload);
        return;
      case FrameType.HEADERS: {
        let fragment = unpad(flags, payload);
        if ((flags & FLAG_PRIORITY) !== 0) fragment = fragment.subarray(5);
        const endStream = (flags & FLAG_END_STREAM) !== 0;
        if ((flags & FLAG_END_HEADERS) !== 0) this.onHeaderBlock(streamId, endStream, fragment);
        else this.continuing = { streamId, endStream, parts: [Buffer.from(fragment)] };
        return;
      }
      case FrameType.CONTINUATION: {
        const open = this.continuing;
        if (open === undefined || open.streamId !== streamId) throw new Error('HTTP/2: stray CONTINUATION');
        open.parts.push(Buffer.from(payload));
        if ((flags & FLAG_END_HEADERS) !== 0) {
          this.continuing = undefined;
          this.onHeaderBlock(streamId, open.endStream, Buffer.concat(open.parts));
        }
        return;
      }
      case FrameType.RST_STREAM: {
        const stream = this.streams.get(streamId);
        if (stream === undefined) return;
        this.streams.delete(streamId);
        stream.reject(
          new Error(`${stream.path}: stream reset by the server (code ${payload.readUInt32BE(0)})`),
        );
        return;
      }
      case FrameType.SETTINGS:
        if ((flags & FLAG_ACK) === 0) this.onSettings(payload);
        return;
      case FrameType.PING:
        if ((flags & FLAG_ACK) === 0) this.write(frame(FrameType.PING, FLAG_ACK, 0, Buffer.from(payload)));
        return;
      case FrameType.GOAWAY: {
        const lastStreamId = payload.readUInt32BE(0) & MAX_STREAM_ID;
        const error = new Error(`GOAWAY from the server (code ${payload.readUInt32BE(4)})`);
        this.failure ??= error;
        for (const [id, stream] of this.streams) {
          if (id > lastStreamId) {
            this.streams.delete(id);
            stream.reject(error);
          }
        }
        return;
      }
      case FrameType.WINDOW_UPDATE: {
        const increment = payload.readUInt32BE(0) & MAX_STREAM_ID;
        // Both are errors of the whole connection here: this client has no use for a half-broken one.
        if (increment === 0) throw new Error('HTTP/2: WINDOW_UPDATE of 0');
        if (streamId === 0) {
          this.sendWindow += increment;
          if (this.sendWindow > MAX_WINDOW_BYTES) throw new Error('HTTP/2: connection window overflow');
        } else {
          const stream = this.streams.get(streamId);
          if (stream === undefined) return;
          stream.sendWindow += increment;
          if (stream.sendWindow > MAX_WINDOW_BYTES) throw new Error('HTTP/2: stream window overflow');
        }
        if (this.blocked.length > 0) this.resumeBlocked();
        return;
      }
      case FrameType.PUSH_PROMISE:
        // Push is disabled in our SETTINGS; its header block would also leave the HPACK table behind.
        throw new Error('HTTP/2: PUSH_PROMISE with push disabled');
      default:
      // PRIORITY, and frame types this client does not know: ignored, as RFC 9113 §4.1 asks.
    }
  }

  private onDataFrame(flags: number, streamId: number, payload: Buffer): void {
    // Flow control counts the whole frame, padding included; the server may not send past our window.
    this.receivedUnacked += payload.length;
    if (this.receivedUnacked > DEFAULT_WINDOW_BYTES)
      throw new Error('HTTP/2: DATA beyond the connection window');
    if (this.receivedUnacked >= WINDOW_UPDATE_THRESHOLD) {
      this.write(windowUpdate(0, this.receivedUnacked));
      this.receivedUnacked = 0;
    }
    const stream = this.streams.get(streamId);
    if (stream === undefined) return;
    const data = unpad(flags, payload);
    if (data.length > 0) stream.chunks.push(data);
    if (stream.sink !== undefined && data.length > 0) deliverMessages(stream, stream.sink);
    if ((flags & FLAG_END_STREAM) !== 0) {
      this.finish(stream);
      return;
    }
    stream.receivedUnacked += payload.length;
    if (stream.receivedUnacked > DEFAULT_WINDOW_BYTES)
      throw new Error('HTTP/2: DATA beyond the stream window');
    if (stream.receivedUnacked >= WINDOW_UPDATE_THRESHOLD) {
      this.write(windowUpdate(streamId, stream.receivedUnacked));
      stream.receivedUnacked = 0;
    }
  }

  private onHeaderBlock(streamId: number, endStream: boolean, block: Buffer): void {
    // Every block is decoded, whatever its stream: each may change the table the next ones refer to.
    const fields = this.decoder.decode(block);
    const stream = this.streams.get(streamId);
    if (stream === undefined) return;
    readStatus(stream, fields);
    if (endStream) this.finish(stream);
  }

  private onSettings(payload: Buffer): void {
    for (let at = 0; at + 6 <= payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      if (id === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW_BYTES) throw new Error(`HTTP/2: initial window ${value}`);
        // A new initial window moves every open stream's window by the difference (RFC 9113 §6.9.2).
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const stream of this.streams.values()) stream.sendWindow += delta;
      } else if (id === SETTINGS_MAX_FRAME_SIZE) {
        if (value < DEFAULT_MAX_FRAME_BYTES || value > MAX_FRAME_BYTES_LIMIT) {
          throw new Error(`HTTP/2: max frame size ${value}`);
        }
        this.peerMaxFrame = value;
      }
    }
    this.write(frame(FrameType.SETTINGS, FLAG_ACK, 0, Buffer.alloc(0)));
    if (this.blocked.length > 0) this.resumeBlocked();
  }

  private finish(stream: OpenStream): void {
    this.streams.delete(stream.id);
    const { path } = stream;
    if (stream.httpStatus !== '200') {
      stream.reject(new Error(`${path}: HTTP status ${stream.httpStatus ?? 'missing'}`));
      return;
    }
    if (stream.grpcStatus !== '0') {
      stream.reject(
        new Error(`${path}: grpc-status ${stream.grpcStatus ?? 'missing'} ${stream.grpcMessage}`),
      );
      return;
    }
    if (stream.sink !== undefined) {
      if (stream.chunks.length === 0) stream.resolve(undefined as never);
      else stream.reject(new Error(`${path}: the stream ended inside a message`));
      return;
    }
    try {
      stream.resolve(decodeOnlyMessage(path, stream.chunks, stream.decode) as never);
    } catch (error) {
      stream.reject(asError(error));
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    clearInterval(this.deadlineSweep);
    const open = [...this.streams.values()];
    this.streams.clear();
    this.blocked = [];
    for (const stream of open) stream.reject(error);
  }
}

/** Hands `sink` every whole gRPC message in the stream's chunks, keeping a partial one for later. */
function deliverMessages(stream: OpenStream, sink: StreamSink): void {
  const { chunks } = stream;
  let bytes = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  chunks.length = 0;
  while (bytes.length >= GRPC_PREFIX_BYTES) {
    if (bytes[0] !== 0) throw new Error(`${stream.path}: a compressed message`);
    const end = GRPC_PREFIX_BYTES + bytes.readUInt32BE(1);
    if (bytes.length < end) break;
    sink.onMessage(bytes.subarray(GRPC_PREFIX_BYTES, end));
    bytes = bytes.subarray(end);
  }
  if (bytes.length > 0) chunks.push(bytes);
}

function identity(bytes: Buffer): Buffer {
  return bytes;
}

function readStatus(stream: OpenStream, fields: readonly HeaderField[]): void {
  for (const [name, value] of fields) {
    if (name === ':status') stream.httpStatus = value;
    else if (name === 'grpc-status') stream.grpcStatus = value;
    else if (name === 'grpc-message') stream.grpcMessage = percentDecoded(value);
  }
}

/** grpc-message is percent-encoded (gRPC over HTTP/2); a malformed one is shown as it came. */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function frameHeader(type: number, flags: number, streamId: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUIntBE(length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return header;
}

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  return Buffer.concat([frameHeader(type, flags, streamId, payload.length), payload]);
}

/** The 4-byte payload of RST_STREAM (an error code) and WINDOW_UPDATE (an increment). */
function uint32(value: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(value, 0);
  return payload;
}

function windowUpdate(streamId: number, increment: number): Buffer {
  return frame(FrameType.WINDOW_UPDATE, 0, streamId, uint32(increment));
}

/** A DATA or HEADERS payload without its padding (RFC 9113 §6.1). */
function unpad(flags: number, payload: Buffer): Buffer {
  if ((flags & FLAG_PADDED) === 0) return payload;
  const padLength = payload[0];
  if (padLength >= payload.length) throw new Error('HTTP/2: padding longer than the frame');
  return payload.subarray(1, payload.length - padLength);
}
