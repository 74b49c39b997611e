import { ErrorCode } from '../errors';
import { errorFromCode } from './error-from-code';
import type { CallOptions } from './group-transport';

/** The node that coordinates a group, as the client dials it. */
export interface CoordinatorNode {
  /** The coordinator's node id; -1 when a server without FindCoordinator was taken as the coordinator. */
  readonly nodeId: number;
  readonly address: string;
}

/** Looks up the coordinator of one group; rejects with a CohortError (COORDINATOR_NOT_AVAILABLE, ...). */
export type CoordinatorLookup = (groupId: string, options: CallOptions) => Promise<CoordinatorNode>;

/**
 * Each group's coordinator, found once and kept until a call says it moved (Kafka's AbstractCoordinator:
 * `coordinator`, `lookupCoordinator`, `markCoordinatorUnknown`).
 *
 * - `coordinatorFor` answers from the cache; otherwise it sends one FindCoordinator per group at a time
 *   (callers asking meanwhile share it, as Kafka's `findCoordinatorFuture`), and caches the answer.
 * - `markUnknown` forgets a group's coordinator after NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a
 *   connection that failed, but only if it is still the node that answered: a late answer from the old
 *   coordinator must not undo a newer discovery.
 * - COORDINATOR_LOAD_IN_PROGRESS is not a move: the coordinator stays, and the caller retries it after its
 *   backoff.
 *
 * The cache does not wait between lookups itself: every caller (member, admin) already backs off with
 * jitter between attempts, and a lookup that fails rejects the attempt that needed it.
 */
export class CoordinatorCache {
  private readonly known = new Map<string, CoordinatorNode>();
  private readonly lookups = new Map<string, Promise<CoordinatorNode>>();

  constructor(private readonly lookup: CoordinatorLookup) {}

  /** The cached coordinator of `groupId`, or undefined. */
  peek(groupId: string): CoordinatorNode | undefined {
    return this.known.get(groupId);
  }

  /** The coordinator of `groupId`: cached, or looked up now. */
  coordinatorFor(groupId: string, options: CallOptions): Promise<CoordinatorNode> {
    const cached = this.known.get(groupId);
    if (cached !== undefined) return Promise.resolve(cached);
    let pending = this.lookups.get(groupId);
    if (pending === undefined) {
      pending = this.lookup(groupId, options).then(
        (node) => {
          this.lookups.delete(groupId);
          this.known.set(groupId, node);
          return node;
        },
        (error: unknown) => {
          this.lookups.delete(groupId);
          throw error;
        },
      );
      this.lookups.set(groupId, pending);
    }
    // A caller's abort ends its own wait, not a lookup others share.
    return withSignal(pending, options.signal, `FindCoordinator of group "${groupId}"`);
  }

  /** Forgets `groupId`'s coordinator if it is still `node`. Returns whether it did. */
  markUnknown(groupId: string, node: CoordinatorNode): boolean {
    const cached = this.known.get(groupId);
    if (cached === undefined || cached.address !== node.address || cached.nodeId !== node.nodeId)
      return false;
    this.known.delete(groupId);
    return true;
  }
}

/** Codes that say a group's coordinator moved or went away: forget it and find it again. */
export function isCoordinatorMoved(code: ErrorCode): boolean {
  return code === ErrorCode.NOT_COORDINATOR || code === ErrorCode.COORDINATOR_NOT_AVAILABLE;
}

function withSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined, what: string): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(errorFromCode(ErrorCode.REQUEST_TIMED_OUT, `${what} was cancelled`));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
