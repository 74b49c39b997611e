import { connect, type Socket } from 'node:net';

/**
 * The bench's cheap Kafka client: one TCP connection that writes request frames encoded beforehand and
 * hands back each response frame as raw bytes, in order. No codec runs on the hot path: a caller that
 * needs a field reads it at its known position (`responseErrorCodeAt`). Kafka answers a connection's
 * requests strictly in order, so a FIFO of callbacks is the whole correlation; each answer's correlation
 * id is still checked against its request's, so a misordered or lost answer fails the bench at once.
 */

const SIZE_BYTES = 4;
/** Where a request frame (size prefix included) keeps its correlation id: size, api key, api version. */
const REQUEST_CORRELATION_AT = 8;

/** A response frame without its size prefix: it starts with the correlation id. */
export type ResponseHandler = (frame: Buffer) => void;

export class KafkaFrameConnection {
  private readonly handlers: ResponseHandler[] = [];
  private readonly expected: number[] = [];
  private head = 0;
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;
  private failure: Error | undefined;
  private isOpen = true;

  private constructor(
    private readonly socket: Socket,
    private readonly onFailure: (error: Error) => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => {
      if (this.isOpen && this.pending > 0) this.fail(new Error('the server closed a Kafka connection'));
      this.isOpen = false;
    });
  }

  /** Resolves once connected; `onFailure` hears of anything that breaks the connection later. */
  static open(host: string, port: number, onFailure: (error: Error) => void): Promise<KafkaFrameConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.removeListener('error', reject);
        resolve(new KafkaFrameConnection(socket, onFailure));
      });
    });
  }

  /** Answers not yet received. */
  get pending(): number {
    return this.handlers.length - this.head;
  }

  /** Writes a whole request frame (size prefix included); `onResponse` gets its answer. */
  send(frame: Buffer, onResponse: ResponseHandler): void {
    this.handlers.push(onResponse);
    this.expected.push(frame.readInt32BE(REQUEST_CORRELATION_AT));
    this.socket.write(frame);
  }

  request(frame: Buffer): Promise<Buffer> {
    return new Promise((resolve) => this.send(frame, resolve));
  }

  /** Ends the connection; resolves once it is closed. */
  close(): Promise<void> {
    this.isOpen = false;
    if (this.socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.destroy();
    });
  }

  private fail(error: Error): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.onFailure(error);
  }

  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bufferedBytes += chunk.length;
    while (this.bufferedBytes >= SIZE_BYTES) {
      if (this.chunks[0]!.length < SIZE_BYTES) this.chunks = [Buffer.concat(this.chunks)];
      const size = this.chunks[0]!.readInt32BE(0);
      if (this.bufferedBytes < SIZE_BYTES + size) return;
      const head = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      const frame = head.subarray(SIZE_BYTES, SIZE_BYTES + size);
      const rest = head.subarray(SIZE_BYTES + size);
      this.chunks = rest.length === 0 ? [] : [rest];
      this.bufferedBytes = rest.length;
      this.deliver(frame);
    }
  }

  private deliver(frame: Buffer): void {
    if (this.head >= this.handlers.length) {
      this.fail(new Error('a Kafka answer no request was waiting for'));
      return;
    }
    const handler = this.handlers[this.head]!;
    const correlationId = this.expected[this.head]!;
    this.head++;
    if (this.head > 1_024 && this.head * 2 > this.handlers.length) {
      this.handlers.splice(0, this.head);
      this.expected.splice(0, this.head);
      this.head = 0;
    }
    if (frame.readInt32BE(0) !== correlationId) {
      this.fail(new Error(`answer with correlation id ${frame.readInt32BE(0)}, expected ${correlationId}`));
      return;
    }
    handler(frame);
  }
}

/** Opens `count` connections, `parallel` at a time (a burst of thousands would overflow the accept queue). */
export async function openConnections(
  host: string,
  port: number,
  count: number,
  onFailure: (error: Error) => void,
  parallel = 200,
): Promise<KafkaFrameConnection[]> {
  const connections: KafkaFrameConnection[] = new Array(count);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      connections[i] = await KafkaFrameConnection.open(host, port, onFailure);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, worker));
  return connections;
}

export async function closeConnections(connections: readonly KafkaFrameConnection[]): Promise<void> {
  await Promise.all(connections.map((connection) => connection.close()));
}

/**
 * The top-level error code of a response whose body starts with throttle_time_ms (Heartbeat v1+, SyncGroup
 * v1+, JoinGroup v2+): after the correlation id and the throttle time.
 */
export function responseErrorCodeAt(frame: Buffer): number {
  return frame.readInt16BE(8);
}
