import { createConnection, type Socket } from 'node:net';
import { decodeResponseBody, encodeRequest } from '../../src/kafka/protocol/kafka-request';
import type { ApiSchema } from '../../src/kafka/protocol/message-schema';
import type { Struct } from '../../src/kafka/protocol/message-codec';

/**
 * A raw Kafka connection to `address` (`HOST:PORT`): writes request frames, reads size-prefixed responses
 * in arrival order. The caller destroys `socket` when done (tests do it in afterEach).
 */
export class RawKafka {
  readonly socket: Socket;
  private buffered = Buffer.alloc(0);
  private readonly frames: Buffer[] = [];
  private waiter: (() => void) | undefined;
  readonly closed: Promise<void>;

  constructor(address: string) {
    const [host, port] = address.split(':');
    this.socket = createConnection({ host, port: Number(port) });
    this.socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      while (this.buffered.length >= 4 && this.buffered.length >= 4 + this.buffered.readInt32BE(0)) {
        const size = this.buffered.readInt32BE(0);
        this.frames.push(this.buffered.subarray(0, 4 + size));
        this.buffered = this.buffered.subarray(4 + size);
      }
      this.waiter?.();
    });
    this.closed = new Promise((resolve) => this.socket.once('close', () => resolve()));
    this.socket.on('close', () => this.waiter?.());
    this.socket.on('error', () => undefined);
  }

  send(schema: ApiSchema, version: number, correlationId: number, body: Struct): void {
    this.socket.write(encodeRequest(schema, version, correlationId, 'raw', body));
  }

  /** The next response frame (size included), or undefined once the connection is closed. */
  async next(): Promise<Buffer | undefined> {
    while (this.frames.length === 0) {
      if (this.socket.destroyed) return undefined;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
    return this.frames.shift();
  }

  async response(schema: ApiSchema, version: number): Promise<{ correlationId: number; body: Struct }> {
    const frame = await this.next();
    if (frame === undefined) throw new Error('the connection closed');
    return {
      correlationId: frame.readInt32BE(4),
      body: decodeResponseBody(schema, version, frame.subarray(4)),
    };
  }
}
