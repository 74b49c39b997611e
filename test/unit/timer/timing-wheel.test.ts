import { BucketQueue, TimerTask, TimerTaskList, TimingWheel, type TaskCounter } from '../../../src/timer';

class NoopTask extends TimerTask {
  run(): void {}
}

function task(expirationMs: number): NoopTask {
  const t = new NoopTask(0);
  t.expirationMs = expirationMs;
  return t;
}

describe('TimingWheel', () => {
  function wheel(startMs = 0) {
    const counter: TaskCounter = { value: 0 };
    const queue = new BucketQueue();
    return { counter, queue, wheel: new TimingWheel(1, 20, startMs, counter, queue) };
  }

  it('refuses a task that is due in the current tick, so the caller runs it', () => {
    const { wheel: w, counter } = wheel(100);
    expect(w.add(task(100))).toBe(false);
    expect(w.add(task(50))).toBe(false);
    expect(counter.value).toBe(0);
  });

  it('queues one bucket per slot, however many tasks share it', () => {
    const { wheel: w, queue, counter } = wheel();
    for (let i = 0; i < 5; i++) expect(w.add(task(7))).toBe(true);
    expect(counter.value).toBe(5);
    expect(queue.size).toBe(1);
    expect(queue.peekExpirationMs()).toBe(7);
  });

  it('puts a task beyond its interval into an overflow wheel bucket at the coarser slot start', () => {
    const { wheel: w, queue } = wheel();
    w.add(task(450));
    // level 0 spans 20 ms, level 1 400 ms: 450 lands in level 2, bucket 400.
    expect(queue.peekExpirationMs()).toBe(400);
  });

  it('cascades: after the clock reaches a coarse bucket, its task lands in a finer one', () => {
    const { wheel: w, queue } = wheel();
    const t = task(450);
    w.add(t);
    const coarse = queue.pop()!;
    w.advanceClock(coarse.expirationMs);
    const reinserted: TimerTask[] = [];
    coarse.flush((x) => reinserted.push(x));
    expect(reinserted).toEqual([t]);
    expect(w.add(t)).toBe(true);
    expect(queue.peekExpirationMs()).toBe(440);
    w.advanceClock(queue.pop()!.expirationMs);
    expect(w.add(t)).toBe(true);
    expect(queue.peekExpirationMs()).toBe(450);
  });

  it('aligns its current time to the tick', () => {
    const counter: TaskCounter = { value: 0 };
    const w = new TimingWheel(10, 8, 1_234, counter, new BucketQueue());
    expect(w.currentTime).toBe(1_230);
    w.advanceClock(1_239);
    expect(w.currentTime).toBe(1_230);
    w.advanceClock(1_240);
    expect(w.currentTime).toBe(1_240);
  });
});

describe('BucketQueue', () => {
  it('pops buckets in expiration order', () => {
    const counter: TaskCounter = { value: 0 };
    const queue = new BucketQueue();
    const expirations = [50, 3, 99, 3, 17, 0, 1_000, 42];
    for (const e of expirations) {
      const b = new TimerTaskList(counter);
      b.setExpiration(e);
      queue.push(b);
    }
    const popped: number[] = [];
    for (let b = queue.pop(); b; b = queue.pop()) popped.push(b.expirationMs);
    expect(popped).toEqual([...expirations].sort((a, b) => a - b));
    expect(queue.peekExpirationMs()).toBe(Infinity);
  });
});
