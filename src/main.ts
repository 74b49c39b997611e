/**
 * The cohort server process: the only code that reads argv, the environment and signals.
 *
 * Exit status: 0 after a clean stop (SIGTERM/SIGINT), 2 for an invalid configuration (every problem is
 * printed, including unreadable token and TLS files), 1 if the server cannot start (a data directory of
 * another cluster or node among the reasons) or fails unexpectedly.
 * A second signal during shutdown exits at once with 1.
 *
 * Log lines a supervisor can wait for: `cohort listening` once the port is bound (with the real address and
 * the admin listener's), `cohort ready` once group state is loaded and everything serves, `cohort stopping`
 * and `cohort stopped`.
 */
import { getHeapStatistics } from 'node:v8';
import pino from 'pino';
import { ignoreIpServerNameWarning } from './client/ip-server-name-warning';
import type { CohortServer } from './server';
import { InvalidConfigError, loadConfig } from './config';
import { applyHeapGrowingPercent } from './heap-growth';
import { createServer } from './server';

const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_BAD_CONFIG = 2;

async function main(): Promise<void> {
  // A follower dials its leader's advertised address, often an IP address, over TLS.
  ignoreIpServerNameWarning();
  const loaded = loadConfig(process.argv.slice(2), process.env);
  if ('help' in loaded) {
    process.stdout.write(loaded.help);
    process.exit(EXIT_OK);
  }
  const exitBadConfig = (problems: readonly string[]): never => {
    process.stderr.write(
      `cohort: invalid configuration:\n${problems.map((e) => `  - ${e}\n`).join('')}` +
        'Run with --help to see every setting.\n',
    );
    process.exit(EXIT_BAD_CONFIG);
  };
  if ('errors' in loaded) exitBadConfig(loaded.errors);
  if (!('config' in loaded)) return;
  const { config, warnings } = loaded;

  // Synchronous writes: cohort logs little per second (start, stop, rebalances, expiries, failures; nothing
  // per heartbeat), and a line written just before process.exit must neither be lost nor overtaken.
  const logger = pino({ level: config.logLevel }, pino.destination({ dest: 1, sync: true }));
  for (const warning of warnings) logger.warn(warning);

  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception; exiting');
    process.exit(EXIT_FAILURE);
  });
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled promise rejection; exiting');
    process.exit(EXIT_FAILURE);
  });

  let server: CohortServer;
  let isStopping = false;
  // The server logged why at fatal (a data directory of another cluster than etcd's): stop, exit 1.
  const stopOnFatalError = (): void => {
    if (isStopping) return;
    isStopping = true;
    const exit = (): never => process.exit(EXIT_FAILURE);
    server.close().then(exit, exit);
  };
  try {
    server = createServer(config, { logger, onFatalError: stopOnFatalError });
  } catch (error) {
    // Token and TLS files are read here: their problems are configuration problems too.
    if (error instanceof InvalidConfigError) exitBadConfig(error.problems);
    throw error;
  }

  const stop = (signal: NodeJS.Signals): void => {
    if (isStopping) {
      logger.warn({ signal }, 'second signal; exiting without waiting for open calls');
      process.exit(EXIT_FAILURE);
    }
    isStopping = true;
    logger.info({ signal }, 'cohort stopping');
    server.close().then(
      () => {
        logger.info('cohort stopped');
        process.exit(EXIT_OK);
      },
      (error: unknown) => {
        logger.fatal({ err: error }, 'cohort failed to stop cleanly');
        process.exit(EXIT_FAILURE);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  let bound;
  try {
    bound = await server.start();
  } catch (error) {
    logger.fatal({ err: error, listen: config.listen }, 'cohort could not start');
    process.exit(EXIT_FAILURE);
  }
  const admin = server.adminAddress;
  logger.info(
    {
      address: bound.address,
      host: bound.host,
      port: bound.port,
      tls: config.tlsCert !== '',
      mutualTls: config.tlsClientCa !== '',
      token: config.token !== '' || config.tokenFile !== '',
      clusterSecret: config.clusterSecret !== '' || config.clusterSecretFile !== '',
      etcdTls: config.etcdEndpoints.some((endpoint) => endpoint.startsWith('https://')),
      etcdUser: config.etcdUsername === '' ? null : config.etcdUsername,
      adminAddress: admin === undefined ? null : `${admin.host}:${admin.port}`,
      kafkaAddress: server.kafkaAddress?.address ?? null,
      manualClock: config.manualClock,
      dataDir: config.dataDir,
    },
    'cohort listening',
  );
  try {
    await server.ready();
  } catch {
    // The server logged why (group state could not be loaded) or it is stopping; /readyz says so.
    return;
  }
  if (isStopping) return;
  // V8's heap policy for this process (heapGrowingPercent), from now on: it shortens the collection pauses
  // of large rebalances, and would only slow the start-up replay of group state, which allocates steadily
  // and serves no group call (docs/performance.md, G11).
  const isHeapGrowthCapped = applyHeapGrowingPercent(config.heapGrowingPercent, process.execArgv);
  const readyFields = {
    heapGrowingPercent: config.heapGrowingPercent,
    heapGrowingPercentApplied: isHeapGrowthCapped,
    heapSizeLimitBytes: getHeapStatistics().heap_size_limit,
  };
  // 'cohort ready' only when /readyz says so: a cluster node also waits to be registered in the cluster.
  // Until then, and whenever it stops being ready after, one line per change of reason.
  let wasReady = false;
  let lastReason: string | undefined;
  const noteReadiness = (): void => {
    if (isStopping) return;
    const reason = server.readinessProblem();
    if (reason === lastReason && (reason !== undefined || wasReady)) return;
    lastReason = reason;
    if (reason === undefined) {
      logger.info(readyFields, wasReady ? 'cohort ready again' : 'cohort ready');
      wasReady = true;
    } else if (wasReady) logger.warn({ reason }, 'cohort not ready');
    else logger.info({ reason }, 'cohort not ready yet');
  };
  server.onReadinessChange(noteReadiness);
  noteReadiness();
}

void main();
