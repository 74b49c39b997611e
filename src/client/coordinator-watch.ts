import { type CohortError, ErrorCode } from '../errors';
import type * as m from '../protocol/group-messages';
import { isCoordinatorMoved, type CoordinatorCache, type CoordinatorNode } from './coordinator-cache';
import { errorFromCode, isRetriable } from './error-from-code';
import type { ExponentialBackoff } from './exponential-backoff';
import type { GroupWatchCall, GroupWatchTransport } from './group-watch';
import { asCohortError } from './retrying-caller';
import type { ScheduledTask, Scheduler } from './scheduler';

/** What a `CoordinatorWatch` runs on. */
export interface CoordinatorWatchContext {
  readonly coordinators: CoordinatorCache;
  /** The connection to the node at an address. */
  readonly node: (address: string) => GroupWatchTransport;
  /** Backoffs between re-opens of a group's watch, on the client's clock. */
  readonly scheduler: Scheduler;
  readonly backoff: ExponentialBackoff;
  /** The bound of one FindCoordinator lookup. */
  readonly lookupTimeoutMs: number;
}

/** One WatchGroups call to one node, and the groups it still watches for us. */
interface NodeCall {
  readonly address: string;
  readonly node: CoordinatorNode;
  readonly groupIds: Set<string>;
  call: GroupWatchCall | undefined;
}

/** Where a watched group stands. */
interface WatchedGroup {
  /** The call its events come from; undefined while its coordinator is looked up or a backoff runs. */
  call: NodeCall | undefined;
  /** Re-opens since its last good snapshot: the next backoff's exponent. */
  failures: number;
  /** The last event passed on said NOT_COORDINATOR: a repeat (a new node that does not lead it yet) is not. */
  isMoving: boolean;
  retry: ScheduledTask | undefined;
}

/** A group whose coordinator moved: an event (snapshot or `group-unloaded`) describing it NOT_COORDINATOR. */
function saysMoved(event: m.GroupEvent): boolean {
  return event.group.errorCode === ErrorCode.NOT_COORDINATOR;
}

/**
 * A watch of named groups, each at its coordinator, that follows the coordinators (docs/protocol.md,
 * "Watching groups", 6). When a group moves, its coordinator says so with an event describing it
 * NOT_COORDINATOR (`group-unloaded`, or the snapshot of a node that no longer leads it), or ends the call
 * with NOT_COORDINATOR: that coordinator is forgotten, and after a jittered exponential backoff the group
 * is looked up again (FindCoordinator) and watched where it is now, from a new snapshot (`isSnapshot`).
 * A lookup that fails retriably (no leader elected yet) backs off and tries again; the backoff starts
 * over at a group's next good snapshot. The event that told of the move is passed on (once per move),
 * so the reader sees the group leave and come back. Nothing else is retried: a call that ends otherwise
 * (the node went away, a refusal, a watcher that fell behind) ends the watch with its error, as a watch
 * of one node does; the coordinator is forgotten if that error says it moved or went away, so watching
 * again finds the new one. Runs until `cancel`.
 */
export class CoordinatorWatch implements GroupWatchCall {
  private readonly groups = new Map<string, WatchedGroup>();
  private readonly calls = new Set<NodeCall>();
  private readonly lifetime = new AbortController();
  private isEnded = false;
  private isPaused = false;

  constructor(
    private readonly context: CoordinatorWatchContext,
    groupIds: readonly string[],
    private readonly onEvent: (event: m.GroupEvent) => void,
    private readonly onEnd: (error: CohortError | null) => void,
  ) {
    for (const groupId of groupIds) {
      if (!this.groups.has(groupId)) {
        this.groups.set(groupId, { call: undefined, failures: 0, isMoving: false, retry: undefined });
      }
    }
    this.start([...this.groups.keys()]);
  }

  cancel(): void {
    this.end(null);
  }

  pause(): void {
    this.isPaused = true;
    for (const c of this.calls) c.call?.pause();
  }

  resume(): void {
    this.isPaused = false;
    for (const c of this.calls) c.call?.resume();
  }

  /** `watch`, ending the whole watch if it throws (the client closed under a lookup, say). */
  private start(groupIds: readonly string[]): void {
    this.watch(groupIds).catch((error: unknown) => this.end(asCohortError(error, 'WatchGroups')));
  }

  /** Looks `groupIds` up and opens one call per coordinator for them. */
  private async watch(groupIds: readonly string[]): Promise<void> {
    const options = { timeoutMs: this.context.lookupTimeoutMs, signal: this.lifetime.signal };
    const byNode = new Map<string, { node: CoordinatorNode; groupIds: string[] }>();
    const found = await Promise.all(
      groupIds.map((groupId) =>
        this.context.coordinators.coordinatorFor(groupId, options).then(
          (node) => ({ groupId, node }),
          (error: unknown) => ({ groupId, error }),
        ),
      ),
    );
    if (this.isEnded) return;
    for (const result of found) {
      if ('error' in result) {
        const error = asCohortError(result.error, `FindCoordinator of group "${result.groupId}"`);
        if (!isRetriable(error.code)) return this.end(error);
        this.retryLater(result.groupId);
        continue;
      }
      const key = `${result.node.nodeId}@${result.node.address}`;
      let entry = byNode.get(key);
      if (entry === undefined) byNode.set(key, (entry = { node: result.node, groupIds: [] }));
      entry.groupIds.push(result.groupId);
    }
    for (const { node, groupIds: ids } of byNode.values()) this.open(node, ids);
  }

  private open(node: CoordinatorNode, groupIds: string[]): void {
    const nodeCall: NodeCall = { address: node.address, node, groupIds: new Set(groupIds), call: undefined };
    for (const groupId of groupIds) (this.groups.get(groupId) as WatchedGroup).call = nodeCall;
    this.calls.add(nodeCall);
    nodeCall.call = this.context.node(node.address).watchGroups(
      { groupIds },
      (event) => this.onCallEvent(nodeCall, event),
      (error) => this.onCallEnd(nodeCall, error),
    );
    if (this.isPaused) nodeCall.call.pause();
  }

  private onCallEvent(nodeCall: NodeCall, event: m.GroupEvent): void {
    if (this.isEnded) return;
    const groupId = event.group.groupId;
    const group = this.groups.get(groupId);
    // A group this call no longer watches for us (it moved on): its old coordinator's news is stale.
    if (group === undefined || group.call !== nodeCall) return;
    if (!saysMoved(event)) {
      group.isMoving = false;
      if (event.isSnapshot) group.failures = 0;
      this.onEvent(event);
      return;
    }
    const isRepeat = group.isMoving;
    group.isMoving = true;
    this.context.coordinators.markUnknown(groupId, nodeCall.node);
    this.leave(nodeCall, groupId);
    this.retryLater(groupId);
    if (!isRepeat) this.onEvent(event);
  }

  private onCallEnd(nodeCall: NodeCall, error: CohortError | null): void {
    if (this.isEnded || !this.calls.has(nodeCall)) return;
    this.calls.delete(nodeCall);
    nodeCall.call = undefined;
    const groupIds = [...nodeCall.groupIds];
    if (error !== null && error.code === ErrorCode.NOT_COORDINATOR) {
      for (const groupId of groupIds) {
        this.context.coordinators.markUnknown(groupId, nodeCall.node);
        (this.groups.get(groupId) as WatchedGroup).call = undefined;
        this.retryLater(groupId);
      }
      return;
    }
    if (error !== null && (isCoordinatorMoved(error.code) || error.code === ErrorCode.REQUEST_TIMED_OUT)) {
      for (const groupId of groupIds) this.context.coordinators.markUnknown(groupId, nodeCall.node);
    }
    this.end(
      error ?? errorFromCode(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'WatchGroups was ended by the server'),
    );
  }

  /** `groupId` is no longer watched on `nodeCall`; a call left with no group is cancelled. */
  private leave(nodeCall: NodeCall, groupId: string): void {
    (this.groups.get(groupId) as WatchedGroup).call = undefined;
    nodeCall.groupIds.delete(groupId);
    if (nodeCall.groupIds.size > 0) return;
    this.calls.delete(nodeCall);
    nodeCall.call?.cancel();
    nodeCall.call = undefined;
  }

  private retryLater(groupId: string): void {
    const group = this.groups.get(groupId) as WatchedGroup;
    if (this.isEnded || group.retry !== undefined) return;
    group.retry = this.context.scheduler.schedule(this.context.backoff.backoffMs(group.failures++), () => {
      group.retry = undefined;
      if (!this.isEnded) this.start([groupId]);
    });
  }

  private end(error: CohortError | null): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.lifetime.abort();
    for (const group of this.groups.values()) group.retry?.cancel();
    for (const c of this.calls) c.call?.cancel();
    this.calls.clear();
    this.onEnd(error);
  }
}
