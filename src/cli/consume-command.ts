import { randomBytes } from 'node:crypto';
import {
  COOPERATIVE_STICKY_ASSIGNOR,
  RANGE_ASSIGNOR,
  ROUND_ROBIN_ASSIGNOR,
  type PartitionAssignor,
} from '../client/assignors';
import type { CohortAdmin } from '../client/cohort-admin';
import type { ConsumerRecord } from '../client/consumer-handlers';
import { ErrorCode } from '../errors';
import type { CliCommand, CliContext } from './cli-context';
import { integerOption, stringOption, usageOf, type CommandLine, type CommandSpec } from './command-line';
import { connectClient, connectionOf, CONNECTION_OPTIONS } from './connection-options';
import { ExitCode, exitCodeFor } from './exit-code';
import { writeGroupEvents } from './group-event-lines';
import { toJson } from './output';
import { reportError, runCommand } from './run-command';
import { UsageError } from './usage-error';

const DELETE_ATTEMPTS = 5;
/** The client id of every command; `consume --client-id` names one consumer among several. */
const DEFAULT_CLIENT_ID = 'cohort-cli';
const DELETE_RETRY_MS = 100;

const spec: CommandSpec = {
  usage: 'cohort consume TOPIC [--group GROUP] [--from-beginning] [--max-messages N] [options]',
  description:
    'Prints the records of a topic as they arrive, one value per line (UTF-8), until Ctrl-C,\n' +
    '--max-messages or --idle-timeout-ms. With --group it consumes as a member of that group and commits\n' +
    'what it printed; without, it uses a group of its own that it deletes when it stops.',
  options: {
    ...CONNECTION_OPTIONS,
    group: { type: 'string', valueName: 'GROUP', description: 'consume in this group, committing offsets' },
    'from-beginning': {
      type: 'boolean',
      description:
        'start at the log start where the group has no committed offset (default: new records only)',
    },
    'max-messages': { type: 'string', valueName: 'N', description: 'stop after N records' },
    'idle-timeout-ms': { type: 'string', valueName: 'MS', description: 'stop when no record arrived for MS' },
    'print-key': { type: 'boolean', description: 'print each key before its value' },
    assignor: {
      type: 'string',
      valueName: 'NAME',
      description:
        'the partition assignor this member offers: cooperative-sticky (default), range or roundrobin; ' +
        'every member of a group must offer one in common (a Python member of examples/ offers range)',
    },
    'key-separator': {
      type: 'string',
      valueName: 'SEP',
      description: 'between key and value (default: a tab)',
    },
    'client-id': {
      type: 'string',
      valueName: 'ID',
      description: `how the group lists this consumer (default ${DEFAULT_CLIENT_ID})`,
    },
    'print-group-events': {
      type: 'boolean',
      description: 'print joins, assignments, revocations and losses to standard error, to watch rebalances',
    },
  },
  positionals: { min: 1, max: 1 },
  footer: 'example:\n  cohort consume orders --group billing --from-beginning --max-messages 10',
};

function text(record: ConsumerRecord, printKey: boolean, separator: string): string {
  const value = record.value.toString('utf8');
  return printKey
    ? `${record.key === null ? 'null' : record.key.toString('utf8')}${separator}${value}\n`
    : `${value}\n`;
}

/** The assignors `--assignor` names, by their protocol names (Kafka's). */
const ASSIGNORS: readonly PartitionAssignor[] = [
  COOPERATIVE_STICKY_ASSIGNOR,
  RANGE_ASSIGNOR,
  ROUND_ROBIN_ASSIGNOR,
];

function json(record: ConsumerRecord): string {
  return toJson({
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    timestampMs: record.timestampMs,
    key: record.key === null ? null : record.key.toString('utf8'),
    value: record.value.toString('utf8'),
    headers: Object.fromEntries(record.headers.map((h) => [h.key, h.value.toString('utf8')])),
  });
}

/**
 * Best effort: the group of its own held nothing worth keeping. Its last member has just left, and the
 * coordinator may still be storing the now empty group: NON_EMPTY_GROUP is tried again a few times.
 */
async function deleteOwnGroup(admin: CohortAdmin, groupId: string): Promise<void> {
  for (let attempt = 0; attempt < DELETE_ATTEMPTS; attempt++) {
    const [result] = await admin.deleteGroups([groupId]).catch(() => [{ error: null }]);
    if (result.error?.code !== ErrorCode.NON_EMPTY_GROUP) return;
    await new Promise((resolve) => setTimeout(resolve, DELETE_RETRY_MS));
  }
}

async function consume(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, spec, context.env);
  const topic = line.positionals[0];
  const maxMessages = integerOption(line, spec, 'max-messages', undefined, {
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
  });
  const idleTimeoutMs = integerOption(line, spec, 'idle-timeout-ms', undefined, {
    min: 1,
    max: 2_147_483_647,
  });
  const printKey = line.values['print-key'] === true;
  const separator = stringOption(line, 'key-separator') ?? '\t';
  const named = stringOption(line, 'group');
  // Like kafka-console-consumer: without a group, a group of its own (and here, gone afterwards).
  const groupId = named ?? `cohort-console-${randomBytes(4).toString('hex')}`;
  const assignorName = stringOption(line, 'assignor') ?? COOPERATIVE_STICKY_ASSIGNOR.name;
  const assignor = ASSIGNORS.find((a) => a.name === assignorName);
  if (assignor === undefined) {
    throw new UsageError(
      `--assignor ${assignorName}: use one of ${ASSIGNORS.map((a) => a.name).join(', ')}`,
      usageOf(spec),
    );
  }
  const clientId = stringOption(line, 'client-id') ?? DEFAULT_CLIENT_ID;
  if (clientId === '') throw new UsageError('--client-id must not be empty', usageOf(spec));
  const client = await connectClient(connection, clientId);
  const admin = client.admin({ requestTimeoutMs: connection.requestTimeoutMs });
  let count = 0;
  try {
    const [described] = await admin.describeTopics([topic]);
    if (described.error !== null) {
      context.stderr.write(`cohort: topic '${topic}' does not exist\n`);
      return exitCodeFor(described.error);
    }
    const consumer = client.consumer({
      groupId,
      topics: [topic],
      autoOffsetReset: line.values['from-beginning'] === true ? 'earliest' : 'latest',
      autoCommit: named !== undefined,
      protocols: [assignor],
      requestTimeoutMs: connection.requestTimeoutMs,
    });
    if (line.values['print-group-events'] === true) {
      writeGroupEvents(consumer, `cohort: ${clientId} in ${groupId}: `, (text) => context.stderr.write(text));
    }
    let idle: NodeJS.Timeout | undefined;
    const stop = (): void => {
      clearTimeout(idle);
      void consumer.close();
    };
    const armIdle = (): void => {
      if (idleTimeoutMs === undefined) return;
      clearTimeout(idle);
      idle = setTimeout(stop, idleTimeoutMs);
    };
    context.signal.addEventListener('abort', stop, { once: true });
    armIdle();
    try {
      await consumer.run({
        eachMessage: ({ message }) => {
          if (maxMessages !== undefined && count >= maxMessages) return;
          count++;
          context.stdout.write(connection.isJson ? json(message) : text(message, printKey, separator));
          armIdle();
          // Stops before the next record: this one counts as processed, so --group commits it.
          if (count === maxMessages) stop();
        },
      });
    } catch (error) {
      return reportError(error, context);
    } finally {
      clearTimeout(idle);
      context.signal.removeEventListener('abort', stop);
    }
    return ExitCode.OK;
  } finally {
    context.stderr.write(`Processed a total of ${count} message${count === 1 ? '' : 's'}\n`);
    if (named === undefined) await deleteOwnGroup(admin, groupId);
    await client.close();
  }
}

/** `cohort consume TOPIC`: records to standard output. */
export const CONSUME_COMMAND: CliCommand = {
  name: 'consume',
  summary: 'print the records of a topic as they arrive',
  run: (args, context) => runCommand(spec, args, context, (line) => consume(line, context)),
};
