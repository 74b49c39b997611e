import { join } from 'node:path';
import { startChild } from '../group/child-rpc';
import type { CpuWindow, ServerMemory, ServerPorts } from './server-child';

export interface KafkaBenchServerOptions {
  /** Acknowledge produced records from the page cache (no fsync). Default: cohort's flush policy. */
  readonly isFsyncOff?: boolean;
  /** group.initial.rebalance.delay.ms. */
  readonly initialDelayMs?: number;
  /** Write a V8 CPU profile of the server to this directory when it exits (node --cpu-prof). */
  readonly cpuProfileDir?: string;
}

/** The parent's handle on bench/kafka/server-child.ts: a whole cohort server in a process of its own. */
export interface KafkaBenchServer {
  readonly pid: number;
  /** `127.0.0.1:PORT` of the gRPC door. */
  readonly grpcTarget: string;
  readonly kafkaPort: number;
  windowStart(): Promise<void>;
  windowStop(): Promise<CpuWindow>;
  memory(): Promise<ServerMemory>;
  stop(): Promise<void>;
}

export async function startKafkaBenchServer(
  options: KafkaBenchServerOptions = {},
): Promise<KafkaBenchServer> {
  const child = startChild(join(__dirname, 'server-child.ts'), {
    nodeFlags:
      options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`],
    args: [
      ...(options.isFsyncOff === true ? ['--fsync=off'] : []),
      ...(options.initialDelayMs === undefined ? [] : [`--initial-delay-ms=${options.initialDelayMs}`]),
    ],
  });
  const ports = await child.request<ServerPorts>('ports');
  return {
    pid: child.pid,
    grpcTarget: `127.0.0.1:${ports.grpcPort}`,
    kafkaPort: ports.kafkaPort,
    windowStart: () => child.request('windowStart'),
    windowStop: () => child.request('windowStop'),
    memory: () => child.request('memory'),
    stop: () => child.stop(),
  };
}
