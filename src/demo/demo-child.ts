import { spawn, type ChildProcess } from 'node:child_process';
import { extname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { DemoChildConfig, DemoChildEvent } from './demo-events';

/** How a child runs this directory's `script`: compiled, or from source through the TypeScript hook. */
function nodeArgs(script: string): string[] {
  const extension = extname(__filename);
  const execArgv = [...process.execArgv];
  // From source, the child loads .ts through the hook whatever loader this process has (a second -r of it
  // is harmless; guessing from execArgv whether a loader is present is not).
  if (extension === '.ts')
    execArgv.push('-r', join(__dirname, '..', '..', 'scripts', 'register-typescript.js'));
  return [...execArgv, join(__dirname, `${script}${extension}`)];
}

/** A producer or consumer of the demo in a process of its own, reporting events as JSON lines. */
export class DemoChild {
  readonly process: ChildProcess;
  /** Resolves with the exit status (or the signal that ended it). */
  readonly exited: Promise<number | NodeJS.Signals>;
  private isExpectedToExit = false;

  constructor(
    readonly name: string,
    script: 'demo-consumer' | 'demo-producer',
    config: DemoChildConfig,
    onEvent: (child: DemoChild, event: DemoChildEvent) => void,
    onUnexpectedExit: (child: DemoChild, status: number | NodeJS.Signals) => void,
  ) {
    this.process = spawn(process.execPath, [...nodeArgs(script), JSON.stringify(config)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    createInterface({ input: this.process.stdout! }).on('line', (line) => {
      let event: DemoChildEvent;
      try {
        event = JSON.parse(line) as DemoChildEvent;
      } catch {
        return; // not an event (a stray log line)
      }
      onEvent(this, event);
    });
    this.exited = new Promise((resolve) =>
      this.process.once('exit', (code, signal) => {
        const status = code ?? signal ?? 1;
        if (!this.isExpectedToExit) onUnexpectedExit(this, status);
        resolve(status);
      }),
    );
  }

  /** Writes a command line to the child's stdin. */
  tell(line: string): void {
    this.process.stdin?.write(`${line}\n`);
  }

  /** Stops the child with `signal`; after `graceMs` without an exit, SIGKILL. Resolves on exit. */
  async stop(signal: NodeJS.Signals, graceMs = 5_000): Promise<number | NodeJS.Signals> {
    this.isExpectedToExit = true;
    if (this.process.exitCode !== null || this.process.signalCode !== null) return this.exited;
    this.process.kill(signal);
    const force = setTimeout(() => this.process.kill('SIGKILL'), graceMs);
    const status = await this.exited;
    clearTimeout(force);
    return status;
  }
}
