import { Metadata, status as grpcStatus, type ServerWritableStream, type StatusObject } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { CohortError, ErrorCode } from '../errors';
import type { GroupChange, GroupChangeListener, WatchGroupsRequest } from '../group';
import type { Time } from '../time';
import { CoalescingQueue } from '../live/coalescing-queue';
import { statusForError } from './status-for-error';
import { UndecodableRequest } from './undecodable-request';

/** What the adapter needs from a grpc-js server-streaming call. */
export type WatchGroupsCall = ServerWritableStream<WatchGroupsRequest | UndecodableRequest, GroupChange>;

/** The coordinator's `watchGroups`. */
type WatchGroups = (groupIds: readonly string[], listener: GroupChangeListener) => () => void;

/** How far a watcher may fall behind before it is ended with RESOURCE_EXHAUSTED. */
export interface WatchLimits {
  /** Groups with an event waiting for the watcher's write buffer to drain (one per group, the latest). */
  readonly maxPendingGroups: number;
  /** How long events may wait for the write buffer to drain, on the server's monotonic clock. */
  readonly maxLagMs: number;
}

/**
 * Every open WatchGroups call of one server. A watch has no natural end, so grpc-js's tryShutdown would
 * wait on it for the whole grace period: `endAll()` ends each with OK instead (StreamingCalls counts them
 * against its bounds but leaves their end to this).
 */
export class GroupWatches {
  private readonly open = new Set<GroupWatch>();
  private isClosed = false;

  constructor(
    readonly limits: WatchLimits,
    readonly time: Time,
  ) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`${name} must be an integer >= 1, got ${String(value)}`);
      }
    }
  }

  /** Watches open now. */
  get size(): number {
    return this.open.size;
  }

  /** Events waiting, over every open watch (each holds at most one per group). */
  get pendingEvents(): number {
    let total = 0;
    for (const watch of this.open) total += watch.pendingEvents;
    return total;
  }

  /** @internal False when the server is closing (the watch ends at once). */
  add(watch: GroupWatch): boolean {
    if (this.isClosed) return false;
    this.open.add(watch);
    return true;
  }

  /** @internal */
  delete(watch: GroupWatch): void {
    this.open.delete(watch);
  }

  /** Ends every open watch (and any opened from now on) with OK. Idempotent. */
  endAll(): void {
    this.isClosed = true;
    for (const watch of [...this.open]) watch.end(undefined);
  }
}

/** A coalesced event keeps `isSnapshot` if either had it: a group's first event on the stream stays first. */
function coalesce(older: GroupChange, newer: GroupChange): GroupChange {
  return older.isSnapshot && !newer.isSnapshot ? { ...newer, isSnapshot: true } : newer;
}

/**
 * One WatchGroups call. Events are written the moment the coordinator reports them while the call's write
 * buffer takes them; once `write` returns false (grpc-js's backpressure: the client reads slower than the
 * group changes) they wait in a CoalescingQueue, one per group, each replaced by the group's next event,
 * until 'drain'. The coordinator never waits: a listener call is a write or a Map.set. A watcher with more
 * groups waiting than `maxPendingGroups`, or events waiting longer than `maxLagMs` when the next one comes,
 * is ended with RESOURCE_EXHAUSTED: its queue is dropped and it is unsubscribed at once (the status itself
 * reaches the client after what was already written, once it reads).
 */
class GroupWatch {
  private readonly queue = new CoalescingQueue<GroupChange>(coalesce);
  private unsubscribe: (() => void) | undefined;
  /** Set while the write buffer is full; the monotonic time it filled. */
  private blockedSinceMs: number | undefined;
  private isEnded = false;

  constructor(
    private readonly call: WatchGroupsCall,
    private readonly watchGroups: WatchGroups,
    private readonly watches: GroupWatches,
    private readonly logger: Logger,
    private readonly method: string,
  ) {}

  get pendingEvents(): number {
    return this.queue.size;
  }

  open(): void {
    if (this.call.cancelled) return;
    const request = this.call.request;
    if (request instanceof UndecodableRequest) {
      this.fail(
        new CohortError(ErrorCode.INVALID_REQUEST, `A request could not be decoded (${this.method}).`),
      );
      return;
    }
    if (!Array.isArray(request.groupIds)) {
      this.fail(new CohortError(ErrorCode.INVALID_REQUEST, 'WatchGroups needs a list of group ids'));
      return;
    }
    if (!this.watches.add(this)) {
      this.end(undefined);
      return;
    }
    // Cancelled, deadline passed or connection lost: nothing more can be written.
    this.call.on('cancelled', () => this.end(undefined));
    this.call.on('drain', () => this.flush());
    // The snapshots arrive synchronously, inside subscribe: the watch may already have ended on them.
    const unsubscribe = this.watchGroups(request.groupIds, (change) => this.onChange(change));
    if (this.isEnded) unsubscribe();
    else this.unsubscribe = unsubscribe;
  }

  private onChange(change: GroupChange): void {
    if (this.isEnded) return;
    if (this.blockedSinceMs === undefined) {
      this.write(change);
      return;
    }
    this.queue.put(change.group.groupId, change);
    const { maxPendingGroups, maxLagMs } = this.watches.limits;
    const lagMs = this.watches.time.monotonicMs() - this.blockedSinceMs;
    if (this.queue.size > maxPendingGroups) {
      this.fallenBehind(
        `the watch fell behind on more than ${maxPendingGroups} groups (watchMaxPendingGroups): read ` +
          'faster or watch fewer groups',
      );
    } else if (lagMs > maxLagMs) {
      this.fallenBehind(
        `the watch has not read what was written for more than ${maxLagMs} ms (watchMaxLagMs): read faster`,
      );
    }
  }

  private write(change: GroupChange): void {
    if (!this.call.write(change)) this.blockedSinceMs = this.watches.time.monotonicMs();
  }

  /** The write buffer has room again: the waiting events go, oldest group first, until it fills. */
  private flush(): void {
    if (this.isEnded) return;
    this.blockedSinceMs = undefined;
    while (this.blockedSinceMs === undefined) {
      const change = this.queue.shift();
      if (change === undefined) return;
      this.write(change);
    }
  }

  private fallenBehind(details: string): void {
    this.logger.info(
      { method: this.method, peer: this.call.getPeer(), pendingGroups: this.queue.size },
      'a group watch fell behind and was ended',
    );
    this.end({ code: grpcStatus.RESOURCE_EXHAUSTED, details, metadata: new Metadata() });
  }

  private fail(error: unknown): void {
    const { status, isUnexpected } = statusForError(error);
    if (isUnexpected) {
      this.logger.error(
        { err: error, method: this.method, peer: this.call.getPeer() },
        'unexpected error while handling a call',
      );
    }
    this.end(status);
  }

  /** The one way a watch ends: with `status`, or OK (after what was written, as grpc-js ends a stream). */
  end(status: StatusObject | undefined): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.watches.delete(this);
    this.unsubscribe?.();
    this.queue.clear();
    if (this.call.cancelled) return;
    if (status === undefined) this.call.end();
    else this.call.emit('error', status);
  }
}

/**
 * cohort.v1.GroupCoordinator/WatchGroups over grpc-js: a snapshot of each watched group, then one event per
 * change (docs/protocol.md, "Watching groups").
 */
export function watchGroupsHandler(
  method: string,
  watchGroups: WatchGroups,
  watches: GroupWatches,
  logger: Logger,
): (call: WatchGroupsCall) => void {
  return (call) => new GroupWatch(call, watchGroups, watches, logger, method).open();
}
