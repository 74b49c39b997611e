import { ManualTime, TurnBudget } from '../../../src/time';

describe('TurnBudget', () => {
  test('a step is spent once it has run maxMs on the clock, and the next step starts after the pause', async () => {
    const time = new ManualTime();
    let pauses = 0;
    const budget = new TurnBudget(time, { maxMs: 10, maxUnits: 1_000, pause: async () => void pauses++ });
    time.advance(9);
    expect(budget.isSpent()).toBe(false);
    time.advance(1);
    expect(budget.isSpent()).toBe(true);
    await budget.nextStep();
    expect([pauses, budget.steps]).toEqual([1, 1]);
    // The new step measures from its own start, not the first one's.
    time.advance(9);
    expect(budget.isSpent()).toBe(false);
  });

  test('on a clock that does not move, maxUnits ends a step and the next starts with none spent', async () => {
    const budget = new TurnBudget(new ManualTime(), { maxUnits: 3, pause: async () => undefined });
    budget.spend(2);
    expect(budget.isSpent()).toBe(false);
    budget.spend(1);
    expect(budget.isSpent()).toBe(true);
    await budget.nextStep();
    expect(budget.isSpent()).toBe(false);
  });

  test('refuses bounds that could never end a step or would end every one at once', () => {
    const time = new ManualTime();
    expect(() => new TurnBudget(time, { maxUnits: 0 })).toThrow(RangeError);
    expect(() => new TurnBudget(time, { maxMs: -1, maxUnits: 1 })).toThrow(RangeError);
    expect(() => new TurnBudget(time, { maxMs: Number.NaN, maxUnits: 1 })).toThrow(RangeError);
  });
});
