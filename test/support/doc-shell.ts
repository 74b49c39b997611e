import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './doc-examples';

/**
 * Running the docs' ```sh blocks as a user pastes them into bash: from the repository's root, with
 * `set -euo pipefail`, `npm link` linking into a throwaway npm prefix whose bin/ is on PATH (so `cohort` is
 * the package's bin as it is after a real `npm link`).
 *
 * `npm run build` is the one command not repeated: it is the package's `prepare`, which `npm ci` already
 * ran, and rebuilding dist/ here would rewrite files other tests are running. For the same reason npm runs
 * no lifecycle scripts here (`npm link` would run `prepare`, a whole build, each time: a minute on a
 * loaded machine).
 */
const BUILD = /\bnpm run build && /g;

/** The block as the tests run it: without `npm run build && ` (see above). */
export const withoutBuild = (code: string): string => code.replace(BUILD, '');

/** The environment of a shell whose `npm link` links into `prefix`, with `extra` added. */
export function docShellEnv(prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}`,
    npm_config_prefix: prefix,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_prefer_offline: 'true',
    npm_config_ignore_scripts: 'true',
    ...extra,
  };
}

/** This process's environment without the variables a user's cohort or etcd setup would add. */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && !key.startsWith('COHORT_') && !key.startsWith('ETCD_')) env[key] = value;
  return env;
}

export interface ShellOutcome {
  readonly code: number | null;
  /** stdout and stderr, interleaved as they came. */
  readonly output: string;
}

/** Runs `script` to its end (SIGKILL after `timeoutMs`), with `env` over this process's environment. */
export function runBash(
  script: string,
  env: Record<string, string>,
  timeoutMs = 60_000,
  baseEnv: Record<string, string | undefined> = process.env,
): Promise<ShellOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `set -euo pipefail\n${script}`], {
      cwd: REPO_ROOT,
      env: { ...baseEnv, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/**
 * A command that runs until stopped, as in a terminal of its own: a bash in a process group of its own
 * (the terminal's foreground job), so `signal` reaches every process of it, as Ctrl-C does.
 */
export interface TerminalJob {
  readonly child: ChildProcess;
  /** Its stdout lines so far. */
  readonly lines: string[];
  /** Its stderr so far. */
  stderr(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  isRunning(): boolean;
  /** Sends `signal` to the job's process group (SIGINT is Ctrl-C). */
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM to the group, SIGKILL after `graceMs`; resolves when bash has exited. Safe to call twice. */
  stop(graceMs?: number): Promise<void>;
}

export function startJob(script: string, env: Record<string, string>): TerminalJob {
  const child = spawn('bash', ['-c', `set -euo pipefail\n${script}`], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-64_000)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const isRunning = (): boolean => child.exitCode === null && child.signalCode === null;
  const signal = (name: NodeJS.Signals): void => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // the group is gone
    }
  };
  return {
    child,
    lines,
    stderr: () => stderr,
    exited,
    isRunning,
    signal,
    stop: async (graceMs = 10_000) => {
      signal('SIGCONT');
      signal('SIGTERM');
      const force = setTimeout(() => signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(force);
      // bash may be gone before the processes it started: they are in its group.
      signal('SIGKILL');
    },
  };
}
