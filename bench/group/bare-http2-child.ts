/**
 * The floor of stream-memory (bench/group/stream-memory.ts): a bare Node http2 server, in a process of its
 * own, that holds every stream it is sent open and answers each gRPC message on it with one
 * HeartbeatStreamResponse (NONE, the message's sequence number), framed by hand. No grpc-js, no cohort: what
 * one open, answered HTTP/2 stream costs a Node server at the least, so the stream section can say how much
 * of a HeartbeatStream's memory any Node gRPC server pays.
 *
 * The parent asks, over IPC: `port`, `memory` (after full collections, with the count of open streams).
 */
import { createServer, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { memoryAfterCollection } from '../support/gc-recorder';
import { serveParent } from './child-rpc';

export interface BareServerMemory {
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly externalBytes: number;
  readonly openStreams: number;
}

const GRPC_HEADER_BYTES = 5;
const EMPTY: Buffer = Buffer.alloc(0);

/** A gRPC-framed HeartbeatStreamResponse { error_code: NONE (omitted), sequence }. */
function framedAnswer(sequence: number): Buffer {
  const varint: number[] = [];
  for (let v = sequence; ; v >>>= 7) {
    if (v < 0x80) {
      varint.push(v);
      break;
    }
    varint.push((v & 0x7f) | 0x80);
  }
  const body = [0x10, ...varint]; // field 2 (sequence), wire type 0
  const framed = Buffer.alloc(GRPC_HEADER_BYTES + body.length);
  framed.writeUInt32BE(body.length, 1);
  framed.set(body, GRPC_HEADER_BYTES);
  return framed;
}

let openStreams = 0;
const server = createServer();
server.on('stream', (stream: ServerHttp2Stream) => {
  openStreams++;
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  // Messages are counted by their gRPC prefixes; a message split over chunks is put together first.
  let pending: Buffer = EMPTY;
  let answered = 0;
  stream.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= GRPC_HEADER_BYTES) {
      const size = GRPC_HEADER_BYTES + pending.readUInt32BE(1);
      if (pending.length < size) break;
      pending = pending.subarray(size);
      stream.write(framedAnswer(++answered));
    }
    if (pending.length === 0) pending = EMPTY; // not a view that keeps the last chunk alive
  });
  stream.on('end', () => stream.end());
  stream.on('close', () => openStreams--);
  stream.on('error', () => undefined);
});

serveParent(
  {
    port: () =>
      new Promise<number>((resolve) =>
        server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
      ),
    memory: (): BareServerMemory => ({ ...memoryAfterCollection(), openStreams }),
  },
  () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      setTimeout(resolve, 2_000).unref();
    }),
);
