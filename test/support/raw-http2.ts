import { connect as connectHttp2, constants } from 'node:http2';
import type { ClientHttp2Session } from 'node:http2';
import { connect } from 'node:net';

/** HTTP/2 frame types (RFC 9113, section 6). */
export const FRAME = { DATA: 0x0, HEADERS: 0x1, RST_STREAM: 0x3, SETTINGS: 0x4, PING: 0x6, GOAWAY: 0x7 };
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const ACK = 0x1;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** An HPACK integer with an `prefixBits`-bit prefix (RFC 7541, section 5.1). */
function hpackInteger(value: number, prefixBits: number, firstByte: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [firstByte | value];
  const bytes = [firstByte | max];
  let rest = value - max;
  while (rest >= 128) {
    bytes.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return bytes;
}

/** Every header as a literal without indexing, name and value as plain octets (no Huffman, no table). */
function hpackBlock(headers: readonly (readonly [string, string])[]): Buffer {
  const bytes: number[] = [];
  for (const [name, value] of headers) {
    const n = Buffer.from(name, 'latin1');
    const v = Buffer.from(value, 'latin1');
    bytes.push(0x00, ...hpackInteger(n.length, 7, 0), ...n, ...hpackInteger(v.length, 7, 0), ...v);
  }
  return Buffer.from(bytes);
}

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}

/** A gRPC message on the wire: uncompressed flag, 4-byte length, the bytes. */
export function grpcMessage(body: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

export interface ReceivedFrame {
  readonly type: number;
  readonly flags: number;
  readonly payload: Buffer;
}

/**
 * One gRPC call over a hand-written HTTP/2 connection to `127.0.0.1:port`, with exactly the request headers
 * given, in order, duplicates included: what Node's own client (and so grpc-js) will not send, since it
 * refuses two values of a single-value header such as `authorization`. Resolves with the frames the server
 * sent on the call's stream, once it ended it (END_STREAM or RST_STREAM) or went away. Response headers are
 * HPACK-compressed and left undecoded: a test reads what kind of frames came back.
 */
export function rawHttp2Call(
  port: number,
  path: string,
  extraHeaders: readonly (readonly [string, string])[],
  body: Buffer,
): Promise<ReceivedFrame[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const frames: ReceivedFrame[] = [];
    let buffered = Buffer.alloc(0);
    const finish = (): void => {
      socket.destroy();
      resolve(frames);
    };
    socket.once('error', reject);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 9) {
        const length = buffered.readUIntBE(0, 3);
        if (buffered.length < 9 + length) break;
        const type = buffered[3];
        const flags = buffered[4];
        const streamId = buffered.readUInt32BE(5) & 0x7fffffff;
        const payload = buffered.subarray(9, 9 + length);
        buffered = buffered.subarray(9 + length);
        if (type === FRAME.SETTINGS && (flags & ACK) === 0)
          socket.write(frame(FRAME.SETTINGS, ACK, 0, Buffer.alloc(0)));
        if (type === FRAME.PING && (flags & ACK) === 0) socket.write(frame(FRAME.PING, ACK, 0, payload));
        if (type === FRAME.GOAWAY) return finish();
        if (streamId !== 1) continue;
        frames.push({ type, flags, payload: Buffer.from(payload) });
        if (type === FRAME.RST_STREAM || (flags & END_STREAM) !== 0) return finish();
      }
    });
    socket.once('connect', () => {
      const headers = hpackBlock([
        [':method', 'POST'],
        [':scheme', 'http'],
        [':path', path],
        [':authority', `127.0.0.1:${port}`],
        ['content-type', 'application/grpc'],
        ['te', 'trailers'],
        ...extraHeaders,
      ]);
      socket.write(
        Buffer.concat([
          PREFACE,
          frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0)),
          frame(FRAME.HEADERS, END_HEADERS, 1, headers),
          frame(FRAME.DATA, END_STREAM, 1, grpcMessage(body)),
        ]),
      );
    });
  });
}

export interface UnfinishedCall {
  /**
   * Resolves once the server has the call's headers: it answered a PING sent after them on the same
   * connection, and reads frames in order.
   */
  readonly ready: Promise<void>;
  /** Resolves once the server ends or resets the stream, or the connection closes. */
  readonly ended: Promise<void>;
  close(): void;
}

/**
 * Opens a unary call on `path` whose request never finishes: the headers go out, the message does not. To
 * the server it is a call in flight, as a slow client's is, which a graceful shutdown waits for; unlike a
 * stream, nothing on the server can end it early.
 */
export function openUnfinishedCall(
  target: string,
  path: string,
  headers: Record<string, string> = {},
): UnfinishedCall {
  const session: ClientHttp2Session = connectHttp2(`http://${target}`);
  session.on('error', () => undefined);
  const stream = session.request(
    {
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    },
    { endStream: false },
  );
  stream.on('error', () => undefined);
  stream.resume();
  // A ping before the connection is up is cancelled, not queued.
  const ready = new Promise<void>((resolve, reject) => {
    const ping = (): void => {
      session.ping((error) => (error === null ? resolve() : reject(error)));
    };
    if (session.connecting) session.once('connect', ping);
    else ping();
  });
  const ended = new Promise<void>((resolve) => {
    stream.once('close', resolve);
    session.once('close', resolve);
  });
  return { ready, ended, close: () => session.destroy() };
}
