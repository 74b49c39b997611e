import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { CohortError, ErrorCode } from '../errors';
import type { ManualTime, RunningManualTime } from '../time';
import { decodeInt64 } from './int64';
import { type CallObservers, unaryHandler } from './unary-handler';

interface AdvanceClockRequest {
  /** int64, decoded as a decimal string. */
  ms: string;
}
interface AdvanceClockResponse {
  nowMs: number;
}

/**
 * cohort.v1.TestClock: moves the server's ManualTime (or, with --manual-clock=running, jumps its
 * RunningManualTime ahead). `advance` runs every timer task that became due (DelayedJoin,
 * DelayedHeartbeat, ...) synchronously, so by the time Advance answers, every expiry it caused has
 * happened and every parked call it completed has been answered or queued for answering.
 * Registered only with --manual-clock.
 */
export function testClockService(
  time: ManualTime | RunningManualTime,
  logger: Logger,
  observers?: CallObservers,
): UntypedServiceImplementation {
  const now = (): AdvanceClockResponse => ({ nowMs: time.nowMs() });
  const service = 'cohort.v1.TestClock';
  return {
    Advance: unaryHandler(
      `/${service}/Advance`,
      logger,
      async (request: AdvanceClockRequest) => {
        const ms = decodeInt64(request.ms, 'ms');
        if (ms < 0) {
          throw new CohortError(
            ErrorCode.INVALID_REQUEST,
            `ms (${ms}) must be >= 0: the clock never moves back`,
          );
        }
        time.advance(ms);
        return now();
      },
      observers?.(service, 'Advance'),
    ),
    Now: unaryHandler(`/${service}/Now`, logger, async () => now(), observers?.(service, 'Now')),
  };
}
