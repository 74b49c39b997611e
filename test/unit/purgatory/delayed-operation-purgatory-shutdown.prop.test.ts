import fc from 'fast-check';
import { ManualTime } from '../../../src/time';
import { SystemTimer } from '../../../src/timer';
import { DelayedOperation, DelayedOperationPurgatory } from '../../../src/purgatory';

/**
 * Shutting a purgatory down from inside an onComplete (a coordinator that stops when a request completes,
 * or a server shutting down from a callback): once `shutdown` returns, nothing more completes, `watched`
 * and `numDelayed` are 0 and stay 0 (never negative), whatever loop over the watchers or the timer's due
 * list was running when the callback fired.
 */

class Op extends DelayedOperation {
  completable = false;
  constructor(
    delayMs: number,
    private readonly onDone: (op: Op) => void,
  ) {
    super(delayMs);
  }
  tryComplete(): boolean {
    return this.completable ? this.forceComplete() : false;
  }
  onComplete(): void {
    this.onDone(this);
  }
  onExpiration(): void {}
}

const KEYS = ['a', 'b'];

interface Case {
  ops: { keys: string[]; timeoutMs: number; completable: boolean }[];
  /** The op whose onComplete shuts the purgatory down. */
  stopper: number;
  steps: ({ kind: 'check'; key: string } | { kind: 'advance'; ms: number })[];
}

const testCase: fc.Arbitrary<Case> = fc.record({
  ops: fc.array(
    fc.record({
      keys: fc.subarray(KEYS, { minLength: 1 }),
      timeoutMs: fc.integer({ min: 1, max: 10 }),
      completable: fc.boolean(),
    }),
    { minLength: 1, maxLength: 6 },
  ),
  stopper: fc.nat(5),
  steps: fc.array(
    fc.oneof(
      fc.record({ kind: fc.constant('check' as const), key: fc.constantFrom(...KEYS) }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 6 }) }),
    ),
    { minLength: 1, maxLength: 6 },
  ),
});

describe('DelayedOperationPurgatory shut down from inside onComplete', () => {
  it('completes nothing more and keeps watched at 0 once shutdown returns', () => {
    fc.assert(
      fc.property(testCase, (c) => {
        const time = new ManualTime();
        const purgatory = new DelayedOperationPurgatory<Op>('p', new SystemTimer({ time }));
        const stopper = c.stopper % c.ops.length;
        let isShutdown = false;
        const completedAfterShutdown: number[] = [];
        const ops = c.ops.map(
          (spec, i) =>
            new Op(spec.timeoutMs, () => {
              if (isShutdown) completedAfterShutdown.push(i);
              if (i === stopper) {
                purgatory.shutdown();
                isShutdown = true;
              }
            }),
        );
        // Watch everything first, then make the chosen ones completable, so checks find them waiting.
        c.ops.forEach((spec, i) => purgatory.tryCompleteElseWatch(ops[i], spec.keys));
        c.ops.forEach((spec, i) => (ops[i].completable = spec.completable));
        for (const s of c.steps) {
          if (s.kind === 'check') purgatory.checkAndComplete(s.key);
          else time.advance(s.ms);
          expect(purgatory.watched).toBeGreaterThanOrEqual(0);
          if (isShutdown) {
            expect(completedAfterShutdown).toEqual([]);
            expect({ watched: purgatory.watched, numDelayed: purgatory.numDelayed }).toEqual({
              watched: 0,
              numDelayed: 0,
            });
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
