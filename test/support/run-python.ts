import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { DEBIAN_PYTHON } from './kafka-client-packages';

/** How a Python client ended: its exit code (1 when killed) and what it printed. */
export interface PythonRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `script` with Debian's python3 from the repository's root, killed (SIGKILL) after 45 s. Asynchronous:
 * a server embedded in the test's process must keep answering while the client runs.
 */
export function runPython(script: string, args: readonly string[]): Promise<PythonRun> {
  return new Promise((resolve) => {
    execFile(
      DEBIAN_PYTHON,
      [script, ...args],
      { cwd: join(__dirname, '..', '..'), timeout: 45_000, killSignal: 'SIGKILL', encoding: 'utf8' },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? 1), stdout, stderr }),
    );
  });
}
