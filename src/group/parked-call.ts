import type { ReplyDispatcher } from './reply-dispatcher';

/** The caller's cancellation, as RequestContext offers it (absent when nobody can cancel). */
export interface CallCancellation {
  onCancel?(listener: () => void): () => void;
}

/**
 * A request the coordinator cannot answer yet (a JoinGroup waiting for the rebalance, a SyncGroup waiting
 * for the leader, an OffsetCommit waiting for its records). Kafka keeps a callback per member
 * (`awaitingJoinCallback`); this is that callback plus the two guarantees cohort adds:
 *
 * - exactly once: `complete` answers the first time and is a no-op afterwards, so every path that might
 *   answer (completion, fencing, removal, shutdown) can simply call it;
 * - cancellation: when the caller goes away (`onCancel`), the promise settles at once with
 *   `abortedResponse` (the transport never sends it, the call is gone) and the later real answer is
 *   dropped. The group keeps the member as Kafka would: only the member's own timers decide whether it
 *   stays.
 */
export class ParkedCall<T> {
  readonly promise: Promise<T>;
  private resolve: ((value: T) => void) | undefined;
  private unlisten: (() => void) | undefined;
  private readonly dispatcher: ReplyDispatcher;
  private abortedResponse: T | undefined;

  /**
   * `abortedResponse` is required when `caller` can cancel (it is what the promise settles with then).
   * A caller that has already gone settles it at once.
   */
  constructor(
    dispatcher: ReplyDispatcher,
    caller: CallCancellation | undefined,
    abortedResponse: T | undefined,
  ) {
    this.dispatcher = dispatcher;
    let resolveFn!: (value: T) => void;
    this.promise = new Promise<T>((resolve) => {
      resolveFn = resolve;
    });
    this.resolve = resolveFn;
    if (caller?.onCancel !== undefined) {
      this.abortedResponse = abortedResponse;
      const unlisten = caller.onCancel(this.onAbort);
      // onCancel runs the listener at once for a caller already gone: nothing is left to unregister.
      if (this.resolve !== undefined) this.unlisten = unlisten;
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
    const unlisten = this.unlisten;
    if (unlisten !== undefined) {
      this.unlisten = undefined;
      unlisten();
    }
    this.abortedResponse = undefined;
  }
}
