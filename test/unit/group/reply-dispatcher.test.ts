import { ReplyDispatcher } from '../../../src/group/reply-dispatcher';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('ReplyDispatcher', () => {
  test('replies within the slice are delivered synchronously', () => {
    const dispatcher = new ReplyDispatcher(3);
    const got: number[] = [];
    for (let i = 0; i < 3; i++) dispatcher.deliver((v: number) => got.push(v), i);
    expect(got).toEqual([0, 1, 2]);
  });

  test('replies beyond the slice wait for later turns, a slice per turn, in order', async () => {
    const dispatcher = new ReplyDispatcher(3);
    const got: number[] = [];
    for (let i = 0; i < 8; i++) dispatcher.deliver((v: number) => got.push(v), i);
    expect(got).toEqual([0, 1, 2]);
    expect(dispatcher.queued).toBe(5);
    await turn();
    expect(got).toEqual([0, 1, 2, 3, 4, 5]);
    await turn();
    expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(dispatcher.queued).toBe(0);
  });

  test('a reply never overtakes one queued before it', async () => {
    const dispatcher = new ReplyDispatcher(2);
    const got: number[] = [];
    for (let i = 0; i < 3; i++) dispatcher.deliver((v: number) => got.push(v), i);
    await turn(); // delivers 2; the budget of this turn now has room
    dispatcher.deliver((v: number) => got.push(v), 3);
    await turn();
    expect(got).toEqual([0, 1, 2, 3]);
  });

  test('the budget is renewed each turn', async () => {
    const dispatcher = new ReplyDispatcher(2);
    const got: number[] = [];
    dispatcher.deliver((v: number) => got.push(v), 0);
    dispatcher.deliver((v: number) => got.push(v), 1);
    await turn();
    await turn();
    dispatcher.deliver((v: number) => got.push(v), 2);
    expect(got).toEqual([0, 1, 2]);
  });

  test('flush delivers everything queued at once', () => {
    const dispatcher = new ReplyDispatcher(1);
    const got: number[] = [];
    for (let i = 0; i < 5; i++) dispatcher.deliver((v: number) => got.push(v), i);
    dispatcher.flush();
    expect(got).toEqual([0, 1, 2, 3, 4]);
  });

  test('a slice size that is not a positive integer is refused', () => {
    expect(() => new ReplyDispatcher(0)).toThrow(RangeError);
    expect(() => new ReplyDispatcher(1.5)).toThrow(RangeError);
  });
});
