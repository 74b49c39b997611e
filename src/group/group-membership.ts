import { CohortError, ErrorCode } from '../errors';
import type { DelayedOperation } from '../purgatory';
import { brokenInvariant } from './broken-invariant';
import { DelayedHeartbeat, type HeartbeatExpirationHandler } from './delayed-heartbeat';
import { DelayedJoin } from './delayed-join';
import { DelayedSync } from './delayed-sync';
import { NEW_MEMBER_JOIN_TIMEOUT_MS } from './group-coordinator-options';
import type { GroupCoordinatorRuntime } from './group-coordinator-runtime';
import type { GroupMetadata } from './group-metadata';
import type { GroupRecordWrite, GroupShardState } from './group-shard-state';
import type {
  GenerationWatcher,
  HeartbeatRequest,
  HeartbeatResponse,
  JoinGroupMember,
  JoinGroupRequest,
  JoinGroupResponse,
  LeaveGroupMemberResponse,
  LeaveGroupRequest,
  LeaveGroupResponse,
  RequestContext,
  SyncGroupRequest,
  SyncGroupResponse,
} from './group-protocol';
import { EMPTY_BUFFER, heartbeatReply, joinError, leaveError, syncError } from './group-responses';
import { InitialDelayedJoin } from './initial-delayed-join';
import { MemberMetadata } from './member-metadata';
import { ParkedCall } from './parked-call';
import type { RebalanceHandler } from './rebalance-handler';
import type { RebalanceReason } from './rebalance-reason';
import { retainBytes } from './retained-bytes';
import { operationErrorCode } from './store-error-code';

/**
 * An emptied group's record when no LeaveGroup emptied it: nobody waits for it, and a failure leaves
 * nothing to undo.
 */
const NOTHING_TO_FINISH: GroupRecordWrite = { onCommitted: () => undefined, onFailed: () => undefined };

const EMPTY_MEMBERS: JoinGroupMember[] = Object.freeze([]) as unknown as JoinGroupMember[];

/**
 * A LeaveGroup being handled. If it emptied its group, the code its group's record ended with (NONE:
 * committed), once it has, and who to tell: the write may end before the leave is answered (a partition
 * that commits as it appends) or after.
 */
interface LeaveInProgress {
  readonly groupId: string;
  isEmptied: boolean;
  endCode: ErrorCode | undefined;
  onEnd: ((code: ErrorCode) => void) | undefined;
}

/**
 * Group membership of one coordinator shard: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, and the
 * rebalance they drive (PreparingRebalance → CompletingRebalance → Stable), as Kafka's classic group
 * coordinator does it. Its own file because it is the protocol's largest family and the only one that
 * parks calls on members and arms timers; the shard keeps the groups and writes their records, and the
 * router has already checked each request and found its shard.
 *
 * Requests are handled synchronously against in-memory groups; a request that must wait is parked as a
 * ParkedCall on its member (JoinGroup until the rebalance completes, SyncGroup until the leader's
 * assignment). Three kinds of timer drive the waits, all on the runtime shared by the shards:
 *
 * - DelayedJoin / InitialDelayedJoin (rebalance purgatory, key `join:<group>`): completes the join phase
 *   when every member rejoined, or at the rebalance timeout;
 * - DelayedSync (rebalance purgatory, key `sync:<group>`): removes members that got their join answer but
 *   never synced within the rebalance timeout;
 * - DelayedHeartbeat (heartbeat timer, one task per member, re-armed in place): the session timeout, and the
 *   expiry of pending member ids (KIP-394).
 *
 * docs/protocol.md lists, state by state, what each request gets.
 */
export class GroupMembership implements HeartbeatExpirationHandler, RebalanceHandler {
  private readonly shard: GroupShardState;
  private readonly runtime: GroupCoordinatorRuntime;
  /** Set while a LeaveGroup's members are removed, which may complete the join and empty the group. */
  private leaving: LeaveInProgress | undefined;

  constructor(shard: GroupShardState, runtime: GroupCoordinatorRuntime) {
    this.shard = shard;
    this.runtime = runtime;
  }

  // ---------------------------------------------------------------------------------------------------
  // JoinGroup

  joinGroup(request: JoinGroupRequest, context: RequestContext): Promise<JoinGroupResponse> {
    const { groupId, memberId } = request;
    if (this.shard.availability !== ErrorCode.NONE)
      return Promise.resolve(joinError(memberId, this.shard.availability));
    if (
      request.sessionTimeoutMs < this.shard.config.groupMinSessionTimeoutMs ||
      request.sessionTimeoutMs > this.shard.config.groupMaxSessionTimeoutMs
    ) {
      return Promise.resolve(joinError(memberId, ErrorCode.INVALID_SESSION_TIMEOUT));
    }
    // Checked before anything changes: a member that is refused here keeps its place and its protocols.
    const metadataBytes = protocolMetadataBytes(request);
    if (metadataBytes > this.shard.config.memberMetadataMaxBytes) {
      return Promise.resolve(joinError(memberId, ErrorCode.MESSAGE_TOO_LARGE));
    }
    const isUnknownMember = memberId === '';
    let group = this.shard.groups.get(groupId);
    let isNewGroup = false;
    if (group === undefined) {
      // Only a member without an id may create a group; a known id in an unknown group is stale.
      if (!isUnknownMember) return Promise.resolve(joinError(memberId, ErrorCode.UNKNOWN_MEMBER_ID));
      if (this.runtime.numGroups() >= this.shard.config.maxGroups) {
        return Promise.resolve(joinError('', ErrorCode.GROUP_MAX_SIZE_REACHED));
      }
      group = this.shard.createGroup(groupId);
      isNewGroup = true;
    }

    let result: Promise<JoinGroupResponse>;
    if (this.wouldOverfillMetadata(group, request, metadataBytes)) {
      // Before the round starts, changing nothing: a group record the log cannot take would keep the
      // group from ever becoming Stable.
      result = Promise.resolve(joinError(memberId, ErrorCode.GROUP_MAX_SIZE_REACHED));
    } else if (!this.acceptJoiningMember(group, this.joiningMemberSlot(group, request))) {
      const member = group.get(memberId);
      if (member !== undefined) {
        this.removeMember(group, member, joinError('', ErrorCode.GROUP_MAX_SIZE_REACHED));
        this.runtime.notifyWatchers(groupId, 'over-capacity');
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

    if (group.is('PreparingRebalance')) this.runtime.rebalancePurgatory.checkAndComplete(group.joinKey);
    if (isNewGroup && group.is('Empty')) {
      // A join that created a group and then failed leaves nothing behind (and nothing was told of it).
      if (group.size === 0 && group.numPending === 0) this.shard.deleteGroup(group);
      else this.runtime.notifyWatchers(groupId, 'group-created');
    }
    return result;
  }

  /**
   * The member a join asks to be counted as for group.max.size: its own id, or, for a static instance that
   * restarted (no member id, an instance id the group knows), the member it replaces. Kafka counts such a
   * rejoin as a newcomer, so a restarted instance of a full group was refused its own place and its old
   * member expired; the replacement does not grow the group, as wouldOverfillMetadata already reckons.
   */
  private joiningMemberSlot(group: GroupMetadata, request: JoinGroupRequest): string {
    const { memberId, groupInstanceId } = request;
    if (memberId !== '' || groupInstanceId === '') return memberId;
    return group.currentStaticMemberId(groupInstanceId) ?? '';
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
        return (
          (group.get(memberId)?.isAwaitingJoin ?? false) || group.numAwaiting < this.shard.config.groupMaxSize
        );
      case 'CompletingRebalance':
      case 'Stable':
        return group.has(memberId) || group.size < this.shard.config.groupMaxSize;
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
    return after > this.shard.config.groupMaxMetadataBytes && after > total;
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
    const newMemberId = this.runtime.generateMemberId(
      groupInstanceId !== '' ? groupInstanceId : request.clientId,
    );
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
    this.runtime.schedule(expiration, request.sessionTimeoutMs);
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
    const error = this.shard.validateCurrentMember(group, memberId, groupInstanceId);
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
    this.runtime.schedule(member.heartbeat, NEW_MEMBER_JOIN_TIMEOUT_MS);
    // Already rebalancing: no new rebalance, but a new member in the description.
    if (group.canRebalance) this.prepareRebalance(group, 'member-joined', memberId);
    else this.runtime.notifyWatchers(group.groupId, 'member-joined');
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
    this.shard.scheduleSessionTimeout(member);
    switch (group.state) {
      case 'Stable':
        if (group.protocolName === group.selectProtocol()) {
          // The stored generation names the old member id: store the new one before answering, so that
          // after a restart the member is still known by the id it was given (Kafka does the same).
          const generationId = group.generationId;
          // The group stays Stable, under the member's new id.
          this.runtime.notifyWatchers(group.groupId, 'static-member-replaced');
          // A rebalance or removal while the record is written answers the call (or did already).
          const isStillAnswerable = (): boolean =>
            member.awaitingJoin === call && group.is('Stable') && group.generationId === generationId;
          this.shard.writeGroupRecord(group, undefined, {
            onCommitted: () => {
              if (!isStillAnswerable()) return;
              const isLeader = group.isLeader(newMemberId);
              const response = this.joinResponse(
                group,
                member,
                isLeader ? group.currentMemberMetadata() : EMPTY_MEMBERS,
              );
              response.skipAssignment = isLeader;
              group.maybeInvokeJoinCallback(member, response);
            },
            onFailed: (error) => {
              // The group keeps the new id in memory; the instance, told to rejoin, replaces it again.
              if (isStillAnswerable()) group.maybeInvokeJoinCallback(member, joinError('', error));
            },
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
        this.runtime.notifyWatchers(group.groupId, 'static-member-replaced');
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
    return new ParkedCall<JoinGroupResponse>(this.runtime.dispatcher, context, aborted);
  }

  // ---------------------------------------------------------------------------------------------------
  // Rebalance: PreparingRebalance → CompletingRebalance → Stable

  private maybePrepareRebalance(group: GroupMetadata, reason: RebalanceReason, memberId: string): void {
    if (group.canRebalance) this.prepareRebalance(group, reason, memberId);
  }

  prepareRebalance(group: GroupMetadata, reason: RebalanceReason, memberId: string): void {
    // Members waiting for an assignment of a generation that will not become Stable must rejoin.
    if (group.is('CompletingRebalance'))
      this.resetAndPropagateAssignmentError(group, ErrorCode.REBALANCE_IN_PROGRESS);
    this.removeSyncExpiration(group);
    const delayedJoin = group.is('Empty')
      ? new InitialDelayedJoin(
          this,
          group,
          this.shard.config.groupInitialRebalanceDelayMs,
          Math.max(group.rebalanceTimeoutMs - this.shard.config.groupInitialRebalanceDelayMs, 0),
        )
      : new DelayedJoin(this, group, group.rebalanceTimeoutMs);
    group.transitionTo('PreparingRebalance');
    this.runtime.listener?.onPrepareRebalance?.(group.groupId, group.generationId, reason, memberId);
    // Every member's generation is over; a watched one hears it now rather than at its next heartbeat.
    for (const member of group.allMembers()) member.notifyRebalance(ErrorCode.REBALANCE_IN_PROGRESS);
    // Before the join may complete below, so that watchers see the rebalance start, then its end.
    this.runtime.notifyWatchers(group.groupId, reason);
    this.runtime.rebalancePurgatory.tryCompleteElseWatch(delayedJoin, group.joinKeys);
  }

  tryCompleteJoin(group: GroupMetadata, operation: DelayedOperation): boolean {
    return group.hasAllMembersJoined ? operation.forceComplete() : false;
  }

  onCompleteInitialJoin(group: GroupMetadata, delayMs: number, remainingMs: number): void {
    if (group.newMemberAdded && remainingMs !== 0) {
      group.newMemberAdded = false;
      const nextDelayMs = Math.min(this.shard.config.groupInitialRebalanceDelayMs, remainingMs);
      const nextRemainingMs = Math.max(remainingMs - delayMs, 0);
      this.runtime.rebalancePurgatory.tryCompleteElseWatch(
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
      if (notRejoined !== undefined) this.runtime.notifyWatchers(group.groupId, 'rejoin-expired');
      this.runtime.rebalancePurgatory.tryCompleteElseWatch(
        new DelayedJoin(this, group, group.rebalanceTimeoutMs),
        group.joinKeys,
      );
      return;
    }
    group.initNextGeneration();
    if (group.is('Empty')) {
      // Nobody is left: the empty generation is what a restart must bring back (Kafka stores it too).
      this.runtime.notifyWatchers(group.groupId, 'group-emptied');
      this.shard.writeGroupRecord(group, undefined, this.emptiedGroupWrite(group));
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
      this.shard.scheduleSessionTimeout(member);
      group.addPendingSyncMember(member.memberId);
    }
    this.runtime.notifyWatchers(group.groupId, 'join-completed');
    this.runtime.rebalancePurgatory.tryCompleteElseWatch(
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
    this.runtime.rebalancePurgatory.checkAndComplete(group.syncKey);
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
      if (group.maybeInvokeSyncCallback(member, response)) this.shard.scheduleSessionTimeout(member);
    }
  }

  // ---------------------------------------------------------------------------------------------------
  // SyncGroup

  syncGroup(request: SyncGroupRequest, context: RequestContext): Promise<SyncGroupResponse> {
    const availability = this.shard.availability;
    if (availability !== ErrorCode.NONE) {
      // Kafka's answer while loading: the state of an ongoing rebalance may be lost with the old
      // coordinator, so the member rejoins (REBALANCE_IN_PROGRESS) without looking for the coordinator again.
      return Promise.resolve(
        syncError(
          availability === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            ? ErrorCode.REBALANCE_IN_PROGRESS
            : availability,
        ),
      );
    }
    const group = this.shard.groups.get(request.groupId);
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
        const call = new ParkedCall<SyncGroupResponse>(this.runtime.dispatcher, context, aborted);
        member.awaitingSync = call;
        this.shard.keepAlive(member);
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
          // The generation becomes Stable, and its members get their assignments, once its record commits.
          // A member joined, left or failed while the record was written: that rebalance answered the
          // parked calls (Kafka's classicGroupSyncToLeader checks the same when its append completes).
          const isStillCompleting = (): boolean =>
            group.is('CompletingRebalance') && group.generationId === generationId;
          this.shard.writeGroupRecord(group, assignments, {
            onCommitted: () => {
              if (!isStillCompleting()) return;
              for (const each of group.allMembers())
                each.assignment = assignments.get(each.memberId) ?? EMPTY_BUFFER;
              this.propagateAssignment(group, ErrorCode.NONE);
              group.transitionTo('Stable');
              this.runtime.notifyWatchers(group.groupId, 'rebalance-completed');
            },
            onFailed: (error) => {
              if (!isStillCompleting()) return;
              this.resetAndPropagateAssignmentError(group, error);
              this.maybePrepareRebalance(group, 'store-failed', '');
            },
          });
        }
        return call.promise;
      }
      case 'Stable':
        this.removePendingSyncMember(group, memberId);
        this.shard.keepAlive(member);
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
    const error = this.shard.validateCurrentMember(group, request.memberId, request.groupInstanceId);
    if (error !== ErrorCode.NONE) return error;
    if (request.generationId !== group.generationId) {
      return this.shard.fenced(
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
    this.runtime.rebalancePurgatory.checkAndComplete(group.syncKey);
  }

  // ---------------------------------------------------------------------------------------------------
  // Heartbeat: the hot path. No allocation on any outcome: lookups, a timer re-arm, a shared reply.

  heartbeat(request: HeartbeatRequest, context: RequestContext): Promise<HeartbeatResponse> {
    const availability = this.shard.availability;
    if (availability !== ErrorCode.NONE) {
      // Kafka answers a heartbeat "blindly" while the group is loading: the member keeps its generation,
      // and the loaded group (whose members get fresh sessions) decides at its next heartbeat.
      return heartbeatReply(
        availability === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS ? ErrorCode.NONE : availability,
      );
    }
    const group = this.shard.groups.get(request.groupId);
    if (group === undefined) return heartbeatReply(ErrorCode.UNKNOWN_MEMBER_ID);
    if (group.is('Dead')) return heartbeatReply(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    const error = this.shard.validateCurrentMember(group, request.memberId, request.groupInstanceId);
    if (error !== ErrorCode.NONE) return heartbeatReply(error);
    // A heartbeat stream's watcher takes the member's slot (a reconnected stream replaces the old one).
    const watcher = context.generationWatcher;
    if (watcher !== undefined) (group.get(request.memberId) as MemberMetadata).generationWatcher = watcher;
    if (request.generationId !== group.generationId) {
      this.shard.fenced(
        group.groupId,
        request.memberId,
        request.groupInstanceId,
        ErrorCode.ILLEGAL_GENERATION,
      );
      return heartbeatReply(ErrorCode.ILLEGAL_GENERATION);
    }
    switch (group.state) {
      case 'CompletingRebalance':
      case 'Stable':
        // In CompletingRebalance a member may heartbeat between its JoinGroup answer and its SyncGroup;
        // Kafka answered REBALANCE_IN_PROGRESS here before 2.x clients, NONE since.
        this.shard.keepAlive(group.get(request.memberId) as MemberMetadata);
        return heartbeatReply(ErrorCode.NONE);
      case 'PreparingRebalance':
        // The session keeps running through the rebalance: a healthy member is never expired by a long one.
        this.shard.keepAlive(group.get(request.memberId) as MemberMetadata);
        return heartbeatReply(ErrorCode.REBALANCE_IN_PROGRESS);
      case 'Empty':
      case 'Dead':
        return heartbeatReply(ErrorCode.UNKNOWN_MEMBER_ID);
    }
  }

  unwatchMember(groupId: string, memberId: string, watcher: GenerationWatcher): void {
    const member = this.shard.groups.get(groupId)?.get(memberId);
    if (member !== undefined && member.generationWatcher === watcher) member.generationWatcher = undefined;
  }

  onExpireHeartbeat(group: GroupMetadata, memberId: string, isPending: boolean): void {
    if (group.is('Dead')) return;
    if (isPending) {
      // A pending member id nobody used: forget it, and let a join that waited only for it complete.
      if (group.removePendingMember(memberId) !== undefined && group.is('PreparingRebalance')) {
        this.runtime.rebalancePurgatory.checkAndComplete(group.joinKey);
      }
      return;
    }
    const member = group.get(memberId);
    // Parked in JoinGroup or SyncGroup means alive; answering that call re-arms the session.
    if (member === undefined || member.hasSatisfiedHeartbeat) return;
    this.runtime.listener?.onMemberExpired?.(group.groupId, member.memberId, member.groupInstanceId);
    this.removeMemberAndUpdateGroup(group, member, 'session-expired');
  }

  // ---------------------------------------------------------------------------------------------------
  // LeaveGroup

  /**
   * Kafka's LeaveGroup is a write operation: when the leave empties the group, the answer waits for the
   * empty group's record to be committed (or fails with the write, or with the unload that ended it). A
   * leave that empties nothing writes nothing and is answered at once.
   */
  leaveGroup(request: LeaveGroupRequest, _context: RequestContext): Promise<LeaveGroupResponse> {
    if (this.shard.availability !== ErrorCode.NONE)
      return Promise.resolve(leaveError(this.shard.availability));
    const group = this.shard.groups.get(request.groupId);
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
    const leaving: LeaveInProgress = {
      groupId: group.groupId,
      isEmptied: false,
      endCode: undefined,
      onEnd: undefined,
    };
    // A leave started from inside this one (a listener called back) gets its own capture, and this one's
    // comes back after it.
    const outer = this.leaving;
    this.leaving = leaving;
    try {
      for (const identity of request.members) {
        members.push({
          memberId: identity.memberId,
          groupInstanceId: identity.groupInstanceId,
          errorCode: this.leaveOne(group, identity.memberId, identity.groupInstanceId),
        });
      }
    } finally {
      this.leaving = outer;
    }
    const response: LeaveGroupResponse = { errorCode: ErrorCode.NONE, members };
    const answer = (code: ErrorCode): LeaveGroupResponse =>
      code === ErrorCode.NONE ? response : leaveError(code);
    if (!leaving.isEmptied) return Promise.resolve(response);
    if (leaving.endCode !== undefined) return Promise.resolve(answer(leaving.endCode));
    // Answered in the write's own end, not a promise callback later: whoever commits the record sees
    // the answer given.
    return new Promise((resolve) => (leaving.onEnd = (code) => resolve(answer(code))));
  }

  /**
   * How the record of a group that just emptied ends: a LeaveGroup that emptied it waits for it (its
   * code: NONE once committed); when a session or a join timed the last member out, nobody does.
   */
  private emptiedGroupWrite(group: GroupMetadata): GroupRecordWrite {
    const leaving = this.leaving;
    if (leaving === undefined || leaving.groupId !== group.groupId) return NOTHING_TO_FINISH;
    leaving.isEmptied = true;
    const end = (code: ErrorCode): void => {
      leaving.endCode = code;
      leaving.onEnd?.(code);
    };
    return {
      onCommitted: () => end(ErrorCode.NONE),
      onFailed: (_code, cause) => end(operationErrorCode(cause)),
      onUnloaded: (code) => end(code),
    };
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
      if (group.is('PreparingRebalance')) this.runtime.rebalancePurgatory.checkAndComplete(group.joinKey);
      return ErrorCode.NONE;
    }
    const error = this.shard.validateCurrentMember(group, memberId, groupInstanceId);
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
        this.runtime.notifyWatchers(group.groupId, reason);
        this.runtime.rebalancePurgatory.checkAndComplete(group.joinKey);
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
}

/** The protocol metadata a JoinGroup carries, all protocols together (memberMetadataMaxBytes). */
function protocolMetadataBytes(request: JoinGroupRequest): number {
  let bytes = 0;
  for (const protocol of request.protocols) bytes += protocol.metadata.length;
  return bytes;
}
