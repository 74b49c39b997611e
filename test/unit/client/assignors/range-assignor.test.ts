import { rangeAssign, RANGE_ASSIGNOR } from '../../../../src/client/assignors';
import { member, readable, topics } from './assignor-fixtures';

describe('rangeAssign', () => {
  it('gives each member a contiguous range per topic, the first members one extra (Kafka example)', () => {
    const result = rangeAssign(
      [member('C1', ['t0', 't1']), member('C0', ['t0', 't1'])],
      topics({ t0: 3, t1: 3 }),
    );
    expect(readable(result)).toEqual({ C0: ['t0-0', 't0-1', 't1-0', 't1-1'], C1: ['t0-2', 't1-2'] });
  });

  it('splits each topic only among the members subscribed to it', () => {
    const result = rangeAssign(
      [member('a', ['t0']), member('b', ['t0', 't1']), member('c', ['t1'])],
      topics({ t0: 3, t1: 2 }),
    );
    expect(readable(result)).toEqual({ a: ['t0-0', 't0-1'], b: ['t0-2', 't1-0'], c: ['t1-1'] });
  });

  it('lists a member that gets nothing with an empty list, and skips topics without partition counts', () => {
    const result = rangeAssign([member('a', ['t0', 'gone']), member('b', ['t0'])], topics({ t0: 1 }));
    expect(readable(result)).toEqual({ a: ['t0-0'], b: [] });
  });

  it('orders static members by instance id, so a restarted static member keeps its range', () => {
    const before = rangeAssign(
      [member('m-9', ['t'], { groupInstanceId: 'i-1' }), member('m-1', ['t'], { groupInstanceId: 'i-2' })],
      topics({ t: 4 }),
    );
    const after = rangeAssign(
      [member('m-0', ['t'], { groupInstanceId: 'i-1' }), member('m-1', ['t'], { groupInstanceId: 'i-2' })],
      topics({ t: 4 }),
    );
    expect(readable(before)['m-9']).toEqual(['t-0', 't-1']);
    expect(readable(after)['m-0']).toEqual(['t-0', 't-1']);
  });

  it('rejects a member id listed twice', () => {
    expect(() => rangeAssign([member('a', ['t']), member('a', ['t'])], topics({ t: 1 }))).toThrow(/twice/);
  });

  it('is the eager protocol named range', () => {
    expect(RANGE_ASSIGNOR).toMatchObject({ name: 'range', rebalanceProtocol: 'eager' });
  });
});
