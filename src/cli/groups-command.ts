import type { ConsumerGroupDescription, GroupDescription } from '../client/cohort-admin';
import type { GroupWatchEvent } from '../client/group-watch';
import type { CoordinatorNode } from '../client/coordinator-cache';
import type { TopicPartition } from '../client/topic-partition';
import { ErrorCode } from '../errors';
import type { CliCommand, CliContext } from './cli-context';
import { stringOption, usageOf, type CommandLine, type CommandSpec } from './command-line';
import { connectClient, connectionOf, CONNECTION_OPTIONS } from './connection-options';
import { ExitCode, exitCodeFor } from './exit-code';
import { renderTable, toJson } from './output';
import { runSubcommand, type Subcommand } from './run-command';
import { UsageError } from './usage-error';

/** Kafka's classic group states, as ListGroups filters by them. */
const GROUP_STATES = ['Empty', 'PreparingRebalance', 'CompletingRebalance', 'Stable', 'Dead'] as const;

const listSpec: CommandSpec = {
  usage: 'cohort groups list [--state STATE]... [options]',
  description: 'Lists the groups the coordinator holds, with their state and protocol type.',
  options: {
    ...CONNECTION_OPTIONS,
    state: {
      type: 'string',
      multiple: true,
      valueName: 'STATE',
      description: `only groups in this state: ${GROUP_STATES.join(', ')} (any case)`,
    },
  },
  positionals: { min: 0, max: 0 },
};

/**
 * The `--state` values in the names the coordinator knows, whatever their case (as kafka-consumer-groups
 * takes them). An unknown state is a usage error: the server would match no group and the listing would
 * look empty rather than wrong.
 */
function statesOf(line: CommandLine): string[] {
  return ((line.values.state as string[] | undefined) ?? []).map((raw) => {
    const state = GROUP_STATES.find((s) => s.toLowerCase() === raw.toLowerCase());
    if (state === undefined) {
      throw new UsageError(
        `--state must be one of ${GROUP_STATES.join(', ')}, got '${raw}'`,
        usageOf(listSpec),
      );
    }
    return state;
  });
}

async function listGroups(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, listSpec, context.env);
  const states = statesOf(line);
  const client = await connectClient(connection, 'cohort-cli');
  try {
    const groups = await client
      .admin({ requestTimeoutMs: connection.requestTimeoutMs })
      .listGroups({ states });
    context.stdout.write(
      connection.isJson
        ? toJson(groups)
        : renderTable(
            ['GROUP', 'STATE', 'PROTOCOL-TYPE'],
            groups.map((g) => [g.groupId, g.state, g.protocolType || null]),
          ),
    );
    return ExitCode.OK;
  } finally {
    await client.close();
  }
}

const describeSpec: CommandSpec = {
  usage: 'cohort groups describe GROUP... [options]',
  description:
    'Describes consumer groups, as kafka-consumer-groups --describe does: state, generation and\n' +
    'assignment strategy; members with client id, host and partitions; and per partition the\n' +
    'committed offset (CURRENT-OFFSET), the high watermark (LOG-END-OFFSET) and the LAG between them.',
  options: {
    ...CONNECTION_OPTIONS,
    'client-id': {
      type: 'string',
      valueName: 'ID',
      description:
        'only the members with this client id, and exit 3 when a group has none (a health check of one consumer)',
    },
  },
  positionals: { min: 1, max: Infinity },
};

/** The group with only the members of `clientId`, and only the partitions they own or nobody does. */
function membersOf(group: ConsumerGroupDescription, clientId: string): ConsumerGroupDescription {
  const members = group.members.filter((m) => m.clientId === clientId);
  const ids = new Set(members.map((m) => m.memberId));
  return {
    ...group,
    members,
    partitions: group.partitions.filter((p) => p.memberId === null || ids.has(p.memberId)),
  };
}

/** `orders(0,1,2) payments(3)`: partitions grouped by topic. */
function assignmentText(partitions: readonly TopicPartition[] | null): string | null {
  if (partitions === null || partitions.length === 0) return null;
  const byTopic = new Map<string, number[]>();
  for (const tp of partitions) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
  return [...byTopic].map(([topic, list]) => `${topic}(${list.join(',')})`).join(' ');
}

/** `host:port (id)`, as Kafka's tool shows a coordinator; `-` when unknown. */
function coordinatorText(coordinator: CoordinatorNode | null): string | null {
  if (coordinator === null) return null;
  return coordinator.nodeId < 0 ? coordinator.address : `${coordinator.address} (${coordinator.nodeId})`;
}

function describeText(group: ConsumerGroupDescription, coordinator: CoordinatorNode | null): string {
  const id = group.groupId;
  const parts = [
    renderTable(
      [
        'GROUP',
        'STATE',
        'GENERATION',
        'PROTOCOL-TYPE',
        'ASSIGNMENT-STRATEGY',
        '#MEMBERS',
        'COORDINATOR (ID)',
      ],
      [
        [
          id,
          group.state,
          group.generationId,
          group.protocolType || null,
          group.protocol || null,
          group.members.length,
          coordinatorText(coordinator),
        ],
      ],
    ),
  ];
  if (group.members.length === 0) {
    parts.push(`\nConsumer group '${id}' has no active members.\n`);
  } else {
    parts.push(
      '\n' +
        renderTable(
          ['GROUP', 'CONSUMER-ID', 'GROUP-INSTANCE-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS', 'ASSIGNMENT'],
          group.members.map((m) => [
            id,
            m.memberId,
            m.groupInstanceId,
            m.clientHost,
            m.clientId,
            m.assignment?.length ?? null,
            assignmentText(m.assignment),
          ]),
        ),
    );
  }
  if (group.partitions.length > 0) {
    parts.push(
      '\n' +
        renderTable(
          [
            'GROUP',
            'TOPIC',
            'PARTITION',
            'CURRENT-OFFSET',
            'LOG-END-OFFSET',
            'LAG',
            'CONSUMER-ID',
            'HOST',
            'CLIENT-ID',
          ],
          group.partitions.map((p) => [
            id,
            p.topic,
            p.partition,
            p.committedOffset,
            p.highWatermark,
            p.lag,
            p.memberId,
            p.clientHost,
            p.clientId,
          ]),
        ),
    );
  }
  return parts.join('');
}

/** A group's description as `--json` prints it (describe and watch alike). */
function groupJson(group: GroupDescription): object {
  return {
    groupId: group.groupId,
    error: group.error === null ? null : (ErrorCode[group.error.code] ?? String(group.error.code)),
    state: group.state,
    generationId: group.generationId,
    protocolType: group.protocolType,
    assignmentStrategy: group.protocol,
    members: group.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      assignment: m.assignment,
    })),
  };
}

function describeJson(group: ConsumerGroupDescription, coordinator: CoordinatorNode | null): object {
  return { ...groupJson(group), coordinator, partitions: group.partitions };
}

async function describeGroups(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, describeSpec, context.env);
  const client = await connectClient(connection, 'cohort-cli');
  try {
    const admin = client.admin({ requestTimeoutMs: connection.requestTimeoutMs });
    let status: number = ExitCode.OK;
    const clientId = stringOption(line, 'client-id');
    const described: ConsumerGroupDescription[] = [];
    const coordinators: (CoordinatorNode | null)[] = [];
    for (const groupId of line.positionals) {
      const group = await admin.describeConsumerGroup(groupId);
      described.push(clientId === undefined || group.error !== null ? group : membersOf(group, clientId));
      // The node the describe went to (cached by it); unknown rather than an error if it moved meanwhile.
      coordinators.push(await client.findCoordinator(groupId, connection.requestTimeoutMs).catch(() => null));
    }
    if (connection.isJson) {
      context.stdout.write(toJson(described.map((group, i) => describeJson(group, coordinators[i]))));
    }
    let first = true;
    for (const [i, group] of described.entries()) {
      if (group.error !== null) {
        const code = group.error.code;
        context.stderr.write(
          code === ErrorCode.GROUP_ID_NOT_FOUND
            ? `cohort: consumer group '${group.groupId}' does not exist\n`
            : `cohort: ${group.error.message}\n`,
        );
        if (status === ExitCode.OK) status = exitCodeFor(group.error);
        continue;
      }
      if (!connection.isJson) {
        context.stdout.write(`${first ? '' : '\n'}${describeText(group, coordinators[i])}`);
        first = false;
      }
      if (clientId !== undefined && group.members.length === 0) {
        context.stderr.write(`cohort: group '${group.groupId}' has no member with client id '${clientId}'\n`);
        if (status === ExitCode.OK) status = ExitCode.NOT_FOUND;
      }
    }
    return status;
  } finally {
    await client.close();
  }
}

const deleteSpec: CommandSpec = {
  usage: 'cohort groups delete GROUP... [options]',
  description: 'Deletes groups that have no members, with their committed offsets.',
  options: CONNECTION_OPTIONS,
  positionals: { min: 1, max: Infinity },
};

async function deleteGroups(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, deleteSpec, context.env);
  const client = await connectClient(connection, 'cohort-cli');
  try {
    const results = await client
      .admin({ requestTimeoutMs: connection.requestTimeoutMs })
      .deleteGroups(line.positionals);
    if (connection.isJson) {
      context.stdout.write(
        toJson(
          results.map((r) => ({
            groupId: r.groupId,
            deleted: r.error === null,
            error: r.error === null ? null : ErrorCode[r.error.code],
          })),
        ),
      );
    }
    let status: number = ExitCode.OK;
    for (const r of results) {
      if (r.error === null) {
        if (!connection.isJson) context.stdout.write(`Deleted group ${r.groupId}.\n`);
        continue;
      }
      const why =
        r.error.code === ErrorCode.NON_EMPTY_GROUP
          ? `group '${r.groupId}' still has members; stop them first`
          : r.error.code === ErrorCode.GROUP_ID_NOT_FOUND
            ? `group '${r.groupId}' does not exist`
            : r.error.message;
      context.stderr.write(`cohort: ${why}\n`);
      if (status === ExitCode.OK) status = exitCodeFor(r.error);
    }
    return status;
  } finally {
    await client.close();
  }
}

const watchSpec: CommandSpec = {
  usage: 'cohort groups watch [GROUP]... [options]',
  description:
    'Watches groups (every group when none is named) and prints one line per change as it happens:\n' +
    'time, group, reason (member-joined, member-left, session-expired, rebalance-completed, ...),\n' +
    'state, generation and members, starting with the state of each group now (reason snapshot).\n' +
    'With --json, one JSON document per line. Runs until Ctrl-C (exit 0); exits 4 if the server goes away.',
  options: CONNECTION_OPTIONS,
  positionals: { min: 0, max: Infinity },
};

/** `2026-12-01T10:00:00.000Z  orders  member-joined  PreparingRebalance  generation 3  2 members`. */
function watchLine(event: GroupWatchEvent): string {
  const { group } = event;
  const members = group.members.length;
  const what =
    group.error?.code === ErrorCode.GROUP_ID_NOT_FOUND
      ? 'does not exist'
      : `${group.state}  generation ${group.generationId}  ${members} member${members === 1 ? '' : 's'}` +
        (members > 0 ? `: ${group.members.map((m) => m.groupInstanceId ?? m.memberId).join(', ')}` : '');
  return `${new Date(event.timestampMs).toISOString()}  ${group.groupId}  ${event.reason}  ${what}\n`;
}

async function watchGroups(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, watchSpec, context.env);
  const client = await connectClient(connection, 'cohort-cli');
  try {
    // Ctrl-C aborts the signal, which ends the iteration: exit 0. A server that goes away throws (exit 4).
    for await (const event of client.watchGroups(line.positionals, { signal: context.signal })) {
      context.stdout.write(
        connection.isJson
          ? toJson({
              timestampMs: event.timestampMs,
              reason: event.reason,
              isSnapshot: event.isSnapshot,
              ...groupJson(event.group),
            })
          : watchLine(event),
      );
    }
    return ExitCode.OK;
  } finally {
    await client.close();
  }
}

const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  list: { spec: listSpec, run: listGroups },
  describe: { spec: describeSpec, run: describeGroups },
  delete: { spec: deleteSpec, run: deleteGroups },
  watch: { spec: watchSpec, run: watchGroups },
};

/** `cohort groups list|describe|delete|watch`. */
export const GROUPS_COMMAND: CliCommand = {
  name: 'groups',
  summary: 'list, describe (with lag), delete and watch consumer groups',
  run: (args, context) =>
    runSubcommand(
      'groups',
      'List, describe (with lag), delete and watch consumer groups.',
      SUBCOMMANDS,
      args,
      context,
    ),
};
