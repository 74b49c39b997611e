import { ErrorCode } from '../errors';
import { errorFromCode } from './error-from-code';
import type { CallOptions } from './group-transport';
import type { ScheduledTask, Scheduler } from './scheduler';

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
 * - `markUnknown` forgets a group's coordinator after NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, a
 *   connection that failed or a call it did not answer in time, but only if it is still the node that
 *   answered: a late answer from the old coordinator must not undo a newer discovery.
 * - COORDINATOR_LOAD_IN_PROGRESS is not a move: the coordinator stays, and the caller retries it after its
 *   backoff.
 *
 * The cache does not wait between lookups for its callers: every caller (member, admin) backs off with
 * jitter between attempts, and a lookup that fails rejects the attempt that needed it. But a member whose
 * coordinator moved or went away can do nothing until the new one is known, and its backoff has grown to
 * its maximum (1 s) by the time the old coordinator's session has expired and a new leader is elected:
 * waiting it out costs every member up to that second after the group could be served again. So
 * `onCoordinatorFound` lets a caller's backoff end as soon as a coordinator other than the one last
 * marked unknown is known; while anyone waits, the cache looks the group up every `pollMs` (Kafka's
 * retry.backoff.ms, 100 ms) — one FindCoordinator per group per client, however many of its members
 * wait, where each Java consumer rediscovers on its own. The callers' backoffs stay exponential (KIP-580)
 * for everything else.
 */
export class CoordinatorCache {
  private readonly known = new Map<string, CoordinatorNode>();
  private readonly lookups = new Map<string, Promise<CoordinatorNode>>();
  /** Per group, the node last marked unknown: a lookup naming it again has found nothing new. */
  private readonly forgotten = new Map<string, CoordinatorNode>();
  private readonly waits = new Map<string, { waiters: Set<() => void>; task: ScheduledTask | null }>();
  private isClosed = false;

  constructor(
    private readonly lookup: CoordinatorLookup,
    private readonly scheduler?: Scheduler,
    private readonly pollMs = DEFAULT_COORDINATOR_POLL_MS,
  ) {}

  /** The cached coordinator of `groupId`, or undefined. */
  peek(groupId: string): CoordinatorNode | undefined {
    return this.known.get(groupId);
  }

  /** The coordinator of `groupId`: cached, or looked up now. */
  coordinatorFor(groupId: string, options: CallOptions): Promise<CoordinatorNode> {
    const cached = this.known.get(groupId);
    if (cached !== undefined) return Promise.resolve(cached);
    // A caller's abort ends its own wait, not a lookup others share.
    return withSignal(this.lookUp(groupId, options), options.signal, `FindCoordinator of group "${groupId}"`);
  }

  /** Forgets `groupId`'s coordinator if it is still `node`. Returns whether it did. */
  markUnknown(groupId: string, node: CoordinatorNode): boolean {
    const cached = this.known.get(groupId);
    if (cached === undefined || !isSameNode(cached, node)) return false;
    this.known.delete(groupId);
    this.forgotten.set(groupId, node);
    return true;
  }

  /**
   * Calls `onFound` once (on a later turn) when a coordinator of `groupId` other than the one last marked
   * unknown is known, looking the group up every `pollMs` until then; returns a function that stops the
   * wait. Without a scheduler (no clock to poll on) it never calls `onFound`.
   */
  onCoordinatorFound(groupId: string, onFound: () => void): () => void {
    const scheduler = this.scheduler;
    if (scheduler === undefined || this.isClosed) return () => {};
    const cached = this.known.get(groupId);
    if (cached !== undefined && !this.isForgotten(groupId, cached)) {
      const task = scheduler.schedule(0, onFound);
      return () => task.cancel();
    }
    let wait = this.waits.get(groupId);
    if (wait === undefined) {
      wait = { waiters: new Set(), task: null };
      this.waits.set(groupId, wait);
      this.schedulePoll(groupId, wait);
    }
    const waiters = wait.waiters;
    const waiter = (): void => onFound();
    waiters.add(waiter);
    return () => {
      waiters.delete(waiter);
      const current = this.waits.get(groupId);
      if (current !== undefined && current.waiters.size === 0) {
        current.task?.cancel();
        this.waits.delete(groupId);
      }
    };
  }

  /** Stops every poll; waiters are not called. */
  close(): void {
    this.isClosed = true;
    for (const wait of this.waits.values()) wait.task?.cancel();
    this.waits.clear();
  }

  /** One lookup of `groupId` at a time, shared by everyone asking meanwhile; its answer is cached. */
  private lookUp(groupId: string, options: CallOptions): Promise<CoordinatorNode> {
    let pending = this.lookups.get(groupId);
    if (pending === undefined) {
      pending = this.lookup(groupId, options).then(
        (node) => {
          this.lookups.delete(groupId);
          this.known.set(groupId, node);
          this.onFound(groupId, node);
          return node;
        },
        (error: unknown) => {
          this.lookups.delete(groupId);
          throw error;
        },
      );
      this.lookups.set(groupId, pending);
    }
    return pending;
  }

  private isForgotten(groupId: string, node: CoordinatorNode): boolean {
    const forgotten = this.forgotten.get(groupId);
    return forgotten !== undefined && isSameNode(forgotten, node);
  }

  private onFound(groupId: string, node: CoordinatorNode): void {
    const wait = this.waits.get(groupId);
    if (wait === undefined || this.isForgotten(groupId, node)) return;
    this.waits.delete(groupId);
    wait.task?.cancel();
    for (const waiter of wait.waiters) waiter();
  }

  private schedulePoll(groupId: string, wait: { task: ScheduledTask | null }): void {
    wait.task = this.scheduler!.schedule(this.pollMs, () => {
      wait.task = null;
      if (this.waits.get(groupId) !== wait) return;
      // Past the cache: it may hold the very node that failed (another caller looked it up again).
      this.lookUp(groupId, { timeoutMs: POLL_TIMEOUT_MS })
        .catch(() => undefined)
        .finally(() => {
          if (this.waits.get(groupId) === wait && wait.task === null) this.schedulePoll(groupId, wait);
        });
    });
  }
}

/** How often a group is looked up while callers wait for its coordinator (Kafka's retry.backoff.ms). */
export const DEFAULT_COORDINATOR_POLL_MS = 100;
/** The longest a poll's FindCoordinator may take (a node that does not answer; the next poll asks another). */
const POLL_TIMEOUT_MS = 5_000;

function isSameNode(a: CoordinatorNode, b: CoordinatorNode): boolean {
  return a.address === b.address && a.nodeId === b.nodeId;
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
