/**
 * The cohort server process: the only code that reads argv, the environment and signals.
 *
 * Exit status: 0 after a clean stop (SIGTERM/SIGINT), 2 for an invalid configuration (every problem is
 * printed), 1 if the server cannot start or fails unexpectedly. A second signal during shutdown exits at
 * once with 1.
 */
import pino from 'pino';
import { loadConfig } from './config';
import { createServer } from './server';

const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_BAD_CONFIG = 2;

async function main(): Promise<void> {
  const loaded = loadConfig(process.argv.slice(2), process.env);
  if ('help' in loaded) {
    process.stdout.write(loaded.help);
    process.exit(EXIT_OK);
  }
  if ('errors' in loaded) {
    process.stderr.write(
      `cohort: invalid configuration:\n${loaded.errors.map((e) => `  - ${e}\n`).join('')}` +
        'Run with --help to see every setting.\n',
    );
    process.exit(EXIT_BAD_CONFIG);
  }
  const { config, warnings } = loaded;

  // Synchronous writes: cohort logs little (start, stop, failures), and a line written just before
  // process.exit must neither be lost nor overtaken by a later one.
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

  const server = createServer(config, { logger });

  let isStopping = false;
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
  logger.info(
    {
      address: `${bound.host}:${bound.port}`,
      host: bound.host,
      port: bound.port,
      manualClock: config.manualClock,
      dataDir: config.dataDir,
    },
    'cohort listening',
  );
}

void main();
