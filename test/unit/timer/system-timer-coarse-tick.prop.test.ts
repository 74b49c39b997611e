import fc from 'fast-check';
import { ManualTime } from '../../../src/time';
import { SystemTimer, TimerTask } from '../../../src/timer';
import { ReferenceTimer } from '../../support/reference-timer';

/**
 * SystemTimer with tickMs > 1 against the ReferenceTimer: a task due when added (delay <= 0) runs at once,
 * inside `add`; any other runs in the first advance that reaches its deadline rounded up to the tick, so
 * never early and at most tickMs - 1 ms late. (system-timer.prop.test.ts holds tickMs = 1 to the same
 * reference with cancels, re-arms and re-entrancy.)
 */

class RecordingTask extends TimerTask {
  ranAtMs: number | undefined = undefined;
  constructor(
    delayMs: number,
    private readonly time: ManualTime,
  ) {
    super(delayMs);
  }
  run(): void {
    this.ranAtMs = this.time.monotonicMs();
  }
}

type Step = { kind: 'add'; delayMs: number } | { kind: 'advance'; ms: number };

const CONFIGS = [
  { tickMs: 5, wheelSize: 10 },
  { tickMs: 2, wheelSize: 8 },
  { tickMs: 7, wheelSize: 3 },
];

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      delayMs: fc.oneof(fc.constantFrom(-5, 0, 0.5), fc.integer({ min: 1, max: 30 }), fc.nat(1_000_000)),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.oneof(fc.nat(9), fc.nat(100_000)) }),
  },
);

describe.each(CONFIGS)(
  'SystemTimer with a coarse tick (tickMs $tickMs, wheelSize $wheelSize)',
  ({ tickMs, wheelSize }) => {
    it('runs a task added with delay 0 at once, even between tick boundaries', () => {
      const time = new ManualTime(tickMs + 1);
      const timer = new SystemTimer({ time, tickMs, wheelSize });
      const task = new RecordingTask(0, time);
      timer.add(task);
      expect(task.ranAtMs).toBe(tickMs + 1);
    });

    it('runs every task at its tick-rounded deadline, and due ones at once', () => {
      fc.assert(
        fc.property(fc.nat(10_000), fc.array(step, { minLength: 1, maxLength: 40 }), (startMs, steps) => {
          const time = new ManualTime(startMs);
          const timer = new SystemTimer({ time, tickMs, wheelSize });
          const reference = new ReferenceTimer<RecordingTask>(tickMs);
          const tasks: RecordingTask[] = [];
          // After each step: what the reference says is due ran in this step (so at the current clock, and
          // not before its deadline); nothing else ran.
          const verify = (): void => {
            const nowMs = time.monotonicMs();
            for (const t of tasks) {
              const entry = reference.get(t);
              if (entry === undefined) continue;
              if (entry.runAtMs <= nowMs) {
                expect(t.ranAtMs).toBe(nowMs);
                expect(nowMs).toBeGreaterThanOrEqual(entry.deadlineMs);
                reference.cancel(t);
              } else {
                expect(t.ranAtMs).toBeUndefined();
              }
            }
            expect(timer.size).toBe(reference.size);
          };
          for (const s of steps) {
            if (s.kind === 'add') {
              const t = new RecordingTask(s.delayMs, time);
              tasks.push(t);
              reference.add(t, s.delayMs, time.monotonicMs());
              timer.add(t);
            } else {
              time.advance(s.ms);
            }
            verify();
          }
        }),
        { numRuns: 200 },
      );
    });
  },
);
