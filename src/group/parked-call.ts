import type { ReplyDispatcher } from './reply-dispatcher';

/**
 * A request the coordinator cannot answer yet (a JoinGroup waiting for the rebalance, a SyncGroup waiting
 * for the leader, an OffsetCommit waiting for the store). Kafka keeps a callback per member
 * (`awaitingJoinCallback`); this is that callback plus the two guarantees cohort adds:
 *
 * - exactly once: `complete` answers the first time and is a no-op afterwards, so every path that might
 *   answer (completion, fencing, removal, shutdown) can simply call it;
 * - cancellation: when the caller's `signal` aborts, the promise settles at once with `abortedResponse` (the
 *   transport never sends it, the call is gone) and the later real answer is dropped. The group keeps the
 *   member as Kafka would: only the member's own timers decide whether it stays.
 */
export class ParkedCall<T> {
  readonly promise: Promise<T>;
  private resolve: ((value: T) => void) | undefined;
  private signal: AbortSignal | undefined;
  private readonly dispatcher: ReplyDispatcher;
  private abortedResponse: T | undefined;

  /** `abortedResponse` is required when `signal` is given (it is what the promise settles with on abort). */
  constructor(dispatcher: ReplyDispatcher, signal: AbortSignal | undefined, abortedResponse: T | undefined) {
    this.dispatcher = dispatcher;
    let resolveFn!: (value: T) => void;
    this.promise = new Promise<T>((resolve) => {
      resolveFn = resolve;
    });
    this.resolve = resolveFn;
    if (signal !== undefined) {
      if (signal.aborted) {
        this.resolve = undefined;
        resolveFn(abortedResponse as T);
      } else {
        this.signal = signal;
        this.abortedResponse = abortedResponse;
        signal.addEventListener('abort', this.onAbort);
      }
    }
  }

  /** Answered, or dropped because the caller went away. */
  get isDone(): boolean {
    return this.resolve === undefined;
  }

  /** Answers the call (through the dispatcher). Returns false when it was already answered or dropped. */
  complete(response: T): boolean {
    const resolve = this.resolve;
    if (resolve === undefined) return false;
    this.resolve = undefined;
    this.detach();
    this.dispatcher.deliver(resolve, response);
    return true;
  }

  private readonly onAbort = (): void => {
    const resolve = this.resolve;
    if (resolve === undefined) return;
    const response = this.abortedResponse as T;
    this.resolve = undefined;
    this.detach();
    resolve(response);
  };

  private detach(): void {
    if (this.signal !== undefined) {
      this.signal.removeEventListener('abort', this.onAbort);
      this.signal = undefined;
    }
    this.abortedResponse = undefined;
  }
}
