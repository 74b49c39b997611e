import type { Time } from './time';

/**
 * How much of one event-loop turn a long piece of synchronous work may use before it yields: a
 * `__consumer_offsets` partition's load (the log replay, then the shard's restore of its groups). A step
 * ends once it has run `maxMs` on `time`'s monotonic clock, or once it has done `maxUnits` units of work
 * (bytes, groups), whichever comes first; the work then awaits `pause` (one `setImmediate` turn: timers
 * and I/O run) and the next step starts. The time bound is the one that matters on a real clock: it holds
 * however costly a unit is (a group record of thousands of members, a slow or busy machine). The unit
 * bound is what bounds a step when the clock does not move (a ManualTime: unit tests, `--manual-clock`).
 *
 * Checking is synchronous and reads the clock once: `if (budget.isSpent()) await budget.nextStep()` in
 * the work's loop costs a clock read per item and a turn per step, not a microtask per item.
 *
 * Example: `maxMs` 10 on a real clock, a replay decoding 40 MB/s: steps of about 400 KB, each followed
 * by one turn of the loop, so a timer due meanwhile fires at most ~10 ms late (plus the item that crossed
 * the line).
 */
export interface TurnBudgetOptions {
  /** The step's time on the monotonic clock; default DEFAULT_TURN_BUDGET_MS. */
  readonly maxMs?: number;
  /** Units of work per step, for a clock that does not move. */
  readonly maxUnits: number;
  /** Awaited between steps; default one `setImmediate` turn. */
  readonly pause?: () => Promise<void>;
}

/**
 * A step of a load runs at most 10 ms, a fifth of the 50 ms bound on an event-loop turn while loading
 * (issue 15's figure): the rest is left to what runs between two steps (other partitions' heartbeats,
 * replication, RPCs) and to the garbage collector.
 */
export const DEFAULT_TURN_BUDGET_MS = 10;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class TurnBudget {
  /** Pauses taken so far: the work ran in `steps + 1` event-loop turns. */
  steps = 0;
  private readonly time: Time;
  private readonly maxMs: number;
  private readonly maxUnits: number;
  private readonly pause: () => Promise<void>;
  private stepStartMs: number;
  private units = 0;

  /** The first step starts now. */
  constructor(time: Time, options: TurnBudgetOptions) {
    const maxMs = options.maxMs ?? DEFAULT_TURN_BUDGET_MS;
    if (!(maxMs >= 0)) throw new RangeError(`maxMs must be >= 0, got ${maxMs}`);
    if (!(options.maxUnits > 0)) throw new RangeError(`maxUnits must be > 0, got ${options.maxUnits}`);
    this.time = time;
    this.maxMs = maxMs;
    this.maxUnits = options.maxUnits;
    this.pause = options.pause ?? nextTurn;
    this.stepStartMs = time.monotonicMs();
  }

  /** Counts `units` of work done in this step. */
  spend(units: number): void {
    this.units += units;
  }

  /** Whether this step has used its time or its units: the work should await `nextStep()` now. */
  isSpent(): boolean {
    return this.units >= this.maxUnits || this.time.monotonicMs() - this.stepStartMs >= this.maxMs;
  }

  /** Yields to the event loop, then starts a new step. */
  async nextStep(): Promise<void> {
    this.steps++;
    await this.pause();
    this.units = 0;
    this.stepStartMs = this.time.monotonicMs();
  }
}
