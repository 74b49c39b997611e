import { PassThrough, Readable } from 'node:stream';
import type { CliContext } from '../../../src/cli/cli-context';

/** A CliContext whose output is collected, with the given stdin and environment. */
export function captureContext(options: { stdin?: string; env?: Record<string, string> } = {}) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const controller = new AbortController();
  const context: CliContext = {
    stdout,
    stderr,
    stdin: Readable.from(options.stdin === undefined ? [] : [options.stdin]),
    env: options.env ?? {},
    signal: controller.signal,
    takeOverSignals: () => () => undefined,
  };
  return { context, out: () => out, err: () => err, abort: (signal: string) => controller.abort(signal) };
}
