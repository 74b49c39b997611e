import { ManualTime } from '../../../src/time';
import { SystemTimer, TimerTask } from '../../../src/timer';
import { DelayedOperation, DelayedOperationPurgatory } from '../../../src/purgatory';

/** Completes once `completable` is set; records what happened to it. */
class MockDelayedOperation extends DelayedOperation {
  completable = false;
  completions = 0;
  expirations = 0;
  completedAtMs = -1;
  constructor(
    delayMs: number,
    private readonly time: ManualTime,
    private readonly whenComplete?: () => void,
  ) {
    super(delayMs);
  }
  tryComplete(): boolean {
    return this.completable ? this.forceComplete() : false;
  }
  onComplete(): void {
    this.completions++;
    this.completedAtMs = this.time.monotonicMs();
    this.whenComplete?.();
  }
  onExpiration(): void {
    this.expirations++;
  }
}

function setup(purgeInterval = 1_000) {
  const time = new ManualTime();
  const purgatory = new DelayedOperationPurgatory<MockDelayedOperation>(
    'mock',
    new SystemTimer({ time, name: 'mock' }),
    { purgeInterval },
  );
  return {
    time,
    purgatory,
    op: (delayMs: number, whenComplete?: () => void) => new MockDelayedOperation(delayMs, time, whenComplete),
  };
}

describe('DelayedOperationPurgatory', () => {
  it('completes a watched request when an event on its key makes it satisfiable', () => {
    const { purgatory, op } = setup();
    const r1 = op(100_000);
    const r2 = op(100_000);
    expect(purgatory.checkAndComplete('test1')).toBe(0);
    expect(purgatory.tryCompleteElseWatch(r1, ['test1'])).toBe(false);
    expect(purgatory.checkAndComplete('test1')).toBe(0);
    expect(purgatory.tryCompleteElseWatch(r2, ['test2'])).toBe(false);
    expect(purgatory.checkAndComplete('test2')).toBe(0);
    r1.completable = true;
    expect(purgatory.checkAndComplete('test1')).toBe(1);
    expect(purgatory.checkAndComplete('test1')).toBe(0);
    r2.completable = true;
    expect(purgatory.checkAndComplete('test2')).toBe(1);
    expect(purgatory.checkAndComplete('test2')).toBe(0);
    expect([r1.completions, r1.expirations, r2.completions, r2.expirations]).toEqual([1, 0, 1, 0]);
    expect(purgatory.numDelayed).toBe(0);
  });

  it('expires requests at their timeout, not before', () => {
    const { time, purgatory, op } = setup();
    const r1 = op(5);
    const r2 = op(10);
    purgatory.tryCompleteElseWatch(r1, ['test1']);
    purgatory.tryCompleteElseWatch(r2, ['test2']);
    time.advance(4);
    expect(r1.isCompleted).toBe(false);
    time.advance(1);
    expect([r1.isCompleted, r1.expirations, r1.completedAtMs]).toEqual([true, 1, 5]);
    expect(r2.isCompleted).toBe(false);
    time.advance(5);
    expect([r2.isCompleted, r2.expirations, r2.completedAtMs]).toEqual([true, 1, 10]);
    expect(purgatory.numDelayed).toBe(0);
  });

  it('completes at once, without watching or timing, a request that can complete now', () => {
    const { purgatory, op } = setup();
    const r = op(1_000);
    r.completable = true;
    expect(purgatory.tryCompleteElseWatch(r, ['a', 'b'])).toBe(true);
    expect([purgatory.watched, purgatory.numDelayed, r.completions]).toEqual([0, 0, 1]);
  });

  it('completes a request watched on several keys exactly once', () => {
    const { time, purgatory, op } = setup();
    const r = op(100);
    purgatory.tryCompleteElseWatch(r, ['a', 'b', 'c']);
    expect(purgatory.watched).toBe(3);
    r.completable = true;
    expect(purgatory.checkAndComplete('b')).toBe(1);
    expect(purgatory.checkAndComplete('a')).toBe(0);
    expect(purgatory.checkAndComplete('c')).toBe(0);
    time.advance(200);
    expect([r.completions, r.expirations]).toEqual([1, 0]);
    expect(purgatory.watched).toBe(0);
    expect(purgatory.watchedKeys).toBe(0);
  });

  it('does not expire a request that completed by event, and vice versa', () => {
    const { time, purgatory, op } = setup();
    const early = op(10);
    const late = op(10);
    purgatory.tryCompleteElseWatch(early, ['k']);
    purgatory.tryCompleteElseWatch(late, ['k']);
    early.completable = true;
    purgatory.checkAndComplete('k');
    time.advance(10);
    late.completable = true;
    expect(purgatory.checkAndComplete('k')).toBe(0);
    expect([early.completions, early.expirations, late.completions, late.expirations]).toEqual([1, 0, 1, 1]);
  });

  it('purges completed requests from the watcher lists of other keys', () => {
    const { purgatory, op } = setup(0);
    const r1 = op(100_000);
    const r2 = op(100_000);
    const r3 = op(100_000);
    purgatory.tryCompleteElseWatch(r1, ['test1']);
    purgatory.tryCompleteElseWatch(r2, ['test1', 'test2']);
    purgatory.tryCompleteElseWatch(r3, ['test1', 'test2', 'test3']);
    expect(purgatory.watched).toBe(6);
    expect(purgatory.numDelayed).toBe(3);
    r1.forceComplete();
    r2.forceComplete();
    r3.forceComplete();
    expect(purgatory.numDelayed).toBe(0);
    // The next call sees more completed-but-watched operations than the interval allows and purges.
    purgatory.checkAndComplete('unrelated');
    purgatory.tryCompleteElseWatch(op(100_000), ['test4']);
    expect(purgatory.watched).toBe(1);
    expect(purgatory.watchedKeys).toBe(1);
  });

  it('with many operations pending, purges only once the completed ones outnumber them', () => {
    const { purgatory, op } = setup(10);
    const pending = Array.from({ length: 100 }, () => op(100_000));
    pending.forEach((r, i) => purgatory.tryCompleteElseWatch(r, [`p${i % 7}`, 'shared']));
    const completed = Array.from({ length: 100 }, () => op(100_000));
    completed.forEach((r, i) => purgatory.tryCompleteElseWatch(r, [`c${i % 5}`, 'shared']));
    // 60 completed: more than purgeInterval (10), fewer than the 140 pending. Kafka would purge here and
    // visit all 400 entries to remove 120; cohort waits.
    completed.slice(0, 60).forEach((r) => r.forceComplete());
    purgatory.checkAndComplete('unrelated');
    expect(purgatory.watched).toBe(400);
    // 141 completed against 59 pending: the next calls purge every completed entry.
    pending.slice(0, 41).forEach((r) => r.forceComplete());
    completed.slice(60).forEach((r) => r.forceComplete());
    for (let i = 0; i < 5; i++) purgatory.checkAndComplete('unrelated');
    expect(purgatory.numDelayed).toBe(59);
    expect(purgatory.watched).toBe(59 * 2);
  });

  it('bounds the work of one purge step and finishes the purge over later calls', () => {
    const small = new DelayedOperationPurgatory<MockDelayedOperation>(
      'small',
      new SystemTimer({ time: new ManualTime() }),
      { purgeInterval: 0, purgeWorkPerCall: 10 },
    );
    const time2 = new ManualTime();
    const many = Array.from({ length: 50 }, () => new MockDelayedOperation(100_000, time2));
    many.forEach((r, i) => small.tryCompleteElseWatch(r, [`k${i}`]));
    many.forEach((r) => r.forceComplete());
    const watchedBefore = small.watched;
    small.checkAndComplete('none');
    const afterOneStep = small.watched;
    expect(afterOneStep).toBeLessThan(watchedBefore);
    expect(afterOneStep).toBeGreaterThan(0);
    for (let i = 0; i < 10; i++) small.checkAndComplete('none');
    expect(small.watched).toBe(0);
    expect(small.watchedKeys).toBe(0);
  });

  it('cancels the requests of a key, returning them uncompleted with their timers stopped', () => {
    const { time, purgatory, op } = setup();
    const r1 = op(100);
    const r2 = op(100);
    purgatory.tryCompleteElseWatch(r1, ['key']);
    purgatory.tryCompleteElseWatch(r2, ['key']);
    const cancelled = purgatory.cancelForKey('key');
    expect(cancelled).toEqual([r1, r2]);
    expect(purgatory.numDelayed).toBe(0);
    time.advance(1_000);
    expect([r1.completions, r2.completions]).toEqual([0, 0]);
    expect(purgatory.cancelForKey('nonexistent')).toEqual([]);
  });

  it('lets onComplete re-enter checkAndComplete on the same key', () => {
    const { purgatory, op } = setup();
    const second = op(1_000);
    const first = op(1_000, () => {
      second.completable = true;
      purgatory.checkAndComplete('k');
    });
    purgatory.tryCompleteElseWatch(first, ['k']);
    purgatory.tryCompleteElseWatch(second, ['k']);
    first.completable = true;
    expect(purgatory.checkAndComplete('k')).toBe(1);
    expect([first.completions, second.completions]).toEqual([1, 1]);
    expect(purgatory.watched).toBe(0);
    expect(purgatory.numDelayed).toBe(0);
  });

  it('lets onComplete watch a new request on the same key, which stays watched and timed', () => {
    const { time, purgatory, op } = setup();
    const next = op(50);
    const first = op(1_000, () => purgatory.tryCompleteElseWatch(next, ['k']));
    purgatory.tryCompleteElseWatch(first, ['k']);
    first.completable = true;
    purgatory.checkAndComplete('k');
    expect(next.isCompleted).toBe(false);
    expect(purgatory.watched).toBe(1);
    next.completable = true;
    expect(purgatory.checkAndComplete('k')).toBe(1);
    time.advance(100);
    expect([next.completions, next.expirations]).toEqual([1, 0]);
  });

  it.each([
    ['the event runs first', true, [1, 0]],
    ['the expiry runs first', false, [1, 1]],
  ])(
    'completes a request once when an event and its expiry fall due together (%s)',
    (_, eventFirst, outcome) => {
      const time = new ManualTime();
      const timer = new SystemTimer({ time });
      const purgatory = new DelayedOperationPurgatory<MockDelayedOperation>('race', timer);
      const r = new MockDelayedOperation(10, time);
      const event = new (class extends TimerTask {
        run() {
          r.completable = true;
          purgatory.checkAndComplete('k');
        }
      })(10);
      if (eventFirst) timer.add(event);
      purgatory.tryCompleteElseWatch(r, ['k']);
      if (!eventFirst) timer.add(event);
      time.advance(10);
      expect([r.completions, r.expirations]).toEqual(outcome);
    },
  );

  it('expires a request with a zero timeout as soon as it is watched', () => {
    const { purgatory, op } = setup();
    const r = op(0);
    expect(purgatory.tryCompleteElseWatch(r, ['k'])).toBe(false);
    expect([r.completions, r.expirations]).toEqual([1, 1]);
    expect(purgatory.numDelayed).toBe(0);
  });

  it('stops its timer on shutdown and refuses new requests', () => {
    const { time, purgatory, op } = setup();
    const r = op(10);
    purgatory.tryCompleteElseWatch(r, ['k']);
    purgatory.shutdown();
    time.advance(100);
    expect(r.completions).toBe(0);
    expect(purgatory.numDelayed).toBe(0);
    expect(() => purgatory.tryCompleteElseWatch(op(10), ['k'])).toThrow(/shut down/);
  });
});

describe('DelayedOperationPurgatory argument checks', () => {
  it('refuses an infinite timeout before watching anything', () => {
    const time = new ManualTime();
    const purgatory = new DelayedOperationPurgatory<MockDelayedOperation>('p', new SystemTimer({ time }));
    expect(() => purgatory.tryCompleteElseWatch(new MockDelayedOperation(Infinity, time), ['k'])).toThrow(
      RangeError,
    );
    expect([purgatory.watched, purgatory.watchedKeys, purgatory.numDelayed]).toEqual([0, 0, 0]);
  });

  it('returns an operation watched twice on a key once from cancelForKey', () => {
    const time = new ManualTime();
    const purgatory = new DelayedOperationPurgatory<MockDelayedOperation>('p', new SystemTimer({ time }));
    const r = new MockDelayedOperation(100, time);
    purgatory.tryCompleteElseWatch(r, ['k', 'k']);
    expect(purgatory.cancelForKey('k')).toEqual([r]);
    expect(purgatory.watched).toBe(0);
  });
});
