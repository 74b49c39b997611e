import { createInterface } from 'node:readline';
import type { RecordMetadata } from '../client/producer';
import type { Acks } from '../client/producer-options';
import { CohortError, ErrorCode } from '../errors';
import type { CliCommand, CliContext } from './cli-context';
import { integerOption, stringOption, usageOf, type CommandLine, type CommandSpec } from './command-line';
import { connectClient, connectionOf, CONNECTION_OPTIONS } from './connection-options';
import { ExitCode, exitCodeFor } from './exit-code';
import { toJson } from './output';
import { runCommand } from './run-command';
import { UsageError } from './usage-error';

/** Sends in flight before reading more lines: bounds memory when stdin is a large file. */
const MAX_IN_FLIGHT = 1_000;

const spec: CommandSpec = {
  usage: 'cohort produce TOPIC [--key-separator SEP] [--partition N] [--acks -1|0|1] [options] < lines',
  description:
    'Sends each line of standard input as one record (UTF-8). With --key-separator, the text before the\n' +
    'first separator is the key and the rest the value; a line without it is an error. Prints where each\n' +
    'record went with --json, a count otherwise.',
  options: {
    ...CONNECTION_OPTIONS,
    'key-separator': { type: 'string', valueName: 'SEP', description: 'split each line into key SEP value' },
    partition: { type: 'string', valueName: 'N', description: 'send every record to this partition' },
    acks: {
      type: 'string',
      valueName: 'ACKS',
      description: 'replicas that must have a record: -1 every in-sync one (default), 1 the leader, 0 none',
    },
    'linger-ms': {
      type: 'string',
      valueName: 'MS',
      description: 'how long records wait to share a batch (default 5)',
    },
  },
  positionals: { min: 1, max: 1 },
  footer: "example:\n  printf 'alice:1\\nbob:2\\n' | cohort produce orders --key-separator :",
};

async function produce(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, spec, context.env);
  const topic = line.positionals[0];
  const separator = stringOption(line, 'key-separator');
  if (separator === '') throw new UsageError('--key-separator must not be empty', usageOf(spec));
  const partition = integerOption(line, spec, 'partition', undefined, { min: 0, max: 9_999 });
  const acks = integerOption(line, spec, 'acks', -1, { min: -1, max: 1 }) as Acks;
  const lingerMs = integerOption(line, spec, 'linger-ms', 5, { min: 0, max: 60_000 }) as number;
  const client = await connectClient(connection, 'cohort-cli');
  try {
    // Refuse an unknown topic at once rather than after the producer's delivery timeout.
    const [described] = await client
      .admin({ requestTimeoutMs: connection.requestTimeoutMs })
      .describeTopics([topic]);
    if (described.error !== null) {
      context.stderr.write(`cohort: topic '${topic}' does not exist\n`);
      return exitCodeFor(described.error);
    }
    const producer = client.producer({
      acks,
      lingerMs,
      requestTimeoutMs: connection.requestTimeoutMs,
      deliveryTimeoutMs: 2 * connection.requestTimeoutMs + lingerMs,
    });
    const inFlight = new Set<Promise<unknown>>();
    let sent = 0;
    let failed = 0;
    let firstError: unknown = null;
    let lineNumber = 0;
    const lines = createInterface({ input: context.stdin, crlfDelay: Infinity });
    const onAbort = (): void => lines.close();
    context.signal.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const text of lines) {
        lineNumber++;
        let key: string | null = null;
        let value = text;
        if (separator !== undefined) {
          const at = text.indexOf(separator);
          if (at < 0) {
            firstError ??= new CohortError(
              ErrorCode.INVALID_RECORD,
              `line ${lineNumber} has no key separator '${separator}'; nothing after it was sent`,
            );
            break;
          }
          key = text.slice(0, at);
          value = text.slice(at + separator.length);
        }
        const sending: Promise<RecordMetadata> = producer.send({
          topic,
          key,
          value,
          ...(partition !== undefined ? { partition } : {}),
        });
        const tracked = sending.then(
          (m) => {
            sent++;
            if (connection.isJson)
              context.stdout.write(toJson({ topic: m.topic, partition: m.partition, offset: m.offset }));
          },
          (error: unknown) => {
            failed++;
            firstError ??= error;
          },
        );
        inFlight.add(tracked);
        void tracked.finally(() => inFlight.delete(tracked));
        if (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
      }
    } finally {
      context.signal.removeEventListener('abort', onAbort);
    }
    await producer.close({ timeoutMs: connection.requestTimeoutMs });
    await Promise.all(inFlight);
    if (!connection.isJson)
      context.stdout.write(`Produced ${sent} record${sent === 1 ? '' : 's'} to ${topic}.\n`);
    if (firstError === null) return ExitCode.OK;
    const message = firstError instanceof Error ? firstError.message : String(firstError);
    context.stderr.write(
      `cohort: ${failed > 0 ? `${failed} record${failed === 1 ? '' : 's'} failed: ` : ''}${message}\n`,
    );
    return failed > 0 ? exitCodeFor(firstError) : ExitCode.FAILED;
  } finally {
    await client.close();
  }
}

/** `cohort produce TOPIC`: lines from standard input. */
export const PRODUCE_COMMAND: CliCommand = {
  name: 'produce',
  summary: 'send lines of standard input as records',
  run: (args, context) => runCommand(spec, args, context, (line) => produce(line, context)),
};
