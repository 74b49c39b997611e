import { randomUUID } from 'node:crypto';
import type { GroupEventReason } from '../protocol/group-event-reason';
import { type DelayedOperation, DelayedOperationPurgatory, type PurgatoryStats } from '../purgatory';
import type { Time } from '../time';
import { SystemTimer, type TimerTask } from '../timer';
import type { GroupConfig } from './group-config';
import {
  DEFAULT_REPLY_SLICE_SIZE,
  type GroupCoordinatorListener,
  type GroupCoordinatorRuntimeOptions,
} from './group-coordinator-options';
import { type GroupDescriber, GroupEvents } from './group-events';
import type { GroupMetadata } from './group-metadata';
import { ReplyDispatcher } from './reply-dispatcher';

/**
 * What every coordinator shard of a node shares: the clock, one heartbeat timer, one rebalance purgatory,
 * one reply dispatcher, the listener and the group events. Kafka's coordinator runtime shares its timer
 * and executor among its shards the same way, so that leading 50 partitions costs what leading one does:
 * one timing wheel to advance, one purgatory to purge, one `setImmediate` turn for parked replies.
 *
 * Sharing stays safe because every task and every watched key belongs to exactly one group, and a group to
 * exactly one shard: a shard that unloads cancels its members' heartbeat tasks one by one and its groups'
 * purgatory keys (`join:<group>`, `sync:<group>`) with `cancelForKey`, and nothing of another shard's.
 */
export class GroupCoordinatorRuntime {
  readonly config: GroupConfig;
  readonly time: Time;
  /** Session timers: one DelayedHeartbeat per member (and per pending member id), re-armed in place. */
  readonly heartbeatTimer: SystemTimer;
  /** DelayedJoin / InitialDelayedJoin (`join:<group>`) and DelayedSync (`sync:<group>`). */
  readonly rebalancePurgatory: DelayedOperationPurgatory<DelayedOperation>;
  readonly dispatcher: ReplyDispatcher;
  readonly generateMemberId: (prefix: string) => string;
  readonly listener: GroupCoordinatorListener | undefined;
  readonly onTimerError: ((error: unknown) => void) | undefined;
  /** Stamps a group's state change and tells the listener (GroupMetadata calls it on each transition). */
  readonly onTransition: (group: GroupMetadata) => void;
  /** Every observable change of a group of any shard, for `watchGroups`; free while nobody watches. */
  readonly events: GroupEvents;
  /** Groups known now, over every shard (any state but Dead). */
  readonly numGroups: () => number;

  constructor(
    config: GroupConfig,
    time: Time,
    options: GroupCoordinatorRuntimeOptions,
    describer: GroupDescriber,
    /** Groups of every shard together: maxGroups bounds the node, not one partition. */
    numGroups: () => number,
  ) {
    this.numGroups = numGroups;
    if (!(config.groupMinSessionTimeoutMs <= config.groupMaxSessionTimeoutMs)) {
      throw new RangeError(
        `groupMinSessionTimeoutMs (${config.groupMinSessionTimeoutMs}) must be <= groupMaxSessionTimeoutMs (${config.groupMaxSessionTimeoutMs})`,
      );
    }
    this.config = config;
    this.time = time;
    this.onTimerError = options.onTimerError;
    const onTaskError =
      options.onTimerError === undefined ? undefined : (error: unknown) => options.onTimerError?.(error);
    this.heartbeatTimer = new SystemTimer({ name: 'group-heartbeat', time, onTaskError });
    // Kafka's names for the classic coordinator's purgatories, which metrics report them under.
    this.rebalancePurgatory = new DelayedOperationPurgatory(
      'Rebalance',
      new SystemTimer({ name: 'group-rebalance', time, onTaskError }),
    );
    this.dispatcher = new ReplyDispatcher(options.replySliceSize ?? DEFAULT_REPLY_SLICE_SIZE);
    this.generateMemberId = options.generateMemberId ?? ((prefix) => `${prefix}-${randomUUID()}`);
    this.listener = options.listener;
    this.events = new GroupEvents(describer, time, options.onWatchListenerError);
    const listener = this.listener;
    const onStateChange = listener?.onStateChange;
    this.onTransition = (group) => {
      group.currentStateTimestampMs = time.nowMs();
      onStateChange?.call(listener, group.groupId, group.previousState, group.state, group.generationId);
    };
  }

  /** Tells watchers of `groupId` (if any: nothing happens otherwise) that it changed. */
  notifyWatchers(groupId: string, reason: GroupEventReason): void {
    this.events.emit(groupId, reason);
  }

  /** Arms (or re-arms in place) a heartbeat-timer task. */
  schedule(task: TimerTask, delayMs: number): void {
    task.delayMs = delayMs;
    this.heartbeatTimer.add(task);
  }

  /**
   * Kafka's gauges for the coordinator's two purgatories, over every shard. Rebalance holds the DelayedJoins
   * and DelayedSyncs. Heartbeat is a timer of session tasks, re-armed in place, without watcher lists: each
   * task is watched by its member alone, as Kafka's DelayedHeartbeat is by its member key, so its
   * PurgatorySize equals its NumDelayedOperations.
   */
  purgatoryStats(): PurgatoryStats[] {
    const heartbeats = this.heartbeatTimer.size;
    return [
      this.rebalancePurgatory.stats(),
      { name: 'Heartbeat', watched: heartbeats, numDelayed: heartbeats },
    ];
  }

  /** Stops the shared timers and delivers every queued reply (after the shards answered their calls). */
  shutdown(): void {
    this.heartbeatTimer.shutdown();
    this.rebalancePurgatory.shutdown();
    this.dispatcher.flush();
  }
}
