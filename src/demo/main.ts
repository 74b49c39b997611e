/**
 * `npm run demo`: cohort's first five minutes, in about twenty seconds.
 *
 * The demo starts a server in this process (`startServer`, on a temporary data directory) and, each in a
 * process of its own, a producer and three consumers of one group. It prints, as they happen: the joins
 * and the assignment; then it stops one consumer with SIGKILL — no LeaveGroup, as when a machine dies — so
 * the group rebalances only once that member's session times out; then the producer stops and the lag
 * drains back to zero. It exits 0 when done, 1 if it did not get there within `--timeout-ms`, and removes
 * its children and its data directory either way. `--help` lists the timeline's settings.
 *
 * With `--address HOST:PORT,...` it starts no server: the producer and the consumers run against the
 * cluster those nodes belong to (docs/cluster.md, "Run a cluster"), on a topic replicated to up to three
 * of its nodes, which stays when the demo ends (a second run uses it again, and the group's offsets).
 */
import { CohortClient } from '../client/cohort-client';
import { CohortError, ErrorCode } from '../errors';
import type { ConsumerGroupDescription } from '../client/cohort-admin';
import { startServer } from '../server/start-server';
import { ClusterNarrator } from './cluster-narrator';
import { DemoChild } from './demo-child';
import type { DemoChildConfig, DemoChildEvent } from './demo-events';
import { demoSettingsOf, type DemoCluster, type DemoSettings, type DemoSwitches } from './demo-settings';

const TOPIC = 'demo-orders';
const GROUP_ID = 'demo-group';
const CONSUMERS = ['consumer-1', 'consumer-2', 'consumer-3'];
const POLL_MS = 200;
/** How often the lag is printed (it moves with every commit; more would drown the rest). */
const LAG_EVERY_MS = 1_000;
/** How often the producer's progress is printed. */
const PRODUCED_EVERY_MS = 2_000;

class DemoFailed extends Error {}

async function main(): Promise<number> {
  const parsed = demoSettingsOf(process.argv.slice(2));
  if ('help' in parsed) {
    process.stdout.write(parsed.help);
    return 0;
  }
  if ('error' in parsed) {
    process.stderr.write(`demo: ${parsed.error}\nRun with --help for the options.\n`);
    return 2;
  }
  return runDemo(parsed.settings, parsed.cluster, parsed.switches);
}

/** Most replicas of the demo topic on a cluster: one leader and two followers, as a cluster is run. */
const REPLICATION_FACTOR = 3;

async function runDemo(
  settings: DemoSettings,
  cluster: DemoCluster,
  switches: DemoSwitches,
): Promise<number> {
  const startedMs = Date.now();
  const say = (who: string, text: string): void => {
    const seconds = ((Date.now() - startedMs) / 1_000).toFixed(1).padStart(5);
    process.stdout.write(`[${seconds}s] ${who.padEnd(10)} ${text}\n`);
  };
  const sessionSeconds = settings.sessionTimeoutMs / 1_000;
  process.stdout.write(
    `cohort demo: ${cluster === null ? 'a server' : `the cluster at ${cluster.join(',')}`}, a producer and ` +
      `three consumers in group "${GROUP_ID}" on topic "${TOPIC}" (${settings.partitions} partitions); ` +
      `session timeout ${sessionSeconds}s\n\n`,
  );

  // Everything the demo starts, so every way out stops it.
  const children: DemoChild[] = [];
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  const fail = (message: string): void => {
    failure ??= new DemoFailed(message);
    wake?.();
  };
  const deadline = setTimeout(
    () => fail(`the demo did not finish within ${settings.timeoutMs / 1_000}s`),
    settings.timeoutMs,
  );
  const onSignal = (): void => fail('interrupted');
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  /** Resolves once `check` holds, polling; throws as soon as the demo has failed. */
  const until = async (check: () => boolean | Promise<boolean>): Promise<void> => {
    for (;;) {
      if (failure !== null) throw failure;
      if (await check()) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  };
  const pause = async (ms: number): Promise<void> => {
    const endMs = Date.now() + ms;
    await until(() => Date.now() >= endMs);
  };

  const server =
    cluster === null
      ? await startServer({
          // Long enough for the three consumers, told to start together, to join one generation.
          groupInitialRebalanceDelayMs: 1_000,
          groupMinSessionTimeoutMs: Math.min(settings.sessionTimeoutMs, 6_000),
          // The live page (docs/live-page.md) shows the same story as this output, as it happens.
          adminListen: '127.0.0.1:0',
        })
      : null;
  const bootstrap = server === null ? cluster! : [server.address];
  const client = new CohortClient({ bootstrap, clientId: 'demo' });
  const admin = client.admin({ requestTimeoutMs: 5_000 });
  // On a cluster: what its nodes, leaders and the group's coordinator do meanwhile (a node killed, say).
  const narrator =
    cluster === null
      ? null
      : new ClusterNarrator({
          bootstrap,
          topic: TOPIC,
          groupId: GROUP_ID,
          sessionTimeoutMs: settings.sessionTimeoutMs,
          say,
        });
  if (server !== null) {
    say('server', `listening on ${server.address}; data in ${server.dataDir} (removed at the end)`);
    say('server', `live page: ${server.adminUrl}/ (open it to watch the group and its lag)`);
  }

  try {
    let partitions = settings.partitions;
    if (server !== null) {
      const [created] = await admin.createTopics([{ name: TOPIC, numPartitions: partitions }]);
      if (created.error !== null) throw created.error;
      say('server', `created topic ${TOPIC} with ${partitions} partitions`);
    } else {
      const { brokers } = await admin.metadata();
      say(
        'cluster',
        `${brokers.length} live node${brokers.length === 1 ? '' : 's'}: ` +
          brokers
            .map((b) => `${b.nodeId} at ${b.host}:${b.port}`)
            .sort()
            .join(', '),
      );
      const replicationFactor = Math.min(REPLICATION_FACTOR, brokers.length);
      const [created] = await admin.createTopics([
        { name: TOPIC, numPartitions: partitions, replicationFactor },
      ]);
      if (created.error === null) {
        say(
          'cluster',
          `created topic ${TOPIC}: ${partitions} partitions, ${replicationFactor} replicas each`,
        );
      } else if (created.error.code === ErrorCode.TOPIC_ALREADY_EXISTS) {
        const [described] = await admin.describeTopics([TOPIC]);
        if (described.error !== null) throw described.error;
        partitions = described.partitions.length;
        say('cluster', `topic ${TOPIC} exists (an earlier run): ${partitions} partitions, used as it is`);
      } else {
        throw created.error;
      }
      narrator?.start();
    }

    const config = (name: string): DemoChildConfig => ({
      name,
      bootstrap,
      topic: TOPIC,
      groupId: GROUP_ID,
      sessionTimeoutMs: settings.sessionTimeoutMs,
      heartbeatIntervalMs: Math.max(100, Math.floor(settings.sessionTimeoutMs / 5)),
      recordsPerSecond: settings.recordsPerSecond,
    });
    const ready = new Set<string>();
    const joined = new Set<string>();
    let lastProducedReportMs = 0;
    const onEvent = (child: DemoChild, event: DemoChildEvent): void => {
      switch (event.event) {
        case 'ready':
          ready.add(child.name);
          break;
        case 'assigned': {
          const first = !joined.has(child.name);
          joined.add(child.name);
          const added = event.added.length > 0 && event.added.length < event.partitions.length;
          say(
            child.name,
            `${first ? 'joined' : 'assigned in'} generation ${event.generationId}${event.isLeader ? ' as leader' : ''}: ` +
              `owns ${TOPIC} [${event.partitions.join(', ')}]${added ? ` (new: ${event.added.join(', ')})` : ''}`,
          );
          break;
        }
        case 'revoked':
          if (event.partitions.length > 0) {
            say(child.name, `gives up [${event.partitions.join(', ')}] (${event.reason}), committing first`);
          }
          break;
        case 'lost':
          say(child.name, `lost [${event.partitions.join(', ')}] (${event.reason})`);
          break;
        case 'produced':
          narrator?.produced(event.total);
          if (Date.now() - lastProducedReportMs >= PRODUCED_EVERY_MS) {
            lastProducedReportMs = Date.now();
            say(child.name, `${event.total} records acknowledged (acks=-1)`);
          }
          break;
        case 'consumed':
          break;
        case 'failed':
          fail(`${child.name} failed: ${event.message}`);
          break;
      }
    };
    const onUnexpectedExit = (child: DemoChild, status: number | NodeJS.Signals): void =>
      fail(`${child.name} exited unexpectedly (${status})`);
    const start = (name: string, script: 'demo-consumer' | 'demo-producer'): DemoChild => {
      const child = new DemoChild(name, script, config(name), onEvent, onUnexpectedExit);
      children.push(child);
      return child;
    };

    say('demo', 'starting the producer and three consumers, each in a process of its own');
    const producer = start('producer', 'demo-producer');
    const consumers = CONSUMERS.map((name) => start(name, 'demo-consumer'));
    say('demo', `pids: ${children.map((c) => `${c.name} ${c.process.pid}`).join(', ')}`);
    await until(() => ready.size === children.length);
    say('demo', `the consumers join group ${GROUP_ID} together`);
    for (const consumer of consumers) consumer.tell('go');

    // The group and its lag, as an operator sees them (`cohort groups describe demo-group`).
    let group: ConsumerGroupDescription | null = null;
    let lastShape = '';
    let lastTotal: bigint | null = null;
    let lastLagMs = 0;
    // Null while a cluster's group cannot be described (its coordinator killed: the narrator tells it).
    const look = async (): Promise<ConsumerGroupDescription | null> => {
      let described: ConsumerGroupDescription;
      try {
        described = await admin.describeConsumerGroup(GROUP_ID);
      } catch (error) {
        if (cluster !== null && error instanceof CohortError && error.retriable) return null;
        throw error;
      }
      group = described;
      const owners = described.members
        .map((m) => `${m.clientId} [${(m.assignment ?? []).map((tp) => tp.partition).join(', ')}]`)
        .sort()
        .join('  ');
      const shape = `${described.state}, ${described.members.length} member${described.members.length === 1 ? '' : 's'}${described.state === 'Stable' ? `: ${owners}` : ''}`;
      if (shape !== lastShape && described.error === null) {
        lastShape = shape;
        say('group', shape);
      }
      const lags = described.partitions.filter((p) => p.lag !== null);
      if (lags.length > 0) {
        const total = lags.reduce((sum, p) => sum + (p.lag ?? 0n), 0n);
        const isDrained = total === 0n && lastTotal !== null && lastTotal !== 0n;
        if (isDrained || Date.now() - lastLagMs >= LAG_EVERY_MS) {
          lastTotal = total;
          lastLagMs = Date.now();
          say(
            'lag',
            `total ${total}  (partition:lag ${lags.map((p) => `${p.partition}:${p.lag}`).join(' ')})`,
          );
        }
      }
      return described;
    };
    const assignedTo = (described: ConsumerGroupDescription | null, members: number): boolean =>
      described !== null &&
      described.state === 'Stable' &&
      described.members.length === members &&
      described.members.reduce((n, m) => n + (m.assignment?.length ?? 0), 0) === partitions;

    await until(async () => assignedTo(await look(), 3));
    say('demo', `every partition has an owner; the group runs for ${settings.steadyMs / 1_000}s`);
    await pause(settings.steadyMs);
    await look();

    const victim = consumers[2];
    say(
      'demo',
      `stopping ${victim.name} with SIGKILL: it sends no LeaveGroup, so the coordinator notices only when ` +
        `its ${sessionSeconds}s session times out; meanwhile its partitions wait and their lag grows`,
    );
    const killedMs = Date.now();
    await victim.stop('SIGKILL');
    await until(async () => assignedTo(await look(), 2));
    say(
      'demo',
      `rebalanced after the session timeout: ${((Date.now() - killedMs) / 1_000).toFixed(1)}s after ${victim.name} ` +
        `stopped, its partitions moved to the two consumers left, from its last committed offsets`,
    );

    await pause(settings.afterRebalanceMs);
    say('demo', 'stopping the producer; the consumers drain what is left');
    await producer.stop('SIGTERM');
    await until(async () => {
      const described = await look();
      return (
        described !== null &&
        described.partitions.length === partitions &&
        described.partitions.every((p) => p.lag === 0n && p.highWatermark !== null && p.highWatermark > 0n)
      );
    });
    const records = (group as ConsumerGroupDescription | null)?.partitions.reduce(
      (sum, p) => sum + (p.highWatermark ?? 0n),
      0n,
    );
    say('lag', `back to 0 on every partition: all ${records} records consumed and committed`);
    say('demo', 'stopping the consumers (they commit and leave the group)');
    await Promise.all(consumers.slice(0, 2).map((c) => c.stop('SIGTERM')));
    say('demo', `done in ${((Date.now() - startedMs) / 1_000).toFixed(1)}s`);
    if (server !== null) {
      // A page left open must not end at "reconnecting…": the server stays while one is open, or when asked.
      const pages = server.openPages;
      if (switches.isServingKept || pages > 0) {
        clearTimeout(deadline);
        say(
          'server',
          `${pages > 0 ? `${pages === 1 ? 'a live page is' : `${pages} live pages are`} open` : '--keep-serving'}: ` +
            `the live page stays at ${server.adminUrl}/ until Ctrl-C`,
        );
        await new Promise<void>((resolve) => {
          wake = resolve;
          if (failure !== null) resolve();
        });
        wake = null;
      } else {
        say('server', 'stopping (no live page open; --keep-serving keeps it up until Ctrl-C)');
      }
    }
    return 0;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`demo: ${message}\n`);
    return 1;
  } finally {
    clearTimeout(deadline);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    await Promise.all(children.map((c) => c.stop('SIGTERM', 3_000)));
    await narrator?.stop();
    await client.close();
    await server?.close();
  }
}

main().then(
  (status) => {
    process.exitCode = status;
  },
  (error: unknown) => {
    process.stderr.write(
      `demo: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
