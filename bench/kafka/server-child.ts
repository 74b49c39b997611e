/**
 * The server under test for bench:kafka, in its own process: a whole cohort server built as `npm start`
 * builds it (createConfig + createServer: the gRPC door, the Kafka door, the log, the coordinator, the
 * metrics observers), bound to free loopback ports, the admin listener off, on a data directory of its own
 * that it removes at exit. `--fsync=off` sets log.flush.interval.messages to the largest value and
 * log.flush.interval.ms to -1 (acknowledge from the page cache, as the throughput goal asks); without it the
 * flush policy is cohort's default (fsync before every acknowledgement). `--initial-delay-ms=N` sets
 * group.initial.rebalance.delay.ms. The server program's heap policy applies.
 *
 * The parent asks, over IPC, for CPU windows (process.cpuUsage of this process only: the load generator
 * runs elsewhere) and for the memory after full collections.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createConfig, type CohortConfig } from '../../src/config';
import { createServer } from '../../src/server';
import { serveParent } from '../group/child-rpc';
import { applyServerHeapPolicy } from '../group/server-heap-policy';
import { memoryAfterCollection } from '../support/gc-recorder';
import { argValue } from '../support/bench-args';
import { CpuWindowMeter } from './cpu-window';

export type { CpuWindow } from './cpu-window';

export interface ServerPorts {
  readonly grpcPort: number;
  readonly kafkaPort: number;
}

export interface ServerMemory {
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly externalBytes: number;
}

applyServerHeapPolicy();

const dataDir = mkdtempSync(join(tmpdir(), 'cohort-bench-kafka-'));
const isFsyncOff = argValue('fsync') === 'off';
const overrides: Partial<CohortConfig> = {
  listen: '127.0.0.1:0',
  kafkaListen: '127.0.0.1:0',
  adminListen: 'off',
  dataDir,
  logLevel: 'warn',
  groupInitialRebalanceDelayMs: Number(argValue('initial-delay-ms') ?? 3_000),
  ...(isFsyncOff ? { logFlushMessages: Number.MAX_SAFE_INTEGER, logFlushIntervalMs: -1 } : {}),
};
const logger = pino({ level: 'warn' }, pino.destination({ dest: 2, sync: true }));
const server = createServer(createConfig(overrides), { logger });

const ports: Promise<ServerPorts> = server.start().then(async ({ port }) => {
  await server.ready();
  const kafka = server.kafkaAddress;
  if (kafka === undefined) throw new Error('the Kafka listener is off');
  return { grpcPort: port, kafkaPort: kafka.port };
});

const meter = new CpuWindowMeter();

serveParent(
  {
    ports: () => ports,
    windowStart: () => meter.start(),
    windowStop: () => meter.stop(),
    memory: (): ServerMemory => memoryAfterCollection(),
  },
  async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  },
);
