import { spawn } from 'node:child_process';
import { extname, join } from 'node:path';
import type { CliCommand } from './cli-context';
import { ExitCode } from './exit-code';

/**
 * The server entry point next to this file's directory: `src/main.ts` under a TypeScript loader, `dist/src/main.js`
 * once built. `cohort serve` runs it exactly as `npm start` does, so there is one server program.
 */
function serverMain(): { path: string; execArgv: string[] } {
  const extension = extname(__filename);
  const path = join(__dirname, '..', `main${extension}`);
  const execArgv = [...process.execArgv];
  // From source, the child loads .ts through the hook whatever loader this process has (a second -r of it
  // is harmless; guessing from execArgv whether a loader is present is not).
  if (extension === '.ts')
    execArgv.push('-r', join(__dirname, '..', '..', 'scripts', 'register-typescript.js'));
  return { path, execArgv };
}

/**
 * `cohort serve [flags]`: the cohort server, as `npm start` runs it (`src/main.ts`), in a child process
 * that writes to this one's terminal. Flags, `COHORT_*` variables, `--help` and exit statuses are the
 * server's (docs/configuration.md). The child has a process group of its own, so a terminal's Ctrl-C
 * reaches it once, through this process, which passes every SIGINT and SIGTERM on: the first drains the
 * server, a second forces it, exactly as with `npm start`.
 */
export const SERVE_COMMAND: CliCommand = {
  name: 'serve',
  summary: 'run a cohort server (the same program as npm start)',
  run: (args, context) =>
    new Promise<number>((resolve) => {
      const { path, execArgv } = serverMain();
      const child = spawn(process.execPath, [...execArgv, path, ...args], {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...context.env },
        detached: true,
      });
      const release = context.takeOverSignals((signal) => child.kill(signal));
      // Should this process end first, the server must not outlive it unseen.
      const onExit = (): void => void child.kill('SIGTERM');
      process.once('exit', onExit);
      const done = (status: number): void => {
        release();
        process.removeListener('exit', onExit);
        resolve(status);
      };
      child.once('error', (error) => {
        context.stderr.write(`cohort: cannot start the server: ${error.message}\n`);
        done(ExitCode.FAILED);
      });
      child.once('exit', (code, signal) => done(code ?? (signal !== null ? ExitCode.FAILED : ExitCode.OK)));
    }),
};
