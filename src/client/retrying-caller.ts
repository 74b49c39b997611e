import { CohortError, ErrorCode } from '../errors';
import type { Time } from '../time';
import { errorFromCode } from './error-from-code';
import type { ExponentialBackoff } from './exponential-backoff';
import type { CallOptions } from './group-transport';
import type { Scheduler } from './scheduler';

/**
 * The reason the SDK gives when it aborts a call of its own (a deadline, an abandoned attempt, a closed
 * owner). `abort()` without a reason builds a DOMException, stack trace included, per signal; a rebalance
 * aborts several per member, and no transport reads the reason. One shared error instead.
 */
export const ABANDONED = new Error('the call was abandoned by the SDK');

/** How one call ended: its response, a failure rebuilt as a CohortError, or aborted by its scope. */
export type CallOutcome<R> =
  | { readonly kind: 'response'; readonly response: R }
  | { readonly kind: 'failed'; readonly error: CohortError }
  | { readonly kind: 'aborted' };

/**
 * Calls with deadlines and retries for the consumer, the producer and the admin client (the group member
 * keeps its own, tied to its epochs). Deadlines run on the SDK's `Time`, so unit tests control them; the
 * transport's own gRPC deadline is a second, real-time guard.
 */
export class RetryingCaller {
  /**
   * @param lifetime - aborts every call made through this caller (an owner that closes, such as a group
   *   member), in addition to each call's own scope.
   */
  constructor(
    private readonly time: Time,
    private readonly scheduler: Scheduler,
    private readonly backoff: ExponentialBackoff,
    private readonly lifetime?: AbortSignal,
  ) {}

  /**
   * One call, ended after `timeoutMs` (REQUEST_TIMED_OUT) or when `scope` aborts (`aborted`). Always
   * resolves. The timeout error is built only when the call times out (its stack then shows the timer; its
   * message names the call): building one per call, with its stack trace, was most of this method's cost.
   */
  call<R>(
    what: string,
    send: (options: CallOptions) => Promise<R>,
    timeoutMs: number,
    scope?: AbortSignal,
  ): Promise<CallOutcome<R>> {
    const lifetime = this.lifetime;
    return new Promise((resolve) => {
      if (scope?.aborted || lifetime?.aborted) return resolve({ kind: 'aborted' });
      const controller = new AbortController();
      let isSettled = false;
      const onAbort = (): void => {
        controller.abort(ABANDONED);
        settle({ kind: 'aborted' });
      };
      const timer = this.scheduler.schedule(timeoutMs, () => {
        controller.abort(ABANDONED);
        const error = errorFromCode(
          ErrorCode.REQUEST_TIMED_OUT,
          `${what} got no answer within ${timeoutMs} ms`,
        );
        settle({ kind: 'failed', error });
      });
      const settle = (outcome: CallOutcome<R>): void => {
        if (isSettled) return;
        isSettled = true;
        timer.cancel();
        scope?.removeEventListener('abort', onAbort);
        lifetime?.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      scope?.addEventListener('abort', onAbort, { once: true });
      lifetime?.addEventListener('abort', onAbort, { once: true });
      let pending: Promise<R>;
      try {
        pending = send({ timeoutMs, signal: controller.signal });
      } catch (error) {
        return settle({ kind: 'failed', error: asCohortError(error, what) });
      }
      pending.then(
        (response) => settle({ kind: 'response', response }),
        (error: unknown) => settle({ kind: 'failed', error: asCohortError(error, what) }),
      );
    });
  }

  /**
   * Sends until `check` finds the response acceptable (returns NONE) or a failure that is not retriable,
   * backing off between attempts, all within `timeoutMs`. Resolves with the accepted response; rejects with
   * the last error, or with REQUEST_TIMED_OUT when `scope` aborts. `check` returns the code that makes a
   * response a failure (retried only if the code is retriable).
   */
  async retry<R>(
    what: string,
    send: (options: CallOptions) => Promise<R>,
    timeoutMs: number,
    check: (response: R) => ErrorCode = () => ErrorCode.NONE,
    scope?: AbortSignal,
  ): Promise<R> {
    const deadlineMs = this.time.monotonicMs() + timeoutMs;
    for (let failures = 0; ; failures++) {
      const remainingMs = Math.max(1, deadlineMs - this.time.monotonicMs());
      const outcome = await this.call(what, send, remainingMs, scope);
      let error: CohortError;
      if (outcome.kind === 'aborted') {
        throw errorFromCode(ErrorCode.REQUEST_TIMED_OUT, `${what} was cancelled`);
      } else if (outcome.kind === 'failed') {
        error = outcome.error;
      } else {
        const code = check(outcome.response);
        if (code === ErrorCode.NONE) return outcome.response;
        error = errorFromCode(code, what);
      }
      const waitMs = this.backoff.backoffMs(failures);
      if (!error.retriable || this.time.monotonicMs() + waitMs >= deadlineMs) throw error;
      if (!(await this.sleep(waitMs, scope))) throw error;
    }
  }

  /** Waits `ms` on the SDK's clock; resolves false (early) if `scope` aborts. */
  sleep(ms: number, scope?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (scope?.aborted) return resolve(false);
      const onAbort = (): void => {
        task.cancel();
        resolve(false);
      };
      const task = this.scheduler.schedule(ms, () => {
        scope?.removeEventListener('abort', onAbort);
        resolve(true);
      });
      scope?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** Anything a transport threw, as a CohortError (an unexpected throw is UNKNOWN_SERVER_ERROR with a cause). */
export function asCohortError(error: unknown, what: string): CohortError {
  return error instanceof CohortError ? error : errorFromCode(ErrorCode.UNKNOWN_SERVER_ERROR, what, error);
}
