import type { BucketQueue } from './bucket-queue';
import type { TimerTask } from './timer-task';
import { TimerTaskList, type TaskCounter } from './timer-task-list';

/**
 * A hierarchical timing wheel (Varghese & Lauck; the structure of Kafka's TimingWheel).
 *
 * A simple wheel is a circular array of `wheelSize` buckets, each covering `tickMs` of time; the wheel
 * spans `interval = tickMs * wheelSize`. `currentTimeMs` is the start of the current tick. A task due at
 * `e` belongs in the bucket of virtual tick `floor(e / tickMs)`, slot `tick % wheelSize`. Adding and
 * removing are O(1); a bucket's tasks are all handled when the bucket's time comes.
 *
 * A task due beyond `currentTimeMs + interval` goes to an overflow wheel whose tick is this wheel's whole
 * interval (created lazily, one level at a time). When the clock reaches an overflow bucket, its tasks
 * are re-added from the top and fall into finer wheels ("cascade"), until they are due.
 *
 * Only buckets are queued (in a BucketQueue, by expiration), so the timer's queue holds at most the number
 * of buckets in use, however many tasks there are.
 *
 * Worked example (tickMs = 1, wheelSize = 20, start 0): level 0 covers [0, 20) in 1 ms buckets; level 1
 * covers [0, 400) in 20 ms buckets; level 2 covers [0, 8000) in 400 ms buckets. A task due at 450 goes to
 * level 2, bucket 400 (slot 1). At 400 that bucket expires; the clock advances to 400 in every wheel and
 * the task is re-added: 450 - 400 = 50 >= 20, so it lands in level 1's bucket 440. At 440 it is re-added
 * again into level 0's bucket 450, and at 450 it is due and runs. Never before 450: a bucket's expiration
 * is the start of its slot, and a task only counts as due once `expirationMs < currentTimeMs + tickMs`;
 * the timer rounds every future deadline up to a whole tick, so that means `expirationMs <= currentTimeMs`.
 *
 * The wheel is pure: it has no clock and runs nothing. `add` returns false for a task that is already due;
 * the caller runs it. `advanceClock(t)` may only be called with a `t` no bucket is still due before
 * (the timer advances to the expiration of each bucket it pops, or to "now" when nothing is due).
 */
export class TimingWheel {
  readonly interval: number;
  private readonly buckets: TimerTaskList[];
  private currentTimeMs: number;
  private overflowWheel: TimingWheel | null = null;

  constructor(
    readonly tickMs: number,
    readonly wheelSize: number,
    startMs: number,
    private readonly counter: TaskCounter,
    private readonly queue: BucketQueue,
  ) {
    this.interval = tickMs * wheelSize;
    this.currentTimeMs = startMs - (startMs % tickMs);
    this.buckets = new Array<TimerTaskList>(wheelSize);
    for (let i = 0; i < wheelSize; i++) this.buckets[i] = new TimerTaskList(counter);
  }

  /** The start of the current tick of this wheel. */
  get currentTime(): number {
    return this.currentTimeMs;
  }

  /** Places `task` by its `expirationMs`; false if it is already due (the caller must run it). */
  add(task: TimerTask): boolean {
    const expirationMs = task.expirationMs;
    if (expirationMs < this.currentTimeMs + this.tickMs) return false;
    // Climb to the first wheel whose span covers the deadline (a loop: this is the hot path of every add).
    // No overflow wheel can find the task due: its tick is the span of the wheel below.
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the climb starts at this wheel
    let wheel: TimingWheel = this;
    while (expirationMs >= wheel.currentTimeMs + wheel.interval) wheel = wheel.overflow();
    const virtualTick = Math.floor(expirationMs / wheel.tickMs);
    const bucket = wheel.buckets[virtualTick % wheel.wheelSize];
    bucket.add(task);
    // The bucket gets a new expiration only once it was flushed (or never used): queue it then. Each
    // bucket is therefore queued once per revolution, whatever number of tasks it holds.
    if (bucket.setExpiration(virtualTick * wheel.tickMs)) this.queue.push(bucket);
    return true;
  }

  /** Moves the wheel's (and its overflow wheels') current time forward to the tick containing `timeMs`. */
  advanceClock(timeMs: number): void {
    if (timeMs >= this.currentTimeMs + this.tickMs) {
      this.currentTimeMs = timeMs - (timeMs % this.tickMs);
      if (this.overflowWheel !== null) this.overflowWheel.advanceClock(this.currentTimeMs);
    }
  }

  private overflow(): TimingWheel {
    if (this.overflowWheel === null) {
      this.overflowWheel = new TimingWheel(
        this.interval,
        this.wheelSize,
        this.currentTimeMs,
        this.counter,
        this.queue,
      );
    }
    return this.overflowWheel;
  }
}
