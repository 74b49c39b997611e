import { ControllerEventQueue } from '../../../src/cluster/controller-event-queue';
import { settle } from '../../support/metadata-store-harness';

describe('ControllerEventQueue', () => {
  it('runs events one at a time, in order, each to completion before the next starts', async () => {
    const errors: unknown[] = [];
    const queue = new ControllerEventQueue((error) => errors.push(error));
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    queue.put(async () => {
      log.push('a start');
      // An event raised while handling one is queued behind it, not run inside it.
      queue.put(async () => {
        log.push('c');
      });
      await gate;
      log.push('a end');
    });
    queue.put(async () => {
      log.push('b');
    });
    // Never inside the caller's stack.
    expect(log).toEqual([]);
    await settle();
    expect(log).toEqual(['a start']);
    expect(queue.size).toBe(3);
    release();
    await queue.idle();
    expect(log).toEqual(['a start', 'a end', 'b', 'c']);
    expect(errors).toEqual([]);
  });

  it('reports a failing event and carries on with the next', async () => {
    const errors: unknown[] = [];
    const queue = new ControllerEventQueue((error) => errors.push(error));
    const log: string[] = [];
    queue.put(async () => {
      throw new Error('boom');
    });
    queue.put(async () => {
      log.push('after');
    });
    await queue.idle();
    expect(errors).toEqual([new Error('boom')]);
    expect(log).toEqual(['after']);
  });
});
