import { performance } from 'node:perf_hooks';
import { GcRecorder } from '../support/gc-recorder';

/** What a bench:kafka server child measured of itself between windowStart and windowStop. */
export interface CpuWindow {
  readonly wallUs: number;
  readonly cpuUs: number;
  /** The part of cpuUs spent in the kernel (socket and file copies, page faults). */
  readonly systemUs: number;
  /** Event-loop utilisation in the window (1 = the loop never idled: the server was saturated). */
  readonly eventLoopUtilization: number;
  /** Minor page faults in the window: memory the kernel had to map (first touches included). */
  readonly minorFaults: number;
  /** Time V8's collections paused the loop in the window (a share of cpuUs). */
  readonly gcPauseUs: number;
}

/**
 * Measures one window at a time of the process it runs in: CPU (process.cpuUsage: the load generator runs
 * elsewhere), event-loop utilisation, minor faults and collections. Both the cohort server child and the
 * floors use it, so their figures are taken alike.
 */
export class CpuWindowMeter {
  private readonly collections = new GcRecorder();
  private started:
    | {
        readonly t0: number;
        readonly cpu: NodeJS.CpuUsage;
        readonly elu: ReturnType<typeof performance.eventLoopUtilization>;
        readonly minorFaults: number;
      }
    | undefined;

  constructor() {
    this.collections.start();
  }

  start(): void {
    this.collections.clear();
    this.started = {
      t0: performance.now(),
      cpu: process.cpuUsage(),
      elu: performance.eventLoopUtilization(),
      minorFaults: process.resourceUsage().minorPageFault,
    };
  }

  async stop(): Promise<CpuWindow> {
    const started = this.started;
    if (started === undefined) throw new Error('windowStop without windowStart');
    const t1 = performance.now();
    const cpu = process.cpuUsage(started.cpu);
    const elu = performance.eventLoopUtilization(started.elu).utilization;
    const minorFaults = process.resourceUsage().minorPageFault - started.minorFaults;
    // Collection entries arrive after a turn of the loop.
    await this.collections.settle();
    return {
      wallUs: (t1 - started.t0) * 1_000,
      cpuUs: cpu.user + cpu.system,
      systemUs: cpu.system,
      eventLoopUtilization: elu,
      minorFaults,
      gcPauseUs: this.collections.between(started.t0, t1).pauseMs * 1_000,
    };
  }
}
