import { EventEmitter } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import fc from 'fast-check';
import { connect as connectHttp2, createServer as createHttp2Server } from 'node:http2';
import {
  budgetServerAt,
  CallReadBudget,
  WRITE_WAIT_RECHECK_MS,
  watchAcceptedSockets,
  type BudgetedConnection,
  type StreamHandle,
} from '../../../src/server/call-read-budget';

/** A libuv stream handle as the budget sees it: reading or not, and bytes queued for writing. */
class FakeHandle implements StreamHandle {
  isReading = true;
  writeQueueSize = 0;
  stops = 0;
  starts = 0;

  readStop(): number {
    this.stops++;
    this.isReading = false;
    return 0;
  }

  readStart(): number {
    this.starts++;
    this.isReading = true;
    return 0;
  }
}

class FakeConnection extends EventEmitter implements BudgetedConnection {
  readonly handle = new FakeHandle();
  destroyed = false;

  close(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

/** A budget whose end of turn and write re-checks run only when the test says so. */
function harness(maxCallsPerTurn: number) {
  const endOfTurn: (() => void)[] = [];
  const retries: { retry: () => void; ms: number }[] = [];
  let pauses = 0;
  const budget = new CallReadBudget(maxCallsPerTurn, {
    scheduleEndOfTurn: (callback) => endOfTurn.push(callback),
    scheduleRetry: (retry, ms) => retries.push({ retry, ms }),
    handleOf: (connection) => (connection as FakeConnection).handle,
    onPause: () => pauses++,
  });
  return {
    budget,
    get pauses() {
      return pauses;
    },
    get scheduledTurnEnds() {
      return endOfTurn.length;
    },
    get scheduledRetries() {
      return retries.length;
    },
    get retryDelays() {
      return retries.map((r) => r.ms);
    },
    connection(): FakeConnection {
      const connection = new FakeConnection();
      budget.addConnection(connection);
      return connection;
    },
    admit(calls: number): void {
      for (let i = 0; i < calls; i++) budget.admit();
    },
    endTurn(): void {
      for (const callback of endOfTurn.splice(0)) callback();
    },
    runRetries(): void {
      for (const { retry } of retries.splice(0)) retry();
    },
  };
}

describe('CallReadBudget', () => {
  test('stops every connection once the turn has read its budget, and starts them at the end of the turn', () => {
    const h = harness(3);
    const a = h.connection();
    const b = h.connection();

    h.admit(2);
    expect([a.handle.isReading, b.handle.isReading]).toEqual([true, true]);
    h.admit(1);
    expect([a.handle.isReading, b.handle.isReading]).toEqual([false, false]);
    expect(h.pauses).toBe(1);
    h.admit(2); // calls already in the read in progress: no second stop before the next budget
    expect(a.handle.stops).toBe(1);

    h.endTurn();
    expect([a.handle.isReading, b.handle.isReading]).toEqual([true, true]);
    expect(h.pauses).toBe(1);
  });

  test('counts each turn afresh, and schedules one end of turn per turn that read a call', () => {
    const h = harness(3);
    const a = h.connection();
    h.admit(2);
    expect(h.scheduledTurnEnds).toBe(1);
    h.endTurn();
    h.admit(2);
    expect(a.handle.isReading).toBe(true);
    expect(h.scheduledTurnEnds).toBe(1);
    h.endTurn();
    expect(a.handle.stops).toBe(0);
    expect(h.scheduledTurnEnds).toBe(0); // an idle turn schedules nothing
  });

  test('leaves a connection with a write in progress to the HTTP/2 session, and checks it again until the write is done', () => {
    const h = harness(1);
    const busy = h.connection();
    const idle = h.connection();
    h.admit(1);
    busy.handle.writeQueueSize = 4_096;

    h.endTurn();
    expect(idle.handle.isReading).toBe(true);
    expect(busy.handle.isReading).toBe(false);
    expect(h.retryDelays).toEqual([WRITE_WAIT_RECHECK_MS]);

    h.runRetries(); // still writing: checked again later
    expect(busy.handle.isReading).toBe(false);
    expect(h.scheduledRetries).toBe(1);

    busy.handle.writeQueueSize = 0;
    h.runRetries();
    expect(busy.handle.isReading).toBe(true);
    expect(h.scheduledRetries).toBe(0);
  });

  test('a re-check during a spent turn leaves the connection to that turn’s end', () => {
    const h = harness(1);
    const busy = h.connection();
    h.admit(1);
    busy.handle.writeQueueSize = 10;
    h.endTurn();
    busy.handle.writeQueueSize = 0;
    h.admit(1); // the next turn spends its budget before the re-check runs
    h.runRetries();
    expect(busy.handle.isReading).toBe(false);
    h.endTurn();
    expect(busy.handle.isReading).toBe(true);
  });

  test('forgets a closed connection, and never starts a destroyed one', () => {
    const h = harness(1);
    const closed = h.connection();
    const destroyed = h.connection();
    h.admit(1);
    closed.close();
    destroyed.destroyed = true;
    h.endTurn();
    expect(closed.handle.starts).toBe(0);
    expect(destroyed.handle.starts).toBe(0);
    expect(h.budget.connectionCount).toBe(1); // `destroyed` has not emitted close yet
  });

  test('a connection accepted in a spent turn waits with the others', () => {
    const h = harness(1);
    h.admit(1);
    const late = h.connection();
    expect(late.handle.isReading).toBe(false);
    h.endTurn();
    expect(late.handle.isReading).toBe(true);
  });

  test('0 is no cap: nothing is tracked, counted or scheduled', () => {
    const h = harness(0);
    const a = h.connection();
    h.admit(10_000);
    expect(a.handle.stops).toBe(0);
    expect(h.scheduledTurnEnds).toBe(0);
    expect(h.budget.connectionCount).toBe(0);
  });

  test('stops reading again every further budget in the same turn (the session may have restarted it)', () => {
    const h = harness(2);
    const a = h.connection();
    h.admit(2);
    expect(a.handle.stops).toBe(1);
    a.handle.readStart(); // the HTTP/2 session restarted it after a write completed
    h.admit(1);
    expect(a.handle.isReading).toBe(true);
    h.admit(1);
    expect(a.handle.isReading).toBe(false);
    expect(h.pauses).toBe(1); // still one paused turn
  });

  test('a turn that had no connection to stop is not counted as paused', () => {
    const h = harness(1);
    h.admit(3);
    expect(h.pauses).toBe(0);
  });

  test('rejects a negative or fractional cap', () => {
    expect(() => new CallReadBudget(-1)).toThrow(RangeError);
    expect(() => new CallReadBudget(1.5)).toThrow(RangeError);
  });

  // Whatever happens — calls, turn ends, writes starting and finishing, connections opening and closing —
  // once writes are done and the scheduled callbacks have run, every open connection reads: a paused
  // connection is never stranded.
  test('never leaves an open connection stopped once its writes are done (property)', () => {
    type Op =
      | { kind: 'admit'; calls: number }
      | { kind: 'endTurn' }
      | { kind: 'retry' }
      | { kind: 'open' }
      | { kind: 'close'; which: number }
      | { kind: 'write'; which: number; bytes: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('admit' as const), calls: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('endTurn' as const) }),
      fc.record({ kind: fc.constant('retry' as const) }),
      fc.record({ kind: fc.constant('open' as const) }),
      fc.record({ kind: fc.constant('close' as const), which: fc.nat() }),
      fc.record({ kind: fc.constant('write' as const), which: fc.nat(), bytes: fc.nat({ max: 3 }) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 60 }), (cap, ops) => {
        const h = harness(cap);
        const connections = [h.connection()];
        for (const o of ops) {
          if (o.kind === 'admit') h.admit(o.calls);
          else if (o.kind === 'endTurn') h.endTurn();
          else if (o.kind === 'retry') h.runRetries();
          else if (o.kind === 'open') connections.push(h.connection());
          else if (o.kind === 'close') connections[o.which % connections.length].close();
          else connections[o.which % connections.length].handle.writeQueueSize = o.bytes;
        }
        for (const c of connections) c.handle.writeQueueSize = 0;
        h.endTurn();
        h.runRetries();
        for (const c of connections) if (!c.destroyed) expect(c.handle.isReading).toBe(true);
      }),
    );
  });
});

describe('watchAcceptedSockets', () => {
  const servers: Server[] = [];
  const clients: Socket[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) client.destroy();
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });

  async function listen(): Promise<{ server: Server; port: number; accepted: Promise<Socket> }> {
    let onAccepted!: (socket: Socket) => void;
    const accepted = new Promise<Socket>((resolve) => (onAccepted = resolve));
    const server = createServer(onAccepted);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, port: (server.address() as { port: number }).port, accepted };
  }

  function dial(port: number): void {
    clients.push(connect(port, '127.0.0.1'));
  }

  test('reports the sockets its listener accepts, not those of other servers, until stopped', async () => {
    const ours = await listen();
    const other = await listen();
    const seen: Socket[] = [];
    const stop = watchAcceptedSockets({ port: ours.port }, (socket) => seen.push(socket));

    dial(other.port);
    await other.accepted;
    dial(ours.port);
    const accepted = await ours.accepted;
    expect(seen).toEqual([accepted]);

    stop();
    dial(ours.port);
    await new Promise((resolve) => ours.server.once('connection', resolve));
    expect(seen).toHaveLength(1);
  });
});

describe('budgetServerAt', () => {
  test('counts every stream of the server at that port and stops its connections; stopping undoes both', async () => {
    const server = createHttp2Server();
    server.on('stream', (stream) => {
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const listenersBefore = server.listenerCount('stream');
    let pauses = 0;
    const budget = new CallReadBudget(2, { onPause: () => pauses++ });
    const stop = budgetServerAt(budget, { port });
    const client = connectHttp2(`http://127.0.0.1:${port}`);
    try {
      const answers = await Promise.all(
        Array.from(
          { length: 6 },
          () =>
            new Promise<string>((resolve, reject) => {
              const request = client.request({ ':path': '/' });
              let body = '';
              request.setEncoding('utf8');
              request.on('data', (chunk: string) => (body += chunk));
              request.on('end', () => resolve(body));
              request.on('error', reject);
              request.end();
            }),
        ),
      );
      expect(answers).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok']);
      expect(budget.connectionCount).toBe(1);
      expect(pauses).toBeGreaterThan(0); // six streams in one read: the connection was stopped
      expect(server.listenerCount('stream')).toBe(listenersBefore + 1);
    } finally {
      stop();
      client.close();
      await new Promise((resolve) => server.close(resolve));
    }
    expect(server.listenerCount('stream')).toBe(listenersBefore);
  });
});
