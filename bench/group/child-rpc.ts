import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/**
 * Requests from the bench (parent) to a child process over Node's IPC channel. The measured server runs in
 * a child so that process.cpuUsage() and the child's RSS count the server alone, never the load generator.
 */

interface RequestMessage {
  readonly id: number;
  readonly type: string;
  readonly payload: unknown;
}

interface ReplyMessage {
  readonly id: number;
  readonly result?: unknown;
  readonly error?: string;
}

export interface ChildOptions {
  /** Extra node flags for the child, e.g. ['--cpu-prof', '--cpu-prof-dir=prof']. */
  readonly nodeFlags?: readonly string[];
  readonly args?: readonly string[];
}

export interface ChildHandle {
  readonly pid: number;
  request<T>(type: string, payload?: unknown): Promise<T>;
  /** Asks the child to close what it serves and exit (so --cpu-prof can write its profile). */
  stop(): Promise<void>;
}

export function startChild(entry: string, options: ChildOptions = {}): ChildHandle {
  const child: ChildProcess = fork(entry, [...(options.args ?? [])], {
    // Not ts-node: see scripts/register-typescript.js (it would load `domain`, slowing every EventEmitter).
    execArgv: [
      '-r',
      join(__dirname, '..', '..', 'scripts', 'register-typescript.js'),
      '--expose-gc',
      ...(options.nodeFlags ?? []),
      ...(process.env.BENCH_SERVER_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  let nextId = 1;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.on('message', (message: ReplyMessage) => {
    const waiter = pending.get(message.id);
    if (waiter === undefined) return;
    pending.delete(message.id);
    if (message.error !== undefined) waiter.reject(new Error(`child: ${message.error}`));
    else waiter.resolve(message.result);
  });
  child.once('exit', (code, signal) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`child exited (${code ?? signal})`));
    pending.clear();
  });
  const request = <T>(type: string, payload?: unknown): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      child.send({ id, type, payload } satisfies RequestMessage);
    });
  return {
    pid: child.pid as number,
    request,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        await request('exit').catch(() => undefined);
        await exited;
      }
    },
  };
}

export type Handlers = Record<string, (payload: never) => unknown>;

/**
 * The child's side: runs the named handler for each request and replies with its (awaited) result. An
 * `exit` request runs `onExit`, replies, and ends the process.
 */
export function serveParent(handlers: Handlers, onExit: () => Promise<void>): void {
  const reply = (message: ReplyMessage): void => {
    process.send?.(message);
  };
  process.on('message', (message: RequestMessage) => {
    if (message.type === 'exit') {
      void onExit().then(() => {
        reply({ id: message.id, result: null });
        // Let the reply flush before the channel closes.
        setImmediate(() => process.exit(0));
      });
      return;
    }
    const handler = handlers[message.type];
    if (handler === undefined) {
      reply({ id: message.id, error: `no handler for ${message.type}` });
      return;
    }
    Promise.resolve()
      .then(() => handler(message.payload as never))
      .then(
        (result) => reply({ id: message.id, result: result ?? null }),
        (error: unknown) => reply({ id: message.id, error: String((error as Error)?.stack ?? error) }),
      );
  });
  // The parent going away must not leave a server running.
  process.on('disconnect', () => process.exit(0));
}
