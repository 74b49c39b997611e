import type { CohortError } from '../errors';
import type { GroupEventReason } from '../protocol/group-event-reason';
import type { GroupEvent, WatchGroupsRequest } from '../protocol/group-messages';
import type { GroupDescription } from './group-description';

/** One change of a watched group, or its state when the watch opened (`isSnapshot`). */
export interface GroupWatchEvent {
  /**
   * The group as `describeGroups` describes it right after the change, assignments decoded. A watched id
   * that names no group comes with `error` GROUP_ID_NOT_FOUND and state Dead, as does a group's last event
   * once deleted.
   */
  readonly group: GroupDescription;
  /**
   * What changed: one of `GROUP_EVENT_REASONS` (`member-joined`, `member-left`, `session-expired`,
   * `rebalance-completed`, ...; docs/protocol.md, "Watching groups"). A newer server may send others.
   */
  readonly reason: GroupEventReason | (string & {});
  /** The coordinator's wall clock when the change happened. */
  readonly timestampMs: number;
  /** True for the first event of each group on the watch. */
  readonly isSnapshot: boolean;
}

/** Settings of one `watchGroups`. */
export interface WatchGroupsOptions {
  /** Aborting ends the watch: the iteration finishes (no error) and the call is cancelled. */
  readonly signal?: AbortSignal;
}

/**
 * One WatchGroups call as a transport opens it: events go to `onEvent` in order, then `onEnd` once, with
 * the error that ended the call (a server that ended it, even with OK, ended it: the watch has no end of its
 * own), or null when it was cancelled here.
 */
export interface GroupWatchCall {
  cancel(): void;
  /** Stops reading: the server then holds events back, coalesced per group (docs/protocol.md). */
  pause(): void;
  resume(): void;
}

/** How `CohortAdmin` opens a watch (`GrpcTransport` implements it). */
export interface GroupWatchTransport {
  watchGroups(
    request: WatchGroupsRequest,
    onEvent: (event: GroupEvent) => void,
    onEnd: (error: CohortError | null) => void,
  ): GroupWatchCall;
}

/** Events read but not yet taken by the iteration, beyond which the watch stops reading. */
const MAX_BUFFERED_EVENTS = 64;

/**
 * The async iteration of one watch. Events the loop has not taken yet wait here; past
 * MAX_BUFFERED_EVENTS it stops reading, so a slow loop makes the server coalesce rather than this process
 * buffer without bound. `break` or `return` in a `for await` cancels the call.
 */
export class GroupWatch implements AsyncIterableIterator<GroupWatchEvent> {
  private readonly buffered: GroupWatchEvent[] = [];
  private waiter:
    { resolve: (result: IteratorResult<GroupWatchEvent>) => void; reject: (e: unknown) => void } | undefined;
  private ended: { error: CohortError | null } | undefined;
  private isPaused = false;
  private readonly call: GroupWatchCall;
  private readonly onAbort = (): void => this.finish();

  constructor(
    transport: GroupWatchTransport,
    request: WatchGroupsRequest,
    private readonly describe: (group: GroupEvent['group']) => GroupDescription,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.call = transport.watchGroups(
      request,
      (event) => this.onEvent(event),
      (error) => this.onEnd(error),
    );
    if (signal?.aborted) this.finish();
    else signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<GroupWatchEvent>> {
    const event = this.buffered.shift();
    if (event !== undefined) {
      if (this.isPaused && this.buffered.length < MAX_BUFFERED_EVENTS / 2) {
        this.isPaused = false;
        this.call.resume();
      }
      return Promise.resolve({ value: event, done: false });
    }
    if (this.ended !== undefined) {
      if (this.ended.error !== null) {
        const error = this.ended.error;
        this.ended = { error: null }; // thrown once; the iteration is over after it
        return Promise.reject(error);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => (this.waiter = { resolve, reject }));
  }

  /** Ends the watch (what `break` in a `for await` calls). */
  return(): Promise<IteratorResult<GroupWatchEvent>> {
    this.finish();
    return Promise.resolve({ value: undefined, done: true });
  }

  private onEvent(wire: GroupEvent): void {
    if (this.ended !== undefined) return;
    const event: GroupWatchEvent = {
      group: this.describe(wire.group),
      reason: wire.reason,
      timestampMs: Number(wire.timestampMs),
      isSnapshot: wire.isSnapshot,
    };
    const waiter = this.waiter;
    if (waiter !== undefined) {
      this.waiter = undefined;
      waiter.resolve({ value: event, done: false });
      return;
    }
    this.buffered.push(event);
    if (!this.isPaused && this.buffered.length >= MAX_BUFFERED_EVENTS) {
      this.isPaused = true;
      this.call.pause();
    }
  }

  private onEnd(error: CohortError | null): void {
    if (this.ended !== undefined) return;
    this.ended = { error };
    this.signal?.removeEventListener('abort', this.onAbort);
    const waiter = this.waiter;
    if (waiter === undefined) return;
    this.waiter = undefined;
    this.ended = { error: null };
    if (error === null) waiter.resolve({ value: undefined, done: true });
    else waiter.reject(error);
  }

  /** Ends here: what is buffered is dropped, the call cancelled, the iteration done. */
  private finish(): void {
    this.buffered.length = 0;
    const isOpen = this.ended === undefined;
    this.onEnd(null);
    this.ended = { error: null };
    if (isOpen) this.call.cancel();
  }
}
