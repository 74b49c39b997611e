import { ParkedCall } from '../../../src/group/parked-call';
import { ReplyDispatcher } from '../../../src/group/reply-dispatcher';

const dispatcher = new ReplyDispatcher(1000);

describe('ParkedCall', () => {
  test('is answered exactly once: later answers are ignored', async () => {
    const call = new ParkedCall<string>(dispatcher, undefined, undefined);
    expect(call.complete('first')).toBe(true);
    expect(call.complete('second')).toBe(false);
    expect(call.isDone).toBe(true);
    await expect(call.promise).resolves.toBe('first');
  });

  test('settles with the aborted response when its signal aborts, and drops the real answer', async () => {
    const controller = new AbortController();
    const call = new ParkedCall<string>(dispatcher, controller.signal, 'gone');
    controller.abort();
    expect(call.isDone).toBe(true);
    expect(call.complete('late')).toBe(false);
    await expect(call.promise).resolves.toBe('gone');
  });

  test('stops listening to its signal once answered', async () => {
    const controller = new AbortController();
    const call = new ParkedCall<string>(dispatcher, controller.signal, 'gone');
    call.complete('answer');
    controller.abort();
    await expect(call.promise).resolves.toBe('answer');
  });

  test('a signal aborted before the call was parked settles it at once', async () => {
    const controller = new AbortController();
    controller.abort();
    const call = new ParkedCall<string>(dispatcher, controller.signal, 'gone');
    expect(call.isDone).toBe(true);
    await expect(call.promise).resolves.toBe('gone');
  });
});
