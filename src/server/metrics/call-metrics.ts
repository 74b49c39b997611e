import { performance } from 'node:perf_hooks';
import type { Registry } from 'prom-client';
import { ErrorCode } from '../../errors';
import type { CallObserver, CallObservers } from '../unary-handler';
import { LatencyHistogram, type LatencyRecorder } from './latency-histogram';

/** The `code` label of a call its client abandoned (cancelled, or its deadline passed) before the answer. */
export const CANCELLED_CODE_LABEL = 'CANCELLED';

/**
 * A clock for call latency, in milliseconds with sub-millisecond precision. Latency is measured on the real
 * clock even under --manual-clock: it is the CPU's and the network's time, which the manual clock (the
 * domain's time: sessions, rebalances) does not model. Tests pass their own.
 */
export type Stopwatch = () => number;

export const REAL_STOPWATCH: Stopwatch = () => performance.now();

/**
 * One method's observer: the histogram series of each ErrorCode is found once (an array indexed by code)
 * and then reused, so a call costs two clock reads, an array read and a few additions.
 */
class MethodCalls implements CallObserver {
  /** Indexed by ErrorCode + 1 (UNKNOWN_SERVER_ERROR is -1). */
  private readonly byCode: (LatencyRecorder | undefined)[] = [];
  private cancelled: LatencyRecorder | undefined;

  constructor(
    private readonly histogram: LatencyHistogram,
    private readonly service: string,
    private readonly method: string,
    private readonly stopwatch: Stopwatch,
  ) {}

  startCall(): number {
    return this.stopwatch();
  }

  endCall(startMark: number, errorCode: ErrorCode | undefined): void {
    const seconds = Math.max(0, this.stopwatch() - startMark) / 1_000;
    if (errorCode === undefined) {
      (this.cancelled ??= this.histogram.recorder(this.service, this.method, CANCELLED_CODE_LABEL)).observe(
        seconds,
      );
      return;
    }
    const index = errorCode + 1;
    let recorder = this.byCode[index];
    if (recorder === undefined) {
      recorder = this.histogram.recorder(this.service, this.method, codeLabel(errorCode));
      this.byCode[index] = recorder;
    }
    recorder.observe(seconds);
  }
}

/** Kafka's name of the code (`REBALANCE_IN_PROGRESS`), or its number if it has none. */
function codeLabel(code: ErrorCode): string {
  return (ErrorCode as unknown as Record<number, string | undefined>)[code] ?? String(code);
}

/**
 * `cohort_rpc_duration_seconds{service, method, code}`: every unary call from arrival to answer, by the
 * ErrorCode it was answered with (NONE for a response without an error; the code of a refused request;
 * UNKNOWN_SERVER_ERROR for a failure; CANCELLED when the caller left first). A heartbeat's latency is the
 * series with method="Heartbeat". Returns the factory the services take.
 */
export function registerCallMetrics(registry: Registry, stopwatch: Stopwatch): CallObservers {
  const histogram = new LatencyHistogram({
    name: 'cohort_rpc_duration_seconds',
    help: 'Unary calls from arrival to answer, by service, method and the ErrorCode they were answered with.',
    labelNames: ['service', 'method', 'code'],
  }).registerIn(registry);
  return (service, method) => new MethodCalls(histogram, service, method, stopwatch);
}
