import { ManualTime, RunningManualTime } from '../../../src/time';
import { SystemTimer, TimerTask } from '../../../src/timer';

/** The wall clock the running clock follows, moved by the test instead of by sleeping. */
function fakeWall(startMonotonicMs = 1_000) {
  return new ManualTime(startMonotonicMs, 1_700_000_000_000);
}

class CountingTask extends TimerTask {
  readonly ranAt: number[] = [];
  constructor(
    delayMs: number,
    private readonly time: RunningManualTime,
  ) {
    super(delayMs);
  }
  run(): void {
    this.ranAt.push(this.time.monotonicMs());
  }
}

describe('RunningManualTime', () => {
  it('follows its source, both the monotonic and the wall reading', () => {
    const wall = fakeWall();
    const time = new RunningManualTime(wall);
    expect(time.monotonicMs()).toBe(1_000);
    expect(time.nowMs()).toBe(1_700_000_000_000);
    wall.advance(250);
    expect(time.monotonicMs()).toBe(1_250);
    expect(time.nowMs()).toBe(1_700_000_000_250);
  });

  it('jumps ahead by exactly what advance is given, and keeps following the source afterwards', () => {
    const wall = fakeWall();
    const time = new RunningManualTime(wall);
    expect(time.advance(10_000)).toBe(11_000);
    expect(time.nowMs()).toBe(1_700_000_010_000);
    wall.advance(5);
    expect(time.monotonicMs()).toBe(11_005);
    expect(time.nowMs()).toBe(1_700_000_010_005);
  });

  it('refuses to move back or by a fraction', () => {
    const time = new RunningManualTime(fakeWall());
    expect(() => time.advance(-1)).toThrow(RangeError);
    expect(() => time.advance(1.5)).toThrow(RangeError);
    expect(time.monotonicMs()).toBe(1_000);
  });

  it('offers timers no onAdvance, so they keep arming real timeouts', () => {
    const time = new RunningManualTime(fakeWall());
    expect((time as { onAdvance?: unknown }).onAdvance).toBeUndefined();
    expect(typeof time.onJump).toBe('function');
  });
});

describe('SystemTimer on a running manual clock', () => {
  function setup() {
    const wall = fakeWall();
    const time = new RunningManualTime(wall);
    const timer = new SystemTimer({ time });
    return { wall, time, timer };
  }

  it('runs a task when wall time reaches its deadline, never before, and once', () => {
    const { wall, time, timer } = setup();
    const task = new CountingTask(500, time);
    timer.add(task);
    wall.advance(499);
    timer.advanceClock(); // what the armed timeout does when it fires
    expect(task.ranAt).toEqual([]);
    wall.advance(1);
    timer.advanceClock();
    expect(task.ranAt).toEqual([1_500]);
    wall.advance(1_000);
    timer.advanceClock();
    expect(task.ranAt).toEqual([1_500]);
    timer.shutdown();
  });

  it('runs a task inside advance when the jump passes its deadline, and never again on wall time', () => {
    const { wall, time, timer } = setup();
    const due = new CountingTask(10_000, time);
    const later = new CountingTask(30_000, time);
    timer.add(due);
    timer.add(later);
    time.advance(10_000);
    expect(due.ranAt).toEqual([11_000]);
    expect(later.ranAt).toEqual([]);
    // The timeout armed before the jump still fires, on wall time: it must not run the task again.
    wall.advance(10_000);
    timer.advanceClock();
    expect(due.ranAt).toEqual([11_000]);
    expect(later.ranAt).toEqual([]);
    wall.advance(10_000);
    timer.advanceClock();
    expect(later.ranAt).toEqual([31_000]);
    expect(timer.size).toBe(0);
    timer.shutdown();
  });

  it('measures a task added after a jump from the jumped clock', () => {
    const { wall, time, timer } = setup();
    time.advance(5_000);
    const task = new CountingTask(100, time);
    timer.add(task);
    wall.advance(99);
    timer.advanceClock();
    expect(task.ranAt).toEqual([]);
    wall.advance(1);
    timer.advanceClock();
    expect(task.ranAt).toEqual([6_100]);
    timer.shutdown();
  });

  it('runs a task that a jump made due even when the jump lands exactly on its deadline', () => {
    const { time, timer } = setup();
    const task = new CountingTask(300, time);
    timer.add(task);
    time.advance(299);
    expect(task.ranAt).toEqual([]);
    time.advance(1);
    expect(task.ranAt).toEqual([1_300]);
    time.advance(1_000);
    expect(task.ranAt).toEqual([1_300]);
    timer.shutdown();
  });

  it('stops hearing jumps once shut down', () => {
    const { time, timer } = setup();
    const task = new CountingTask(100, time);
    timer.add(task);
    timer.shutdown();
    time.advance(1_000);
    expect(task.ranAt).toEqual([]);
  });
});
