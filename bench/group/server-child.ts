/**
 * The server under test for bench:group, in its own process (started by bench/group/server-process.ts).
 *
 * One grpc-js Server carries both sides of the heartbeat comparison: cohort.v1.GroupCoordinator, wired
 * exactly as createServer wires it (guardServiceDefinition + groupCoordinatorService over the real
 * GroupCoordinator on the system clock, and the default per-turn read budget), and the bench's cohort.bench.v1.Noop, through the same guard and
 * the same unaryHandler adapter, decoding the same HeartbeatRequest and answering a constant response.
 * Health and reflection, which createServer also adds, are left out: they cost nothing per call.
 *
 * The parent asks, over IPC, for CPU windows (process.cpuUsage of this process only), event-loop probes and
 * group summaries.
 */
import {
  monitorEventLoopDelay,
  performance,
  PerformanceObserver,
  type IntervalHistogram,
  type PerformanceEntry,
} from 'node:perf_hooks';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import pino from 'pino';
import { ErrorCode } from '../../src/errors';
import { DEFAULT_GROUP_CONFIG, GroupCoordinator, type GroupConfig } from '../../src/group';
import { heartbeatReply } from '../../src/group/group-responses';
import type { HeartbeatRequest, HeartbeatResponse, RequestContext } from '../../src/group/group-protocol';
import { DEFAULT_MAX_CALLS_PER_LOOP_TURN } from '../../src/config';
import { budgetServerAt, CallReadBudget } from '../../src/server/call-read-budget';
import { groupCoordinatorService } from '../../src/server/group-coordinator-service';
import { HeartbeatStreams } from '../../src/server/heartbeat-stream';
import { unaryHandler } from '../../src/server/unary-handler';
import { guardServiceDefinition } from '../../src/server/undecodable-request';
import { SYSTEM_TIME } from '../../src/time';
import { memoryAfterCollection } from '../support/gc-recorder';
import { serveParent } from './child-rpc';
import { applyServerHeapPolicy } from './server-heap-policy';
import { CountingCoordinator } from './counting-coordinator';
import { benchProtos, NOOP_PATH } from './wire';
import { mainThreadCpuUs } from '../support/main-thread-cpu';

export interface CpuWindow {
  readonly wallUs: number;
  readonly cpuUs: number;
  /** Event-loop utilisation in the window (1 = the loop never idled: the server was saturated). */
  readonly eventLoopUtilization: number;
  readonly heartbeatsOk: number;
  readonly heartbeatsOther: Record<string, number>;
  readonly noopCalls: number;
}

/** Calls served since the server started. */
export interface CallCounts {
  readonly heartbeatsOk: number;
  readonly heartbeatsOther: Record<string, number>;
  readonly noopCalls: number;
}

export interface LoopProbe {
  /**
   * The largest event-loop delay seen (monitorEventLoopDelay, 1 ms resolution), in wall-clock ms. On a
   * shared machine it also counts time the process waited for a CPU.
   */
  readonly maxDelayMs: number;
  /**
   * The most CPU the process used between two turns of a 1 ms timer chain: the longest task measured in
   * CPU time, which preemption by other processes does not inflate (it does include V8's helper threads).
   */
  readonly maxTaskCpuMs: number;
  /**
   * The same, counting only the main thread's CPU (Linux /proc/thread-self/schedstat; NaN elsewhere): the
   * time the event loop itself ran, without V8's helper threads (concurrent marking, compilation) that run
   * beside it on the other core.
   */
  readonly maxTaskLoopCpuMs: number;
  /**
   * The garbage-collection pauses inside that longest main-thread task (`gc` performance entries that
   * overlap it, in wall-clock ms): how much of it was V8 stopping the thread rather than code running.
   */
  readonly maxTaskLoopGcMs: number;
  /** [start, end] of that task in process.hrtime µs, to find it in a --cpu-prof profile. */
  readonly maxTaskAtUs: [number, number];
  readonly eventLoopUtilization: number;
  /** CPU the process used over the whole window, V8's helper threads included. */
  readonly cpuMs: number;
  /** The same, the main thread only (NaN where /proc/thread-self/schedstat is missing). */
  readonly mainThreadCpuMs: number;
  /** Server-side marks (performance.now() of this process), for the server's share of a rebalance. */
  readonly lastJoinReceivedMs: number;
  readonly lastJoinAnsweredMs: number;
  readonly lastSyncAnsweredMs: number;
}

export interface GroupSummary {
  readonly groups: number;
  readonly byState: Record<string, number>;
  readonly members: number;
}

/** coordinator.heartbeat called directly on decoded requests, without gRPC: the coordinator's own cost. */
export interface InProcessHeartbeat {
  readonly calls: number;
  readonly heartbeatNsPerCall: number;
  readonly noopNsPerCall: number;
}

export interface ServerMemory {
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly externalBytes: number;
  /** HeartbeatStreams open on the server. */
  readonly heartbeatStreams: number;
}

function argValue(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  return arg === undefined ? fallback : Number(arg.slice(name.length + 3));
}

applyServerHeapPolicy();

const config: GroupConfig = {
  ...DEFAULT_GROUP_CONFIG,
  groupInitialRebalanceDelayMs: argValue('initial-delay-ms', 1_000),
};
const logger = pino({ level: 'warn' });
const coordinator = new GroupCoordinator(config, SYSTEM_TIME, {
  onTimerError: (error) => logger.error({ err: error }, 'a group timer task failed'),
});
const counting = new CountingCoordinator(coordinator, heartbeatReply(ErrorCode.NONE));
const NOOP_REPLY: Promise<HeartbeatResponse> = Promise.resolve(Object.freeze({ errorCode: ErrorCode.NONE }));
let noopCalls = 0;
const noop = (_request: unknown, _context: RequestContext): Promise<HeartbeatResponse> => {
  noopCalls++;
  return NOOP_REPLY;
};

const protos = benchProtos();
const onEncodeFailure = (error: unknown, method: string): void =>
  logger.error({ err: error, method }, 'a response could not be encoded');
const server = new Server();
const readBudget = new CallReadBudget(argValue('max-calls-per-loop-turn', DEFAULT_MAX_CALLS_PER_LOOP_TURN));
// HeartbeatStream is served as createServer serves it: through the same adapter, ended by endAll at close.
const heartbeatStreams = new HeartbeatStreams();
server.addService(
  guardServiceDefinition(protos.groupCoordinator, onEncodeFailure),
  groupCoordinatorService(counting, logger, undefined, heartbeatStreams),
);
server.addService(guardServiceDefinition(protos.noop, onEncodeFailure), {
  Noop: unaryHandler(NOOP_PATH, logger, noop),
});

const port = new Promise<number>((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) =>
    error === null ? resolve(bound) : reject(error),
  ),
).then((bound) => {
  budgetServerAt(readBudget, { port: bound });
  return bound;
});

let window:
  { t0: number; cpu: NodeJS.CpuUsage; elu: ReturnType<typeof performance.eventLoopUtilization> } | undefined;
let windowCounts = { ok: 0, other: {} as Record<string, number>, noop: 0 };
let histogram: IntervalHistogram | undefined;
let probeElu: ReturnType<typeof performance.eventLoopUtilization> | undefined;
let probeCpuUs = 0;
let probeMainThreadCpuUs = 0;

/** A 1 ms timer chain that records the most CPU the process spent between two of its turns. */
class TaskCpuProbe {
  maxCpuMs = 0;
  maxLoopCpuMs = 0;
  /** The longest main-thread task's [start, end], in performance.now() ms (the clock of `gc` entries). */
  maxLoopAtMs: [number, number] = [0, 0];
  /** When the longest task ran, in process.hrtime µs (the clock of a --cpu-prof profile's timestamps). */
  maxAtUs: [number, number] = [0, 0];
  private lastCpuUs = 0;
  private lastLoopCpuUs = 0;
  private lastHrUs = 0;
  private lastNowMs = 0;
  private timer: NodeJS.Timeout | undefined;

  start(): void {
    this.maxCpuMs = 0;
    this.maxLoopCpuMs = 0;
    this.maxLoopAtMs = [0, 0];
    this.lastNowMs = performance.now();
    this.lastCpuUs = cpuUs();
    this.lastLoopCpuUs = mainThreadCpuUs();
    this.lastHrUs = hrUs();
    this.timer = setTimeout(this.tick, 1);
  }

  stop(): number {
    clearTimeout(this.timer);
    this.tick();
    clearTimeout(this.timer);
    return this.maxCpuMs;
  }

  private readonly tick = (): void => {
    const now = cpuUs();
    const nowLoop = mainThreadCpuUs();
    const nowHrUs = hrUs();
    const nowMs = performance.now();
    const loopGapMs = (nowLoop - this.lastLoopCpuUs) / 1_000;
    if (loopGapMs > this.maxLoopCpuMs || Number.isNaN(loopGapMs)) {
      this.maxLoopCpuMs = loopGapMs;
      this.maxLoopAtMs = [this.lastNowMs, nowMs];
    }
    this.lastLoopCpuUs = nowLoop;
    this.lastNowMs = nowMs;
    const gapMs = (now - this.lastCpuUs) / 1_000;
    if (gapMs > this.maxCpuMs) {
      this.maxCpuMs = gapMs;
      this.maxAtUs = [this.lastHrUs, nowHrUs];
    }
    this.lastCpuUs = now;
    this.lastHrUs = nowHrUs;
    this.timer = setTimeout(this.tick, 1);
  };
}

function hrUs(): number {
  return Number(process.hrtime.bigint() / 1_000n);
}

function cpuUs(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

const taskProbe = new TaskCpuProbe();

/** Garbage-collection pauses while the probe runs, to tell V8's share of a long task from the code's. */
const gcPauses: PerformanceEntry[] = [];
const gcObserver = new PerformanceObserver((list) => {
  gcPauses.push(...list.getEntries());
});

/** Wall-clock ms of GC pause inside [fromMs, toMs]. */
function gcPauseMsWithin([fromMs, toMs]: [number, number]): number {
  let total = 0;
  for (const pause of gcPauses) {
    const overlap = Math.min(toMs, pause.startTime + pause.duration) - Math.max(fromMs, pause.startTime);
    if (overlap > 0) total += overlap;
  }
  return total;
}

function diffCounts(now: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [code, count] of Object.entries(now)) {
    const delta = count - (before[code] ?? 0);
    if (delta > 0) out[code] = delta;
  }
  return out;
}

serveParent(
  {
    port: () => port,
    counts: (): CallCounts => {
      const counts = counting.counts();
      return { heartbeatsOk: counts.ok, heartbeatsOther: counts.other, noopCalls };
    },
    windowStart: () => {
      const counts = counting.counts();
      windowCounts = { ok: counts.ok, other: counts.other, noop: noopCalls };
      window = { t0: performance.now(), cpu: process.cpuUsage(), elu: performance.eventLoopUtilization() };
    },
    windowStop: (): CpuWindow => {
      if (window === undefined) throw new Error('windowStop without windowStart');
      const cpu = process.cpuUsage(window.cpu);
      const wallUs = (performance.now() - window.t0) * 1_000;
      const elu = performance.eventLoopUtilization(window.elu).utilization;
      const counts = counting.counts();
      window = undefined;
      return {
        wallUs,
        cpuUs: cpu.user + cpu.system,
        eventLoopUtilization: elu,
        heartbeatsOk: counts.ok - windowCounts.ok,
        heartbeatsOther: diffCounts(counts.other, windowCounts.other),
        noopCalls: noopCalls - windowCounts.noop,
      };
    },
    loopStart: () => {
      histogram = monitorEventLoopDelay({ resolution: 1 });
      histogram.enable();
      probeElu = performance.eventLoopUtilization();
      gcPauses.length = 0;
      gcObserver.observe({ entryTypes: ['gc'] });
      probeCpuUs = cpuUs();
      probeMainThreadCpuUs = mainThreadCpuUs();
      taskProbe.start();
    },
    loopStop: (): LoopProbe => {
      if (histogram === undefined || probeElu === undefined) throw new Error('loopStop without loopStart');
      histogram.disable();
      const maxTaskCpuMs = taskProbe.stop();
      gcPauses.push(...gcObserver.takeRecords());
      gcObserver.disconnect();
      const result: LoopProbe = {
        maxDelayMs: histogram.max / 1e6,
        maxTaskCpuMs,
        maxTaskLoopCpuMs: taskProbe.maxLoopCpuMs,
        maxTaskLoopGcMs: gcPauseMsWithin(taskProbe.maxLoopAtMs),
        maxTaskAtUs: taskProbe.maxAtUs,
        eventLoopUtilization: performance.eventLoopUtilization(probeElu).utilization,
        cpuMs: (cpuUs() - probeCpuUs) / 1_000,
        mainThreadCpuMs: (mainThreadCpuUs() - probeMainThreadCpuUs) / 1_000,
        ...counting.marks,
      };
      histogram = undefined;
      return result;
    },
    groupSummary: async (): Promise<GroupSummary> => {
      const context: RequestContext = { clientHost: 'bench' };
      const listed = await coordinator.listGroups({ statesFilter: [] }, context);
      const byState: Record<string, number> = {};
      for (const group of listed.groups) byState[group.groupState] = (byState[group.groupState] ?? 0) + 1;
      const described = await coordinator.describeGroups(
        { groups: listed.groups.map((g) => g.groupId) },
        context,
      );
      let members = 0;
      for (const group of described.groups) members += group.members.length;
      return { groups: listed.groups.length, byState, members };
    },
    inProcessHeartbeat: async (payload: { passes: number }): Promise<InProcessHeartbeat> => {
      const context: RequestContext = { clientHost: 'bench' };
      const listed = await coordinator.listGroups({ statesFilter: ['Stable'] }, context);
      const described = await coordinator.describeGroups(
        { groups: listed.groups.map((g) => g.groupId) },
        context,
      );
      const requests: HeartbeatRequest[] = [];
      for (const group of described.groups) {
        for (const member of group.members) {
          // Formed groups are at generation 1 (bench/group/group-driver.ts formGroup).
          requests.push({
            groupId: group.groupId,
            generationId: 1,
            memberId: member.memberId,
            groupInstanceId: '',
          });
        }
      }
      const ok = heartbeatReply(ErrorCode.NONE);
      const time = (
        handle: (request: HeartbeatRequest, ctx: RequestContext) => Promise<HeartbeatResponse>,
      ) => {
        let failures = 0;
        const t0 = process.hrtime.bigint();
        for (let pass = 0; pass < payload.passes; pass++) {
          for (let i = 0; i < requests.length; i++) if (handle(requests[i], context) !== ok) failures++;
        }
        const ns = Number(process.hrtime.bigint() - t0);
        if (failures > 0) throw new Error(`${failures} in-process heartbeats were not answered NONE`);
        return ns / (payload.passes * requests.length);
      };
      const heartbeat = (request: HeartbeatRequest, ctx: RequestContext) =>
        coordinator.heartbeat(request, ctx);
      const baseline = (_request: HeartbeatRequest, _ctx: RequestContext) => ok;
      time(heartbeat); // warm-up
      time(baseline);
      return {
        calls: payload.passes * requests.length,
        heartbeatNsPerCall: time(heartbeat),
        noopNsPerCall: time(baseline),
      };
    },
    memory: (): ServerMemory => ({ ...memoryAfterCollection(), heartbeatStreams: heartbeatStreams.size }),
  },
  () =>
    new Promise<void>((resolve) => {
      coordinator.shutdown();
      heartbeatStreams.endAll();
      server.tryShutdown(() => resolve());
      // Clients the parent forgot to close must not hold the exit (and the CPU profile) forever.
      setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 2_000).unref();
    }),
);
