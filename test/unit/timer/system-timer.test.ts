import { ManualTime } from '../../../src/time';
import { SystemTimer, TimerTask } from '../../../src/timer';

/** Records when it ran, on the clock that drives the timer. */
class RecordingTask extends TimerTask {
  readonly ranAt: number[] = [];
  constructor(
    delayMs: number,
    private readonly time: ManualTime,
    private readonly log?: string[],
    readonly label = '',
    private readonly action?: () => void,
  ) {
    super(delayMs);
  }
  run(): void {
    this.ranAt.push(this.time.monotonicMs());
    this.log?.push(this.label);
    this.action?.();
  }
}

function setup(startMs = 0) {
  const time = new ManualTime(startMs);
  const timer = new SystemTimer({ time });
  return { time, timer };
}

describe('SystemTimer under a manual clock', () => {
  it('runs an already expired task at once, inside add', () => {
    const { time, timer } = setup(1_000);
    const zero = new RecordingTask(0, time);
    const negative = new RecordingTask(-5, time);
    timer.add(zero);
    timer.add(negative);
    expect(zero.ranAt).toEqual([1_000]);
    expect(negative.ranAt).toEqual([1_000]);
    expect(timer.size).toBe(0);
  });

  it('runs each task once, never before its deadline, at the first advance that reaches it', () => {
    const { time, timer } = setup();
    const tasks = [0, 1, 2, 5, 19, 20, 21, 399, 400, 401, 7_999, 8_000, 160_001].map(
      (d) => new RecordingTask(d, time),
    );
    for (const t of tasks) timer.add(t);
    // Step one millisecond at a time around every deadline, and jump between them.
    const checkpoints = [...new Set(tasks.flatMap((t) => [t.delayMs - 1, t.delayMs]))].sort((a, b) => a - b);
    for (const at of checkpoints) {
      if (at > time.monotonicMs()) time.advance(at - time.monotonicMs());
      for (const t of tasks) {
        if (time.monotonicMs() < t.delayMs) expect(t.ranAt).toEqual([]);
        else expect(t.ranAt).toHaveLength(1);
      }
    }
    for (const t of tasks) expect(t.ranAt).toEqual([Math.max(t.delayMs, 0)]);
    expect(timer.size).toBe(0);
  });

  it('cascades a task from an overflow wheel down to the exact millisecond', () => {
    const { time, timer } = setup();
    const task = new RecordingTask(450, time);
    timer.add(task);
    time.advance(449);
    expect(task.ranAt).toEqual([]);
    time.advance(1);
    expect(task.ranAt).toEqual([450]);
  });

  it('runs tasks that become due in one advance in deadline order', () => {
    const { time, timer } = setup();
    const log: string[] = [];
    const delays = [3_000, 5, 450, 1, 20, 8_001, 399];
    for (const d of delays) timer.add(new RecordingTask(d, time, log, String(d)));
    time.advance(10_000);
    expect(log).toEqual([...delays].sort((a, b) => a - b).map(String));
  });

  it('never runs a cancelled task and keeps size exact', () => {
    const { time, timer } = setup();
    const tasks = Array.from({ length: 100 }, (_, i) => new RecordingTask(i * 37, time));
    for (const t of tasks) timer.add(t);
    expect(timer.size).toBe(99); // delay 0 ran at once
    for (let i = 1; i < tasks.length; i += 2) tasks[i].cancel();
    expect(timer.size).toBe(49);
    tasks[1].cancel(); // twice: a no-op
    expect(timer.size).toBe(49);
    time.advance(100 * 37);
    tasks.forEach((t, i) => expect(t.ranAt.length).toBe(i % 2 === 0 ? 1 : 0));
    expect(timer.size).toBe(0);
  });

  it('re-arms a pending task by adding it again, moving its deadline', () => {
    const { time, timer } = setup();
    const task = new RecordingTask(100, time);
    timer.add(task);
    time.advance(90);
    timer.add(task); // heartbeat: due again 100 ms from now
    expect(timer.size).toBe(1);
    time.advance(100);
    expect(task.ranAt).toEqual([190]);
    task.delayMs = 30;
    timer.add(task); // a task that ran may be scheduled again
    time.advance(30);
    expect(task.ranAt).toEqual([190, 220]);
  });

  it('lets a running task cancel one that is due in the same advance', () => {
    const { time, timer } = setup();
    const victim = new RecordingTask(10, time);
    const killer = new RecordingTask(5, time, undefined, '', () => victim.cancel());
    timer.add(victim);
    timer.add(killer);
    time.advance(20);
    expect(killer.ranAt).toEqual([20]);
    expect(victim.ranAt).toEqual([]);
    expect(timer.size).toBe(0);
  });

  it('runs a task added already due from inside another task in the same advance', () => {
    const { time, timer } = setup();
    const late = new RecordingTask(0, time);
    const first = new RecordingTask(5, time, undefined, '', () => timer.add(late));
    timer.add(first);
    time.advance(5);
    expect(late.ranAt).toEqual([5]);
  });

  it('measures a delay added from inside a task from the advanced clock', () => {
    const { time, timer } = setup();
    const next = new RecordingTask(10, time);
    timer.add(new RecordingTask(5, time, undefined, '', () => timer.add(next)));
    time.advance(100);
    expect(next.ranAt).toEqual([]);
    time.advance(9);
    expect(next.ranAt).toEqual([]);
    time.advance(1);
    expect(next.ranAt).toEqual([110]);
  });

  it('still runs the other due tasks when one throws, then rethrows the error', () => {
    const { time, timer } = setup();
    const after = new RecordingTask(2, time);
    timer.add(
      new RecordingTask(1, time, undefined, '', () => {
        throw new Error('boom');
      }),
    );
    timer.add(after);
    expect(() => time.advance(5)).toThrow('boom');
    expect(after.ranAt).toEqual([5]);
  });

  it('still wakes for later tasks after a task threw out of advanceClock', () => {
    const { time, timer } = setup();
    const later = new RecordingTask(10, time);
    timer.add(
      new RecordingTask(1, time, undefined, '', () => {
        throw new Error('boom');
      }),
    );
    timer.add(later);
    expect(() => time.advance(1)).toThrow('boom');
    time.advance(9);
    expect(later.ranAt).toEqual([10]);
  });

  it('reports task errors to onTaskError when given', () => {
    const time = new ManualTime();
    const errors: unknown[] = [];
    const timer = new SystemTimer({ time, onTaskError: (e) => errors.push(e) });
    timer.add(
      new RecordingTask(1, time, undefined, '', () => {
        throw new Error('boom');
      }),
    );
    time.advance(1);
    expect(errors).toHaveLength(1);
  });

  it('handles delays up to 10^9 ms', () => {
    const { time, timer } = setup();
    const task = new RecordingTask(1_000_000_000, time);
    timer.add(task);
    time.advance(999_999_999);
    expect(task.ranAt).toEqual([]);
    time.advance(1);
    expect(task.ranAt).toEqual([1_000_000_000]);
  });

  it('rounds a fractional delay up so the task is never early', () => {
    const { time, timer } = setup();
    const task = new RecordingTask(1.2, time);
    timer.add(task);
    time.advance(1);
    expect(task.ranAt).toEqual([]);
    time.advance(1);
    expect(task.ranAt).toEqual([2]);
  });

  it('drops every task on shutdown and refuses new ones', () => {
    const { time, timer } = setup();
    const task = new RecordingTask(10, time);
    timer.add(task);
    timer.shutdown();
    expect(timer.size).toBe(0);
    expect(task.isPending).toBe(false);
    time.advance(100);
    expect(task.ranAt).toEqual([]);
    expect(() => timer.add(new RecordingTask(1, time))).toThrow(/after shutdown/);
    timer.shutdown(); // idempotent
  });

  it('rejects NaN, infinite and out-of-range delays, and invalid wheel settings', () => {
    const { time, timer } = setup();
    expect(() => timer.add(new RecordingTask(NaN, time))).toThrow(RangeError);
    expect(() => timer.add(new RecordingTask(Infinity, time))).toThrow(RangeError);
    expect(() => timer.add(new RecordingTask(2 ** 60, time))).toThrow(RangeError);
    expect(timer.size).toBe(0);
    expect(() => new SystemTimer({ time, tickMs: 0 })).toThrow(/tickMs/);
    expect(() => new SystemTimer({ time, wheelSize: 1 })).toThrow(/wheelSize/);
  });

  it('honours a coarser tick: tasks run never early and within one tick of their deadline', () => {
    const time = new ManualTime();
    const timer = new SystemTimer({ time, tickMs: 10, wheelSize: 8 });
    const tasks = [15, 79, 80, 81, 1_234].map((d) => new RecordingTask(d, time));
    for (const t of tasks) timer.add(t);
    for (let i = 0; i < 1_300; i++) time.advance(1);
    for (const t of tasks) {
      expect(t.ranAt).toHaveLength(1);
      expect(t.ranAt[0]).toBeGreaterThanOrEqual(t.delayMs);
      expect(t.ranAt[0]).toBeLessThan(t.delayMs + 10);
    }
  });
});

describe('SystemTimer on the real clock', () => {
  it('does not keep the process alive and releases its timeout on shutdown', () => {
    const timer = new SystemTimer();
    let ran = false;
    timer.add(
      new (class extends TimerTask {
        run() {
          ran = true;
        }
      })(60_000),
    );
    expect(timer.size).toBe(1);
    timer.shutdown();
    expect(timer.size).toBe(0);
    expect(ran).toBe(false);
  });

  it('keeps running later tasks after a task threw from its event-loop timeout', async () => {
    const errors: unknown[] = [];
    const timer = new SystemTimer({ onTaskError: (e) => errors.push(e) });
    const ran = await new Promise<boolean>((resolve) => {
      timer.add(
        new (class extends TimerTask {
          run() {
            throw new Error('boom');
          }
        })(1),
      );
      timer.add(
        new (class extends TimerTask {
          run() {
            resolve(true);
          }
        })(5),
      );
    });
    expect(ran).toBe(true);
    expect(errors).toHaveLength(1);
    timer.shutdown();
  });

  it('runs a short task from its own event-loop timeout', async () => {
    const timer = new SystemTimer();
    const ran = await new Promise<boolean>((resolve) => {
      timer.add(
        new (class extends TimerTask {
          run() {
            resolve(true);
          }
        })(1),
      );
    });
    expect(ran).toBe(true);
    timer.shutdown();
  });
});
