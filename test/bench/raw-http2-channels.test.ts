import { once } from 'node:events';
import { createServer as createHttp2Server, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { RawHttp2Channels } from '../../bench/group/raw-http2-channels';

const identity = (bytes: Buffer): Buffer => bytes;
const ECHO_PATH = '/cohort.test.Echo/Echo';
const FAIL_PATH = '/cohort.test.Echo/Fail';

/** The rebalance bench's raw HTTP/2 client against a real grpc-js server. */
describe('RawHttp2Channels with grpc-js', () => {
  let server: grpc.Server;
  let target: string;
  let channels: RawHttp2Channels | undefined;

  beforeAll(async () => {
    server = new grpc.Server();
    const method = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    });
    server.addService(
      { echo: method(ECHO_PATH), fail: method(FAIL_PATH) },
      {
        // Echoes the request twice over, so answers are larger than requests.
        echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
          callback(null, Buffer.concat([call.request, call.request])),
        fail: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
          callback({ code: grpc.status.FAILED_PRECONDITION, details: 'refused on purpose' }),
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error === null ? resolve(bound) : reject(error),
      ),
    );
    target = `127.0.0.1:${port}`;
  });
  afterEach(() => channels?.close());
  afterAll(() => server.forceShutdown());

  test('answers hundreds of concurrent calls on each connection, each with its own answer', async () => {
    channels = new RawHttp2Channels(target, 2);
    const sent: number[] = [];
    const calls = Array.from({ length: 600 }, (_, i) =>
      channels!.call(
        i,
        ECHO_PATH,
        Buffer.from(`request ${i}`),
        (bytes) => bytes.toString(),
        () => sent.push(i),
      ),
    );
    const answers = await Promise.all(calls);
    answers.forEach((answer, i) => expect(answer).toBe(`request ${i}request ${i}`));
    expect(sent.sort((a, b) => a - b)).toEqual(answers.map((_, i) => i));
  });

  test('sends and receives messages larger than every window and frame, under flow control', async () => {
    channels = new RawHttp2Channels(target, 1);
    // 300 KB each way is past the 64 KiB stream and connection windows and the 16 KiB frame size; several
    // at once must share the connection window.
    const requests = [0, 1, 2, 3].map((k) => Buffer.alloc(150_000 + k, k + 1));
    const answers = await Promise.all(
      requests.map((request) => channels!.call(0, ECHO_PATH, request, identity)),
    );
    answers.forEach((answer, k) =>
      expect(answer.equals(Buffer.concat([requests[k], requests[k]]))).toBe(true),
    );
    // The connection still works after its windows were spent and returned.
    await expect(channels.call(0, ECHO_PATH, Buffer.from('after'), (b) => b.toString())).resolves.toBe(
      'afterafter',
    );
  });

  test('rejects a call answered with a non-OK grpc-status, with its code and message', async () => {
    channels = new RawHttp2Channels(target, 1);
    await expect(channels.call(0, FAIL_PATH, Buffer.from('x'), identity)).rejects.toThrow(
      `${FAIL_PATH}: grpc-status ${grpc.status.FAILED_PRECONDITION} refused on purpose`,
    );
    // Unknown method: grpc-js answers UNIMPLEMENTED.
    await expect(channels.call(0, '/cohort.test.Echo/Missing', Buffer.from('x'), identity)).rejects.toThrow(
      `grpc-status ${grpc.status.UNIMPLEMENTED}`,
    );
    await expect(channels.call(0, ECHO_PATH, Buffer.from('ok'), (b) => b.toString())).resolves.toBe('okok');
  });

  test('a decoder that throws rejects its call only', async () => {
    channels = new RawHttp2Channels(target, 1);
    const bad = channels.call(0, ECHO_PATH, Buffer.from('x'), () => {
      throw new Error('cannot decode');
    });
    await expect(bad).rejects.toThrow('cannot decode');
    await expect(channels.call(0, ECHO_PATH, Buffer.from('y'), (b) => b.toString())).resolves.toBe('yy');
  });
});

/** Against a bare Node http2 server that misbehaves on purpose. */
describe('RawHttp2Channels when the server resets or goes away', () => {
  let server: Http2Server;
  let target: string;
  let onStream: (stream: ServerHttp2Stream) => void;
  let channels: RawHttp2Channels | undefined;

  beforeEach(async () => {
    server = createHttp2Server();
    server.on('stream', (stream) => onStream(stream));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    channels?.close();
    server.close();
    await once(server, 'close');
  });

  test('a reset stream rejects its call', async () => {
    onStream = (stream) => stream.close(0x8); // CANCEL
    channels = new RawHttp2Channels(target, 1);
    await expect(channels.call(0, ECHO_PATH, Buffer.from('x'), identity)).rejects.toThrow(
      'stream reset by the server (code 8)',
    );
  });

  test('a connection that closes rejects every open call and every later one', async () => {
    const streams: ServerHttp2Stream[] = [];
    onStream = (stream) => {
      streams.push(stream);
      // Two calls open: then the connection goes down under them.
      if (streams.length === 2) stream.session!.destroy();
    };
    channels = new RawHttp2Channels(target, 1);
    const open = [0, 1].map(() => channels!.call(0, ECHO_PATH, Buffer.from('x'), identity));
    for (const call of open) await expect(call).rejects.toThrow();
    await expect(channels.call(0, ECHO_PATH, Buffer.from('x'), identity)).rejects.toThrow();
  });

  test('answers without an HTTP 200 or without grpc-status are refused', async () => {
    onStream = (stream) => stream.respond({ ':status': 404 }, { endStream: true });
    channels = new RawHttp2Channels(target, 1);
    await expect(channels.call(0, ECHO_PATH, Buffer.from('x'), identity)).rejects.toThrow('HTTP status 404');
    onStream = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.end(Buffer.from([0, 0, 0, 0, 1, 7]));
    };
    await expect(channels.call(0, ECHO_PATH, Buffer.from('x'), identity)).rejects.toThrow(
      'grpc-status missing',
    );
  });
});
