import { ServerUnreachableError, type UnreachableReason } from '../client/server-unreachable-error';
import { CohortError, ErrorCode } from '../errors';
import type { CliContext } from './cli-context';
import { helpText, parseCommandLine, type CommandLine, type CommandSpec } from './command-line';
import { ExitCode, exitCodeFor } from './exit-code';
import { UsageError } from './usage-error';

/** A subcommand (`groups describe`): its spec and what it does with a parsed command line. */
export interface Subcommand {
  readonly spec: CommandSpec;
  run(line: CommandLine, context: CliContext): Promise<number>;
}

/**
 * Parses `args` against `spec` and runs `body`, turning what goes wrong into a message on stderr and an exit
 * status: 2 for a usage error (with the usage), otherwise by the error's code (see `ExitCode`).
 */
export async function runCommand(
  spec: CommandSpec,
  args: readonly string[],
  context: CliContext,
  body: (line: CommandLine) => Promise<number>,
): Promise<number> {
  try {
    const line = parseCommandLine(spec, args);
    if (line === null) {
      context.stdout.write(helpText(spec));
      return ExitCode.OK;
    }
    return await body(line);
  } catch (error) {
    return reportError(error, context);
  }
}

/** What to check, by what stood between the command and its server. */
const UNREACHABLE_HINTS: Readonly<Record<UnreachableReason, string>> = {
  refused: 'is the server running, and is --address right?',
  unresolved: 'is the host name in --address right?',
  'tls-handshake':
    'does the server serve TLS? --tls-ca must name the CA that signed its certificate (or leave the system ' +
    'roots to it), the certificate must be for the host in --address, and a server that wants mutual TLS ' +
    'needs --tls-cert and --tls-key',
  'no-answer': 'the server did not answer within --timeout-ms; is it overloaded, or is --address right?',
  'connection-failed': 'is the server running, is --address right, and does it want TLS (--tls, --tls-ca)?',
};

/** Prints `error` for a person and returns the exit status it stands for. */
export function reportError(error: unknown, context: CliContext): number {
  if (error instanceof UsageError) {
    context.stderr.write(`cohort: ${error.message}\n${error.usage}\n`);
    return ExitCode.USAGE;
  }
  const code = exitCodeFor(error);
  let message = error instanceof Error ? error.message : String(error);
  if (error instanceof ServerUnreachableError) {
    message += `\n  (${UNREACHABLE_HINTS[error.reason]})`;
  } else if (
    code === ExitCode.UNAVAILABLE &&
    error instanceof CohortError &&
    error.code !== ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
  ) {
    message += '\n  (is the server running, and is --address right?)';
  } else if (error instanceof CohortError && error.code === ErrorCode.GROUP_AUTHORIZATION_FAILED) {
    message +=
      '\n  (the server refused the call: check --token, --token-file or $COHORT_TOKEN, and the TLS options)';
  }
  context.stderr.write(`cohort: ${message}\n`);
  return code;
}

/**
 * Dispatches `cohort GROUP SUBCOMMAND ...` to one of `subcommands`; `cohort GROUP --help` (or no
 * subcommand) lists them.
 */
export function runSubcommand(
  group: string,
  summary: string,
  subcommands: Readonly<Record<string, Subcommand>>,
  args: readonly string[],
  context: CliContext,
): Promise<number> {
  const [name, ...rest] = args;
  const listing =
    `usage: cohort ${group} <${Object.keys(subcommands).join('|')}> [options]\n\n${summary}\n\ncommands:\n` +
    Object.entries(subcommands)
      .map(([n, s]) => `  ${n.padEnd(10)}  ${s.spec.description.split('\n')[0]}`)
      .join('\n') +
    `\n\nRun 'cohort ${group} <command> --help' for its options.\n`;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? context.stderr : context.stdout).write(listing);
    return Promise.resolve(name === undefined ? ExitCode.USAGE : ExitCode.OK);
  }
  const subcommand = subcommands[name];
  if (subcommand === undefined) {
    context.stderr.write(`cohort: unknown command '${group} ${name}'\n${listing}`);
    return Promise.resolve(ExitCode.USAGE);
  }
  return runCommand(subcommand.spec, rest, context, (line) => subcommand.run(line, context));
}
