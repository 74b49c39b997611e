/**
 * The server under test for bench:group's create-topics section, in its own process (started by
 * bench/group/create-topics.ts): a whole cohort server built by createServer, as main.ts builds it (group
 * coordinator on the durable store, broker, default per-turn read budget), on 127.0.0.1:0 with a data
 * directory of its own, removed when it exits.
 *
 * The parent asks, over IPC, for its port, for a probe of the event loop over a window, and for the
 * session expirations the coordinator has counted (cohort_session_expirations_total).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import pino from 'pino';
import { createConfig } from '../../src/config';
import { createServer } from '../../src/server';
import { serveParent } from './child-rpc';
import { TurnProbe } from '../support/turn-probe';

export interface CreateTopicsLoopProbe {
  /** The longest gap between two turns of a 1 ms timer chain, in wall-clock ms: the longest loop turn. */
  readonly longestTurnMs: number;
  /** The largest event-loop delay monitorEventLoopDelay saw (1 ms resolution), in ms. */
  readonly maxDelayMs: number;
  /** Gaps of the timer chain longer than 100 ms. */
  readonly turnsOver100Ms: number;
  /**
   * The most CPU the main thread used between two turns of that chain (Linux /proc/thread-self/schedstat;
   * NaN elsewhere): the longest task, which waiting for a CPU on a shared machine does not lengthen.
   */
  readonly longestTaskCpuMs: number;
}

function argValue(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  return arg === undefined ? fallback : Number(arg.slice(name.length + 3));
}

const dataDir = mkdtempSync(join(tmpdir(), 'cohort-bench-create-'));
const config = createConfig({
  listen: '127.0.0.1:0',
  dataDir,
  logLevel: 'warn',
  groupInitialRebalanceDelayMs: argValue('initial-delay-ms', 1_000),
});
const server = createServer(config, { logger: pino({ level: 'warn' }) });
const bound = server.start().then(async (address) => {
  await server.ready();
  return address.port;
});

const probe = new TurnProbe();
let histogram: IntervalHistogram | undefined;

async function expirations(): Promise<number> {
  const metric = server.metrics.registry.getSingleMetric('cohort_session_expirations_total');
  const value = await metric?.get();
  return value?.values[0]?.value ?? 0;
}

serveParent(
  {
    port: () => bound,
    expirations,
    loopStart: () => {
      histogram = monitorEventLoopDelay({ resolution: 1 });
      histogram.enable();
      probe.start();
    },
    loopStop: (): CreateTopicsLoopProbe => {
      probe.stop();
      histogram?.disable();
      const result = {
        longestTurnMs: probe.longestMs,
        maxDelayMs: (histogram?.max ?? 0) / 1e6,
        turnsOver100Ms: probe.over100,
        longestTaskCpuMs: probe.longestCpuMs,
      };
      histogram = undefined;
      return result;
    },
  },
  async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  },
);
