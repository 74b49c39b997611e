import type { CliCommand, CliContext } from './cli-context';
import { CLUSTER_COMMAND } from './cluster-command';
import { CONSUME_COMMAND } from './consume-command';
import { ExitCode } from './exit-code';
import { GROUPS_COMMAND } from './groups-command';
import { PRODUCE_COMMAND } from './produce-command';
import { SERVE_COMMAND } from './serve-command';
import { TOPICS_COMMAND } from './topics-command';

/** Every command of `cohort`, in the order `--help` lists them. */
export const COMMANDS: readonly CliCommand[] = [
  SERVE_COMMAND,
  TOPICS_COMMAND,
  GROUPS_COMMAND,
  CLUSTER_COMMAND,
  PRODUCE_COMMAND,
  CONSUME_COMMAND,
];

/** `cohort --help`. */
export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'usage: cohort <command> [options]',
    '',
    'Kafka-style consumer groups and a partitioned log, over gRPC.',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'cohort <command> --help' for its options. Every command but serve takes --address HOST:PORT",
    '(a comma-separated list for a cluster; default $COHORT_ADDRESS, else 127.0.0.1:7070), --token or',
    '--token-file (default $COHORT_TOKEN),',
    '--tls, --tls-ca, --tls-cert, --tls-key, --timeout-ms (how long to wait for the server at all, default',
    '2000), --request-timeout-ms and --json.',
    '',
    'exit status: 0 done, 1 the operation failed, 2 usage error, 3 not found, 4 server unavailable.',
    '',
  ].join('\n');
}

/** Runs `cohort <args>`; resolves with the exit status. */
export async function runCli(args: readonly string[], context: CliContext): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined) {
    context.stderr.write(mainHelp());
    return ExitCode.USAGE;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    context.stdout.write(mainHelp());
    return ExitCode.OK;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) {
    context.stderr.write(`cohort: unknown command '${name}'\n\n${mainHelp()}`);
    return ExitCode.USAGE;
  }
  return command.run(rest, context);
}
