import { once } from 'node:events';
import {
  constants as http2Constants,
  createServer as createHttp2Server,
  type Http2Server,
  type SecureServerOptions,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { RawHttp2Channels } from '../../bench/group/raw-http2-channels';

const identity = (bytes: Buffer): Buffer => bytes;
const ECHO_PATH = '/cohort.test.Echo/Echo';
const FAIL_PATH = '/cohort.test.Echo/Fail';
const CHAT_PATH = '/cohort.test.Echo/Chat';

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
      {
        echo: method(ECHO_PATH),
        fail: method(FAIL_PATH),
        chat: { ...method(CHAT_PATH), requestStream: true, responseStream: true },
      },
      {
        // A bidi stream: each message answered with itself and its position; ends with OK after the client's.
        chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
          let position = 0;
          call.on('data', (message: Buffer) =>
            call.write(Buffer.from(`${++position}:${message.toString()}`)),
          );
          call.on('end', () => call.end());
        },
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

  test('carries a bidi stream: every message answered in order, past the windows, then the end', async () => {
    channels = new RawHttp2Channels(target, 1);
    const received: string[] = [];
    const ended = new Promise<Error | undefined>((resolve) => {
      const stream = channels!.openStream(0, CHAT_PATH, {
        onMessage: (message) => received.push(message.toString()),
        onEnd: resolve,
      });
      // 3,000 small messages each way: past the 64 KiB stream window in both directions.
      for (let i = 0; i < 3_000; i++) stream.send(Buffer.from(`message ${i}`.padEnd(40, '.')));
      stream.end();
    });
    expect(await ended).toBeUndefined();
    expect(received).toEqual(
      Array.from({ length: 3_000 }, (_, i) => `${i + 1}:${`message ${i}`.padEnd(40, '.')}`),
    );
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
describe('RawHttp2Channels against a Node http2 server that stretches the protocol', () => {
  let server: Http2Server | undefined;
  let target: string;
  let onStream: (stream: ServerHttp2Stream) => void;
  let channels: RawHttp2Channels | undefined;

  const openSessions: ServerHttp2Session[] = [];

  async function serve(options: SecureServerOptions = {}): Promise<Http2Server> {
    server = createHttp2Server(options);
    server.on('session', (session) => openSessions.push(session));
    server.on('stream', (stream) => {
      // A stream the server refuses or resets reports it here; the client's side is what is tested.
      stream.on('error', () => undefined);
      onStream(stream);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    return server;
  }
  beforeEach(async () => {
    await serve();
  });
  afterEach(async () => {
    channels?.close();
    channels = undefined;
    for (const session of openSessions.splice(0)) session.destroy();
    server!.close();
    await once(server!, 'close');
  });

  /** Answers like a gRPC server: headers, one message, then trailers with `trailers` added. */
  function answer(stream: ServerHttp2Stream, message: Buffer, trailers: Record<string, string> = {}): void {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', ...trailers }));
    const framed = Buffer.alloc(5 + message.length);
    framed.writeUInt32BE(message.length, 1);
    message.copy(framed, 5);
    stream.end(framed);
  }

  test('reads padded frames, a header block split over CONTINUATION frames, and answers PING', async () => {
    server!.close();
    const padded = await serve({ paddingStrategy: http2Constants.PADDING_STRATEGY_MAX });
    const sessions: ServerHttp2Session[] = [];
    padded.on('session', (session) => sessions.push(session));
    // 40 KB of trailers cannot fit one 16 KiB frame: HEADERS, then CONTINUATION frames.
    onStream = (stream) => answer(stream, Buffer.from('padded answer'), { 'x-large': 'v'.repeat(40_000) });
    channels = new RawHttp2Channels(target, 1);
    await expect(channels.call(0, ECHO_PATH, Buffer.from('x'), (b) => b.toString())).resolves.toBe(
      'padded answer',
    );
    const pinged = await new Promise<boolean>((resolve) =>
      sessions[0].ping((error) => resolve(error === null)),
    );
    expect(pinged).toBe(true);
    // The HPACK table stayed in step through all of it.
    await expect(channels.call(0, ECHO_PATH, Buffer.from('y'), (b) => b.toString())).resolves.toBe(
      'padded answer',
    );
  });

  test('sends no DATA while the server allows none, and onSent waits for the last byte', async () => {
    server!.close();
    const closed = await serve({ settings: { initialWindowSize: 0 } });
    const sessions: ServerHttp2Session[] = [];
    closed.on('session', (session) => sessions.push(session));
    let arrived: (stream: ServerHttp2Stream) => void = () => undefined;
    onStream = (stream) => {
      let received = 0;
      stream.on('data', (chunk: Buffer) => (received += chunk.length));
      stream.on('end', () => answer(stream, Buffer.from(`got ${received}`)));
      arrived(stream);
    };
    channels = new RawHttp2Channels(target, 1);
    // Sent before the server's SETTINGS reach the client, this one still has HTTP/2's default window;
    // once it is answered, the client has the server's window of 0.
    await expect(channels.call(0, ECHO_PATH, Buffer.from('x'), (b) => b.toString())).resolves.toBe('got 6');

    const streamArrived = new Promise<ServerHttp2Stream>((resolve) => (arrived = resolve));
    let sent = false;
    const call = channels.call(
      0,
      ECHO_PATH,
      Buffer.alloc(100_000, 1),
      (b) => b.toString(),
      () => (sent = true),
    );
    const stream = await streamArrived;
    let bytesBeforePing = -1;
    stream.on('data', () => (bytesBeforePing = -2)); // any DATA at all is a failure
    // A PING round trip: DATA the client had sent would have arrived before the PING's answer.
    await new Promise<void>((resolve, reject) =>
      sessions[0].ping((error) => (error ? reject(error) : resolve())),
    );
    bytesBeforePing = bytesBeforePing === -1 ? 0 : bytesBeforePing;
    expect(bytesBeforePing).toBe(0);
    expect(sent).toBe(false);
    // Opening the window (every open stream's window moves with it, RFC 9113 §6.9.2) lets it through.
    sessions[0].settings({ initialWindowSize: 65_535 });
    await expect(call).resolves.toBe('got 100005');
    expect(sent).toBe(true);
  });

  test('GOAWAY fails the calls the server will not answer and every later one, and answers the rest', async () => {
    onStream = (stream) => {
      if (stream.id === 1) {
        // Streams 1 and 3 are open; only stream 1 will be answered.
        stream.session!.goaway(0, 1);
        setImmediate(() => answer(stream, Buffer.from('first')));
      }
    };
    channels = new RawHttp2Channels(target, 1);
    const first = channels.call(0, ECHO_PATH, Buffer.from('1'), (b) => b.toString());
    const second = channels.call(0, ECHO_PATH, Buffer.from('3'), (b) => b.toString());
    await expect(second).rejects.toThrow('GOAWAY from the server (code 0)');
    await expect(first).resolves.toBe('first');
    await expect(channels.call(0, ECHO_PATH, Buffer.from('5'), identity)).rejects.toThrow('GOAWAY');
  });

  test('a call the server never answers fails once the call timeout has passed', async () => {
    let nowMs = 0;
    onStream = () => undefined;
    channels = new RawHttp2Channels(target, 1, 1_000, () => nowMs);
    const call = channels.call(0, ECHO_PATH, Buffer.from('x'), identity);
    const outcome = call.then(
      () => 'answered',
      (error: Error) => error.message,
    );
    nowMs = 999;
    channels.failOverdueCalls();
    nowMs = 1_000;
    channels.failOverdueCalls();
    await expect(outcome).resolves.toBe(`${ECHO_PATH}: no answer within 1000 ms`);
  });

  test('a call after close is rejected', async () => {
    channels = new RawHttp2Channels(target, 1);
    channels.close();
    await expect(channels.call(0, ECHO_PATH, Buffer.from('x'), identity)).rejects.toThrow(
      'the channels are closed',
    );
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
    // Node resets the open streams as it destroys the session, then the socket closes.
    for (const call of open)
      await expect(call).rejects.toThrow(/stream reset by the server|connection closed/);
    // Node sent GOAWAY before closing: whichever the client saw last, a new call cannot go out.
    await expect(channels.call(0, ECHO_PATH, Buffer.from('x'), identity)).rejects.toThrow(
      /GOAWAY from the server|connection closed/,
    );
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
