import { SYSTEM_TIME, type Time } from '../time';
import { BucketQueue } from './bucket-queue';
import type { Timer } from './timer';
import type { TimerTask } from './timer-task';
import { TimerTaskList, type TaskCounter } from './timer-task-list';
import { TimingWheel } from './timing-wheel';

export const DEFAULT_TICK_MS = 1;
export const DEFAULT_WHEEL_SIZE = 20;
/** Node's setTimeout wraps delays above 2^31 - 1 ms to 1 ms; longer waits are taken in steps. */
const MAX_TIMEOUT_MS = 2_147_483_647;
/** The longest delay a task may have (about 285 years): keeps deadlines exact integers. */
export const MAX_DELAY_MS = 2 ** 53 / 1_000_000;

/**
 * Tasks added without a clock read whose deadlines are fixed together: one read per batch, and a task's
 * deadline is late by at most the time the batch took to fill.
 */
const FIX_BATCH = 64;
/** Settled once; `then` on it runs a callback at the end of the current synchronous run. */
const END_OF_RUN = Promise.resolve();

function checkDelay(timerName: string, delayMs: number): void {
  // NaN and Infinity have no place on a wheel (Infinity would grow overflow wheels without end).
  if (!(delayMs <= MAX_DELAY_MS)) {
    throw new RangeError(`${timerName}: task delay must be a number <= ${MAX_DELAY_MS} ms, got ${delayMs}`);
  }
}

export interface SystemTimerOptions {
  /** For messages only. */
  name?: string;
  time?: Time;
  tickMs?: number;
  wheelSize?: number;
  /**
   * Called when a task's `run` throws; the remaining due tasks still run. Without it the first error is
   * rethrown once the batch is done, so a broken invariant is never silent.
   */
  onTaskError?: (error: unknown, task: TimerTask) => void;
}

/**
 * The timer cohort runs on: a hierarchical TimingWheel whose buckets are ordered by a BucketQueue, driven
 * by ONE event-loop timeout armed for the earliest bucket (re-armed only when an earlier bucket appears)
 * and unref'd so pending tasks never keep the process alive. With a clock that moves by hand
 * (`Time.onAdvance`), no timeout is used: tasks run synchronously inside the clock's `advance`.
 *
 * Running due tasks happens in two phases: buckets that are due are popped and flushed, their tasks
 * either cascading into finer wheels or moving to the `due` list; then the due list is drained in order.
 * A running task may add, re-arm or cancel any task, itself included: cancelling a task on the due list
 * takes it off the list, so a cancelled task never runs; a task added already due joins the list and
 * runs in the same pass.
 */
export class SystemTimer implements Timer {
  readonly name: string;
  readonly tickMs: number;
  private readonly time: Time;
  private readonly counter: TaskCounter = { value: 0 };
  private readonly queue = new BucketQueue();
  private readonly wheel: TimingWheel;
  private readonly due: TimerTaskList;
  private readonly onTaskError: ((error: unknown, task: TimerTask) => void) | undefined;
  private readonly reinsert = (task: TimerTask): void => this.place(task);
  private readonly onAlarm = (): void => {
    this.alarm = null;
    this.alarmAtMs = Infinity;
    try {
      this.advanceClock();
    } finally {
      // A task that threw must not leave the timer without a wake-up for the rest.
      if (!this.isShutdown) this.arm(this.readClock());
    }
  };
  private alarm: NodeJS.Timeout | null = null;
  private alarmAtMs = Infinity;
  private unsubscribe: (() => void) | null = null;
  private unsubscribeJump: (() => void) | null = null;
  private draining = false;
  private isShutdown = false;
  /** The last clock read: now is never below it. */
  private clockLowerBoundMs: number;
  /**
   * Tasks whose exact deadline is still to be fixed, each once (see `defer`): the first `deferredCount`
   * slots. A fixed-size array, emptied by clearing slots: `length = 0` would free its backing store and
   * make every batch grow a new one (measured: two scavenges per 2M re-arms).
   */
  private readonly deferred: (TimerTask | null)[] = new Array<TimerTask | null>(FIX_BATCH).fill(null);
  private deferredCount = 0;
  private isFixScheduled = false;
  private readonly defersReads: boolean;
  private readonly onEndOfRun = (): void => {
    this.isFixScheduled = false;
    this.fixDeferredDeadlines();
  };

  constructor(options: SystemTimerOptions = {}) {
    const tickMs = options.tickMs ?? DEFAULT_TICK_MS;
    const wheelSize = options.wheelSize ?? DEFAULT_WHEEL_SIZE;
    if (!Number.isSafeInteger(tickMs) || tickMs < 1)
      throw new RangeError(`tickMs must be an integer >= 1, got ${tickMs}`);
    if (!Number.isSafeInteger(wheelSize) || wheelSize < 2) {
      throw new RangeError(`wheelSize must be an integer >= 2, got ${wheelSize}`);
    }
    this.name = options.name ?? 'timer';
    this.tickMs = tickMs;
    this.time = options.time ?? SYSTEM_TIME;
    this.onTaskError = options.onTaskError;
    // Not on a clock that jumps (by hand, or running but advanced): see `add`.
    this.defersReads = this.time.onAdvance === undefined && this.time.onJump === undefined;
    this.clockLowerBoundMs = this.time.monotonicMs();
    this.wheel = new TimingWheel(tickMs, wheelSize, this.clockLowerBoundMs, this.counter, this.queue);
    this.due = new TimerTaskList(this.counter);
    if (this.time.onAdvance) this.unsubscribe = this.time.onAdvance(() => this.advanceClock());
    // A running clock that can jump: the alarm keeps following its readings, and a jump runs at once
    // whatever it made due (then re-arms for the rest), so no task waits out a timeout set before the jump.
    else if (this.time.onJump) this.unsubscribeJump = this.time.onJump(() => this.advanceClock());
  }

  get size(): number {
    return this.counter.value;
  }

  add(task: TimerTask): void {
    if (this.isShutdown) throw new Error(`${this.name}: add after shutdown`);
    const delayMs = task.delayMs;
    checkDelay(this.name, delayMs);
    // Adding without reading the clock, which costs more than the rest of an add. The last clock read is
    // a lower bound of now, so (last read + delay) is a lower bound of the deadline, and a bucket due by
    // it is due by the real deadline too: a flush re-places every task by its own expiration. The exact
    // deadline is fixed from a clock read taken after the add, once per batch of FIX_BATCH tasks, at the
    // end of the synchronous run, or before the next flush, whichever is first. A task is never early, and
    // is late by at most the time until that read (a few microseconds, or the rest of the run: event-loop
    // lag). A re-armed pending task (a heartbeat's case) stays in its bucket when the bucket allows it;
    // a new task goes to the bucket of its lower bound. Due tasks and the due list take the exact path.
    // Not with a clock moved by hand: reading it is free, and it jumps inside a run, so a read taken after
    // the jump would postpone the deadline by the jump.
    const list = task.timerList;
    if (delayMs > 0 && this.defersReads) {
      const lowerBoundMs = this.deadlineMs(this.clockLowerBoundMs, delayMs);
      if (list === null) {
        task.expirationMs = lowerBoundMs;
        if (this.queue.peekExpirationMs() > this.clockLowerBoundMs)
          this.wheel.advanceClock(this.clockLowerBoundMs);
        // Never due: the wheel's clock is at most the last read, and the bound is at least a tick past it.
        if (this.wheel.add(task)) {
          this.defer(task, lowerBoundMs);
          return;
        }
      } else if (list !== this.due && list.expirationMs <= lowerBoundMs) {
        this.defer(task, lowerBoundMs);
        return;
      }
    }
    const nowMs = this.readClock();
    const expirationMs = this.deadlineMs(nowMs, delayMs);
    task.expirationMs = expirationMs;
    if (list !== null && list !== this.due && list.expirationMs <= expirationMs) return;
    // The wheel's clock only moves when a bucket expires. When nothing is due, it is safe to bring it to
    // now, so the task lands in the finest wheel that fits instead of a coarse bucket that would cascade.
    if (this.queue.peekExpirationMs() > nowMs) this.wheel.advanceClock(nowMs);
    if (this.wheel.add(task)) {
      if (this.queue.peekExpirationMs() < this.alarmAtMs) this.arm(nowMs);
    } else {
      this.due.add(task);
      this.drain();
    }
  }

  advanceClock(): boolean {
    if (this.isShutdown) return false;
    let ran = false;
    this.fixDeferredDeadlines();
    let nowMs = this.readClock();
    // Loop: tasks run by `drain` can create buckets that are already due (never with tickMs = 1 and a
    // current wheel, but cheap to make certain of).
    while (this.queue.peekExpirationMs() <= nowMs) {
      while (this.queue.peekExpirationMs() <= nowMs) {
        const bucket = this.queue.pop() as TimerTaskList;
        this.wheel.advanceClock(bucket.expirationMs);
        bucket.flush(this.reinsert);
      }
      if (!this.due.isEmpty) ran = this.drain() || ran;
      if (this.isShutdown) return ran;
      nowMs = this.readClock();
    }
    this.arm(nowMs);
    return ran;
  }

  shutdown(): void {
    if (this.isShutdown) return;
    this.isShutdown = true;
    if (this.alarm !== null) clearTimeout(this.alarm);
    this.alarm = null;
    this.alarmAtMs = Infinity;
    if (this.unsubscribe !== null) this.unsubscribe();
    this.unsubscribe = null;
    if (this.unsubscribeJump !== null) this.unsubscribeJump();
    this.unsubscribeJump = null;
    // Unlink every task so `isPending` is false and a later `cancel` is a harmless no-op.
    let bucket = this.queue.pop();
    while (bucket !== undefined) {
      bucket.flush(() => undefined);
      bucket = this.queue.pop();
    }
    this.due.flush(() => undefined);
    this.fixDeferredDeadlines();
  }

  /** The clock, remembered as a lower bound of now for the re-arms that follow. */
  private readClock(): number {
    const nowMs = this.time.monotonicMs();
    this.clockLowerBoundMs = nowMs;
    return nowMs;
  }

  /**
   * The deadline of a task added at `nowMs`: rounded up to whole milliseconds and to the tick, because the
   * wheel counts a task due once its expiration is below the end of the current tick, so an unaligned
   * future deadline would run up to a tick early. A task already due stays due (rounding it up would
   * postpone it to the next tick boundary).
   */
  private deadlineMs(nowMs: number, delayMs: number): number {
    let expirationMs = delayMs > 0 ? nowMs + Math.ceil(delayMs) : nowMs;
    if (this.tickMs !== 1 && expirationMs > nowMs) {
      const rest = expirationMs % this.tickMs;
      if (rest !== 0) expirationMs += this.tickMs - rest;
    }
    return expirationMs;
  }

  /**
   * Marks a task's deadline as a lower bound to fix soon after (see `TimerTask.expirationMs`), and lists
   * it once.
   */
  private defer(task: TimerTask, lowerBoundMs: number): void {
    if (task.expirationMs >= 0) {
      this.deferred[this.deferredCount++] = task;
      if (this.deferredCount === FIX_BATCH) {
        task.expirationMs = -lowerBoundMs - 1;
        this.fixDeferredDeadlines();
        return;
      }
      if (!this.isFixScheduled) {
        this.isFixScheduled = true;
        // A settled promise's then() costs a third of queueMicrotask (which wraps every callback in an
        // AsyncResource); the callback cannot throw, so the derived promise never rejects.
        void END_OF_RUN.then(this.onEndOfRun);
      }
    }
    task.expirationMs = -lowerBoundMs - 1;
  }

  /**
   * Gives every deferred task its exact deadline from one clock read taken after all of them were added,
   * and arms the alarm for the buckets they created. A task cancelled meanwhile gets its lower bound
   * back; one re-added exactly meanwhile keeps that deadline.
   */
  private fixDeferredDeadlines(): void {
    const deferred = this.deferred;
    const count = this.deferredCount;
    if (count === 0) return;
    this.deferredCount = 0;
    const nowMs = this.isShutdown ? 0 : this.readClock();
    for (let i = 0; i < count; i++) {
      const task = deferred[i] as TimerTask;
      deferred[i] = null;
      if (task.expirationMs >= 0) continue;
      task.expirationMs =
        task.timerList !== null && !this.isShutdown
          ? this.deadlineMs(nowMs, task.delayMs)
          : -task.expirationMs - 1;
    }
    if (!this.isShutdown && this.queue.peekExpirationMs() < this.alarmAtMs) this.arm(nowMs);
  }

  /** Cascades a task from an expired bucket: into a finer wheel, or onto the due list. */
  private place(task: TimerTask): void {
    if (!this.wheel.add(task)) this.due.add(task);
  }

  /** Runs the due list to empty; re-entrant calls (from inside a task) leave the work to the outer loop. */
  private drain(): boolean {
    if (this.draining) return false;
    this.draining = true;
    let firstError: unknown = undefined;
    let hasError = false;
    let ran = false;
    try {
      let task = this.due.shift();
      while (task !== null) {
        ran = true;
        try {
          task.run();
        } catch (error) {
          if (this.onTaskError) this.onTaskError(error, task);
          else if (!hasError) {
            hasError = true;
            firstError = error;
          }
        }
        task = this.due.shift();
      }
    } finally {
      this.draining = false;
    }
    if (hasError) throw firstError;
    return ran;
  }

  /** Ensures the event-loop timeout fires by the earliest queued bucket. */
  private arm(nowMs: number): void {
    if (this.unsubscribe !== null) return; // driven by a manual clock
    const nextMs = this.queue.peekExpirationMs();
    if (nextMs === Infinity) {
      if (this.alarm !== null) {
        clearTimeout(this.alarm);
        this.alarm = null;
        this.alarmAtMs = Infinity;
      }
      return;
    }
    if (nextMs >= this.alarmAtMs) return;
    if (this.alarm !== null) clearTimeout(this.alarm);
    const delayMs = Math.min(Math.max(nextMs - nowMs, 0), MAX_TIMEOUT_MS);
    this.alarm = setTimeout(this.onAlarm, delayMs);
    this.alarm.unref();
    this.alarmAtMs = nextMs;
  }
}
