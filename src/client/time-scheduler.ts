import type { Time } from '../time';
import type { ScheduledTask, Scheduler } from './scheduler';

/**
 * A `Scheduler` on a `Time`. On a clock that moves by hand (`Time.onAdvance`, e.g. `ManualTime`) tasks run
 * synchronously inside `advance`, in deadline order (ties in the order scheduled), and a task scheduled by a
 * running task runs in the same `advance` if it is already due; nothing touches the event loop. On a real
 * clock each task is one `setTimeout`.
 *
 * The client keeps only a handful of tasks per member (heartbeat, session, stall guard, a backoff or a
 * deadline), so a sorted array is the right structure here; the server's timing wheel is for millions.
 */
export class TimeScheduler implements Scheduler {
  private readonly time: Time;
  private readonly manual: ManualQueue | null;
  private readonly handles = new Set<SystemTask>();

  constructor(time: Time) {
    this.time = time;
    this.manual = time.onAdvance ? new ManualQueue(time) : null;
  }

  schedule(delayMs: number, task: () => void): ScheduledTask {
    if (!(delayMs >= 0)) throw new RangeError(`delayMs must be >= 0, got ${delayMs}`);
    if (this.manual !== null) return this.manual.add(this.time.monotonicMs() + Math.ceil(delayMs), task);
    const handle = new SystemTask(task, this.handles);
    handle.arm(delayMs);
    return handle;
  }

  /** Tasks not yet run or cancelled. */
  get size(): number {
    return this.manual !== null ? this.manual.size : this.handles.size;
  }

  /** Cancels every pending task and stops listening to the clock. */
  shutdown(): void {
    if (this.manual !== null) this.manual.shutdown();
    for (const handle of [...this.handles]) handle.cancel();
  }
}

class SystemTask implements ScheduledTask {
  private timeout: NodeJS.Timeout | null = null;

  constructor(
    private readonly task: () => void,
    private readonly handles: Set<SystemTask>,
  ) {}

  arm(delayMs: number): void {
    this.handles.add(this);
    // Node runs a 0 ms timeout on a later turn, never synchronously: the contract holds.
    this.timeout = setTimeout(() => {
      this.timeout = null;
      this.handles.delete(this);
      this.task();
    }, delayMs);
  }

  cancel(): void {
    if (this.timeout === null) return;
    clearTimeout(this.timeout);
    this.timeout = null;
    this.handles.delete(this);
  }

  get isPending(): boolean {
    return this.timeout !== null;
  }
}

class ManualTask implements ScheduledTask {
  queue: ManualQueue | null;

  constructor(
    readonly dueMs: number,
    readonly seq: number,
    readonly task: () => void,
    queue: ManualQueue,
  ) {
    this.queue = queue;
  }

  cancel(): void {
    this.queue?.remove(this);
  }

  get isPending(): boolean {
    return this.queue !== null;
  }
}

class ManualQueue {
  private readonly tasks: ManualTask[] = [];
  private seq = 0;
  private readonly unsubscribe: () => void;
  private running = false;

  constructor(private readonly time: Time) {
    this.unsubscribe = (time.onAdvance as NonNullable<Time['onAdvance']>)(() => this.runDue());
  }

  get size(): number {
    return this.tasks.length;
  }

  add(dueMs: number, task: () => void): ManualTask {
    const entry = new ManualTask(dueMs, this.seq++, task, this);
    let i = this.tasks.length;
    while (i > 0 && this.tasks[i - 1].dueMs > dueMs) i--;
    this.tasks.splice(i, 0, entry);
    return entry;
  }

  remove(entry: ManualTask): void {
    const i = this.tasks.indexOf(entry);
    if (i !== -1) this.tasks.splice(i, 1);
    entry.queue = null;
  }

  private runDue(): void {
    if (this.running) return; // a task that advances the clock: the outer loop picks up what became due
    this.running = true;
    try {
      while (this.tasks.length > 0 && this.tasks[0].dueMs <= this.time.monotonicMs()) {
        const entry = this.tasks.shift() as ManualTask;
        entry.queue = null;
        entry.task();
      }
    } finally {
      this.running = false;
    }
  }

  shutdown(): void {
    for (const entry of this.tasks) entry.queue = null;
    this.tasks.length = 0;
    this.unsubscribe();
  }
}
