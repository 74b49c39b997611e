import type { ClusterLayout } from '../client/cohort-admin';
import { ErrorCode } from '../errors';
import type { CliCommand, CliContext } from './cli-context';
import type { CommandLine, CommandSpec } from './command-line';
import { connectClient, connectionOf, CONNECTION_OPTIONS } from './connection-options';
import { ExitCode } from './exit-code';
import { renderTable, toJson } from './output';
import { runSubcommand, type Subcommand } from './run-command';

const describeSpec: CommandSpec = {
  usage: 'cohort cluster describe [options]',
  description:
    'Shows where everything is: the nodes (id, host:port), the controller, and each __consumer_offsets\n' +
    'partition with its leader (the coordinator of its groups), leader epoch, replicas and ISR, and how\n' +
    'many of the cluster’s groups it holds.',
  options: CONNECTION_OPTIONS,
  positionals: { min: 0, max: 0 },
};

/** The text of `cohort cluster describe`. */
export function clusterText(layout: ClusterLayout): string {
  const parts = [
    renderTable(
      ['NODE', 'ADDRESS'],
      layout.nodes.map((n) => [n.nodeId, `${n.host}:${n.port}`]),
    ),
    `\nCONTROLLER: ${layout.controllerId ?? 'none elected'}\n`,
  ];
  if (layout.unansweredNodes.length > 0) {
    const names = layout.unansweredNodes.map((n) =>
      n.nodeId === null ? n.address : `${n.nodeId} (${n.address})`,
    );
    parts.push(
      `NOT ANSWERING: ${names.join(', ')}: killed or stopped? Metadata lists a node until its session\n` +
        `expires; its groups are not counted below.\n`,
    );
  }
  if (layout.offsetsPartitions === null) {
    parts.push(
      `\n__consumer_offsets is not a topic of this cluster (yet): it is created on the first FindCoordinator, and\n` +
        `a server without it coordinates every group it is sent. Groups: ${layout.groups}.\n`,
    );
  } else {
    parts.push(
      '\n' +
        renderTable(
          ['TOPIC', 'PARTITION', 'LEADER', 'LEADER-EPOCH', 'REPLICAS', 'ISR', '#GROUPS'],
          layout.offsetsPartitions.map((p) => [
            '__consumer_offsets',
            p.partition,
            p.leaderId < 0 ? 'none' : p.leaderId,
            p.leaderEpoch,
            p.replicas,
            p.isr,
            p.groups,
          ]),
        ),
    );
  }
  return parts.join('');
}

/** The document of `cohort cluster describe --json`. */
export function clusterJson(layout: ClusterLayout): object {
  return {
    nodes: layout.nodes.map((n) => ({ nodeId: n.nodeId, host: n.host, port: n.port })),
    controllerId: layout.controllerId,
    groups: layout.groups,
    unansweredNodes: layout.unansweredNodes.map((n) => ({ nodeId: n.nodeId, address: n.address })),
    offsetsPartitions:
      layout.offsetsPartitions?.map((p) => ({
        partition: p.partition,
        leaderId: p.leaderId,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicas,
        isr: p.isr,
        groups: p.groups,
        error: p.error === null ? null : (ErrorCode[p.error.code] ?? String(p.error.code)),
      })) ?? null,
  };
}

async function describeCluster(line: CommandLine, context: CliContext): Promise<number> {
  const connection = connectionOf(line, describeSpec, context.env);
  const client = await connectClient(connection, 'cohort-cli');
  try {
    const layout = await client.admin({ requestTimeoutMs: connection.requestTimeoutMs }).describeCluster();
    context.stdout.write(connection.isJson ? toJson(clusterJson(layout)) : clusterText(layout));
    return ExitCode.OK;
  } finally {
    await client.close();
  }
}

const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  describe: { spec: describeSpec, run: describeCluster },
};

/** `cohort cluster describe`. */
export const CLUSTER_COMMAND: CliCommand = {
  name: 'cluster',
  summary: 'describe the cluster: nodes, controller, and the coordinators of groups',
  run: (args, context) =>
    runSubcommand(
      'cluster',
      'Describe the cluster: its nodes, and which node coordinates which groups.',
      SUBCOMMANDS,
      args,
      context,
    ),
};
