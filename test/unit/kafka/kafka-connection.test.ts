import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { KafkaConnection, type ServableRequest } from '../../../src/kafka/kafka-connection';
import { API_VERSIONS } from '../../../src/kafka/protocol/kafka-apis';
import { ManualTime } from '../../../src/time';
import { encodeRequest } from '../../../src/kafka/protocol/kafka-request';

/**
 * A socket whose peer does not read: `write` returns `isFull` negated, as net.Socket does once its buffer
 * is over the high-water mark; `drain()` is the peer reading it all.
 */
class StalledSocket extends EventEmitter {
  readonly remoteAddress = '127.0.0.1';
  readonly written: Buffer[] = [];
  isFull = false;
  private paused = false;

  setNoDelay(): this {
    return this;
  }
  isPaused(): boolean {
    return this.paused;
  }
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  readonly corkedWrites: Buffer[][] = [];
  private corked: Buffer[] | undefined;

  write(bytes: Buffer): boolean {
    if (this.corked !== undefined) this.corked.push(bytes);
    else this.written.push(bytes);
    return !this.isFull;
  }
  cork(): void {
    this.corked = [];
  }
  uncork(): void {
    this.corkedWrites.push(this.corked!);
    this.written.push(Buffer.concat(this.corked!));
    this.corked = undefined;
  }
  drain(): void {
    this.isFull = false;
    this.emit('drain');
  }
  end(): this {
    return this;
  }
  destroy(): this {
    this.emit('close');
    return this;
  }
}

/** Runs the connection's promise callbacks (serve() here answers at once: microtasks only). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A connection on `socket` whose requests are answered at once with `answerOf(correlation id)`; returns the
 * correlation ids served, in order.
 */
function connectionServing(socket: StalledSocket, answerOf: (id: number) => Buffer[]): number[] {
  const served: number[] = [];
  new KafkaConnection(socket as unknown as Socket, {
    maxRequestBytes: 1 << 20,
    time: new ManualTime(),
    serve: async (request: ServableRequest) => {
      served.push(request.header.correlationId);
      return answerOf(request.header.correlationId);
    },
    onRefused: () => undefined,
    onClosed: () => undefined,
  });
  return served;
}

describe('KafkaConnection', () => {
  test('an answer the socket cannot take holds the next request, and reading, until it drains', async () => {
    const socket = new StalledSocket();
    const served = connectionServing(socket, (id) => [Buffer.from([id])]);
    socket.isFull = true;
    socket.emit(
      'data',
      Buffer.concat([1, 2, 3].map((id) => encodeRequest(API_VERSIONS, 2, id, 'stalled', {}))),
    );
    await settle();
    // The first answer did not fit: nothing more is served, nothing more is read.
    expect(served).toEqual([1]);
    expect(socket.isPaused()).toBe(true);

    socket.isFull = false;
    socket.drain();
    await settle();
    expect(served).toEqual([1, 2, 3]);
    expect(socket.written.map((b) => b[0])).toEqual([1, 2, 3]);
    expect(socket.isPaused()).toBe(false);
  });

  test("a frame of several buffers is written corked, in order, and its last write's room decides", async () => {
    const socket = new StalledSocket();
    const served = connectionServing(socket, (id) => [
      Buffer.from([id]),
      Buffer.from([id, id]),
      Buffer.from([id, id, id]),
    ]);
    socket.isFull = true;
    socket.emit('data', Buffer.concat([1, 2].map((id) => encodeRequest(API_VERSIONS, 2, id, 'corked', {}))));
    await settle();
    expect(served).toEqual([1]);
    expect(socket.corkedWrites).toEqual([[Buffer.from([1]), Buffer.from([1, 1]), Buffer.from([1, 1, 1])]]);

    socket.drain();
    await settle();
    expect(served).toEqual([1, 2]);
    expect(socket.written).toEqual([Buffer.from([1, 1, 1, 1, 1, 1]), Buffer.from([2, 2, 2, 2, 2, 2])]);
  });
});
