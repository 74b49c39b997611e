import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { LogLine } from './capture-logger';

const REPO_ROOT = join(__dirname, '..', '..');

export interface CohortProcess {
  readonly child: ChildProcess;
  /** Every stdout line so far (pino JSON lines, parsed when they parse). */
  readonly lines: (LogLine | string)[];
  readonly stderr: () => string;
  /** Resolves with the first log line whose `msg` is `msg`; rejects if the process exits first. */
  waitForLog(msg: string): Promise<LogLine>;
  /** Resolves when the process exits. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Kills the process if it is still running (for afterEach). */
  kill(): Promise<void>;
}

/**
 * Starts `src/main.ts` as `npm start` does (node + scripts/register-typescript.js; no source maps), with `args` and the
 * given environment added to a copy of this one without any COHORT_* variables. Unless `args` or `env`
 * name a data directory, the process gets a fresh one, removed when it exits: durable state (group
 * offsets and metadata) must not leak between tests or runs. Unless they name an admin address, the admin
 * listener takes a free port (the `cohort listening` line gives it as `adminAddress`).
 */
export interface SpawnOptions {
  /** A compiled entry point (e.g. `dist/src/main.js`) to run with plain node instead of `src/main.ts`. */
  readonly script?: string;
  /** Lowers the process's open-file limit (`ulimit -n`, through /bin/sh) before node starts. */
  readonly openFileLimit?: number;
  /** Node's own flags, before the entry point (e.g. `--cpu-prof`, `--trace-gc`). */
  readonly nodeArgs?: readonly string[];
  /**
   * What `kill` sends (default SIGKILL). SIGTERM lets the server shut down and exit, so that what node
   * writes at exit (a `--cpu-prof` profile) is written.
   */
  readonly killSignal?: NodeJS.Signals;
}

export function spawnCohort(
  args: readonly string[],
  env: Record<string, string> = {},
  options: SpawnOptions = {},
): CohortProcess {
  const cleanEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('COHORT_')) cleanEnv[key] = value;
  }
  const namesDataDir =
    env.COHORT_DATA_DIR !== undefined ||
    args.some((arg) => arg === '--data-dir' || arg.startsWith('--data-dir='));
  const ownDataDir = namesDataDir ? undefined : mkdtempSync(join(tmpdir(), 'cohort-process-'));
  const dataDirArgs = ownDataDir === undefined ? [] : ['--data-dir', ownDataDir];
  // Test processes run side by side: the default admin port (7071) would let only one of them start.
  const namesAdmin =
    env.COHORT_ADMIN_LISTEN !== undefined ||
    args.some((arg) => arg === '--admin-listen' || arg.startsWith('--admin-listen='));
  const adminArgs = namesAdmin ? [] : ['--admin-listen', '127.0.0.1:0'];
  // Nor could more than one of them take the Kafka listener's default port (9092).
  const namesKafka =
    env.COHORT_KAFKA_LISTEN !== undefined ||
    args.some((arg) => arg === '--kafka-listen' || arg.startsWith('--kafka-listen='));
  const kafkaArgs = namesKafka ? [] : ['--kafka-listen', '127.0.0.1:0'];
  const entry =
    options.script === undefined
      ? ['-r', './scripts/register-typescript.js', 'src/main.ts']
      : [options.script];
  const argv = [...(options.nodeArgs ?? []), ...entry, ...args, ...dataDirArgs, ...adminArgs, ...kafkaArgs];
  const [command, commandArgs] =
    options.openFileLimit === undefined
      ? [process.execPath, argv]
      : [
          '/bin/sh',
          ['-c', `ulimit -n ${options.openFileLimit} && exec "$0" "$@"`, process.execPath, ...argv],
        ];
  const child = spawn(command, commandArgs, {
    cwd: REPO_ROOT,
    env: { ...cleanEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: (LogLine | string)[] = [];
  const waiters: { msg: string; resolve(line: LogLine): void; reject(error: Error): void }[] = [];
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      if (ownDataDir !== undefined) rmSync(ownDataDir, { recursive: true, force: true });
      resolve({ code, signal });
    });
  });
  const stdoutClosed = new Promise<void>((resolve) => child.stdout?.once('close', resolve));
  void Promise.all([exited, stdoutClosed]).then(([{ code }]) => {
    for (const waiter of waiters.splice(0)) {
      waiter.reject(new Error(`cohort exited (${code}) before logging '${waiter.msg}'; stderr: ${stderr}`));
    }
  });

  createInterface({ input: child.stdout! }).on('line', (text) => {
    let line: LogLine | string = text;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      // Not a log line; keep the text.
    }
    lines.push(line);
    if (typeof line === 'string') return;
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i].msg === line.msg) waiters.splice(i, 1)[0].resolve(line);
    }
  });

  return {
    child,
    lines,
    stderr: () => stderr,
    exited,
    waitForLog: (msg) => {
      const seen = lines.find((l): l is LogLine => typeof l !== 'string' && l.msg === msg);
      if (seen !== undefined) return Promise.resolve(seen);
      if (child.exitCode !== null)
        return Promise.reject(new Error(`cohort already exited (${child.exitCode})`));
      return new Promise((resolve, reject) => waiters.push({ msg, resolve, reject }));
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(options.killSignal ?? 'SIGKILL');
        await exited;
      }
    },
  };
}
