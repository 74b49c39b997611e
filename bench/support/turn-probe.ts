import { performance } from 'node:perf_hooks';
import { mainThreadCpuUs } from './main-thread-cpu';

/**
 * A 1 ms timer chain on the event loop: the gap between two of its turns holds whatever ran in between,
 * so the longest gap is the longest loop turn (wall clock, which waiting for a CPU on a shared machine
 * lengthens), and the most main-thread CPU used between two turns is the longest task (which it does not).
 */
export class TurnProbe {
  longestMs = 0;
  longestCpuMs = 0;
  over100 = 0;
  private lastMs = 0;
  private lastCpuMs = 0;
  private timer: NodeJS.Timeout | undefined;

  start(): void {
    this.longestMs = 0;
    this.longestCpuMs = 0;
    this.over100 = 0;
    this.lastMs = performance.now();
    this.lastCpuMs = mainThreadCpuUs() / 1_000;
    this.timer = setTimeout(this.tick, 1);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.tick();
    clearTimeout(this.timer);
  }

  private readonly tick = (): void => {
    const nowMs = performance.now();
    const cpuMs = mainThreadCpuUs() / 1_000;
    const cpuGapMs = cpuMs - this.lastCpuMs;
    if (cpuGapMs > this.longestCpuMs || Number.isNaN(cpuGapMs)) this.longestCpuMs = cpuGapMs;
    this.lastCpuMs = cpuMs;
    const gapMs = nowMs - this.lastMs;
    if (gapMs > this.longestMs) this.longestMs = gapMs;
    if (gapMs > 100) this.over100++;
    this.lastMs = nowMs;
    this.timer = setTimeout(this.tick, 1);
  };
}
