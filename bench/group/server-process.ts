import { join } from 'node:path';
import { startChild, type ChildHandle } from './child-rpc';
import type {
  CallCounts,
  CpuWindow,
  InProcessHeartbeat,
  GroupSummary,
  LoopProbe,
  ServerMemory,
} from './server-child';

export interface BenchServerOptions {
  /** group.initial.rebalance.delay.ms of the server (its formation waits this long once per group). */
  readonly initialDelayMs: number;
  /** Write a V8 CPU profile of the server to this directory when it exits (node --cpu-prof). */
  readonly cpuProfileDir?: string;
  /** The server's maxCallsPerLoopTurn; default the server's default. */
  readonly maxCallsPerLoopTurn?: number;
}

/** The parent's handle on bench/group/server-child.ts. */
export interface BenchServer {
  readonly target: string;
  readonly pid: number;
  counts(): Promise<CallCounts>;
  windowStart(): Promise<void>;
  windowStop(): Promise<CpuWindow>;
  loopStart(): Promise<void>;
  loopStop(): Promise<LoopProbe>;
  groupSummary(): Promise<GroupSummary>;
  memory(): Promise<ServerMemory>;
  inProcessHeartbeat(passes: number): Promise<InProcessHeartbeat>;
  stop(): Promise<void>;
}

export async function startBenchServer(options: BenchServerOptions): Promise<BenchServer> {
  const nodeFlags =
    options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`];
  const child: ChildHandle = startChild(join(__dirname, 'server-child.ts'), {
    nodeFlags,
    args: [
      `--initial-delay-ms=${options.initialDelayMs}`,
      ...(options.maxCallsPerLoopTurn === undefined
        ? []
        : [`--max-calls-per-loop-turn=${options.maxCallsPerLoopTurn}`]),
    ],
  });
  const port = await child.request<number>('port');
  return {
    target: `127.0.0.1:${port}`,
    pid: child.pid,
    counts: () => child.request('counts'),
    windowStart: () => child.request('windowStart'),
    windowStop: () => child.request('windowStop'),
    loopStart: () => child.request('loopStart'),
    loopStop: () => child.request('loopStop'),
    groupSummary: () => child.request('groupSummary'),
    memory: () => child.request('memory'),
    inProcessHeartbeat: (passes) => child.request('inProcessHeartbeat', { passes }),
    stop: () => child.stop(),
  };
}
