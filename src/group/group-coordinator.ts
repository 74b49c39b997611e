import { randomUUID } from 'node:crypto';
import { CohortError, ErrorCode } from '../errors';
import { type DelayedOperation, DelayedOperationPurgatory, type PurgatoryStats } from '../purgatory';
import type { Time } from '../time';
import { SystemTimer, type TimerTask } from '../timer';
import { brokenInvariant } from './broken-invariant';
import { checkStoredGroup } from './check-stored-group';
import {
  checkDeleteGroupsRequest,
  checkDescribeGroupsRequest,
  checkHeartbeatRequest,
  checkJoinGroupRequest,
  checkLeaveGroupRequest,
  checkListGroupsRequest,
  checkOffsetCommitRequest,
  checkOffsetFetchRequest,
  checkSyncGroupRequest,
  isLegalTopicName,
} from './check-request';
import { DelayedHeartbeat, type HeartbeatExpirationHandler } from './delayed-heartbeat';
import { DelayedJoin } from './delayed-join';
import { DelayedSync } from './delayed-sync';
import type { GroupConfig } from './group-config';
import { GroupMetadata } from './group-metadata';
import type { GroupMetadataStore, StoredGroup, StoredMember } from './group-metadata-store';
import type {
  DeletableGroupResult,
  DeleteGroupsRequest,
  DeleteGroupsResponse,
  DescribedGroup,
  DescribedGroupMember,
  DescribeGroupsRequest,
  DescribeGroupsResponse,
  GroupCoordinatorService,
  GenerationWatcher,
  HeartbeatRequest,
  HeartbeatResponse,
  JoinGroupMember,
  JoinGroupRequest,
  JoinGroupResponse,
  LeaveGroupMemberResponse,
  LeaveGroupRequest,
  LeaveGroupResponse,
  ListGroupsRequest,
  ListGroupsResponse,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchPartition,
  OffsetFetchRequest,
  OffsetFetchResponse,
  OffsetFetchTopicResponse,
  RequestContext,
  SyncGroupRequest,
  SyncGroupResponse,
} from './group-protocol';
import { EMPTY_BUFFER, heartbeatReply, joinError, leaveError, syncError } from './group-responses';
import { type GroupState, parseGroupState } from './group-state';
import { GroupEvents, type GroupChangeListener } from './group-events';
import { emptyGroupStats, type GroupStats } from './group-stats';
import { InMemoryOffsetStore } from './in-memory-offset-store';
import { InitialDelayedJoin } from './initial-delayed-join';
import { MemberMetadata } from './member-metadata';
import {
  OffsetRetentionCheck,
  type OffsetRetentionCheckSummary,
  type OffsetRetentionHandler,
} from './offset-retention-check';
import type { OffsetStore, TopicPartition, TopicPartitionOffset } from './offset-store';
import { ParkedCall } from './parked-call';
import type { RebalanceHandler } from './rebalance-handler';
import type { GroupEventReason } from '../protocol/group-event-reason';
import type { RebalanceReason } from './rebalance-reason';
import { ReplyDispatcher } from './reply-dispatcher';
import { storeErrorCode, storeGroupErrorCode } from './store-error-code';
import { retainBytes } from './retained-bytes';

/**
 * A member that has not finished its first join lives on this fixed timeout instead of its session timeout
 * (Kafka's NewMemberJoinTimeoutMs): it cannot heartbeat usefully yet, and a client that gave up on its
 * JoinGroup must not hold a rebalance for a whole session.
 */
export const NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000;
/**
 * Replies of parked calls delivered per event-loop turn (see ReplyDispatcher). A reply costs the transport
 * ~70 µs (encode, HTTP/2 frames, write), so 100 are ~7 ms: a turn that also meets a full garbage collection
 * (20–33 ms at 5,000 parked calls) stays well under 50 ms. 250 made such turns 50–55 ms (docs/performance.md,
 * G5).
 */
export const DEFAULT_REPLY_SLICE_SIZE = 100;
/**
 * Offsets the retention check looks at in one event-loop turn before it yields. A check over 1,000,000
 * offsets of groups that never had members takes ~53 ms in one task, its longest turn ~4 ms in slices of
 * 10,000 (`npm run bench:group -- --only=retention`; docs/performance.md, G12).
 */
export const RETENTION_CHECK_OFFSETS_PER_TURN = 10_000;
/** OffsetFetch's answer for a partition without a committed offset. */
export const INVALID_OFFSET = -1;

/**
 * What the coordinator tells the layers above it (logs, metrics) as it happens. Every hook is optional and
 * runs synchronously inside the request or timer task that caused it, so it must be cheap and must not
 * call back into the coordinator. None runs on a successful heartbeat.
 */
export interface GroupCoordinatorListener {
  /** After every state change of a group (`group.state` is the new state). */
  onStateChange?(groupId: string, previous: GroupState, next: GroupState, generationId: number): void;
  /**
   * A rebalance starts: the group has just moved to PreparingRebalance; `generationId` is the generation it
   * is leaving. `memberId` is the member whose join, update, leave or expiry caused it ('' when no single
   * member did: sync-expired, store-failed, over-capacity).
   */
  onPrepareRebalance?(groupId: string, generationId: number, reason: RebalanceReason, memberId: string): void;
  /** A member's session ran out (or a new member never completed its first join) and it was removed. */
  onMemberExpired?(groupId: string, memberId: string, groupInstanceId: string): void;
  /**
   * A request was fenced as it arrived: FENCED_INSTANCE_ID (another member id holds its group instance id)
   * or ILLEGAL_GENERATION (it names a generation the group has left).
   */
  onFenced?(groupId: string, memberId: string, groupInstanceId: string, errorCode: ErrorCode): void;
  /** A group's metadata record could not be stored (its members got `storeGroupErrorCode(error)`, if any). */
  onGroupStoreFailed?(groupId: string, generationId: number, error: unknown): void;
  /**
   * Offsets of a group expired (offsets.retention.minutes) and their removal is durable; `isGroupRemoved`
   * when the group went with them (it was Empty and has nothing left).
   */
  onOffsetsExpired?(groupId: string, partitions: number, isGroupRemoved: boolean): void;
  /** Expired offsets, or an expired group, could not be removed from a store; the next check tries again. */
  onOffsetExpiryFailed?(groupId: string, error: unknown): void;
  /**
   * `partitions` partitions of an OffsetCommit were refused one by one with `errorCode`:
   * INVALID_TOPIC_EXCEPTION (a name no topic can have), UNKNOWN_TOPIC_OR_PARTITION (a negative partition),
   * OFFSET_METADATA_TOO_LARGE, or INVALID_COMMIT_OFFSET_SIZE (past groupMaxCommittedPartitions).
   */
  onOffsetCommitRefused?(groupId: string, errorCode: ErrorCode, partitions: number): void;
  /** A retention check's pass over the groups ended (Kafka logs the same after each cleanup). */
  onOffsetRetentionCheckCompleted?(summary: OffsetRetentionCheckSummary): void;
}

export interface GroupCoordinatorOptions {
  /** Where committed offsets live; in memory unless given. */
  offsetStore?: OffsetStore;
  /**
   * Where group metadata lives; none by default (groups then come back from offsets alone, Empty). It may be
   * the same object as `offsetStore`.
   */
  metadataStore?: GroupMetadataStore;
  /** Parked replies delivered per event-loop turn; default DEFAULT_REPLY_SLICE_SIZE (100). */
  replySliceSize?: number;
  /** Offsets the retention check looks at per event-loop turn; default RETENTION_CHECK_OFFSETS_PER_TURN. */
  retentionCheckOffsetsPerTurn?: number;
  /** Makes a member id from the client id or group instance id; default `${prefix}-${randomUUID()}`. */
  generateMemberId?: (prefix: string) => string;
  listener?: GroupCoordinatorListener;
  /** Errors thrown by timer callbacks (broken invariants). Without it they are rethrown by the timer. */
  onTimerError?: (error: unknown) => void;
  /**
   * Errors thrown by a `watchGroups` listener (a bug: listeners must not throw); the listener is
   * unsubscribed. Without it they are rethrown on a later microtask.
   */
  onWatchListenerError?: (error: unknown) => void;
}

const EMPTY_MEMBERS: JoinGroupMember[] = Object.freeze([]) as unknown as JoinGroupMember[];

/** A request waiting for the offset store; shutdown answers it at once. */
interface StoreWait {
  abandon(): void;
}

/** What DeleteGroups asks of each store. */
interface GroupDeletion {
  deleteGroup(groupId: string): Promise<void>;
}

const ignoreStored = (): void => undefined;

/**
 * Kafka's classic group coordinator (GroupCoordinator.scala at its newest, with the Java coordinator's
 * refinements) on cohort's timer and purgatory, for one event loop.
 *
 * Requests are handled synchronously against in-memory groups; a request that must wait is parked as a
 * ParkedCall on its member (JoinGroup until the rebalance completes, SyncGroup until the leader's
 * assignment) or on the offset store (OffsetCommit until durable). Three kinds of timer drive the waits,
 * and a fourth tidies up:
 *
 * - DelayedJoin / InitialDelayedJoin (rebalance purgatory, key `join:<group>`): completes the join phase
 *   when every member rejoined, or at the rebalance timeout;
 * - DelayedSync (rebalance purgatory, key `sync:<group>`): removes members that got their join answer but
 *   never synced within the rebalance timeout;
 * - DelayedHeartbeat (heartbeat timer, one task per member, re-armed in place): the session timeout, and the
 *   expiry of pending member ids (KIP-394);
 * - OffsetRetentionCheck (retention timer, one task): removes expired offsets and the Empty groups they
 *   leave, every offsetsRetentionCheckIntervalMs (KIP-211).
 *
 * With a metadata store, group state is durable (Kafka's `__consumer_offsets`): a generation is stored
 * before it becomes Stable, an Empty group when it empties, and `load()` takes groups back after a restart,
 * answering COORDINATOR_LOAD_IN_PROGRESS until it is done.
 *
 * docs/protocol.md lists, state by state, what each request gets, and where cohort chose among Kafka's
 * versions.
 */
export class GroupCoordinator
  implements GroupCoordinatorService, HeartbeatExpirationHandler, RebalanceHandler, OffsetRetentionHandler
{
  private readonly config: GroupConfig;
  private readonly time: Time;
  private readonly groups = new Map<string, GroupMetadata>();
  private readonly heartbeatTimer: SystemTimer;
  private readonly rebalancePurgatory: DelayedOperationPurgatory<DelayedOperation>;
  /** Runs the offset retention check; a timer of its own so the Heartbeat purgatory counts sessions only. */
  private readonly retentionTimer: SystemTimer;
  private readonly retentionCheck: OffsetRetentionCheck;
  private readonly retentionCheckOffsetsPerTurn: number;
  /** The groups a retention check has still to visit; undefined between checks. */
  private retentionPass: RetentionPass | undefined;
  private readonly onTimerError: ((error: unknown) => void) | undefined;
  /** What the current pass has done so far. */
  private retentionTally = newRetentionTally(0);
  private readonly offsetStore: OffsetStore;
  private readonly metadataStore: GroupMetadataStore | undefined;
  /** The distinct stores a group's deletion goes to (one when one object is both). */
  private readonly groupStores: readonly GroupDeletion[];
  private readonly dispatcher: ReplyDispatcher;
  private readonly generateMemberIdFn: (prefix: string) => string;
  private readonly listener: GroupCoordinatorListener | undefined;
  private readonly onTransition: (group: GroupMetadata) => void;
  private readonly storeWaits = new Set<StoreWait>();
  /** Every observable change of a group, for `watchGroups`; free while nobody watches. */
  private readonly events: GroupEvents;
  /** False after shutdown: timers are stopped and late store callbacks do nothing. */
  private isActive = true;
  /**
   * What every group request gets before anything else: NONE when serving, COORDINATOR_LOAD_IN_PROGRESS
   * while loading, COORDINATOR_NOT_AVAILABLE after shutdown or a failed load.
   */
  private availability: ErrorCode = ErrorCode.NONE;

  constructor(config: GroupConfig, time: Time, options: GroupCoordinatorOptions = {}) {
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
    this.offsetStore = options.offsetStore ?? new InMemoryOffsetStore();
    this.metadataStore = options.metadataStore;
    this.groupStores =
      this.metadataStore === undefined || (this.metadataStore as unknown) === this.offsetStore
        ? [this.offsetStore]
        : [this.offsetStore, this.metadataStore];
    this.dispatcher = new ReplyDispatcher(options.replySliceSize ?? DEFAULT_REPLY_SLICE_SIZE);
    this.generateMemberIdFn = options.generateMemberId ?? ((prefix) => `${prefix}-${randomUUID()}`);
    this.listener = options.listener;
    this.events = new GroupEvents(
      {
        describeGroup: (groupId) => this.describeGroup(groupId),
        groupIds: () => this.groups.keys(),
      },
      time,
      options.onWatchListenerError,
    );
    const onStateChange = this.listener?.onStateChange;
    this.onTransition = (group) => {
      group.currentStateTimestampMs = time.nowMs();
      onStateChange?.call(this.listener, group.groupId, group.previousState, group.state, group.generationId);
    };
    this.retentionTimer = new SystemTimer({ name: 'group-offset-retention', time, onTaskError });
    this.retentionCheckOffsetsPerTurn =
      options.retentionCheckOffsetsPerTurn ?? RETENTION_CHECK_OFFSETS_PER_TURN;
    if (!(this.retentionCheckOffsetsPerTurn >= 1)) {
      throw new RangeError(
        `retentionCheckOffsetsPerTurn must be >= 1, got ${this.retentionCheckOffsetsPerTurn}`,
      );
    }
    this.retentionCheck = new OffsetRetentionCheck(this, config.offsetsRetentionCheckIntervalMs);
    this.retentionTimer.add(this.retentionCheck);
    // Whatever the stores hold already comes back now; a store still to be replayed comes back with load().
    this.restoreGroups(this.checkedStoredGroups());
  }

  /** Groups currently known (any state but Dead). */
  get numGroups(): number {
    return this.groups.size;
  }

  /**
   * Kafka's gauges for the coordinator's two purgatories. Rebalance holds the DelayedJoins and DelayedSyncs.
   * Heartbeat is a timer of session tasks, re-armed in place, without watcher lists: each task is watched by
   * its member alone, as Kafka's DelayedHeartbeat is by its member key, so its PurgatorySize equals its
   * NumDelayedOperations.
   */
  purgatoryStats(): PurgatoryStats[] {
    const heartbeats = this.heartbeatTimer.size;
    return [
      this.rebalancePurgatory.stats(),
      { name: 'Heartbeat', watched: heartbeats, numDelayed: heartbeats },
    ];
  }

  /** Groups and members by state. Walks every group: for metrics on scrape, never per request. */
  groupStats(): GroupStats {
    const stats = emptyGroupStats();
    for (const group of this.groups.values()) {
      const count = stats[group.state];
      count.groups++;
      count.members += group.size;
    }
    return stats;
  }

  /**
   * Loads group state that `loading` is bringing into the stores (a replay of `__consumer_offsets`).
   * Until it resolves every group request gets COORDINATOR_LOAD_IN_PROGRESS (clients retry); then every
   * stored group comes back — Stable with its generation, protocol, leader and members, or Empty — and
   * every group that has only offsets comes back Empty. Each restored member's session timer starts
   * afresh, as Kafka's does when a coordinator takes over groups: the members kept heartbeating to a
   * coordinator that was not there and must not be expired for it.
   *
   * If `loading` rejects, or a stored group is unusable, the coordinator serves nothing
   * (COORDINATOR_NOT_AVAILABLE) rather than partial state, and the returned promise rejects.
   */
  load(loading: Promise<unknown>): Promise<void> {
    if (this.availability === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) {
      return Promise.reject(brokenInvariant('the coordinator is already loading'));
    }
    if (!this.isActive) return Promise.reject(brokenInvariant('the coordinator has shut down'));
    this.availability = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    return loading.then(
      () => {
        if (!this.isActive) return;
        try {
          this.restoreGroups(this.checkedStoredGroups());
        } catch (error) {
          this.availability = ErrorCode.COORDINATOR_NOT_AVAILABLE;
          throw error;
        }
        this.availability = ErrorCode.NONE;
        // Watches opened while loading saw COORDINATOR_LOAD_IN_PROGRESS: now every group as it is.
        if (this.events.size > 0)
          for (const groupId of [...this.groups.keys()]) this.notifyWatchers(groupId, 'group-loaded');
      },
      (error: unknown) => {
        if (this.isActive) this.availability = ErrorCode.COORDINATOR_NOT_AVAILABLE;
        throw error;
      },
    );
  }

  /** The metadata store's groups, every one checked before any is restored: all or nothing. */
  private checkedStoredGroups(): StoredGroup[] {
    if (this.metadataStore === undefined) return [];
    const stored = [...this.metadataStore.storedGroups()];
    for (const group of stored) {
      const problem = checkStoredGroup(group);
      if (problem !== undefined) throw brokenInvariant(`cannot load group metadata: ${problem}`);
    }
    return stored;
  }

  /** Brings back stored groups, then groups known only by their offsets (Empty), skipping known ones. */
  private restoreGroups(stored: readonly StoredGroup[]): void {
    for (const group of stored) {
      if (!this.groups.has(group.groupId)) this.restoreGroup(group);
    }
    for (const groupId of this.offsetStore.groupIds()) {
      if (!this.groups.has(groupId)) this.createGroup(groupId);
    }
  }

  private restoreGroup(stored: StoredGroup): void {
    const group = this.createGroup(stored.groupId);
    for (const each of stored.members) {
      const member = new MemberMetadata(
        each.memberId,
        each.groupInstanceId,
        each.clientId,
        each.clientHost,
        each.rebalanceTimeoutMs,
        each.sessionTimeoutMs,
        stored.protocolType,
        each.protocols,
      );
      member.assignment = each.assignment;
      member.heartbeat = new DelayedHeartbeat(this, group, each.memberId, false);
      group.add(member, undefined);
    }
    group.restore(stored.generationId, stored.protocolType, stored.protocolName, stored.leaderId);
    // The stored time of its last change, not the restart's: an Empty group's offsets expire from it.
    group.currentStateTimestampMs = stored.currentStateTimestampMs;
    for (const member of group.allMembers()) this.scheduleSessionTimeout(member);
    // A group.max.size lowered since the group was stored: rebalance so the members that rejoin last go
    // (Kafka's onGroupLoaded does the same).
    if (group.size > this.config.groupMaxSize) this.prepareRebalance(group, 'over-capacity', '');
  }

  // ---------------------------------------------------------------------------------------------------
  // JoinGroup

  joinGroup(request: JoinGroupRequest, context: RequestContext): Promise<JoinGroupResponse> {
    const invalid = checkJoinGroupRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    const { groupId, memberId } = request;
    if (groupId === '') return Promise.resolve(joinError(memberId, ErrorCode.INVALID_GROUP_ID));
    if (this.availability !== ErrorCode.NONE) return Promise.resolve(joinError(memberId, this.availability));
    if (
      request.sessionTimeoutMs < this.config.groupMinSessionTimeoutMs ||
      request.sessionTimeoutMs > this.config.groupMaxSessionTimeoutMs
    ) {
      return Promise.resolve(joinError(memberId, ErrorCode.INVALID_SESSION_TIMEOUT));
    }
    // Checked before anything changes: a member that is refused here keeps its place and its protocols.
    const metadataBytes = protocolMetadataBytes(request);
    if (metadataBytes > this.config.memberMetadataMaxBytes) {
      return Promise.resolve(joinError(memberId, ErrorCode.MESSAGE_TOO_LARGE));
    }
    const isUnknownMember = memberId === '';
    let group = this.groups.get(groupId);
    let isNewGroup = false;
    if (group === undefined) {
      // Only a member without an id may create a group; a known id in an unknown group is stale.
      if (!isUnknownMember) return Promise.resolve(joinError(memberId, ErrorCode.UNKNOWN_MEMBER_ID));
      if (this.groups.size >= this.config.maxGroups) {
        return Promise.resolve(joinError('', ErrorCode.GROUP_MAX_SIZE_REACHED));
      }
      group = this.createGroup(groupId);
      isNewGroup = true;
    }

    let result: Promise<JoinGroupResponse>;
    if (this.wouldOverfillMetadata(group, request, metadataBytes)) {
      // Before the round starts, changing nothing: a group record the store cannot take would keep the
      // group from ever becoming Stable.
      result = Promise.resolve(joinError(memberId, ErrorCode.GROUP_MAX_SIZE_REACHED));
    } else if (!this.acceptJoiningMember(group, memberId)) {
      const member = group.get(memberId);
      if (member !== undefined) {
        this.removeMember(group, member, joinError('', ErrorCode.GROUP_MAX_SIZE_REACHED));
        this.notifyWatchers(groupId, 'over-capacity');
      }
      // A refused pending id goes too (Kafka's remove() drops it): left pending, it would hold up the
      // join until its session expired. The check below then completes a join that waited only for it.
      else group.removePendingMember(memberId)?.cancel();
      result = Promise.resolve(joinError('', ErrorCode.GROUP_MAX_SIZE_REACHED));
    } else if (isUnknownMember) {
      result = this.doNewMemberJoinGroup(group, request, context);
    } else {
      result = this.doCurrentMemberJoinGroup(group, request, context);
    }

    if (group.is('PreparingRebalance')) this.rebalancePurgatory.checkAndComplete(group.joinKey);
    if (isNewGroup && group.is('Empty')) {
      // A join that created a group and then failed leaves nothing behind (and nothing was told of it).
      if (group.size === 0 && group.numPending === 0) this.deleteGroup(group);
      else this.notifyWatchers(groupId, 'group-created');
    }
    return result;
  }

  /**
   * group.max.size (KIP-389). While rebalancing, the count that matters is the members that rejoined, so an
   * over-full group sheds the members that rejoin last; otherwise it is the member count.
   */
  private acceptJoiningMember(group: GroupMetadata, memberId: string): boolean {
    switch (group.state) {
      case 'Empty':
      case 'Dead':
        return true;
      case 'PreparingRebalance':
        return (group.get(memberId)?.isAwaitingJoin ?? false) || group.numAwaiting < this.config.groupMaxSize;
      case 'CompletingRebalance':
      case 'Stable':
        return group.has(memberId) || group.size < this.config.groupMaxSize;
    }
  }

  /**
   * groupMaxMetadataBytes: whether this join would take the group's protocol metadata past the bound. The
   * member it replaces (itself, or the static member whose instance id it takes) no longer counts. A join
   * that does not grow the total passes, so a group stored before the bound was lowered keeps working. A
   * new group (created by this join) has nothing yet, so only a member over the bound alone is refused.
   */
  private wouldOverfillMetadata(
    group: GroupMetadata,
    request: JoinGroupRequest,
    metadataBytes: number,
  ): boolean {
    const total = group.protocolMetadataBytes;
    const { memberId, groupInstanceId } = request;
    let replaced: MemberMetadata | undefined;
    if (memberId !== '') {
      // A member id the group does not know gets UNKNOWN_MEMBER_ID below, whatever its size.
      replaced = group.get(memberId);
      if (replaced === undefined && !group.isPendingMember(memberId)) return false;
    } else if (groupInstanceId !== '') {
      const current = group.currentStaticMemberId(groupInstanceId);
      if (current !== undefined) replaced = group.get(current);
    }
    let replacedBytes = 0;
    for (const protocol of replaced?.supportedProtocols ?? []) replacedBytes += protocol.metadata.length;
    const after = total - replacedBytes + metadataBytes;
    return after > this.config.groupMaxMetadataBytes && after > total;
  }

  private doNewMemberJoinGroup(
    group: GroupMetadata,
    request: JoinGroupRequest,
    context: RequestContext,
  ): Promise<JoinGroupResponse> {
    if (group.is('Dead')) return Promise.resolve(joinError('', ErrorCode.COORDINATOR_NOT_AVAILABLE));
    if (!group.supportsProtocols(request.protocolType, request.protocols)) {
      return Promise.resolve(joinError('', ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
    }
    const { groupInstanceId } = request;
    const newMemberId = this.generateMemberIdFn(groupInstanceId !== '' ? groupInstanceId : request.clientId);
    if (groupInstanceId !== '') {
      const oldMemberId = group.currentStaticMemberId(groupInstanceId);
      if (oldMemberId !== undefined) {
        return this.updateStaticMemberAndRebalance(group, oldMemberId, newMemberId, request, context);
      }
      return this.addMemberAndRebalance(group, newMemberId, request, context);
    }
    // KIP-394: a dynamic member gets its id first and must come back with it. Until then the id is pending:
    // it holds up join completion, and expires after the session timeout if never used.
    const expiration = new DelayedHeartbeat(this, group, newMemberId, true);
    group.addPendingMember(newMemberId, expiration);
    this.schedule(expiration, request.sessionTimeoutMs);
    return Promise.resolve(joinError(newMemberId, ErrorCode.MEMBER_ID_REQUIRED));
  }

  private doCurrentMemberJoinGroup(
    group: GroupMetadata,
    request: JoinGroupRequest,
    context: RequestContext,
  ): Promise<JoinGroupResponse> {
    const { memberId, groupInstanceId } = request;
    if (group.is('Dead')) return Promise.resolve(joinError(memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE));
    if (!group.supportsProtocols(request.protocolType, request.protocols)) {
      return Promise.resolve(joinError(memberId, ErrorCode.INCONSISTENT_GROUP_PROTOCOL));
    }
    if (group.isPendingMember(memberId)) {
      // Pending ids are only ever handed to dynamic members; claiming one with an instance id is a
      // contradiction in the request itself.
      if (groupInstanceId !== '') {
        return Promise.reject(
          new CohortError(
            ErrorCode.INVALID_REQUEST,
            `JoinGroup with groupInstanceId=${groupInstanceId} for pending dynamic member ${memberId}`,
          ),
        );
      }
      group.removePendingMember(memberId)?.cancel();
      return this.addMemberAndRebalance(group, memberId, request, context);
    }
    const error = this.validateCurrentMember(group, memberId, groupInstanceId);
    if (error !== ErrorCode.NONE) return Promise.resolve(joinError(memberId, error));
    const member = group.get(memberId) as MemberMetadata;

    switch (group.state) {
      case 'PreparingRebalance':
        return this.updateMemberAndRebalance(group, member, request, context, 'member-updated');
      case 'CompletingRebalance':
        if (member.matches(request.protocols)) {
          // The member probably missed our answer: give it the current generation again.
          return Promise.resolve(
            this.joinResponse(
              group,
              member,
              group.isLeader(memberId) ? group.currentMemberMetadata() : EMPTY_MEMBERS,
            ),
          );
        }
        return this.updateMemberAndRebalance(group, member, request, context, 'member-updated');
      case 'Stable':
        // A leader's JoinGroup always rebalances: it may have seen metadata change (new partitions, say)
        // that no member's subscription shows.
        if (!member.matches(request.protocols)) {
          return this.updateMemberAndRebalance(group, member, request, context, 'member-updated');
        }
        if (group.isLeader(memberId)) {
          return this.updateMemberAndRebalance(group, member, request, context, 'leader-rejoined');
        }
        return Promise.resolve(this.joinResponse(group, member, EMPTY_MEMBERS));
      case 'Empty':
      case 'Dead':
        return Promise.resolve(joinError(memberId, ErrorCode.UNKNOWN_MEMBER_ID));
    }
  }

  private addMemberAndRebalance(
    group: GroupMetadata,
    memberId: string,
    request: JoinGroupRequest,
    context: RequestContext,
  ): Promise<JoinGroupResponse> {
    const member = new MemberMetadata(
      memberId,
      request.groupInstanceId,
      request.clientId,
      context.clientHost,
      request.rebalanceTimeoutMs,
      request.sessionTimeoutMs,
      request.protocolType,
      request.protocols,
    );
    member.heartbeat = new DelayedHeartbeat(this, group, memberId, false);
    member.isNew = true;
    // KIP-134: a member arriving while a rebalance that left Empty is still in its initial delay extends it.
    if (group.is('PreparingRebalance') && group.previousState === 'Empty') group.newMemberAdded = true;
    const call = this.parkJoin(memberId, context);
    group.add(member, call);
    this.schedule(member.heartbeat, NEW_MEMBER_JOIN_TIMEOUT_MS);
    // Already rebalancing: no new rebalance, but a new member in the description.
    if (group.canRebalance) this.prepareRebalance(group, 'member-joined', memberId);
    else this.notifyWatchers(group.groupId, 'member-joined');
    return call.promise;
  }

  private updateMemberAndRebalance(
    group: GroupMetadata,
    member: MemberMetadata,
    request: JoinGroupRequest,
    context: RequestContext,
    reason: RebalanceReason,
  ): Promise<JoinGroupResponse> {
    // A second JoinGroup while the first is parked supersedes it. Kafka drops the first silently; we answer
    // it so no call hangs. The member keeps its place through the new call.
    group.maybeInvokeJoinCallback(member, joinError(member.memberId, ErrorCode.REBALANCE_IN_PROGRESS));
    const call = this.parkJoin(member.memberId, context);
    group.updateMember(member, request.protocols, request.rebalanceTimeoutMs, request.sessionTimeoutMs, call);
    this.maybePrepareRebalance(group, reason, member.memberId);
    return call.promise;
  }

  /**
   * KIP-345: a known group instance id rejoins without a member id (the instance restarted). The member
   * continues under a new id; the old id is fenced. In Stable, if the rejoin does not change the protocol
   * the group would choose, there is no rebalance: the member gets the current generation, and a leader is
   * told it leads but must skip assignment (KIP-814).
   */
  private updateStaticMemberAndRebalance(
    group: GroupMetadata,
    oldMemberId: string,
    newMemberId: string,
    request: JoinGroupRequest,
    context: RequestContext,
  ): Promise<JoinGroupResponse> {
    const member = group.replaceStaticMember(request.groupInstanceId, oldMemberId, newMemberId);
    // The old member id is fenced: its stream hears so now, not at its next heartbeat. The new id's stream
    // takes the slot with its first heartbeat.
    member.notifyGone(ErrorCode.FENCED_INSTANCE_ID);
    const call = this.parkJoin(newMemberId, context);
    group.updateMember(member, request.protocols, request.rebalanceTimeoutMs, request.sessionTimeoutMs, call);
    this.scheduleSessionTimeout(member);
    switch (group.state) {
      case 'Stable':
        if (group.protocolName === group.selectProtocol()) {
          // The stored generation names the old member id: store the new one before answering, so that
          // after a restart the member is still known by the id it was given (Kafka does the same).
          const generationId = group.generationId;
          // The group stays Stable, under the member's new id.
          this.notifyWatchers(group.groupId, 'static-member-replaced');
          this.storeGroup(group, undefined, (error) => {
            // A rebalance or removal meanwhile answers the call (or did already).
            if (member.awaitingJoin !== call || !group.is('Stable') || group.generationId !== generationId) {
              return;
            }
            if (error !== ErrorCode.NONE) {
              // The group keeps the new id in memory; the instance, told to rejoin, replaces it again.
              group.maybeInvokeJoinCallback(member, joinError('', error));
              return;
            }
            const isLeader = group.isLeader(newMemberId);
            const response = this.joinResponse(
              group,
              member,
              isLeader ? group.currentMemberMetadata() : EMPTY_MEMBERS,
            );
            response.skipAssignment = isLeader;
            group.maybeInvokeJoinCallback(member, response);
          });
        } else {
          this.maybePrepareRebalance(group, 'static-member-replaced', newMemberId);
        }
        break;
      case 'CompletingRebalance':
        // The leader may already hold the old member id for its assignment; only a new generation makes
        // the assignment and the member ids agree again.
        this.prepareRebalance(group, 'static-member-replaced', newMemberId);
        break;
      case 'PreparingRebalance':
        this.notifyWatchers(group.groupId, 'static-member-replaced');
        break;
      case 'Empty':
      case 'Dead':
        throw brokenInvariant(
          `Group ${group.groupId} in state ${group.state} has static member ${request.groupInstanceId}`,
        );
    }
    return call.promise;
  }

  private joinResponse(
    group: GroupMetadata,
    member: MemberMetadata,
    members: JoinGroupMember[],
  ): JoinGroupResponse {
    return {
      errorCode: ErrorCode.NONE,
      generationId: group.generationId,
      protocolType: group.protocolType ?? '',
      protocolName: group.protocolName ?? '',
      leaderId: group.leaderId ?? '',
      memberId: member.memberId,
      members,
      skipAssignment: false,
    };
  }

  private parkJoin(memberId: string, context: RequestContext): ParkedCall<JoinGroupResponse> {
    const aborted =
      context.onCancel === undefined ? undefined : joinError(memberId, ErrorCode.REQUEST_TIMED_OUT);
    return new ParkedCall<JoinGroupResponse>(this.dispatcher, context, aborted);
  }

  // ---------------------------------------------------------------------------------------------------
  // Rebalance: PreparingRebalance → CompletingRebalance → Stable

  private maybePrepareRebalance(group: GroupMetadata, reason: RebalanceReason, memberId: string): void {
    if (group.canRebalance) this.prepareRebalance(group, reason, memberId);
  }

  private prepareRebalance(group: GroupMetadata, reason: RebalanceReason, memberId: string): void {
    // Members waiting for an assignment of a generation that will not become Stable must rejoin.
    if (group.is('CompletingRebalance'))
      this.resetAndPropagateAssignmentError(group, ErrorCode.REBALANCE_IN_PROGRESS);
    this.removeSyncExpiration(group);
    const delayedJoin = group.is('Empty')
      ? new InitialDelayedJoin(
          this,
          group,
          this.config.groupInitialRebalanceDelayMs,
          Math.max(group.rebalanceTimeoutMs - this.config.groupInitialRebalanceDelayMs, 0),
        )
      : new DelayedJoin(this, group, group.rebalanceTimeoutMs);
    group.transitionTo('PreparingRebalance');
    this.listener?.onPrepareRebalance?.(group.groupId, group.generationId, reason, memberId);
    // Every member's generation is over; a watched one hears it now rather than at its next heartbeat.
    for (const member of group.allMembers()) member.notifyRebalance(ErrorCode.REBALANCE_IN_PROGRESS);
    // Before the join may complete below, so that watchers see the rebalance start, then its end.
    this.notifyWatchers(group.groupId, reason);
    this.rebalancePurgatory.tryCompleteElseWatch(delayedJoin, group.joinKeys);
  }

  tryCompleteJoin(group: GroupMetadata, operation: DelayedOperation): boolean {
    return group.hasAllMembersJoined ? operation.forceComplete() : false;
  }

  onCompleteInitialJoin(group: GroupMetadata, delayMs: number, remainingMs: number): void {
    if (group.newMemberAdded && remainingMs !== 0) {
      group.newMemberAdded = false;
      const nextDelayMs = Math.min(this.config.groupInitialRebalanceDelayMs, remainingMs);
      const nextRemainingMs = Math.max(remainingMs - delayMs, 0);
      this.rebalancePurgatory.tryCompleteElseWatch(
        new InitialDelayedJoin(this, group, nextDelayMs, nextRemainingMs),
        group.joinKeys,
      );
    } else {
      this.onCompleteJoin(group);
    }
  }

  /**
   * The join phase is over. Dynamic members that did not rejoin are gone; static members stay (their
   * session decides). A rejoined member leads; the generation advances with the protocol most members
   * prefer; every rejoined member is answered (the leader with everyone's metadata) and must now SyncGroup
   * within the rebalance timeout. O(members), once per rebalance.
   */
  onCompleteJoin(group: GroupMetadata): void {
    let notRejoined: MemberMetadata[] | undefined;
    for (const member of group.allMembers()) {
      if (!member.isAwaitingJoin && !member.isStaticMember) (notRejoined ??= []).push(member);
    }
    if (notRejoined !== undefined) {
      for (const member of notRejoined) {
        group.remove(member.memberId);
        member.heartbeat.cancel();
        member.notifyGone(ErrorCode.UNKNOWN_MEMBER_ID);
      }
    }
    if (group.is('Dead')) return;
    if (!group.maybeElectNewJoinedLeader() && group.size > 0) {
      // Only static members that have not rejoined are left: wait another rebalance timeout; their session
      // timers remove the ones that are really gone.
      if (notRejoined !== undefined) this.notifyWatchers(group.groupId, 'rejoin-expired');
      this.rebalancePurgatory.tryCompleteElseWatch(
        new DelayedJoin(this, group, group.rebalanceTimeoutMs),
        group.joinKeys,
      );
      return;
    }
    group.initNextGeneration();
    if (group.is('Empty')) {
      // Nobody is left: the empty generation is what a restart must bring back (Kafka stores it too).
      this.notifyWatchers(group.groupId, 'group-emptied');
      this.storeGroup(group, undefined, ignoreStored);
      return;
    }

    const leaderMembers = group.currentMemberMetadata();
    for (const member of group.allMembers()) {
      const response = this.joinResponse(
        group,
        member,
        group.isLeader(member.memberId) ? leaderMembers : EMPTY_MEMBERS,
      );
      group.maybeInvokeJoinCallback(member, response);
      member.isNew = false;
      this.scheduleSessionTimeout(member);
      group.addPendingSyncMember(member.memberId);
    }
    this.notifyWatchers(group.groupId, 'join-completed');
    this.rebalancePurgatory.tryCompleteElseWatch(
      new DelayedSync(this, group, group.generationId, group.rebalanceTimeoutMs),
      group.syncKeys,
    );
  }

  tryCompletePendingSync(group: GroupMetadata, generationId: number, operation: DelayedOperation): boolean {
    if (generationId !== group.generationId) return operation.forceComplete();
    switch (group.state) {
      case 'Dead':
      case 'Empty':
      case 'PreparingRebalance':
        return operation.forceComplete();
      case 'CompletingRebalance':
      case 'Stable':
        return group.hasReceivedSyncFromAllMembers ? operation.forceComplete() : false;
    }
  }

  onExpirePendingSync(group: GroupMetadata, generationId: number): void {
    if (generationId !== group.generationId) return;
    if (!group.is('CompletingRebalance') && !group.is('Stable')) return;
    if (group.hasReceivedSyncFromAllMembers) return;
    for (const memberId of group.allPendingSyncMembers()) {
      const member = group.remove(memberId);
      if (member !== undefined) {
        // A member that never synced has nothing parked, but answer defensively: no call may hang.
        member.awaitingJoin?.complete(joinError('', ErrorCode.UNKNOWN_MEMBER_ID));
        member.heartbeat.cancel();
        member.notifyGone(ErrorCode.UNKNOWN_MEMBER_ID);
      }
    }
    this.prepareRebalance(group, 'sync-expired', '');
  }

  private removeSyncExpiration(group: GroupMetadata): void {
    group.clearPendingSyncMembers();
    this.rebalancePurgatory.checkAndComplete(group.syncKey);
  }

  private resetAndPropagateAssignmentError(group: GroupMetadata, error: ErrorCode): void {
    for (const member of group.allMembers()) member.assignment = EMPTY_BUFFER;
    this.propagateAssignment(group, error);
  }

  private propagateAssignment(group: GroupMetadata, error: ErrorCode): void {
    for (const member of group.allMembers()) {
      const response =
        error === ErrorCode.NONE
          ? {
              errorCode: ErrorCode.NONE,
              protocolType: group.protocolType ?? '',
              protocolName: group.protocolName ?? '',
              assignment: member.assignment,
            }
          : syncError(error);
      // Its session restarts with the answer: a member may have been parked here longer than a session.
      if (group.maybeInvokeSyncCallback(member, response)) this.scheduleSessionTimeout(member);
    }
  }

  // ---------------------------------------------------------------------------------------------------
  // SyncGroup

  syncGroup(request: SyncGroupRequest, context: RequestContext): Promise<SyncGroupResponse> {
    const invalid = checkSyncGroupRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (request.groupId === '') return Promise.resolve(syncError(ErrorCode.INVALID_GROUP_ID));
    if (this.availability !== ErrorCode.NONE) return Promise.resolve(syncError(this.availability));
    const group = this.groups.get(request.groupId);
    if (group === undefined) return Promise.resolve(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
    const error = this.validateSyncGroup(group, request);
    if (error !== ErrorCode.NONE) return Promise.resolve(syncError(error));
    const { memberId } = request;
    const member = group.get(memberId) as MemberMetadata;

    switch (group.state) {
      case 'Empty':
        return Promise.resolve(syncError(ErrorCode.UNKNOWN_MEMBER_ID));
      case 'PreparingRebalance':
        return Promise.resolve(syncError(ErrorCode.REBALANCE_IN_PROGRESS));
      case 'CompletingRebalance': {
        // A second SyncGroup supersedes a parked first one, which is answered rather than dropped.
        group.maybeInvokeSyncCallback(member, syncError(ErrorCode.REBALANCE_IN_PROGRESS));
        const aborted = context.onCancel === undefined ? undefined : syncError(ErrorCode.REQUEST_TIMED_OUT);
        const call = new ParkedCall<SyncGroupResponse>(this.dispatcher, context, aborted);
        member.awaitingSync = call;
        this.keepAlive(member);
        this.removePendingSyncMember(group, memberId);
        if (group.isLeader(memberId)) {
          const given = new Map<string, Buffer>();
          for (const { memberId: id, assignment } of request.assignments)
            given.set(id, retainBytes(assignment));
          // Members the leader left out get an empty assignment.
          const assignments = new Map<string, Buffer>();
          for (const each of group.allMembers())
            assignments.set(each.memberId, given.get(each.memberId) ?? EMPTY_BUFFER);
          const generationId = group.generationId;
          // The generation becomes Stable, and its members get their assignments, once it is stored.
          this.storeGroup(group, assignments, (error) => {
            // A member joined, left or failed meanwhile: that rebalance answered the parked calls.
            if (!group.is('CompletingRebalance') || group.generationId !== generationId) return;
            if (error !== ErrorCode.NONE) {
              this.resetAndPropagateAssignmentError(group, error);
              this.maybePrepareRebalance(group, 'store-failed', '');
              return;
            }
            for (const each of group.allMembers())
              each.assignment = assignments.get(each.memberId) ?? EMPTY_BUFFER;
            this.propagateAssignment(group, ErrorCode.NONE);
            group.transitionTo('Stable');
            this.notifyWatchers(group.groupId, 'rebalance-completed');
          });
        }
        return call.promise;
      }
      case 'Stable':
        this.removePendingSyncMember(group, memberId);
        this.keepAlive(member);
        return Promise.resolve({
          errorCode: ErrorCode.NONE,
          protocolType: group.protocolType ?? '',
          protocolName: group.protocolName ?? '',
          assignment: member.assignment,
        });
      case 'Dead':
        return Promise.resolve(syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE));
    }
  }

  private validateSyncGroup(group: GroupMetadata, request: SyncGroupRequest): ErrorCode {
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const error = this.validateCurrentMember(group, request.memberId, request.groupInstanceId);
    if (error !== ErrorCode.NONE) return error;
    if (request.generationId !== group.generationId) {
      return this.fenced(
        group.groupId,
        request.memberId,
        request.groupInstanceId,
        ErrorCode.ILLEGAL_GENERATION,
      );
    }
    // "" means the client did not send it (SyncGroup before v5).
    if (request.protocolType !== '' && request.protocolType !== group.protocolType) {
      return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
    }
    if (request.protocolName !== '' && request.protocolName !== group.protocolName) {
      return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
    }
    return ErrorCode.NONE;
  }

  private removePendingSyncMember(group: GroupMetadata, memberId: string): void {
    group.removePendingSyncMember(memberId);
    this.rebalancePurgatory.checkAndComplete(group.syncKey);
  }

  // ---------------------------------------------------------------------------------------------------
  // Heartbeat: the hot path. No allocation on any outcome: lookups, a timer re-arm, a shared reply.

  heartbeat(request: HeartbeatRequest, context: RequestContext): Promise<HeartbeatResponse> {
    const invalid = checkHeartbeatRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (request.groupId === '') return heartbeatReply(ErrorCode.INVALID_GROUP_ID);
    if (this.availability !== ErrorCode.NONE) return heartbeatReply(this.availability);
    const group = this.groups.get(request.groupId);
    if (group === undefined) return heartbeatReply(ErrorCode.UNKNOWN_MEMBER_ID);
    if (group.is('Dead')) return heartbeatReply(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    const error = this.validateCurrentMember(group, request.memberId, request.groupInstanceId);
    if (error !== ErrorCode.NONE) return heartbeatReply(error);
    // A heartbeat stream's watcher takes the member's slot (a reconnected stream replaces the old one).
    const watcher = context.generationWatcher;
    if (watcher !== undefined) (group.get(request.memberId) as MemberMetadata).generationWatcher = watcher;
    if (request.generationId !== group.generationId) {
      this.fenced(group.groupId, request.memberId, request.groupInstanceId, ErrorCode.ILLEGAL_GENERATION);
      return heartbeatReply(ErrorCode.ILLEGAL_GENERATION);
    }
    switch (group.state) {
      case 'CompletingRebalance':
      case 'Stable':
        // In CompletingRebalance a member may heartbeat between its JoinGroup answer and its SyncGroup;
        // Kafka answered REBALANCE_IN_PROGRESS here before 2.x clients, NONE since.
        this.keepAlive(group.get(request.memberId) as MemberMetadata);
        return heartbeatReply(ErrorCode.NONE);
      case 'PreparingRebalance':
        // The session keeps running through the rebalance: a healthy member is never expired by a long one.
        this.keepAlive(group.get(request.memberId) as MemberMetadata);
        return heartbeatReply(ErrorCode.REBALANCE_IN_PROGRESS);
      case 'Empty':
      case 'Dead':
        return heartbeatReply(ErrorCode.UNKNOWN_MEMBER_ID);
    }
  }

  unwatchMember(groupId: string, memberId: string, watcher: GenerationWatcher): void {
    const member = this.groups.get(groupId)?.get(memberId);
    if (member !== undefined && member.generationWatcher === watcher) member.generationWatcher = undefined;
  }

  /**
   * KIP-345's fencing plus membership: an instance id must map to this member id (else FENCED_INSTANCE_ID,
   * or UNKNOWN_MEMBER_ID for an unknown instance), and the member id must be in the group.
   */
  private validateCurrentMember(group: GroupMetadata, memberId: string, groupInstanceId: string): ErrorCode {
    if (groupInstanceId !== '') {
      const currentMemberId = group.currentStaticMemberId(groupInstanceId);
      if (currentMemberId === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
      if (currentMemberId !== memberId) {
        return this.fenced(group.groupId, memberId, groupInstanceId, ErrorCode.FENCED_INSTANCE_ID);
      }
    }
    return group.has(memberId) ? ErrorCode.NONE : ErrorCode.UNKNOWN_MEMBER_ID;
  }

  /** Tells the listener a request was fenced, and returns the code it gets. */
  private fenced(
    groupId: string,
    memberId: string,
    groupInstanceId: string,
    errorCode: ErrorCode,
  ): ErrorCode {
    this.listener?.onFenced?.(groupId, memberId, groupInstanceId, errorCode);
    return errorCode;
  }

  onExpireHeartbeat(group: GroupMetadata, memberId: string, isPending: boolean): void {
    if (group.is('Dead')) return;
    if (isPending) {
      // A pending member id nobody used: forget it, and let a join that waited only for it complete.
      if (group.removePendingMember(memberId) !== undefined && group.is('PreparingRebalance')) {
        this.rebalancePurgatory.checkAndComplete(group.joinKey);
      }
      return;
    }
    const member = group.get(memberId);
    // Parked in JoinGroup or SyncGroup means alive; answering that call re-arms the session.
    if (member === undefined || member.hasSatisfiedHeartbeat) return;
    this.listener?.onMemberExpired?.(group.groupId, member.memberId, member.groupInstanceId);
    this.removeMemberAndUpdateGroup(group, member, 'session-expired');
  }

  // ---------------------------------------------------------------------------------------------------
  // LeaveGroup

  leaveGroup(request: LeaveGroupRequest, _context: RequestContext): Promise<LeaveGroupResponse> {
    const invalid = checkLeaveGroupRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (request.groupId === '') return Promise.resolve(leaveError(ErrorCode.INVALID_GROUP_ID));
    if (this.availability !== ErrorCode.NONE) return Promise.resolve(leaveError(this.availability));
    const group = this.groups.get(request.groupId);
    const members: LeaveGroupMemberResponse[] = [];
    if (group === undefined) {
      for (const identity of request.members) {
        members.push({
          memberId: identity.memberId,
          groupInstanceId: identity.groupInstanceId,
          errorCode: ErrorCode.UNKNOWN_MEMBER_ID,
        });
      }
      return Promise.resolve({ errorCode: ErrorCode.NONE, members });
    }
    if (group.is('Dead')) return Promise.resolve(leaveError(ErrorCode.COORDINATOR_NOT_AVAILABLE));
    for (const identity of request.members) {
      members.push({
        memberId: identity.memberId,
        groupInstanceId: identity.groupInstanceId,
        errorCode: this.leaveOne(group, identity.memberId, identity.groupInstanceId),
      });
    }
    return Promise.resolve({ errorCode: ErrorCode.NONE, members });
  }

  private leaveOne(group: GroupMetadata, memberId: string, groupInstanceId: string): ErrorCode {
    if (memberId === '') {
      // Administrative removal of a static member by its instance id alone.
      const currentMemberId =
        groupInstanceId === '' ? undefined : group.currentStaticMemberId(groupInstanceId);
      if (currentMemberId === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
      this.removeMemberAndUpdateGroup(group, group.get(currentMemberId) as MemberMetadata, 'member-left');
      return ErrorCode.NONE;
    }
    if (group.isPendingMember(memberId)) {
      group.removePendingMember(memberId)?.cancel();
      if (group.is('PreparingRebalance')) this.rebalancePurgatory.checkAndComplete(group.joinKey);
      return ErrorCode.NONE;
    }
    const error = this.validateCurrentMember(group, memberId, groupInstanceId);
    if (error !== ErrorCode.NONE) return error;
    this.removeMemberAndUpdateGroup(group, group.get(memberId) as MemberMetadata, 'member-left');
    return ErrorCode.NONE;
  }

  /** Removes a member (left, failed, fenced out by size) and moves the group on. */
  private removeMemberAndUpdateGroup(
    group: GroupMetadata,
    member: MemberMetadata,
    reason: RebalanceReason,
  ): void {
    this.removeMember(group, member, joinError('', ErrorCode.UNKNOWN_MEMBER_ID));
    switch (group.state) {
      case 'Dead':
      case 'Empty':
        break;
      case 'Stable':
      case 'CompletingRebalance':
        this.maybePrepareRebalance(group, reason, member.memberId);
        break;
      case 'PreparingRebalance':
        // No new rebalance, but one member fewer; the join may now complete (and say so after this).
        this.notifyWatchers(group.groupId, reason);
        this.rebalancePurgatory.checkAndComplete(group.joinKey);
        break;
    }
  }

  /**
   * Takes the member out and answers whatever it had parked: its JoinGroup with `joinAnswer` (a new member
   * may still be waiting when it times out; UNKNOWN_MEMBER_ID makes a live client rejoin), its SyncGroup
   * with UNKNOWN_MEMBER_ID (Kafka would leave that one hanging).
   */
  private removeMember(group: GroupMetadata, member: MemberMetadata, joinAnswer: JoinGroupResponse): void {
    group.maybeInvokeJoinCallback(member, joinAnswer);
    group.maybeInvokeSyncCallback(member, syncError(ErrorCode.UNKNOWN_MEMBER_ID));
    group.remove(member.memberId);
    member.heartbeat.cancel();
    member.notifyGone(ErrorCode.UNKNOWN_MEMBER_ID);
  }

  // ---------------------------------------------------------------------------------------------------
  // Offsets

  offsetCommit(request: OffsetCommitRequest, context: RequestContext): Promise<OffsetCommitResponse> {
    const invalid = checkOffsetCommitRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (this.availability !== ErrorCode.NONE)
      return Promise.resolve(commitResponse(request, this.availability));
    // The empty group id is allowed for offsets, as in Kafka (old clients commit under it).
    let group = this.groups.get(request.groupId);
    if (group === undefined) {
      // Generation -1: a client managing its own partitions; it gets an Empty group to hold its offsets.
      if (request.generationId >= 0) {
        const code = this.fenced(
          request.groupId,
          request.memberId,
          request.groupInstanceId,
          ErrorCode.ILLEGAL_GENERATION,
        );
        return Promise.resolve(commitResponse(request, code));
      }
      if (this.groups.size >= this.config.maxGroups) {
        return Promise.resolve(commitResponse(request, ErrorCode.GROUP_MAX_SIZE_REACHED));
      }
      group = this.createGroup(request.groupId);
      this.notifyWatchers(group.groupId, 'group-created');
    }
    const error = this.validateOffsetCommit(group, request);
    if (error !== ErrorCode.NONE) return Promise.resolve(commitResponse(request, error));
    switch (group.state) {
      case 'Empty':
        return this.storeOffsets(group, request, context);
      case 'Stable':
      case 'PreparingRebalance':
        // Still allowed while preparing: the member learns of the rebalance from its next heartbeat.
        this.keepAlive(group.get(request.memberId) as MemberMetadata);
        return this.storeOffsets(group, request, context);
      case 'CompletingRebalance':
        // The member already has the new generation's JoinGroup answer but not its assignment.
        return Promise.resolve(commitResponse(request, ErrorCode.REBALANCE_IN_PROGRESS));
      case 'Dead':
        return Promise.resolve(commitResponse(request, ErrorCode.COORDINATOR_NOT_AVAILABLE));
    }
  }

  private validateOffsetCommit(group: GroupMetadata, request: OffsetCommitRequest): ErrorCode {
    const { generationId, memberId, groupInstanceId } = request;
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    // Generation -1 is a commit from outside the group protocol (an admin tool, manual assignment): only
    // an Empty group accepts it.
    if (generationId < 0 && group.is('Empty')) return ErrorCode.NONE;
    if (generationId >= 0 || memberId !== '' || groupInstanceId !== '') {
      const error = this.validateCurrentMember(group, memberId, groupInstanceId);
      if (error !== ErrorCode.NONE) return error;
      if (generationId === group.generationId) return ErrorCode.NONE;
      return this.fenced(group.groupId, memberId, groupInstanceId, ErrorCode.ILLEGAL_GENERATION);
    }
    return ErrorCode.UNKNOWN_MEMBER_ID;
  }

  private storeOffsets(
    group: GroupMetadata,
    request: OffsetCommitRequest,
    context: RequestContext,
  ): Promise<OffsetCommitResponse> {
    const maxBytes = this.config.offsetMetadataMaxBytes;
    const commitTimestampMs = this.time.nowMs();
    const accepted: TopicPartitionOffset[] = [];
    // Partitions refused one by one, in request order; undefined when none is (the common case).
    let refused: (ErrorCode | undefined)[] | undefined;
    const newPartitions = this.newPartitionAllowance(group, request);
    let index = 0;
    for (const topic of request.topics) {
      const isLegalTopic = isLegalTopicName(topic.name);
      for (const partition of topic.partitions) {
        const code = !isLegalTopic
          ? ErrorCode.INVALID_TOPIC_EXCEPTION
          : partition.partitionIndex < 0
            ? // Kafka's answer for a partition that does not exist, and a negative one never does.
              ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            : Buffer.byteLength(partition.committedMetadata, 'utf8') > maxBytes
              ? ErrorCode.OFFSET_METADATA_TOO_LARGE
              : newPartitions !== undefined && !newPartitions.admit(topic.name, partition.partitionIndex)
                ? ErrorCode.INVALID_COMMIT_OFFSET_SIZE
                : ErrorCode.NONE;
        if (code !== ErrorCode.NONE) {
          refused ??= [];
          refused[index++] = code;
          continue;
        }
        index++;
        accepted.push({
          topic: topic.name,
          partition: partition.partitionIndex,
          offset: {
            committedOffset: partition.committedOffset,
            committedLeaderEpoch: partition.committedLeaderEpoch,
            metadata: partition.committedMetadata,
            commitTimestampMs,
          },
        });
      }
    }
    if (refused !== undefined && this.listener?.onOffsetCommitRefused !== undefined) {
      const counts = new Map<ErrorCode, number>();
      for (const code of refused) if (code !== undefined) counts.set(code, (counts.get(code) ?? 0) + 1);
      for (const [code, partitions] of counts)
        this.listener.onOffsetCommitRefused(group.groupId, code, partitions);
    }
    const codeFor = (code: ErrorCode): OffsetCommitResponse =>
      refused === undefined
        ? commitResponse(request, code)
        : commitResponseWithRefused(request, code, refused);
    if (accepted.length === 0) return Promise.resolve(codeFor(ErrorCode.NONE));

    const aborted =
      context.onCancel === undefined ? undefined : commitResponse(request, ErrorCode.REQUEST_TIMED_OUT);
    const call = new ParkedCall<OffsetCommitResponse>(this.dispatcher, context, aborted);
    for (const { topic, partition } of accepted) {
      const key = partitionKey(topic, partition);
      group.pendingOffsetCommits.set(key, (group.pendingOffsetCommits.get(key) ?? 0) + 1);
    }
    const wait: StoreWait = {
      abandon: () => call.complete(codeFor(ErrorCode.COORDINATOR_NOT_AVAILABLE)),
    };
    this.storeWaits.add(wait);
    const finish = (code: ErrorCode): void => {
      this.storeWaits.delete(wait);
      for (const { topic, partition } of accepted) {
        const key = partitionKey(topic, partition);
        const count = (group.pendingOffsetCommits.get(key) ?? 1) - 1;
        if (count === 0) group.pendingOffsetCommits.delete(key);
        else group.pendingOffsetCommits.set(key, count);
      }
      // The group was deleted while the commit was being stored: the offsets exist, so must a group.
      if (code === ErrorCode.NONE && group.is('Dead') && this.isActive && !this.groups.has(group.groupId)) {
        this.createGroup(group.groupId);
        this.notifyWatchers(group.groupId, 'group-created');
      }
      call.complete(codeFor(code));
    };
    const stored = callStore(() => this.offsetStore.commit(group.groupId, accepted));
    stored.then(
      () => finish(ErrorCode.NONE),
      (error: unknown) => finish(storeErrorCode(error)),
    );
    return call.promise;
  }

  /**
   * groupMaxCommittedPartitions: undefined when the request cannot take the group past the limit even if
   * every partition in it were new (the common case, decided in O(1)); else what admits the partitions that
   * already have an offset (or one being stored) and new ones only while they fit.
   */
  private newPartitionAllowance(
    group: GroupMetadata,
    request: OffsetCommitRequest,
  ): { admit(topic: string, partition: number): boolean } | undefined {
    const limit = this.config.groupMaxCommittedPartitions;
    const committed = this.offsetStore.committedPartitions(group.groupId);
    let requested = 0;
    for (const topic of request.topics) requested += topic.partitions.length;
    if (committed + group.pendingOffsetCommits.size + requested <= limit) return undefined;
    const groupId = group.groupId;
    const isKnown = (topic: string, partition: number, key: string): boolean =>
      this.offsetStore.get(groupId, topic, partition) !== undefined || group.pendingOffsetCommits.has(key);
    // Partitions being stored that the store does not have yet will count once they are.
    let counted = committed;
    for (const key of group.pendingOffsetCommits.keys()) {
      const at = key.lastIndexOf('\u0000');
      if (this.offsetStore.get(groupId, key.slice(0, at), Number(key.slice(at + 1))) === undefined) counted++;
    }
    const admitted = new Set<string>();
    return {
      admit: (topic, partition) => {
        const key = partitionKey(topic, partition);
        if (isKnown(topic, partition, key) || admitted.has(key)) return true;
        if (counted >= limit) return false;
        counted++;
        admitted.add(key);
        return true;
      },
    };
  }

  offsetFetch(request: OffsetFetchRequest, _context: RequestContext): Promise<OffsetFetchResponse> {
    const invalid = checkOffsetFetchRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (this.availability !== ErrorCode.NONE)
      return Promise.resolve({ errorCode: this.availability, topics: [] });
    const { groupId, requireStable } = request;
    const pending = this.groups.get(groupId)?.pendingOffsetCommits;
    // With requireStable, a partition whose commit is still being stored answers UNSTABLE_OFFSET_COMMIT so
    // the client retries instead of reading an offset about to change.
    const partitionOf = (topic: string, partitionIndex: number): OffsetFetchPartition => {
      if (requireStable && pending !== undefined && pending.has(partitionKey(topic, partitionIndex))) {
        return noOffset(partitionIndex, ErrorCode.UNSTABLE_OFFSET_COMMIT);
      }
      const committed = this.offsetStore.get(groupId, topic, partitionIndex);
      if (committed === undefined) return noOffset(partitionIndex, ErrorCode.NONE);
      return {
        partitionIndex,
        committedOffset: committed.committedOffset,
        committedLeaderEpoch: committed.committedLeaderEpoch,
        metadata: committed.metadata,
        errorCode: ErrorCode.NONE,
      };
    };
    const topics: OffsetFetchTopicResponse[] = [];
    if (request.topics.length === 0) {
      const byTopic = new Map<string, OffsetFetchPartition[]>();
      for (const { topic, partition } of this.offsetStore.list(groupId)) {
        let partitions = byTopic.get(topic);
        if (partitions === undefined) {
          partitions = [];
          byTopic.set(topic, partitions);
        }
        partitions.push(partitionOf(topic, partition));
      }
      for (const [name, partitions] of byTopic) topics.push({ name, partitions });
    } else {
      for (const topic of request.topics) {
        topics.push({
          name: topic.name,
          partitions: topic.partitionIndexes.map((index) => partitionOf(topic.name, index)),
        });
      }
    }
    return Promise.resolve({ errorCode: ErrorCode.NONE, topics });
  }

  // ---------------------------------------------------------------------------------------------------
  // DescribeGroups, ListGroups, DeleteGroups

  describeGroups(request: DescribeGroupsRequest, _context: RequestContext): Promise<DescribeGroupsResponse> {
    const invalid = checkDescribeGroupsRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    const groups: DescribedGroup[] = request.groups.map((groupId) => this.describeGroup(groupId));
    return Promise.resolve({ groups });
  }

  /**
   * Hands `listener` a snapshot of each group of `groupIds` (every group when empty), then every observable
   * change of them, synchronously as it happens, until the function returned is called (group-events.ts
   * says what a snapshot holds; GROUP_EVENT_REASONS lists the reasons). Heartbeats and offset commits change
   * nothing a watcher sees, so they never reach it.
   */
  watchGroups(groupIds: readonly string[], listener: GroupChangeListener): () => void {
    return this.events.subscribe(groupIds, listener);
  }

  /** Tells watchers of `groupId` (if any: nothing happens otherwise) that it changed. */
  private notifyWatchers(groupId: string, reason: GroupEventReason): void {
    this.events.emit(groupId, reason);
  }

  private describeGroup(groupId: string): DescribedGroup {
    if (this.availability !== ErrorCode.NONE) return describedError(groupId, this.availability, '', '');
    const group = this.groups.get(groupId);
    if (group === undefined || group.is('Dead')) {
      return describedError(groupId, ErrorCode.GROUP_ID_NOT_FOUND, 'Dead', `Group ${groupId} not found.`);
    }
    // Member metadata is only meaningful for the protocol of a Stable group.
    const protocolName = group.is('Stable') ? (group.protocolName ?? '') : '';
    const members: DescribedGroupMember[] = [];
    for (const member of group.allMembers()) {
      members.push({
        memberId: member.memberId,
        groupInstanceId: member.groupInstanceId,
        clientId: member.clientId,
        clientHost: member.clientHost,
        memberMetadata: protocolName === '' ? EMPTY_BUFFER : member.metadata(protocolName),
        memberAssignment: member.assignment,
      });
    }
    return {
      errorCode: ErrorCode.NONE,
      errorMessage: '',
      groupId,
      groupState: group.state,
      protocolType: group.protocolType ?? '',
      protocolData: protocolName,
      members,
      generationId: group.generationId,
    };
  }

  listGroups(request: ListGroupsRequest, _context: RequestContext): Promise<ListGroupsResponse> {
    const invalid = checkListGroupsRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (this.availability !== ErrorCode.NONE)
      return Promise.resolve({ errorCode: this.availability, groups: [] });
    // Names are matched case-insensitively; a name that is no state matches nothing.
    const wanted = new Set<GroupState>();
    for (const name of request.statesFilter) {
      const state = parseGroupState(name);
      if (state !== undefined) wanted.add(state);
    }
    const filter = request.statesFilter.length > 0;
    const groups = [];
    for (const group of this.groups.values()) {
      if (filter && !wanted.has(group.state)) continue;
      groups.push({
        groupId: group.groupId,
        protocolType: group.protocolType ?? '',
        groupState: group.state,
      });
    }
    return Promise.resolve({ errorCode: ErrorCode.NONE, groups });
  }

  deleteGroups(request: DeleteGroupsRequest, _context: RequestContext): Promise<DeleteGroupsResponse> {
    const invalid = checkDeleteGroupsRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    const results: DeletableGroupResult[] = [];
    const deleted: DeletableGroupResult[] = [];
    const removedGroups = new Map<string, EmptyGroupSnapshot>();
    const seen = new Set<string>();
    for (const groupId of request.groupsNames) {
      if (seen.has(groupId)) continue;
      seen.add(groupId);
      const result: DeletableGroupResult = { groupId, errorCode: ErrorCode.NONE };
      results.push(result);
      if (this.availability !== ErrorCode.NONE) {
        result.errorCode = this.availability;
        continue;
      }
      const group = this.groups.get(groupId);
      if (group === undefined || group.is('Dead')) result.errorCode = ErrorCode.GROUP_ID_NOT_FOUND;
      else if (!group.is('Empty')) result.errorCode = ErrorCode.NON_EMPTY_GROUP;
      else {
        removedGroups.set(groupId, emptyGroupSnapshot(group));
        this.deleteGroup(group);
        this.notifyWatchers(groupId, 'group-deleted');
        deleted.push(result);
      }
    }
    if (deleted.length === 0) return Promise.resolve({ results });

    // Answer once every store has dropped what it had of every deleted group.
    const call = new ParkedCall<DeleteGroupsResponse>(this.dispatcher, undefined, undefined);
    let remaining = deleted.length * this.groupStores.length;
    const wait: StoreWait = {
      abandon: () => {
        for (const result of deleted) result.errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE;
        call.complete({ results });
      },
    };
    this.storeWaits.add(wait);
    const done = (): void => {
      if (--remaining > 0 || call.isDone) return;
      this.storeWaits.delete(wait);
      call.complete({ results });
    };
    for (const result of deleted) {
      for (const store of this.groupStores) {
        const removal = callStore(() => store.deleteGroup(result.groupId));
        removal.then(done, (error: unknown) => {
          if (!call.isDone) {
            result.errorCode = storeErrorCode(error);
            // What the store kept (offsets, metadata) still belongs to a group.
            const removed = removedGroups.get(result.groupId);
            if (this.isActive && !this.groups.has(result.groupId) && removed !== undefined) {
              this.bringBackEmptyGroup(removed);
            }
          }
          done();
        });
      }
    }
    return call.promise;
  }

  private createGroup(groupId: string): GroupMetadata {
    const group = new GroupMetadata(groupId, this.onTransition);
    group.currentStateTimestampMs = this.time.nowMs();
    this.groups.set(groupId, group);
    return group;
  }

  /**
   * A removed Empty group back as it was (its protocol type, generation and state timestamp, so retention
   * goes on counting from when it emptied), when a store could not delete what it had.
   */
  private bringBackEmptyGroup(removed: EmptyGroupSnapshot): void {
    const group = this.createGroup(removed.groupId);
    group.restore(removed.generationId, removed.protocolType ?? '', '', '');
    group.currentStateTimestampMs = removed.currentStateTimestampMs;
    this.notifyWatchers(group.groupId, 'group-created');
  }

  /** An Empty group goes Dead and is forgotten; tasks still holding it find it Dead and do nothing. */
  private deleteGroup(group: GroupMetadata): void {
    group.transitionTo('Dead');
    group.clearPendingMembers();
    if (this.groups.get(group.groupId) === group) this.groups.delete(group.groupId);
  }

  // ---------------------------------------------------------------------------------------------------
  // Group metadata

  /**
   * Kafka's storeGroup: writes the group's record — its generation, protocol, leader and members, with
   * `assignments` (default: the members' current ones) — and calls `onStored` with NONE once it is
   * durable, or with the code members get for the failure. Without a metadata store `onStored(NONE)` runs
   * at once, synchronously. After shutdown `onStored` is not called (shutdown answered everything).
   */
  private storeGroup(
    group: GroupMetadata,
    assignments: ReadonlyMap<string, Buffer> | undefined,
    onStored: (error: ErrorCode) => void,
  ): void {
    const store = this.metadataStore;
    if (store === undefined) {
      onStored(ErrorCode.NONE);
      return;
    }
    const generationId = group.generationId;
    const stored = callStore(() => store.storeGroup(this.storedGroupOf(group, assignments)));
    stored.then(
      () => {
        if (this.isActive) onStored(ErrorCode.NONE);
      },
      (error: unknown) => {
        this.listener?.onGroupStoreFailed?.(group.groupId, generationId, error);
        if (this.isActive) onStored(storeGroupErrorCode(error));
      },
    );
  }

  private storedGroupOf(
    group: GroupMetadata,
    assignments: ReadonlyMap<string, Buffer> | undefined,
  ): StoredGroup {
    const members: StoredMember[] = [];
    for (const member of group.allMembers()) {
      members.push({
        memberId: member.memberId,
        groupInstanceId: member.groupInstanceId,
        clientId: member.clientId,
        clientHost: member.clientHost,
        rebalanceTimeoutMs: member.rebalanceTimeoutMs,
        sessionTimeoutMs: member.sessionTimeoutMs,
        protocols: member.supportedProtocols,
        assignment: assignments?.get(member.memberId) ?? member.assignment,
      });
    }
    const isEmpty = members.length === 0;
    return {
      groupId: group.groupId,
      protocolType: group.protocolType ?? '',
      generationId: group.generationId,
      protocolName: isEmpty ? '' : (group.protocolName ?? ''),
      leaderId: isEmpty ? '' : (group.leaderId ?? ''),
      currentStateTimestampMs: group.currentStateTimestampMs,
      members,
    };
  }

  // ---------------------------------------------------------------------------------------------------
  // Offset retention (KIP-211)

  /**
   * The periodic check: Kafka's cleanupGroupMetadata over the groups known when it starts, a slice of
   * RETENTION_CHECK_OFFSETS_PER_TURN offsets per event-loop turn; the next check is armed one interval
   * after the pass ends (passes never overlap).
   */
  onOffsetRetentionCheck(): void {
    // A pass still running arms the next check when it ends: one pass at a time.
    if (!this.isActive || this.retentionPass !== undefined) return;
    // While loading, the groups are not all back yet; a failed load serves nothing. Try again next time.
    if (this.availability !== ErrorCode.NONE) {
      this.retentionTimer.add(this.retentionCheck);
      return;
    }
    // A snapshot, not a live iterator: a group brought back by a failed deletion, or created meanwhile,
    // waits for the next check instead of being met again (and failing again) in this one.
    this.retentionPass = { groups: [...this.groups.values()], next: 0 };
    this.retentionTally = newRetentionTally(this.time.monotonicMs());
    this.continueRetentionPass();
  }

  /**
   * One turn of the pass: checks groups until the turn's budget is spent, then yields to other I/O with
   * `setImmediate`. Whatever happens, the pass either goes on or ends and arms the next check; an error
   * escaping a turn goes to `onTimerError` (a later turn runs outside the timer that started the pass).
   */
  private readonly continueRetentionPass = (): void => {
    if (this.retentionPass === undefined || !this.isActive) return;
    let isDone = true;
    try {
      isDone = this.retentionSlice(this.retentionPass);
    } catch (error) {
      if (this.onTimerError === undefined) throw error;
      this.onTimerError(error);
    } finally {
      if (isDone) this.endRetentionPass();
      else setImmediate(this.continueRetentionPass);
    }
  };

  /** Returns whether the pass is over. */
  private retentionSlice(pass: RetentionPass): boolean {
    // A load begun mid-pass: the groups are being replaced; the next check starts over.
    if (this.availability !== ErrorCode.NONE) return true;
    const nowMs = this.time.nowMs();
    const retentionMs = this.config.offsetsRetentionMinutes * 60_000;
    const tally = this.retentionTally;
    tally.turns++;
    let budget = this.retentionCheckOffsetsPerTurn;
    while (pass.next < pass.groups.length) {
      const group = pass.groups[pass.next++];
      // Removed, or deleted and replaced, since the pass began.
      if (!group.is('Empty') || this.groups.get(group.groupId) !== group) continue;
      tally.groupsChecked++;
      budget--;
      try {
        budget -= this.removeExpiredOffsetsOf(group, nowMs, retentionMs);
      } catch (error) {
        // One group's failure (a store's read, say) must stop neither the others nor the next check.
        this.listener?.onOffsetExpiryFailed?.(group.groupId, error);
      }
      if (budget <= 0) return pass.next >= pass.groups.length;
    }
    return true;
  }

  private endRetentionPass(): void {
    this.retentionPass = undefined;
    if (!this.isActive) return;
    this.retentionTimer.add(this.retentionCheck);
    const { startedMs, ...counts } = this.retentionTally;
    this.listener?.onOffsetRetentionCheckCompleted?.({
      ...counts,
      durationMs: this.time.monotonicMs() - startedMs,
    });
  }

  /**
   * Kafka's `removeExpiredOffsets` for one Empty group, and the group's removal when nothing is left. A
   * group that had members (it has a protocol type) loses all its offsets `offsetsRetentionMinutes` after
   * it became Empty; one that never had members (commits outside any membership, generation -1) loses each
   * offset that long after its own commit. An offset whose commit is still being stored is kept, and so is
   * a group with pending member ids (a member is about to join). Returns how many offsets it looked at.
   *
   * Kafka also expires, in a Stable consumer group, the offsets of topics no member subscribes to any more;
   * that needs the consumer protocol's subscriptions, which cohort does not parse, so such offsets stay
   * until the group empties.
   */
  private removeExpiredOffsetsOf(group: GroupMetadata, nowMs: number, retentionMs: number): number {
    const { groupId } = group;
    // Until its earliest possible expiry there is nothing to list: for a group that had members, retention
    // after it emptied; for one that never had, the bound the last listing left (commits only move later).
    const notBeforeMs =
      group.protocolType === undefined
        ? group.offsetsExpireNotBeforeMs
        : group.currentStateTimestampMs + retentionMs;
    if (nowMs < notBeforeMs && this.offsetStore.hasOffsets(groupId)) return 0;
    const offsets = this.offsetStore.list(groupId);
    const pending = group.pendingOffsetCommits;
    const expired: TopicPartition[] = [];
    let nextExpiryMs = Number.POSITIVE_INFINITY;
    for (const { topic, partition, offset } of offsets) {
      const sinceMs =
        group.protocolType === undefined ? offset.commitTimestampMs : group.currentStateTimestampMs;
      if (nowMs - sinceMs >= retentionMs && !pending.has(partitionKey(topic, partition))) {
        expired.push({ topic, partition });
      } else {
        nextExpiryMs = Math.min(nextExpiryMs, sinceMs + retentionMs);
      }
    }
    group.offsetsExpireNotBeforeMs = nextExpiryMs;
    const tally = this.retentionTally;
    tally.offsetsListed += offsets.length;
    tally.offsetsExpired += expired.length;
    if (expired.length === offsets.length && pending.size === 0 && group.numPending === 0) {
      tally.groupsExpired++;
      this.expireGroup(group, expired.length);
    } else if (expired.length > 0) {
      this.expireOffsets(group, expired);
    }
    return offsets.length;
  }

  /**
   * An Empty group with no offsets left goes Dead at once, as DeleteGroups makes it, and its records
   * (metadata and offsets) leave the stores in one batch each. Should a store fail, what it kept still
   * belongs to a group: the group comes back Empty and the next check tries again.
   */
  private expireGroup(group: GroupMetadata, partitions: number): void {
    const { groupId } = group;
    const removed = emptyGroupSnapshot(group);
    this.deleteGroup(group);
    this.notifyWatchers(groupId, 'group-expired');
    let remaining = this.groupStores.length;
    let failed = false;
    for (const store of this.groupStores) {
      const removal = callStore(() => store.deleteGroup(groupId));
      removal.then(
        () => {
          if (--remaining === 0 && !failed && this.isActive) {
            this.listener?.onOffsetsExpired?.(groupId, partitions, true);
          }
        },
        (error: unknown) => {
          remaining--;
          failed = true;
          if (!this.isActive) return;
          if (!this.groups.has(groupId)) this.bringBackEmptyGroup(removed);
          this.listener?.onOffsetExpiryFailed?.(groupId, error);
        },
      );
    }
  }

  private expireOffsets(group: GroupMetadata, expired: readonly TopicPartition[]): void {
    const { groupId } = group;
    const removal = callStore(() => this.offsetStore.deleteOffsets(groupId, expired));
    removal.then(
      () => {
        if (this.isActive) this.listener?.onOffsetsExpired?.(groupId, expired.length, false);
      },
      (error: unknown) => {
        // They are still there, and the bound the check left does not count them: list the group again.
        group.offsetsExpireNotBeforeMs = 0;
        if (this.isActive) this.listener?.onOffsetExpiryFailed?.(groupId, error);
      },
    );
  }

  // ---------------------------------------------------------------------------------------------------
  // Timers and shutdown

  /** Starts the member's session timer over: its session timeout, or the new-member timeout until its first join completes. */
  private scheduleSessionTimeout(member: MemberMetadata): void {
    this.schedule(member.heartbeat, member.isNew ? NEW_MEMBER_JOIN_TIMEOUT_MS : member.sessionTimeoutMs);
  }

  /**
   * A valid Heartbeat, SyncGroup or OffsetCommit restarts the session. A new member's fixed timeout is not
   * extended this way: it ends with its first completed join or with the member.
   */
  private keepAlive(member: MemberMetadata): void {
    if (!member.isNew) this.schedule(member.heartbeat, member.sessionTimeoutMs);
  }

  private schedule(task: TimerTask, delayMs: number): void {
    task.delayMs = delayMs;
    this.heartbeatTimer.add(task);
  }

  /**
   * Answers every parked call with COORDINATOR_NOT_AVAILABLE (clients look for the coordinator again),
   * delivers every queued reply, and stops its timers. Later requests get COORDINATOR_NOT_AVAILABLE.
   * Idempotent.
   */
  shutdown(): void {
    if (!this.isActive) return;
    this.isActive = false;
    this.availability = ErrorCode.COORDINATOR_NOT_AVAILABLE;
    for (const group of this.groups.values()) {
      for (const member of group.allMembers()) {
        group.maybeInvokeJoinCallback(
          member,
          joinError(member.memberId, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        );
        group.maybeInvokeSyncCallback(member, syncError(ErrorCode.COORDINATOR_NOT_AVAILABLE));
      }
      group.clearPendingMembers();
    }
    for (const wait of [...this.storeWaits]) wait.abandon();
    this.storeWaits.clear();
    this.heartbeatTimer.shutdown();
    this.retentionTimer.shutdown();
    this.rebalancePurgatory.shutdown();
    this.dispatcher.flush();
  }
}

/** The protocol metadata a JoinGroup carries, all protocols together (memberMetadataMaxBytes). */
function protocolMetadataBytes(request: JoinGroupRequest): number {
  let bytes = 0;
  for (const protocol of request.protocols) bytes += protocol.metadata.length;
  return bytes;
}

/** The groups of one retention check, as they were when it started, and the next one to look at. */
interface RetentionPass {
  readonly groups: readonly GroupMetadata[];
  next: number;
}

interface RetentionTally {
  startedMs: number;
  groupsChecked: number;
  offsetsListed: number;
  offsetsExpired: number;
  groupsExpired: number;
  turns: number;
}

function newRetentionTally(startedMs: number): RetentionTally {
  return { startedMs, groupsChecked: 0, offsetsListed: 0, offsetsExpired: 0, groupsExpired: 0, turns: 0 };
}

/** A store call whose synchronous throw becomes a rejection, so that callers handle failure in one place. */
function callStore(write: () => Promise<void>): Promise<void> {
  try {
    return write();
  } catch (error) {
    return Promise.reject(error);
  }
}

/** What an Empty group that a store failed to delete comes back with. */
interface EmptyGroupSnapshot {
  readonly groupId: string;
  readonly protocolType: string | undefined;
  readonly generationId: number;
  readonly currentStateTimestampMs: number;
}

function emptyGroupSnapshot(group: GroupMetadata): EmptyGroupSnapshot {
  const { groupId, protocolType, generationId, currentStateTimestampMs } = group;
  return { groupId, protocolType, generationId, currentStateTimestampMs };
}

function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

function noOffset(partitionIndex: number, errorCode: ErrorCode): OffsetFetchPartition {
  return {
    partitionIndex,
    committedOffset: INVALID_OFFSET,
    committedLeaderEpoch: -1,
    metadata: '',
    errorCode,
  };
}

/** One code for every partition of the request, in the request's order. */
function commitResponse(request: OffsetCommitRequest, errorCode: ErrorCode): OffsetCommitResponse {
  return {
    topics: request.topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition) => ({
        partitionIndex: partition.partitionIndex,
        errorCode,
      })),
    })),
  };
}

/** Like commitResponse, but the partitions `refused` has a code for (by position in the request) get it. */
function commitResponseWithRefused(
  request: OffsetCommitRequest,
  errorCode: ErrorCode,
  refused: readonly (ErrorCode | undefined)[],
): OffsetCommitResponse {
  let index = 0;
  return {
    topics: request.topics.map((topic) => ({
      name: topic.name,
      partitions: topic.partitions.map((partition) => ({
        partitionIndex: partition.partitionIndex,
        errorCode: refused[index++] ?? errorCode,
      })),
    })),
  };
}

function describedError(
  groupId: string,
  errorCode: ErrorCode,
  groupState: string,
  errorMessage: string,
): DescribedGroup {
  return {
    errorCode,
    errorMessage,
    groupId,
    groupState,
    protocolType: '',
    protocolData: '',
    members: [],
    generationId: -1,
  };
}
