import { CohortError, ErrorCode } from '../../../src/errors';
import {
  assertLegalTransition,
  GROUP_STATES,
  isLegalTransition,
  parseGroupState,
  type GroupState,
} from '../../../src/group/group-state';

/** Kafka's table (ClassicGroupState.validPreviousStates), written out independently of the code under test. */
const LEGAL: ReadonlyArray<[GroupState, GroupState]> = [
  ['PreparingRebalance', 'Empty'],
  ['Stable', 'PreparingRebalance'],
  ['CompletingRebalance', 'PreparingRebalance'],
  ['Empty', 'PreparingRebalance'],
  ['PreparingRebalance', 'CompletingRebalance'],
  ['CompletingRebalance', 'Stable'],
  ['Stable', 'Dead'],
  ['PreparingRebalance', 'Dead'],
  ['CompletingRebalance', 'Dead'],
  ['Empty', 'Dead'],
  ['Dead', 'Dead'],
];

describe('group state transitions', () => {
  test('exactly the transitions Kafka allows are legal', () => {
    for (const from of GROUP_STATES) {
      for (const to of GROUP_STATES) {
        const expected = LEGAL.some(([f, t]) => f === from && t === to);
        expect([from, to, isLegalTransition(from, to)]).toEqual([from, to, expected]);
      }
    }
  });

  test('an illegal transition throws a CohortError naming the group and both states', () => {
    expect(() => assertLegalTransition('g1', 'Stable', 'Empty')).toThrow(CohortError);
    try {
      assertLegalTransition('g1', 'Dead', 'Stable');
    } catch (error) {
      expect(error).toMatchObject({ code: ErrorCode.UNKNOWN_SERVER_ERROR });
      expect((error as Error).message).toMatch(/g1.*Stable.*Dead/);
    }
    expect(() => assertLegalTransition('g1', 'Empty', 'PreparingRebalance')).not.toThrow();
  });

  test('state names parse case-insensitively; anything else is not a state', () => {
    expect(parseGroupState('stable')).toBe('Stable');
    expect(parseGroupState('PREPARINGREBALANCE')).toBe('PreparingRebalance');
    expect(parseGroupState('Rebalancing')).toBeUndefined();
  });
});
