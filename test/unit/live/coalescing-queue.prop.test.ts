import fc from 'fast-check';
import { CoalescingQueue } from '../../../src/live/coalescing-queue';

/**
 * CoalescingQueue against a model (a list of [key, item] in the order keys began to wait): whatever is put,
 * it holds at most one item per key, the newest (merged with what it replaced), and gives them back oldest
 * key first.
 */

type Operation = { readonly put: [string, number] } | { readonly shift: true };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ put: fc.tuple(fc.constantFrom('a', 'b', 'c', 'd'), fc.nat(99)) }) },
  { weight: 1, arbitrary: fc.constant({ shift: true as const }) },
);

test('holds the newest item of each key, at most one per key, oldest key first (property)', () => {
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 200 }), (operations) => {
      // Merge keeps a trace of what coalesced, as the watch keeps isSnapshot.
      const queue = new CoalescingQueue<number[]>((older, newer) => [...older, ...newer]);
      const model: [string, number[]][] = [];
      for (const op of operations) {
        if ('put' in op) {
          const [key, value] = op.put;
          queue.put(key, [value]);
          const waiting = model.find(([k]) => k === key);
          if (waiting === undefined) model.push([key, [value]]);
          else waiting[1] = [...waiting[1], value];
        } else {
          expect(queue.shift()).toEqual(model.shift()?.[1]);
        }
        expect(queue.size).toBe(model.length);
        expect(queue.size).toBeLessThanOrEqual(4);
      }
    }),
  );
});

test('by default a newer item replaces the waiting one in its place', () => {
  const queue = new CoalescingQueue<string>();
  queue.put('a', 'a1');
  queue.put('b', 'b1');
  queue.put('a', 'a2');
  expect([queue.shift(), queue.shift(), queue.shift()]).toEqual(['a2', 'b1', undefined]);
});
