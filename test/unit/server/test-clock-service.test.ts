import { status } from '@grpc/grpc-js';
import { ManualTime } from '../../../src/time';
import { SystemTimer, TimerTask } from '../../../src/timer';
import { testClockService } from '../../../src/server/test-clock-service';
import { captureLogger } from '../../support/capture-logger';
import type { FakeHandler } from './fake-unary-call';
import { FakeUnaryCall, settle, unaryOf } from './fake-unary-call';

type Handler = FakeHandler;

class RecordingTask extends TimerTask {
  readonly firedAtMs: number[] = [];
  constructor(
    delayMs: number,
    private readonly time: ManualTime,
  ) {
    super(delayMs);
  }
  run(): void {
    this.firedAtMs.push(this.time.monotonicMs());
  }
}

async function invoke(handler: Handler, request: unknown): Promise<FakeUnaryCall<unknown>> {
  const call = new FakeUnaryCall<unknown>(request);
  handler(call, call.callback);
  await settle();
  return call;
}

describe('testClockService', () => {
  const START_WALL_MS = 1_700_000_000_000;

  function setUp(): { time: ManualTime; advance: Handler; now: Handler } {
    const time = new ManualTime();
    const service = testClockService(time, captureLogger().logger);
    return { time, advance: unaryOf(service, 'Advance'), now: unaryOf(service, 'Now') };
  }

  it('Now reports the wall clock without moving it', async () => {
    const { time, now } = setUp();
    const call = await invoke(now, {});
    expect(call.replies).toEqual([{ error: null, response: { nowMs: START_WALL_MS } }]);
    expect(time.monotonicMs()).toBe(0);
  });

  it('Advance moves the clock and runs every task that became due before it answers', async () => {
    const { time, advance } = setUp();
    const timer = new SystemTimer({ time });
    const due = new RecordingTask(1_000, time);
    const notYet = new RecordingTask(5_001, time);
    timer.add(due);
    timer.add(notYet);

    const call = new FakeUnaryCall<unknown>({ ms: '5000' });
    advance(call, call.callback);
    // The expiry happened synchronously inside the handler, before any reply.
    expect(due.firedAtMs).toEqual([5_000]);
    expect(notYet.firedAtMs).toEqual([]);
    await settle();
    expect(call.replies).toEqual([{ error: null, response: { nowMs: START_WALL_MS + 5_000 } }]);
    timer.shutdown();
  });

  it('Advance by 0 answers the current time', async () => {
    const { advance } = setUp();
    const call = await invoke(advance, { ms: '0' });
    expect(call.replies[0].response).toEqual({ nowMs: START_WALL_MS });
  });

  it.each(['-1', '9007199254740992'])(
    'Advance refuses ms = %s as INVALID_ARGUMENT and leaves the clock',
    async (ms) => {
      const { time, advance } = setUp();
      const call = await invoke(advance, { ms });
      expect(call.replies).toHaveLength(1);
      expect(call.replies[0].error?.code).toBe(status.INVALID_ARGUMENT);
      expect(call.replies[0].error?.details).toContain(`ms (${ms.startsWith('-') ? -1 : ms})`);
      expect(time.monotonicMs()).toBe(0);
    },
  );
});
