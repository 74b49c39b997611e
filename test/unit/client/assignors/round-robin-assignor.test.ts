import { roundRobinAssign, ROUND_ROBIN_ASSIGNOR } from '../../../../src/client/assignors';
import { member, readable, topics } from './assignor-fixtures';

describe('roundRobinAssign', () => {
  it('deals partitions in turn over members with identical subscriptions (Kafka example)', () => {
    const result = roundRobinAssign(
      [member('C0', ['t0', 't1']), member('C1', ['t0', 't1'])],
      topics({ t0: 3, t1: 3 }),
    );
    expect(readable(result)).toEqual({ C0: ['t0-0', 't0-2', 't1-1'], C1: ['t0-1', 't1-0', 't1-2'] });
  });

  it('skips members not subscribed to a topic (Kafka example with differing subscriptions)', () => {
    const result = roundRobinAssign(
      [member('C0', ['t0']), member('C1', ['t0', 't1']), member('C2', ['t0', 't1', 't2'])],
      topics({ t0: 1, t1: 2, t2: 3 }),
    );
    expect(readable(result)).toEqual({
      C0: ['t0-0'],
      C1: ['t1-0'],
      C2: ['t1-1', 't2-0', 't2-1', 't2-2'],
    });
  });

  it('returns an empty map for no members', () => {
    expect(roundRobinAssign([], topics({ t: 3 })).size).toBe(0);
  });

  it('is the eager protocol named roundrobin', () => {
    expect(ROUND_ROBIN_ASSIGNOR).toMatchObject({ name: 'roundrobin', rebalanceProtocol: 'eager' });
  });
});
