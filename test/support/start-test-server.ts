import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CohortConfig } from '../../src/config';
import { createConfig } from '../../src/config';
import type { CohortServer, CoordinatorFactory } from '../../src/server';
import { createServer } from '../../src/server';
import type { Time } from '../../src/time';
import type { LogLine } from './capture-logger';
import { captureLogger } from './capture-logger';
import type { GroupCoordinatorClient, TestClockClient } from './grpc-clients';
import { groupCoordinatorClient, testClockClient } from './grpc-clients';

export interface TestServerOptions {
  /** Default: the real GroupCoordinator. */
  readonly coordinatorFactory?: CoordinatorFactory;
  readonly time?: Time;
  readonly shutdownGraceMs?: number;
  /** Default: the real clock. */
  readonly metricsStopwatch?: () => number;
}

export interface TestServer {
  readonly server: CohortServer;
  /** `127.0.0.1:<port>`, for grpc-js clients. */
  readonly target: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>` of the admin listener, when `adminListen` asked for one. */
  readonly adminUrl: string | undefined;
  /** `127.0.0.1:<port>` of the Kafka listener (a free port unless `kafkaListen` says otherwise). */
  readonly kafkaAddress: string | undefined;
  /** Everything the server logged, parsed (nothing reaches stdout). */
  readonly logs: LogLine[];
  /** A new client on its own channel; closed by `close()`. */
  groupCoordinator(): GroupCoordinatorClient;
  /** Works only with `{ manualClock: true }`; otherwise its calls get UNIMPLEMENTED. */
  testClock(): TestClockClient;
  /** Closes every client this helper made, then the server. Call it in afterEach. */
  close(): Promise<void>;
}

/**
 * A real cohort server on 127.0.0.1, port 0, built exactly as main.ts builds it, with `overrides`
 * applied to the defaults (e.g. `{ manualClock: true, groupInitialRebalanceDelayMs: 0 }`), returned once
 * it is ready (bound, group state loaded). No admin listener unless `adminListen` asks for one
 * (`'127.0.0.1:0'`).
 *
 *   const t = await startTestServer({ manualClock: true });
 *   const member = t.groupCoordinator();
 *   const clock = t.testClock();
 *   ...
 *   await t.close();
 */
export async function startTestServer(
  overrides: Partial<CohortConfig> = {},
  options: TestServerOptions = {},
): Promise<TestServer> {
  // Each server keeps its durable state (group offsets and metadata, topics) in a directory of its own,
  // removed by close(), unless the test names one: nothing may leak between tests or runs.
  const ownDataDir =
    overrides.dataDir === undefined ? mkdtempSync(join(tmpdir(), 'cohort-test-')) : undefined;
  const config = createConfig({
    ...overrides,
    dataDir: overrides.dataDir ?? ownDataDir,
    listen: '127.0.0.1:0',
    // Tests run side by side: Kafka's default port (9092) would let only one server start.
    kafkaListen: overrides.kafkaListen ?? '127.0.0.1:0',
  });
  const removeOwnDataDir = (): void => {
    if (ownDataDir !== undefined) rmSync(ownDataDir, { recursive: true, force: true });
  };
  const { logger, lines } = captureLogger(config.logLevel);
  const server = createServer(config, {
    logger,
    ...(options.coordinatorFactory !== undefined ? { coordinatorFactory: options.coordinatorFactory } : {}),
    ...(options.time !== undefined ? { time: options.time } : {}),
    ...(options.shutdownGraceMs !== undefined ? { shutdownGraceMs: options.shutdownGraceMs } : {}),
    ...(options.metricsStopwatch !== undefined ? { metricsStopwatch: options.metricsStopwatch } : {}),
  });
  let port: number;
  try {
    ({ port } = await server.start());
    await server.ready();
  } catch (error) {
    await server.close();
    removeOwnDataDir();
    throw error;
  }
  const target = `127.0.0.1:${port}`;
  const clients: { close(): void }[] = [];
  const track = <C extends { close(): void }>(client: C): C => {
    clients.push(client);
    return client;
  };
  return {
    server,
    target,
    port,
    adminUrl: server.adminAddress?.url,
    kafkaAddress: server.kafkaAddress?.address,
    logs: lines,
    groupCoordinator: () => track(groupCoordinatorClient(target)),
    testClock: () => track(testClockClient(target)),
    close: async () => {
      for (const client of clients.splice(0)) client.close();
      await server.close();
      removeOwnDataDir();
    },
  };
}
