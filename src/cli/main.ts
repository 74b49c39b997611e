#!/usr/bin/env node
/**
 * The `cohort` command line: the only code of the CLI that reads argv, the environment and signals.
 * Exit statuses: see `ExitCode` (0 done, 1 failed, 2 usage, 3 not found, 4 unavailable).
 */
import { ignoreIpServerNameWarning } from '../client/ip-server-name-warning';
import { runCli } from './run-cli';

// `--address 127.0.0.1:7070 --tls-ca ...` is how cohort is reached on loopback: no DEP0123 on every call.
ignoreIpServerNameWarning();

const controller = new AbortController();
let signals = 0;
let takenOverBy: ((signal: NodeJS.Signals) => void) | null = null;
const onSignal = (signal: NodeJS.Signals): void => {
  if (takenOverBy !== null) return takenOverBy(signal);
  // The first signal asks the command to stop cleanly (a consumer leaves its group); a second one ends
  // the process at once, as with the server.
  if (++signals > 1) process.exit(130);
  controller.abort(signal);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  signal: controller.signal,
  takeOverSignals: (listener) => {
    takenOverBy = listener;
    return () => {
      if (takenOverBy === listener) takenOverBy = null;
    };
  },
}).then(
  (status) => {
    process.exitCode = status;
    // Nothing of the command may keep the process alive now; stdin in particular, if it was never read.
    process.stdin.unref?.();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  },
  (error: unknown) => {
    process.stderr.write(
      `cohort: unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
