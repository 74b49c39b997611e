import {
  cooperativeStickyAssign,
  COOPERATIVE_STICKY_ASSIGNOR,
  stickyAssign,
} from '../../../../src/client/assignors';
import { member, readable, topics } from './assignor-fixtures';

describe('cooperativeStickyAssign', () => {
  it('balances a fresh group within one partition', () => {
    const result = cooperativeStickyAssign(
      [member('a', ['t']), member('b', ['t']), member('c', ['t'])],
      topics({ t: 7 }),
    );
    expect(Object.values(readable(result)).map((l) => l.length)).toEqual([3, 2, 2]);
  });

  it('withholds partitions that change owner, then hands them out in the follow-up rebalance', () => {
    const owned = ['t-0', 't-1', 't-2', 't-3'];
    const first = cooperativeStickyAssign(
      [member('a', ['t'], { owned }), member('b', ['t'])],
      topics({ t: 4 }),
    );
    expect(readable(first)).toEqual({ a: ['t-0', 't-1'], b: [] });

    const second = cooperativeStickyAssign(
      [member('a', ['t'], { owned: ['t-0', 't-1'] }), member('b', ['t'])],
      topics({ t: 4 }),
    );
    expect(readable(second)).toEqual({ a: ['t-0', 't-1'], b: ['t-2', 't-3'] });
  });

  it('moves nothing when membership is unchanged', () => {
    const members = [
      member('a', ['t'], { owned: ['t-1', 't-4'], generationId: 3 }),
      member('b', ['t'], { owned: ['t-0', 't-3'], generationId: 3 }),
      member('c', ['t'], { owned: ['t-2'], generationId: 3 }),
    ];
    expect(readable(cooperativeStickyAssign(members, topics({ t: 5 })))).toEqual({
      a: ['t-1', 't-4'],
      b: ['t-0', 't-3'],
      c: ['t-2'],
    });
  });

  it('moves only the partitions of a member that left', () => {
    const members = [
      member('a', ['t'], { owned: ['t-0', 't-1'], generationId: 2 }),
      member('b', ['t'], { owned: ['t-2', 't-3'], generationId: 2 }),
    ];
    // c owned t-4 and t-5 and is gone; a and b keep theirs and split c's.
    expect(readable(cooperativeStickyAssign(members, topics({ t: 6 })))).toEqual({
      a: ['t-0', 't-1', 't-4'],
      b: ['t-2', 't-3', 't-5'],
    });
  });

  it('ignores claims from an older generation when placing, but still withholds them from others', () => {
    const members = [
      member('a', ['t'], { owned: ['t-0', 't-1'], generationId: 5 }),
      member('b', ['t'], { owned: ['t-0', 't-1', 't-2', 't-3'], generationId: 4 }),
    ];
    // The target gives b t-2 and t-3, which b (stale) still claims as its own: they are kept.
    expect(readable(stickyAssign(members, topics({ t: 4 })))).toEqual({
      a: ['t-0', 't-1'],
      b: ['t-2', 't-3'],
    });
    expect(readable(cooperativeStickyAssign(members, topics({ t: 4 })))).toEqual({
      a: [],
      b: ['t-2', 't-3'],
    });
  });

  it('drops claims on topics the member no longer subscribes to and on partitions that no longer exist', () => {
    const members = [member('a', ['t'], { owned: ['t-0', 't-9', 'old-0'] }), member('b', ['t', 'old'])];
    expect(readable(stickyAssign(members, topics({ t: 2, old: 1 })))).toEqual({
      a: ['t-0', 't-1'],
      b: ['old-0'],
    });
  });

  it('balances differing subscriptions so that no single move would even them out further', () => {
    const result = stickyAssign(
      [member('a', ['t0']), member('b', ['t0', 't1']), member('c', ['t1'])],
      topics({ t0: 4, t1: 4 }),
    );
    const counts = Object.values(readable(result)).map((l) => l.length);
    expect(counts.reduce((x, y) => x + y)).toBe(8);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  });

  it('is the cooperative protocol named cooperative-sticky', () => {
    expect(COOPERATIVE_STICKY_ASSIGNOR).toMatchObject({
      name: 'cooperative-sticky',
      rebalanceProtocol: 'cooperative',
    });
  });
});
