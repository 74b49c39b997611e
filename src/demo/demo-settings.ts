import { parseArgs } from 'node:util';

/** The demo's timeline. Durations in milliseconds. */
export interface DemoSettings {
  /** The consumers' session timeout: how long the group waits for a consumer that stopped without leaving. */
  readonly sessionTimeoutMs: number;
  /** How long the group runs with three members before one is stopped. */
  readonly steadyMs: number;
  /** How long the producer keeps going after the rebalance, before it stops and the lag drains. */
  readonly afterRebalanceMs: number;
  /** Records per second from the producer. */
  readonly recordsPerSecond: number;
  /** Partitions of the demo topic. */
  readonly partitions: number;
  /** The whole demo must end within this, or it stops and exits 1. */
  readonly timeoutMs: number;
}

/** Demo options that are not numbers. */
export interface DemoSwitches {
  /**
   * `--keep-serving`: once the story is told, the demo's server keeps serving its live page until Ctrl-C
   * (it does anyway while a page is open).
   */
  readonly isServingKept: boolean;
}

/**
 * `--address`'s nodes: where the demo's group and producer run instead of a server of its own. Null: the
 * demo starts one in its process.
 */
export type DemoCluster = readonly string[] | null;

/**
 * The session timeout against a cluster, unless `--session-timeout-ms` says otherwise: long enough for the
 * consumers to keep their partitions through the loss of any node, the group's coordinator included
 * (docs/cluster.md, "Run a cluster"). A member gives its partitions up (`lost`) and rejoins when no
 * heartbeat has succeeded for its session, counted from its last one that did, at most a heartbeat interval
 * (a fifth of the session, 4 s) before the kill. After a kill -9 of the coordinator the next one succeeds
 * once
 * - the dead node's session in etcd has expired: the node session, 10 s by default
 *   (`--node-session-timeout-ms`), after its last renewal (renewed every third of it: 6.7 to 10 s after
 *   the kill, plus etcd's lease checks);
 * - the controller (elected again first, if the dead node was the controller) has moved the partitions
 *   the node led, the new leader of the group's `__consumer_offsets` partition has loaded its groups, and
 *   the member has found it (it asks every 100 ms): within a second of the expiry where measured, 2 s
 *   allowed for a loaded machine.
 * That is 4 + 10 + 2 = 16 s at worst, and 20 s leaves 4 s to spare. (Measured from the kill to the group
 * Stable at its new coordinator: 7.7 and 8.4 s on a 2-core machine; 10 to 12 s under heavier load.) The 6 s
 * of a node's `--group-min-session-timeout-ms` (Kafka's) that the demo asked for before lost every member's
 * partitions in every failover. The price: the consumer the demo stops is replaced only after 20 s, so the
 * story takes longer than on one server.
 */
export const CLUSTER_SESSION_TIMEOUT_MS = 20_000;

/** The demo as `npm run demo` plays it. */
export const DEMO_DEFAULTS: DemoSettings = Object.freeze({
  sessionTimeoutMs: 5_000,
  steadyMs: 4_000,
  afterRebalanceMs: 2_000,
  recordsPerSecond: 20,
  partitions: 6,
  timeoutMs: 120_000,
});

const FLAGS: Record<keyof DemoSettings, { flag: string; min: number; max: number; help: string }> = {
  sessionTimeoutMs: {
    flag: 'session-timeout-ms',
    min: 1_000,
    max: 60_000,
    help: "the consumers' session timeout",
  },
  steadyMs: {
    flag: 'steady-ms',
    min: 0,
    max: 600_000,
    help: 'how long three consumers run before one is stopped',
  },
  afterRebalanceMs: {
    flag: 'after-rebalance-ms',
    min: 0,
    max: 600_000,
    help: 'how long the producer goes on after the rebalance',
  },
  recordsPerSecond: { flag: 'records-per-second', min: 1, max: 10_000, help: 'how fast the producer sends' },
  partitions: { flag: 'partitions', min: 3, max: 100, help: 'partitions of the demo topic' },
  timeoutMs: { flag: 'timeout-ms', min: 10_000, max: 3_600_000, help: 'give up (exit 1) after this long' },
};

/** `npm run demo -- --help`. */
export function demoHelp(): string {
  const rows = (Object.keys(FLAGS) as (keyof DemoSettings)[]).map((key) => {
    const f = FLAGS[key];
    // The session is the one default that depends on --address: a cluster's outlasts a node failover.
    const byDefault =
      key === 'sessionTimeoutMs'
        ? `${DEMO_DEFAULTS[key]}; ${CLUSTER_SESSION_TIMEOUT_MS} with --address`
        : `${DEMO_DEFAULTS[key]}`;
    return `  --${f.flag} N`.padEnd(28) + `${f.help} (default ${byDefault})`;
  });
  return [
    'usage: npm run demo -- [options]',
    '',
    'Starts a cohort server, a producer and three consumers in one group (each in a process of its own),',
    'stops one consumer without letting it leave, and shows the group rebalance after the session timeout',
    'and the lag drain back to zero. Exits 0 when done, 1 if it did not get there in time.',
    'With --address, the producer and the consumers run against that cluster instead of a server of the',
    'demo\'s own (docs/cluster.md, "Run a cluster").',
    '',
    'options:',
    '  --address HOST:PORT,...'.padEnd(28) +
      `the nodes of a running cluster to start from (default: none, a server of its own)`,
    ...rows,
    '  --keep-serving'.padEnd(28) +
      'once done, keep the server and its live page up until Ctrl-C (it does while a page is open)',
    '  -h, --help'.padEnd(28) + 'show this help',
    '',
  ].join('\n');
}

/** The settings from the command line; `help` when asked; `error` for a flag it cannot use. */
export function demoSettingsOf(
  args: readonly string[],
):
  | { settings: DemoSettings; cluster: DemoCluster; switches: DemoSwitches }
  | { help: string }
  | { error: string } {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: [...args],
      options: {
        help: { type: 'boolean', short: 'h' },
        address: { type: 'string' },
        'keep-serving': { type: 'boolean' },
        ...Object.fromEntries(Object.values(FLAGS).map((f) => [f.flag, { type: 'string' as const }])),
      },
      strict: true,
    }).values;
  } catch (error) {
    return { error: String((error as { message?: unknown }).message ?? error).split('. ')[0] };
  }
  if (values.help === true) return { help: demoHelp() };
  let cluster: DemoCluster = null;
  if (values.address !== undefined) {
    const nodes = String(values.address)
      .split(',')
      .map((node) => node.trim());
    if (nodes.some((node) => !/^[^\s:]+:\d{1,5}$/.test(node)))
      return { error: `--address must be HOST:PORT[,HOST:PORT...], got '${String(values.address)}'` };
    cluster = nodes;
  }
  const settings: Record<string, number> = {
    ...DEMO_DEFAULTS,
    ...(cluster === null ? {} : { sessionTimeoutMs: CLUSTER_SESSION_TIMEOUT_MS }),
  };
  for (const key of Object.keys(FLAGS) as (keyof DemoSettings)[]) {
    const f = FLAGS[key];
    const raw = values[f.flag];
    if (raw === undefined) continue;
    const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (!(n >= f.min && n <= f.max)) {
      return {
        error: `--${f.flag} must be a whole number between ${f.min} and ${f.max}, got '${String(raw)}'`,
      };
    }
    settings[key] = n;
  }
  return {
    settings: Object.freeze(settings as unknown as DemoSettings),
    cluster,
    switches: Object.freeze({ isServingKept: values['keep-serving'] === true }),
  };
}
