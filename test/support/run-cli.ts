import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

const REPO_ROOT = join(__dirname, '..', '..');

/** How a finished `cohort` command ended. */
export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A `cohort` command still running (consume, serve). */
export interface RunningCli {
  readonly child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout contains `text`; rejects if the process exits first. */
  waitFor(text: string | RegExp): Promise<string>;
  readonly exited: Promise<CliResult>;
  /** Kills it if still running (for afterEach). */
  kill(): Promise<void>;
}

function cleanEnv(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('COHORT_')) out[key] = value;
  }
  return { ...out, ...env };
}

/** How to start a `cohort` command. */
export interface CliOptions {
  /** Written to its stdin, which is then closed. */
  readonly stdin?: string;
  /** Added to a copy of this environment without any COHORT_* variables. */
  readonly env?: Record<string, string>;
  /**
   * A compiled entry point (`transpileSources().cliMain`); default: src/cli/main.ts through
   * scripts/register-typescript.js, as `npm run cli` runs it.
   */
  readonly script?: string;
}

/** Starts a `cohort` command. */
export function startCli(args: readonly string[], options: CliOptions = {}): RunningCli {
  const entry =
    options.script !== undefined
      ? [options.script]
      : ['-r', './scripts/register-typescript.js', 'src/cli/main.ts'];
  const child = spawn(process.execPath, [...entry, ...args], {
    cwd: REPO_ROOT,
    env: cleanEnv(options.env ?? {}),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters: { text: string | RegExp; resolve(out: string): void }[] = [];
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i];
      if (typeof w.text === 'string' ? stdout.includes(w.text) : w.text.test(stdout))
        waiters.splice(i, 1)[0].resolve(stdout);
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin?.end(options.stdin ?? '');
  const exited = new Promise<CliResult>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitFor: (text) =>
      new Promise<string>((resolve, reject) => {
        if (typeof text === 'string' ? stdout.includes(text) : text.test(stdout)) return resolve(stdout);
        waiters.push({ text, resolve });
        void exited.then((r) =>
          reject(new Error(`cohort exited (${r.code}) before printing ${String(text)}; stderr: ${r.stderr}`)),
        );
      }),
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** Runs a `cohort` command to its end. */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return startCli(args, options).exited;
}

/** A transpiled copy of src/ (see `transpileSources`). */
export interface TranspiledSources {
  /** The `cohort` CLI's entry point in it: what the package's bin runs once built. */
  readonly cliMain: string;
  /** The package's entry point in it (src/index.ts). */
  readonly entryPoint: string;
  /** Removes the copy. */
  remove(): void;
}

/**
 * Transpiles every file of src/ (TypeScript's transpileModule: no type check, which tsc and the unit tests
 * do) into a throwaway directory under dist/, where proto/ and node_modules/ resolve as they do from the
 * built package. A command then starts in a fraction of the time transpiling it on the fly takes, so the CLI's
 * tests can run it dozens of times.
 */
export function transpileSources(): TranspiledSources {
  const distDir = join(REPO_ROOT, 'dist');
  mkdirSync(distDir, { recursive: true });
  const outDir = mkdtempSync(join(distDir, 'cli-test-'));
  const compilerOptions = {
    module: ts.ModuleKind.CommonJS,
    target: ts.ScriptTarget.ES2022,
    esModuleInterop: true,
  };
  const visit = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) visit(path);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) {
        const { outputText } = ts.transpileModule(readFileSync(path, 'utf8'), {
          compilerOptions,
          fileName: path,
        });
        const target = join(outDir, relative(REPO_ROOT, path)).replace(/\.ts$/, '.js');
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, outputText);
      }
    }
  };
  visit(join(REPO_ROOT, 'src'));
  return {
    cliMain: join(outDir, 'src', 'cli', 'main.js'),
    entryPoint: join(outDir, 'src', 'index.js'),
    remove: () => rmSync(outDir, { recursive: true, force: true }),
  };
}
