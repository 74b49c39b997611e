import { ErrorCode } from '../errors';
import type { GroupEventReason } from '../protocol/group-event-reason';
import type { DescribedGroup } from '../protocol/group-messages';
import type { Time } from '../time';

/** One observable change of a group, or its state when a subscription opened (`isSnapshot`). */
export interface GroupChange {
  /** The group as DescribeGroups describes it right after the change (shared: do not modify it). */
  readonly group: DescribedGroup;
  readonly reason: GroupEventReason;
  /** The coordinator's wall clock (`Time.nowMs`) at the change. */
  readonly timestampMs: number;
  /** True for the first change of a group a subscription is given. */
  readonly isSnapshot: boolean;
}

/**
 * Hears a subscription's changes. Called synchronously from inside the coordinator, in the order the
 * changes happen: it must be quick, must not throw and must not call back into the coordinator
 * (subscribing or unsubscribing included; it may unsubscribe itself).
 */
export type GroupChangeListener = (change: GroupChange) => void;

/** What the source needs from the coordinator: its description of a group, and which groups exist. */
export interface GroupDescriber {
  describeGroup(groupId: string): DescribedGroup;
  groupIds(): Iterable<string>;
}

class Subscription {
  /** Watch-all only: the groups this subscription has had an event of, until they go Dead. */
  readonly seen: Set<string> | undefined;
  isActive = true;

  constructor(
    readonly listener: GroupChangeListener,
    /** The groups watched by name; undefined for every group. */
    readonly ids: readonly string[] | undefined,
  ) {
    this.seen = ids === undefined ? new Set() : undefined;
  }
}

/**
 * The coordinator's group changes, for whoever watches (WatchGroups streams, the admin page). The
 * coordinator calls `emit(groupId, reason)` after each observable change; `subscribe` hands a listener the
 * changes of some groups, or of every group.
 *
 * Nobody watching costs nothing: `emit` returns after one integer compare, before any lookup or
 * allocation, and no emit is on the heartbeat path at all. Someone watching costs one description of the
 * changed group per change (shared by every subscription that gets it), and only for watched groups.
 *
 * Snapshots: `subscribe` first hands the listener, synchronously, one `snapshot` of each group it watches:
 * for named ids every one of them, described as DescribeGroups would (a group that does not exist is
 * GROUP_ID_NOT_FOUND, state Dead); for every group, each group that exists. A watch of every group treats a
 * group it has not seen before (or that went Dead since) as new: its first change has `isSnapshot` true.
 *
 * Worked example: subscribe(['a']) while `a` is Stable gives (snapshot, Stable); a member leaves:
 * (member-left, PreparingRebalance); the join phase ends: (join-completed, CompletingRebalance); the leader
 * syncs: (rebalance-completed, Stable).
 */
export class GroupEvents {
  private readonly all = new Set<Subscription>();
  private readonly byGroup = new Map<string, Set<Subscription>>();
  private subscriptions = 0;

  constructor(
    private readonly describer: GroupDescriber,
    private readonly time: Time,
    /** A listener that threw (a bug); it is unsubscribed. Default: rethrown on a later microtask. */
    private readonly onListenerError: (error: unknown) => void = (error) =>
      queueMicrotask(() => {
        throw error;
      }),
  ) {}

  /** Subscriptions open now. */
  get size(): number {
    return this.subscriptions;
  }

  /** The groups some subscription watches by name (a snapshot: emitting may change the subscriptions). */
  namedGroupIds(): string[] {
    return [...this.byGroup.keys()];
  }

  /**
   * Hands `listener` a snapshot of each watched group now, then every change of them, until the function
   * returned is called. `groupIds` empty or undefined: every group.
   */
  subscribe(groupIds: readonly string[] | undefined, listener: GroupChangeListener): () => void {
    const named = groupIds === undefined || groupIds.length === 0 ? undefined : [...new Set(groupIds)];
    const subscription = new Subscription(listener, named);
    const ids = named ?? [...this.describer.groupIds()];
    if (named === undefined) this.all.add(subscription);
    else {
      for (const groupId of named) {
        let set = this.byGroup.get(groupId);
        if (set === undefined) this.byGroup.set(groupId, (set = new Set()));
        set.add(subscription);
      }
    }
    this.subscriptions++;
    const unsubscribe = (): void => this.unsubscribe(subscription);
    const timestampMs = this.time.nowMs();
    for (const groupId of ids) {
      if (!subscription.isActive) break;
      const group = this.describer.describeGroup(groupId);
      subscription.seen?.add(groupId);
      this.deliver(subscription, { group, reason: 'snapshot', timestampMs, isSnapshot: true });
    }
    return unsubscribe;
  }

  /** After an observable change of `groupId`: describes it once and hands it to each subscription. */
  emit(groupId: string, reason: GroupEventReason): void {
    if (this.subscriptions === 0) return;
    const named = this.byGroup.get(groupId);
    if (named === undefined && this.all.size === 0) return;
    const group = this.describer.describeGroup(groupId);
    const change: GroupChange = { group, reason, timestampMs: this.time.nowMs(), isSnapshot: false };
    let first: GroupChange | undefined;
    // Dead, or no longer coordinated here (unloaded: NOT_COORDINATOR, no state).
    const isGone = group.groupState === 'Dead' || group.errorCode !== ErrorCode.NONE;
    // Sets, not copies: a listener may unsubscribe itself (deleted as the loop goes, which a Set allows)
    // but never subscribes (see GroupChangeListener), so each subscription is visited once.
    if (named !== undefined) for (const subscription of named) this.deliver(subscription, change);
    for (const subscription of this.all) {
      const seen = subscription.seen!;
      const isNew = !seen.has(groupId);
      // A group gone Dead, or unloaded, leaves a watch of every group (its id may come back as a new group).
      if (isGone) seen.delete(groupId);
      else if (isNew) seen.add(groupId);
      if (isNew && isGone) continue; // never seen alive: nothing to tell
      this.deliver(subscription, isNew ? (first ??= { ...change, isSnapshot: true }) : change);
    }
  }

  private deliver(subscription: Subscription, change: GroupChange): void {
    if (!subscription.isActive) return;
    try {
      subscription.listener(change);
    } catch (error) {
      this.unsubscribe(subscription);
      this.onListenerError(error);
    }
  }

  private unsubscribe(subscription: Subscription): void {
    if (!subscription.isActive) return;
    subscription.isActive = false;
    this.subscriptions--;
    if (subscription.ids === undefined) {
      this.all.delete(subscription);
      return;
    }
    for (const groupId of subscription.ids) {
      const set = this.byGroup.get(groupId);
      if (set === undefined) continue;
      set.delete(subscription);
      if (set.size === 0) this.byGroup.delete(groupId);
    }
  }
}
