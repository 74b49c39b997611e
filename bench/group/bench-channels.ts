import { Client, credentials } from '@grpc/grpc-js';
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

  close(): void {
    for (const client of this.clients.splice(0)) client.close();
  }
}

function identity(bytes: Buffer): Buffer {
  return bytes;
}
