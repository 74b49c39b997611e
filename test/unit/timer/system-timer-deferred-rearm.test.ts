import fc from 'fast-check';
import type { Time } from '../../../src/time';
import { SystemTimer, TimerTask } from '../../../src/timer';

/**
 * Adding a task with a delay on a real-time clock does not read the clock: the task goes to (or, re-armed,
 * keeps) a bucket due by (last clock read + delay), and its exact deadline is fixed from one clock read per
 * batch of 64 tasks, at the end of the synchronous run, or at the next flush, whichever is first. These
 * tests drive that path with a clock that has no `onAdvance` (so the timer treats it as real time) and that
 * moves only when told, calling `advanceClock()` by hand for the flushes the event-loop alarm would do.
 */

class SteppedClock implements Time {
  reads = 0;
  constructor(public ms = 0) {}
  monotonicMs(): number {
    this.reads++;
    return this.ms;
  }
  nowMs(): number {
    return this.ms;
  }
}

class RecordingTask extends TimerTask {
  readonly runs: number[] = [];
  constructor(
    delayMs: number,
    private readonly clock: SteppedClock,
  ) {
    super(delayMs);
  }
  run(): void {
    this.runs.push(this.clock.ms);
  }
}

const endOfRun = (): Promise<void> => Promise.resolve();

describe('SystemTimer adding on a real-time clock', () => {
  let clock: SteppedClock;
  let timer: SystemTimer;
  beforeEach(() => {
    clock = new SteppedClock(1_000);
    timer = new SystemTimer({ name: 'deferred', time: clock });
  });
  afterEach(() => timer.shutdown());

  it('gives a deferred task its lower bound as deadlineMs until the run ends, then the exact deadline', async () => {
    const task = new RecordingTask(100, clock);
    timer.add(task);
    clock.ms = 1_050;
    timer.add(task);
    expect(task.deadlineMs).toBe(1_100);
    await endOfRun();
    expect(task.deadlineMs).toBe(1_150);
  });

  it('counts the new deadline from a clock read taken after the re-arm, at the end of the run', async () => {
    const task = new RecordingTask(100, clock);
    timer.add(task);
    clock.ms = 1_050;
    timer.add(task); // deferred: the timer's last read is still 1,000, a lower bound marked negative
    expect(task.expirationMs).toBe(-1_101);
    await endOfRun();
    expect(task.expirationMs).toBe(1_150);

    clock.ms = 1_149;
    timer.advanceClock();
    expect(task.runs).toEqual([]);
    clock.ms = 1_150;
    timer.advanceClock();
    expect(task.runs).toEqual([1_150]);
    expect(timer.size).toBe(0);
  });

  it('adds a new task without a clock read and counts its delay from a read taken after the add', async () => {
    const task = new RecordingTask(100, clock);
    clock.ms = 1_040;
    const reads = clock.reads;
    timer.add(task);
    expect([clock.reads - reads, task.expirationMs]).toEqual([0, -1_101]);
    await endOfRun();
    expect([clock.reads - reads, task.expirationMs]).toEqual([1, 1_140]);
    clock.ms = 1_139;
    timer.advanceClock();
    clock.ms = 1_140;
    timer.advanceClock();
    expect(task.runs).toEqual([1_140]);
  });

  it('reads the clock once per 64 tasks added in one run, fixing each batch at once', () => {
    const tasks = Array.from({ length: 640 }, (_, i) => new RecordingTask(10 + i, clock));
    const reads = clock.reads;
    for (const [i, task] of tasks.entries()) {
      clock.ms = 1_000 + i;
      timer.add(task);
    }
    expect(clock.reads - reads).toBe(10);
    // The first of each batch is fixed at the read after its 64th task: late by 63 ms of this clock.
    expect(tasks[0].expirationMs).toBe(1_063 + 10);
    expect(tasks[63].expirationMs).toBe(1_063 + 10 + 63);
    expect(tasks.every((t) => t.expirationMs > 0)).toBe(true);
  });

  it('fixes deferred deadlines before a flush in the same run, so an expired bucket does not run them early', () => {
    const task = new RecordingTask(100, clock);
    timer.add(task);
    clock.ms = 1_050;
    timer.add(task);
    clock.ms = 1_120; // the old bucket (1,100) is due; the task's deadline is at least 1,150
    timer.advanceClock();
    expect(task.runs).toEqual([]);
    // Fixed at the flush's read (1,120): late by the rest of the run that re-armed it, never early.
    expect(task.expirationMs).toBe(1_220);
    clock.ms = 1_220;
    timer.advanceClock();
    expect(task.runs).toEqual([1_220]);
  });

  it('does not run a task cancelled after its deferred re-arm, and forgets it', async () => {
    const task = new RecordingTask(100, clock);
    timer.add(task);
    clock.ms = 1_010;
    timer.add(task);
    task.cancel();
    await endOfRun();
    expect(task.expirationMs).toBe(1_100); // its lower bound (last read + delay), no longer marked
    clock.ms = 5_000;
    timer.advanceClock();
    expect(task.runs).toEqual([]);
    expect(timer.size).toBe(0);
  });

  it('gives a task re-armed many times in one run the deadline of its last re-arm', async () => {
    const tasks = [new RecordingTask(300, clock), new RecordingTask(200, clock)];
    for (const task of tasks) timer.add(task);
    for (let ms = 1_001; ms <= 1_020; ms++) {
      clock.ms = ms;
      for (const task of tasks) timer.add(task);
    }
    await endOfRun();
    expect(tasks.map((t) => t.expirationMs)).toEqual([1_320, 1_220]);
    expect(timer.size).toBe(2);
  });

  it('takes the exact path when the new delay is shorter than the bucket allows', () => {
    const task = new RecordingTask(1_000, clock);
    timer.add(task);
    task.delayMs = 10;
    clock.ms = 1_005;
    timer.add(task);
    expect(task.expirationMs).toBe(1_015);
    clock.ms = 1_015;
    timer.advanceClock();
    expect(task.runs).toEqual([1_015]);
  });

  it('leaves no deferred mark on the tasks of a timer shut down', () => {
    const task = new RecordingTask(100, clock);
    timer.add(task);
    timer.add(task);
    timer.shutdown();
    expect([task.isPending, task.expirationMs]).toEqual([false, 1_100]);
  });
});

it('arms its event-loop alarm for tasks added without a clock read once their deadlines are fixed', async () => {
  jest.useFakeTimers();
  const clock = new SteppedClock(1_000);
  const timer = new SystemTimer({ name: 'deferred-alarm', time: clock });
  try {
    const task = new RecordingTask(100, clock);
    clock.ms = 1_030;
    timer.add(task);
    await endOfRun(); // the deadline is fixed at 1,130, and the alarm armed 100 ms from then
    expect(jest.getTimerCount()).toBe(1);
    clock.ms = 1_129;
    jest.advanceTimersByTime(99);
    expect(task.runs).toEqual([]);
    clock.ms = 1_130;
    jest.advanceTimersByTime(1);
    expect(task.runs).toEqual([1_130]);
  } finally {
    timer.shutdown();
    jest.useRealTimers();
  }
});

type Step =
  | { kind: 'add'; task: number; delayMs: number }
  | { kind: 'cancel'; task: number }
  | { kind: 'elapse'; ms: number }
  | { kind: 'flush' }
  | { kind: 'endRun' };

const TASKS = 3;
const steps: fc.Arbitrary<Step[]> = fc.array(
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('add' as const),
        task: fc.nat(TASKS - 1),
        // Mostly a few fixed delays, so re-arms keep their bucket (the deferred path), as heartbeats do.
        delayMs: fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(40, 500, 2_000) },
          { weight: 1, arbitrary: fc.integer({ min: 1, max: 5_000 }) },
        ),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), task: fc.nat(TASKS - 1) }) },
    {
      weight: 4,
      arbitrary: fc.record({ kind: fc.constant('elapse' as const), ms: fc.oneof(fc.nat(30), fc.nat(3_000)) }),
    },
    { weight: 3, arbitrary: fc.constant({ kind: 'flush' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'endRun' as const }) },
  ),
  { maxLength: 80 },
);

interface Arming {
  armedAtMs: number;
  delayMs: number;
  /** The clock at the first end of run or flush after the add: the deadline is counted from here at worst. */
  fixedAtMs: number | null;
}

it('never runs a re-armed task early, nor later than its deadline counted from the next end of run or flush', async () => {
  await fc.assert(
    fc.asyncProperty(steps, async (plan) => {
      const clock = new SteppedClock(0);
      const timer = new SystemTimer({ name: 'deferred-prop', time: clock });
      const tasks = Array.from({ length: TASKS }, () => new RecordingTask(1, clock));
      const armings: (Arming | null)[] = tasks.map(() => null);
      const runsSeen = tasks.map(() => 0);
      const fix = (): void => {
        for (const arming of armings)
          if (arming !== null && arming.fixedAtMs === null) arming.fixedAtMs = clock.ms;
      };
      const check = (): void => {
        tasks.forEach((task, i) => {
          const arming = armings[i];
          if (task.runs.length > runsSeen[i]) {
            expect(task.runs.length).toBe(runsSeen[i] + 1);
            expect(arming).not.toBeNull();
            expect(task.runs[runsSeen[i]]).toBeGreaterThanOrEqual(arming!.armedAtMs + arming!.delayMs);
            runsSeen[i] = task.runs.length;
            armings[i] = null;
          } else if (arming !== null && arming.fixedAtMs !== null) {
            expect(clock.ms).toBeLessThan(arming.fixedAtMs + arming.delayMs);
          }
        });
      };
      try {
        for (const step of [...plan, { kind: 'endRun' } as Step, { kind: 'elapse', ms: 10_000 } as Step]) {
          if (step.kind === 'add') {
            tasks[step.task].delayMs = step.delayMs;
            timer.add(tasks[step.task]);
            armings[step.task] = { armedAtMs: clock.ms, delayMs: step.delayMs, fixedAtMs: null };
          } else if (step.kind === 'cancel') {
            tasks[step.task].cancel();
            armings[step.task] = null;
          } else if (step.kind === 'elapse') {
            clock.ms += step.ms;
          } else if (step.kind === 'endRun') {
            await endOfRun();
            fix();
          } else {
            fix();
            timer.advanceClock();
            check();
          }
        }
        fix();
        timer.advanceClock();
        check();
        expect(armings).toEqual(tasks.map(() => null));
        expect(timer.size).toBe(0);
      } finally {
        timer.shutdown();
      }
    }),
    { numRuns: 1_000 },
  );
});
