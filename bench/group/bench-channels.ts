import { Client, credentials, status as Status, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import type { RawBidiStream, StreamSink } from './raw-http2-channels';
import type { UnaryChannels } from './unary-channels';

/**
 * A few grpc-js channels to one server, each its own HTTP/2 connection, sending requests that were encoded
 * before the clock started. The client side is the bottleneck of the rebalance bench (a grpc-js call costs
 * the client more than the server), so it does as little per call as grpc-js allows: no Metadata, no
 * options, no request encoding on the timed path; responses are decoded (their error codes are checked).
 */
export class BenchChannels implements UnaryChannels {
  private readonly clients: Client[] = [];

  constructor(target: string, count: number) {
    for (let i = 0; i < count; i++) {
      // A local subchannel pool per client: otherwise grpc-js shares one connection among them.
      this.clients.push(
        new Client(target, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }),
      );
    }
  }

  get size(): number {
    return this.clients.length;
  }

  call<Res>(channel: number, path: string, request: Buffer, decode: (bytes: Buffer) => Res): Promise<Res> {
    const client = this.clients[channel % this.clients.length];
    return new Promise<Res>((resolve, reject) => {
      client.makeUnaryRequest<Buffer, Res>(path, identity, decode, request, (error, response) =>
        error !== null || response === undefined
          ? reject(error ?? new Error('no response'))
          : resolve(response),
      );
    });
  }

  /** A bidi stream on channel `channel % size`, as RawHttp2Channels.openStream opens one. */
  openStream(channel: number, path: string, sink: StreamSink): RawBidiStream {
    const call = this.clients[channel % this.clients.length].makeBidiStreamRequest<Buffer, Buffer>(
      path,
      identity,
      identity,
    );
    let isEnded = false;
    const end = (error: Error | undefined): void => {
      if (isEnded) return;
      isEnded = true;
      sink.onEnd(error);
    };
    call.on('data', (message: Buffer) => sink.onMessage(message));
    // grpc-js emits 'error' for every status but OK, and 'status' for all of them.
    // Only OK is a clean end, as on RawHttp2Channels: nothing here cancels its own streams.
    call.on('error', (error: ServiceError) => end(error));
    call.on('status', (s: StatusObject) => end(s.code === Status.OK ? undefined : new Error(s.details)));
    return { send: (message) => call.write(message), end: () => call.end() };
  }

  close(): void {
    for (const client of this.clients.splice(0)) client.close();
  }
}

function identity(bytes: Buffer): Buffer {
  return bytes;
}
