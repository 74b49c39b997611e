import { spawn } from 'node:child_process';

/** How a process ended, and everything it wrote. */
export interface NodeRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunNodeOptions {
  readonly cwd: string;
  /** The child's whole environment (nothing is inherited unless passed). */
  readonly env: NodeJS.ProcessEnv;
}

/**
 * Runs `node args...` (this test run's node) to its exit with no standard input, collecting its output: for
 * tests of a program as a user runs it (an example, the health probe, a packed install).
 */
export function runNode(args: readonly string[], options: RunNodeOptions): Promise<NodeRun> {
  const child = spawn(process.execPath, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
