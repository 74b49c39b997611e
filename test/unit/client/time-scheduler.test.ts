import { TimeScheduler } from '../../../src/client/time-scheduler';
import { ManualTime } from '../../../src/time';

describe('TimeScheduler on a ManualTime', () => {
  it('runs tasks when the clock reaches them, in deadline order, ties in the order scheduled', () => {
    const time = new ManualTime();
    const scheduler = new TimeScheduler(time);
    const ran: string[] = [];
    scheduler.schedule(20, () => ran.push('b'));
    scheduler.schedule(10, () => ran.push('a'));
    scheduler.schedule(20, () => ran.push('c'));
    time.advance(9);
    expect(ran).toEqual([]);
    time.advance(11);
    expect(ran).toEqual(['a', 'b', 'c']);
    expect(scheduler.size).toBe(0);
  });

  it('never runs a task inside schedule, even with no delay', () => {
    const time = new ManualTime();
    const scheduler = new TimeScheduler(time);
    let ran = false;
    const task = scheduler.schedule(0, () => (ran = true));
    expect(ran).toBe(false);
    expect(task.isPending).toBe(true);
    time.advance(0);
    expect(ran).toBe(true);
    expect(task.isPending).toBe(false);
  });

  it('runs a task scheduled by a running task in the same advance when it is already due', () => {
    const time = new ManualTime();
    const scheduler = new TimeScheduler(time);
    const ran: number[] = [];
    scheduler.schedule(5, () => {
      ran.push(time.monotonicMs());
      scheduler.schedule(0, () => ran.push(-1));
      scheduler.schedule(100, () => ran.push(-2));
    });
    time.advance(50);
    expect(ran).toEqual([50, -1]);
  });

  it('does not run cancelled tasks, and shutdown cancels everything', () => {
    const time = new ManualTime();
    const scheduler = new TimeScheduler(time);
    let runs = 0;
    const a = scheduler.schedule(1, () => runs++);
    scheduler.schedule(2, () => runs++);
    a.cancel();
    a.cancel();
    expect(a.isPending).toBe(false);
    scheduler.shutdown();
    time.advance(10);
    expect(runs).toBe(0);
  });

  it('rejects negative and NaN delays', () => {
    const scheduler = new TimeScheduler(new ManualTime());
    expect(() => scheduler.schedule(-1, () => {})).toThrow(RangeError);
    expect(() => scheduler.schedule(NaN, () => {})).toThrow(RangeError);
  });
});

describe('TimeScheduler on the system clock', () => {
  it('uses one timeout per task and clears them on shutdown', () => {
    const scheduler = new TimeScheduler({ monotonicMs: () => 0, nowMs: () => 0 });
    let ran = false;
    const task = scheduler.schedule(60_000, () => (ran = true));
    expect(task.isPending).toBe(true);
    expect(scheduler.size).toBe(1);
    scheduler.shutdown();
    expect(task.isPending).toBe(false);
    expect(scheduler.size).toBe(0);
    expect(ran).toBe(false);
  });
});
