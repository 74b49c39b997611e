import { ErrorCode } from '../errors';
import type { CliCommand, CliContext } from './cli-context';
import { integerOption, type CommandLine, type CommandSpec } from './command-line';
import { connectClient, connectionOf, CONNECTION_OPTIONS } from './connection-options';
import { ExitCode } from './exit-code';
import { renderTable, toJson } from './output';
import { runSubcommand, type Subcommand } from './run-command';

/** The server's limits (docs/log.md, CreateTopics); checked here too, so a typo costs no round trip. */
const MAX_PARTITIONS = 10_000;
const MAX_REPLICATION_FACTOR = 100;

const createSpec: CommandSpec = {
  usage: 'cohort topics create TOPIC [--partitions N] [--replication-factor N] [options]',
  description: 'Creates a topic on the leader.',
  options: {
    ...CONNECTION_OPTIONS,
    partitions: { type: 'string', valueName: 'N', description: "partition count (default: the server's, 1)" },
    'replication-factor': {
      type: 'string',
      valueName: 'N',
      description: "copies of each partition, the leader's included (default: the server's, 1)",
    },
    'if-not-exists': { type: 'boolean', description: 'succeed when the topic already exists' },
  },
  positionals: { min: 1, max: 1 },
};

async function createTopic(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, createSpec, context.env);
  const numPartitions = integerOption(line, createSpec, 'partitions', undefined, {
    min: 1,
    max: MAX_PARTITIONS,
  });
  const replicationFactor = integerOption(line, createSpec, 'replication-factor', undefined, {
    min: 1,
    max: MAX_REPLICATION_FACTOR,
  });
  const name = line.positionals[0];
  const client = await connectClient(connection, 'cohort-cli');
  try {
    const [result] = await client.admin({ requestTimeoutMs: connection.requestTimeoutMs }).createTopics([
      {
        name,
        ...(numPartitions !== undefined ? { numPartitions } : {}),
        ...(replicationFactor !== undefined ? { replicationFactor } : {}),
      },
    ]);
    const isOk =
      result.error === null ||
      (result.error.code === ErrorCode.TOPIC_ALREADY_EXISTS && line.values['if-not-exists'] === true);
    if (connection.isJson) {
      context.stdout.write(
        toJson({
          topic: name,
          created: result.error === null,
          error: result.error === null ? null : ErrorCode[result.error.code],
        }),
      );
    } else if (isOk) {
      context.stdout.write(
        result.error === null ? `Created topic ${name}.\n` : `Topic ${name} already exists.\n`,
      );
    }
    if (isOk) return ExitCode.OK;
    const error = result.error as NonNullable<typeof result.error>;
    // The server says why in words (which limit was hit); the SDK keeps them as the cause.
    const reason = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    context.stderr.write(`cohort: ${error.message}${reason}\n`);
    return ExitCode.FAILED;
  } finally {
    await client.close();
  }
}

const listSpec: CommandSpec = {
  usage: 'cohort topics list [options]',
  description: 'Lists every topic, one name per line.',
  options: CONNECTION_OPTIONS,
  positionals: { min: 0, max: 0 },
};

async function listTopics(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, listSpec, context.env);
  const client = await connectClient(connection, 'cohort-cli');
  try {
    const topics = await client.admin({ requestTimeoutMs: connection.requestTimeoutMs }).listTopics();
    context.stdout.write(connection.isJson ? toJson(topics) : topics.map((t) => `${t}\n`).join(''));
    return ExitCode.OK;
  } finally {
    await client.close();
  }
}

const describeSpec: CommandSpec = {
  usage: 'cohort topics describe [TOPIC...] [options]',
  description:
    'Describes topics (every topic when none is named): each partition with its leader, replicas,\n' +
    'in-sync replicas, log start offset and high watermark.',
  options: CONNECTION_OPTIONS,
  positionals: { min: 0, max: Infinity },
};

async function describeTopics(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, describeSpec, context.env);
  const client = await connectClient(connection, 'cohort-cli');
  try {
    const admin = client.admin({ requestTimeoutMs: connection.requestTimeoutMs });
    const topics = await admin.describeTopics(line.positionals);
    const partitions = topics.flatMap((t) =>
      t.partitions.map((p) => ({ topic: t.name, partition: p.partition, p })),
    );
    const tps = partitions.map(({ topic, partition }) => ({ topic, partition }));
    const [earliest, latest] = await Promise.all([
      admin.listOffsets(tps, 'earliest'),
      admin.listOffsets(tps, 'latest'),
    ]);
    const rows = partitions.map(({ topic, partition, p }, i) => ({
      topic,
      partition,
      leader: p.leaderId,
      replicas: p.replicas,
      isr: p.isr,
      logStartOffset: earliest[i].offset,
      highWatermark: latest[i].offset,
    }));
    const missing = topics.filter((t) => t.error !== null);
    if (connection.isJson) {
      context.stdout.write(
        toJson(
          topics.map((t) => ({
            topic: t.name,
            error: t.error === null ? null : ErrorCode[t.error.code],
            partitions: rows.filter((r) => r.topic === t.name).map(({ topic: _topic, ...rest }) => rest),
          })),
        ),
      );
    } else if (rows.length > 0) {
      context.stdout.write(
        renderTable(
          ['TOPIC', 'PARTITION', 'LEADER', 'REPLICAS', 'ISR', 'LOG-START-OFFSET', 'HIGH-WATERMARK'],
          rows.map((r) => [
            r.topic,
            r.partition,
            r.leader,
            r.replicas,
            r.isr,
            r.logStartOffset,
            r.highWatermark,
          ]),
        ),
      );
    }
    for (const t of missing) context.stderr.write(`cohort: topic '${t.name}' does not exist\n`);
    return missing.length > 0 ? ExitCode.NOT_FOUND : ExitCode.OK;
  } finally {
    await client.close();
  }
}

const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  create: { spec: createSpec, run: createTopic },
  list: { spec: listSpec, run: listTopics },
  describe: { spec: describeSpec, run: describeTopics },
};

/** `cohort topics create|list|describe`. */
export const TOPICS_COMMAND: CliCommand = {
  name: 'topics',
  summary: 'create, list and describe topics',
  run: (args, context) =>
    runSubcommand('topics', 'Create, list and describe topics.', SUBCOMMANDS, args, context),
};
