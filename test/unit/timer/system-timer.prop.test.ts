import fc from 'fast-check';
import { ManualTime } from '../../../src/time';
import { SystemTimer, TimerTask } from '../../../src/timer';
import { ReferenceTimer } from '../../support/reference-timer';

/**
 * The real SystemTimer, driven by a ManualTime, against the naive ReferenceTimer, step by step.
 *
 * Every run of a task is checked as it happens: the task must be pending in the reference (so a cancelled
 * task, or one that already ran, can never run), its deadline must have passed (never early), and within
 * one step tasks must run in deadline order. After every step nothing the reference holds may be due (so
 * a task runs in the very advance that reaches its deadline: with tickMs = 1 that is "at most one tick
 * late"), `size` must equal the reference's, and `isPending` must agree task by task.
 *
 * Ordering guarantee tested: within one advance, tasks run in non-decreasing deadline order (the timer
 * pops buckets by expiration and, with tickMs = 1, a finest-wheel bucket holds one deadline). Tasks with
 * EQUAL deadlines have no guaranteed order: not even the order they were added, since one may reach the
 * deadline's bucket by cascading from an overflow wheel after the other was put there directly.
 *
 * tickMs > 1 is held to the same reference in system-timer-coarse-tick.prop.test.ts.
 */

const TASKS = 10;
const MAX_DELAY_MS = 1_000_000_000;

type Reaction = { kind: 'add'; task: number; delayMs: number } | { kind: 'cancel'; task: number };

type Step =
  | { kind: 'add'; task: number; delayMs: number }
  /** Adds `task` with the deadline `other` has now, if `other` is pending: equal deadlines, added apart. */
  | { kind: 'addAtDeadlineOf'; task: number; other: number }
  | { kind: 'cancel'; task: number }
  | { kind: 'advance'; ms: number }
  /** Advances to just before, at or just after the earliest pending deadline: the boundaries that matter. */
  | { kind: 'advanceToNext'; offsetMs: number };

interface Schedule {
  startMs: number;
  steps: Step[];
  /** scripts[task][n]: what the task does on its n-th run (re-entrancy); missing means nothing. */
  scripts: Reaction[][][];
}

interface WheelConfig {
  tickMs: number;
  wheelSize: number;
  /** How many timers share the clock; tasks of one timer add and cancel tasks of the other. */
  timers: number;
}

class ScriptedTask extends TimerTask {
  constructor(
    readonly id: number,
    private readonly onRun: (task: ScriptedTask) => void,
  ) {
    super(0);
  }

  run(): void {
    this.onRun(this);
  }
}

/** Small, boundary-heavy and huge delays; small ones repeat often, so deadlines coincide. */
const delayMs = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 25 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(1, 7, 8, 9, 19, 20, 21, 63, 64, 65, 399, 400, 401, 8_000, 160_000, 3_200_000),
  },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 10_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: MAX_DELAY_MS }) },
  // Negative means "due now"; fractions round up.
  { weight: 1, arbitrary: fc.constantFrom(-5, 0.5, 2.5) },
);

const advanceMs = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 5 }) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 60 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 5_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: MAX_DELAY_MS }) },
);

const task = fc.integer({ min: 0, max: TASKS - 1 });

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('add' as const), task, delayMs }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('addAtDeadlineOf' as const), task, other: task }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), task }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: advanceMs }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advanceToNext' as const),
      offsetMs: fc.integer({ min: -1, max: 1 }),
    }),
  },
);

/** Re-entrant work favours short delays (0 = due in the same pass) so it lands in the same advance. */
const reaction: fc.Arbitrary<Reaction> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      task,
      delayMs: fc.oneof(fc.constantFrom(0, 0, 1, 20, 400), fc.integer({ min: 0, max: 30 }), delayMs),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('cancel' as const), task }) },
);

const startMs = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 10_000_000 }));
const steps = fc.array(step, { minLength: 1, maxLength: 80, size: 'max' });
const noScripts: Reaction[][][] = Array.from({ length: TASKS }, () => []);

const plainSchedule: fc.Arbitrary<Schedule> = fc.record({
  startMs,
  steps,
  scripts: fc.constant(noScripts),
});

const reentrantSchedule: fc.Arbitrary<Schedule> = fc.record({
  startMs,
  steps,
  scripts: fc.array(
    fc.array(fc.array(reaction, { maxLength: 3, size: 'max' }), { maxLength: 3, size: 'max' }),
    {
      minLength: TASKS,
      maxLength: TASKS,
    },
  ),
});

/**
 * Runs `schedule` on real SystemTimers (task `i` belongs to timer `i % config.timers`, all on one clock, as
 * purgatories share one) and one reference per timer, side by side; throws on the first difference.
 */
function check(config: WheelConfig, schedule: Schedule): void {
  const time = new ManualTime(schedule.startMs);
  const timers = Array.from(
    { length: config.timers },
    () => new SystemTimer({ time, tickMs: config.tickMs, wheelSize: config.wheelSize }),
  );
  const references = timers.map(() => new ReferenceTimer<number>(config.tickMs));
  // Per timer: the due time of the task that ran last in the current step (deadline order is per step),
  // and the task running now (-1: none), to see that a timer never runs a task inside another.
  const lastRunAtMs = timers.map(() => -Infinity);
  const running = timers.map(() => -1);
  const runCounts = new Array<number>(TASKS).fill(0);
  const timerOf = (id: number): number => id % config.timers;

  const arm = (t: ScriptedTask, delay: number): void => {
    // The reference first: a task due at once runs inside `add`.
    references[timerOf(t.id)].add(t.id, delay, time.monotonicMs());
    t.delayMs = delay;
    timers[timerOf(t.id)].add(t);
  };
  const cancel = (t: ScriptedTask): void => {
    references[timerOf(t.id)].cancel(t.id);
    t.cancel();
  };

  const onRun = (t: ScriptedTask): void => {
    const k = timerOf(t.id);
    const nowMs = time.monotonicMs();
    const entry = references[k].get(t.id);
    if (running[k] !== -1) throw new Error(`task ${t.id} ran inside task ${running[k]} of the same timer`);
    if (entry === undefined) {
      throw new Error(`task ${t.id} ran at ${nowMs} but was not pending (cancelled, or ran already)`);
    }
    if (nowMs < entry.deadlineMs) {
      throw new Error(`task ${t.id} ran early: at ${nowMs}, deadline ${entry.deadlineMs}`);
    }
    if (nowMs < entry.runAtMs) {
      throw new Error(`task ${t.id} ran at ${nowMs}, before its tick boundary ${entry.runAtMs}`);
    }
    if (entry.runAtMs < lastRunAtMs[k]) {
      throw new Error(`task ${t.id} (due ${entry.runAtMs}) ran after a task due ${lastRunAtMs[k]}`);
    }
    lastRunAtMs[k] = entry.runAtMs;
    references[k].cancel(t.id);
    if (timers[k].size !== references[k].size) {
      throw new Error(`size ${timers[k].size} while task ${t.id} runs, expected ${references[k].size}`);
    }
    running[k] = t.id;
    try {
      const script = schedule.scripts[t.id][runCounts[t.id]++] ?? [];
      for (const r of script) {
        if (r.kind === 'add') arm(tasks[r.task], r.delayMs);
        else cancel(tasks[r.task]);
      }
    } finally {
      running[k] = -1;
    }
  };
  const tasks = Array.from({ length: TASKS }, (_, id) => new ScriptedTask(id, onRun));

  const advanceTo = (targetMs: number): void => {
    time.advance(Math.max(0, targetMs - time.monotonicMs()));
  };
  const nextRunAtMs = (): number | undefined => {
    let next: number | undefined = undefined;
    for (const r of references) {
      const n = r.nextRunAtMs();
      if (n !== undefined && (next === undefined || n < next)) next = n;
    }
    return next;
  };
  const pending = (): number => references.reduce((sum, r) => sum + r.size, 0);

  const verify = (step: Step | 'the end'): void => {
    const nowMs = time.monotonicMs();
    const after = (): string => JSON.stringify(step);
    for (let k = 0; k < timers.length; k++) {
      const late = references[k].dueBy(nowMs);
      if (late.length > 0) {
        throw new Error(`after ${after()} at ${nowMs}: still pending though due: ${JSON.stringify(late)}`);
      }
      if (timers[k].size !== references[k].size) {
        throw new Error(
          `after ${after()}: timer ${k} size ${timers[k].size}, expected ${references[k].size}`,
        );
      }
    }
    for (const t of tasks) {
      if (t.isPending !== (references[timerOf(t.id)].get(t.id) !== undefined)) {
        throw new Error(`after ${after()}: task ${t.id} isPending is ${t.isPending}, expected the opposite`);
      }
    }
  };

  for (const s of schedule.steps) {
    lastRunAtMs.fill(-Infinity);
    switch (s.kind) {
      case 'add':
        arm(tasks[s.task], s.delayMs);
        break;
      case 'addAtDeadlineOf': {
        const other = references[timerOf(s.other)].get(s.other);
        if (other !== undefined) arm(tasks[s.task], other.deadlineMs - time.monotonicMs());
        break;
      }
      case 'cancel':
        cancel(tasks[s.task]);
        break;
      case 'advance':
        time.advance(s.ms);
        break;
      case 'advanceToNext':
        advanceTo((nextRunAtMs() ?? time.monotonicMs()) + s.offsetMs);
        break;
    }
    verify(s);
  }
  // Run out the schedule: everything pending runs once the clock reaches it (tasks may still add tasks,
  // but their scripts are finite), and only then is size 0.
  while (pending() > 0) {
    lastRunAtMs.fill(-Infinity);
    advanceTo(nextRunAtMs() as number);
    verify('the end');
  }
  for (const timer of timers) expect(timer.size).toBe(0);
}

const CONFIGS: WheelConfig[] = [
  { tickMs: 1, wheelSize: 20, timers: 1 },
  { tickMs: 1, wheelSize: 8, timers: 1 },
  { tickMs: 1, wheelSize: 3, timers: 1 },
  { tickMs: 1, wheelSize: 2, timers: 1 },
  { tickMs: 1, wheelSize: 20, timers: 2 },
  { tickMs: 1, wheelSize: 2, timers: 2 },
];

describe.each(CONFIGS)(
  'SystemTimer (tickMs $tickMs, wheelSize $wheelSize) against a sorted list',
  (config) => {
    it('runs exactly the due tasks at each advance, each once, never early, in deadline order, with exact size', () => {
      fc.assert(
        fc.property(plainSchedule, (schedule) => check(config, schedule)),
        { numRuns: 300 },
      );
    });

    it('stays exact when running tasks add, cancel and re-arm others and themselves', () => {
      fc.assert(
        fc.property(reentrantSchedule, (schedule) => check(config, schedule)),
        { numRuns: 300 },
      );
    });
  },
);
