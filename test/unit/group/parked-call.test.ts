import { ParkedCall } from '../../../src/group/parked-call';
import { ReplyDispatcher } from '../../../src/group/reply-dispatcher';
import { cancelOn } from '../../support/cancel-on';

const dispatcher = new ReplyDispatcher(1000);

/** A caller whose cancel listeners can be counted. */
function countingCaller(): { onCancel(listener: () => void): () => void; cancel(): void; listeners: number } {
  const listeners = new Set<() => void>();
  return {
    onCancel(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    cancel: () => [...listeners].forEach((listener) => listener()),
    get listeners() {
      return listeners.size;
    },
  };
}

describe('ParkedCall', () => {
  test('is answered exactly once: later answers are ignored', async () => {
    const call = new ParkedCall<string>(dispatcher, undefined, undefined);
    expect(call.complete('first')).toBe(true);
    expect(call.complete('second')).toBe(false);
    expect(call.isDone).toBe(true);
    await expect(call.promise).resolves.toBe('first');
  });

  test('settles with the aborted response when its caller goes away, and drops the real answer', async () => {
    const controller = new AbortController();
    const call = new ParkedCall<string>(dispatcher, cancelOn(controller.signal), 'gone');
    controller.abort();
    expect(call.isDone).toBe(true);
    expect(call.complete('late')).toBe(false);
    await expect(call.promise).resolves.toBe('gone');
  });

  test('unregisters its cancel listener once answered, and once cancelled', async () => {
    const answered = countingCaller();
    const call = new ParkedCall<string>(dispatcher, answered, 'gone');
    expect(answered.listeners).toBe(1);
    call.complete('answer');
    expect(answered.listeners).toBe(0);
    answered.cancel();
    await expect(call.promise).resolves.toBe('answer');

    const cancelled = countingCaller();
    const dropped = new ParkedCall<string>(dispatcher, cancelled, 'gone');
    cancelled.cancel();
    expect(cancelled.listeners).toBe(0);
    await expect(dropped.promise).resolves.toBe('gone');
  });

  test('a caller gone before the call was parked settles it at once', async () => {
    const controller = new AbortController();
    controller.abort();
    const call = new ParkedCall<string>(dispatcher, cancelOn(controller.signal), 'gone');
    expect(call.isDone).toBe(true);
    expect(call.complete('late')).toBe(false);
    await expect(call.promise).resolves.toBe('gone');
  });
});
