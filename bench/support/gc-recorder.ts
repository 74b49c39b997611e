import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

export interface GcFigures {
  count: number;
  pauseMs: number;
  maxPauseMs: number;
}

/** Runs a full collection; benches are started with --expose-gc so heap figures compare live data only. */
export function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) {
    throw new Error('global.gc is missing: run the bench with node --expose-gc (see package.json)');
  }
  // Twice: the first pass may leave objects whose finalizers free more on the second.
  gc();
  gc();
}

/** The process's memory after full collections: what a bench server reports between two readings. */
export function memoryAfterCollection(): { rssBytes: number; heapUsedBytes: number; externalBytes: number } {
  collectGarbage();
  const usage = process.memoryUsage();
  return { rssBytes: usage.rss, heapUsedBytes: usage.heapUsed, externalBytes: usage.external };
}

/**
 * Records V8 garbage collections ('gc' performance entries) so a bench can ask how many happened inside a
 * window and how long they paused the loop. Entries are delivered asynchronously, so ask only after the
 * event loop has had a turn since the window closed (`settle`).
 */
export class GcRecorder {
  private readonly entries: PerformanceEntry[] = [];
  private readonly observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) this.entries.push(entry);
  });

  start(): void {
    this.observer.observe({ entryTypes: ['gc'] });
  }

  stop(): void {
    this.observer.disconnect();
  }

  /** Lets pending entries be delivered. */
  async settle(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setTimeout(resolve, 1));
  }

  /** Collections that started in [fromMs, toMs] on the performance.now() clock. */
  between(fromMs: number, toMs: number): GcFigures {
    let count = 0;
    let pauseMs = 0;
    let maxPauseMs = 0;
    for (const entry of this.entries) {
      if (entry.startTime < fromMs || entry.startTime > toMs) continue;
      count++;
      pauseMs += entry.duration;
      if (entry.duration > maxPauseMs) maxPauseMs = entry.duration;
    }
    return { count, pauseMs, maxPauseMs };
  }

  /** Forgets recorded entries (they would otherwise accumulate over a long run). */
  clear(): void {
    this.entries.length = 0;
  }
}
