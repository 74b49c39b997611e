import { ErrorCode } from '../errors';
import { brokenInvariant } from './broken-invariant';
import type { JoinGroupMember, JoinGroupResponse, Protocol, SyncGroupResponse } from './group-protocol';
import { joinError, syncError } from './group-responses';
import { assertLegalTransition, type GroupState, VALID_PREVIOUS_STATES } from './group-state';
import type { MemberMetadata, SessionTimer } from './member-metadata';
import type { ParkedCall } from './parked-call';
import { retainProtocols } from './retained-bytes';

/**
 * One classic group (Kafka's GroupMetadata / ClassicGroup): state, generation, chosen protocol, leader,
 * members, static-member mapping, pending member ids (KIP-394) and members yet to sync.
 *
 * Everything the request path asks per call is O(1): membership and leader checks are map lookups,
 * "has everyone rejoined" compares two counters, and "does this member's protocol fit" reads a per-protocol
 * count of supporting members. Only whole-group steps (completing a join, choosing the protocol, building
 * the leader's member list) walk the members, once per rebalance.
 */
export class GroupMetadata {
  readonly groupId: string;
  /** Purgatory key of the group's DelayedJoin (computed once: checked on every JoinGroup). */
  readonly joinKey: string;
  /** Purgatory key of the group's DelayedSync. */
  readonly syncKey: string;
  /** The keys as the one-element lists the purgatory takes, built once per group. */
  readonly joinKeys: readonly string[];
  readonly syncKeys: readonly string[];
  private readonly onTransition: ((group: GroupMetadata) => void) | undefined;

  private stateValue: GroupState;
  private previousStateValue: GroupState = 'Dead';
  protocolType: string | undefined = undefined;
  protocolName: string | undefined = undefined;
  /**
   * Kafka's currentStateTimestamp: wall-clock ms of the group's creation or last state change, set by the
   * coordinator (which has the clock). An Empty group's offsets expire from it.
   */
  currentStateTimestampMs = 0;
  /**
   * For a group that never had members: no offset of it can expire before this wall-clock time (the
   * earliest commit time + retention, from the last retention check; commits only move it later). 0 = not
   * known yet.
   */
  offsetsExpireNotBeforeMs = 0;
  generationId = 0;
  private leaderIdValue: string | undefined = undefined;
  /** Set when a member is added while a rebalance that started from Empty is running (KIP-134). */
  newMemberAdded = false;

  private readonly members = new Map<string, MemberMetadata>();
  /** groupInstanceId → memberId */
  private readonly staticMembers = new Map<string, string>();
  /** Member ids handed out with MEMBER_ID_REQUIRED and not yet used, each with its expiry task. */
  private readonly pendingMembers = new Map<string, SessionTimer>();
  private readonly pendingSyncMembers = new Set<string>();
  private numMembersAwaitingJoin = 0;
  /** protocol name → number of members supporting it */
  private readonly supportedProtocols = new Map<string, number>();
  /** The members' protocol metadata bytes, all protocols together (groupMaxMetadataBytes bounds it). */
  private protocolMetadataBytesValue = 0;

  /** `onTransition` is told after every state change (the coordinator's listener, for metrics and tests). */
  constructor(groupId: string, onTransition?: (group: GroupMetadata) => void) {
    this.groupId = groupId;
    // Distinct prefixes keep the two keys of one group, and the keys of different groups, apart.
    this.joinKey = `join:${groupId}`;
    this.syncKey = `sync:${groupId}`;
    this.joinKeys = Object.freeze([this.joinKey]);
    this.syncKeys = Object.freeze([this.syncKey]);
    this.stateValue = 'Empty';
    this.onTransition = onTransition;
  }

  get state(): GroupState {
    return this.stateValue;
  }

  /** The state before the last transition (Dead for a group that never moved). */
  get previousState(): GroupState {
    return this.previousStateValue;
  }

  is(state: GroupState): boolean {
    return this.stateValue === state;
  }

  get leaderId(): string | undefined {
    return this.leaderIdValue;
  }

  isLeader(memberId: string): boolean {
    return this.leaderIdValue === memberId;
  }

  has(memberId: string): boolean {
    return this.members.has(memberId);
  }

  get(memberId: string): MemberMetadata | undefined {
    return this.members.get(memberId);
  }

  get size(): number {
    return this.members.size;
  }

  get numAwaiting(): number {
    return this.numMembersAwaitingJoin;
  }

  get numPending(): number {
    return this.pendingMembers.size;
  }

  /** Every member's protocol metadata bytes (all its protocols) together; O(1). */
  get protocolMetadataBytes(): number {
    return this.protocolMetadataBytesValue;
  }

  allMembers(): IterableIterator<MemberMetadata> {
    return this.members.values();
  }

  /** Walks members; called once per rebalance, never per request. */
  get rebalanceTimeoutMs(): number {
    let timeoutMs = 0;
    for (const member of this.members.values()) {
      if (member.rebalanceTimeoutMs > timeoutMs) timeoutMs = member.rebalanceTimeoutMs;
    }
    return timeoutMs;
  }

  /** Legal only as Kafka allows (see group-state.ts); an illegal one is a bug and throws. */
  transitionTo(next: GroupState): void {
    assertLegalTransition(this.groupId, this.stateValue, next);
    this.previousStateValue = this.stateValue;
    this.stateValue = next;
    if (this.onTransition !== undefined) this.onTransition(this);
  }

  /** Kafka's `canRebalance`: the states PreparingRebalance may be entered from. */
  get canRebalance(): boolean {
    return VALID_PREVIOUS_STATES.PreparingRebalance.has(this.stateValue);
  }

  add(member: MemberMetadata, awaitingJoin: ParkedCall<JoinGroupResponse> | undefined): void {
    if (member.isStaticMember) {
      if (this.staticMembers.has(member.groupInstanceId)) {
        throw brokenInvariant(
          `Static member with groupInstanceId=${member.groupInstanceId} cannot be added to group ${this.groupId} since it is already a member`,
        );
      }
      this.staticMembers.set(member.groupInstanceId, member.memberId);
    }
    if (this.members.size === 0) this.protocolType = member.protocolType;
    if (
      this.protocolType !== member.protocolType ||
      !this.supportsProtocols(member.protocolType, member.supportedProtocols)
    ) {
      throw brokenInvariant(`Member ${member.memberId} does not fit the protocols of group ${this.groupId}`);
    }
    if (this.leaderIdValue === undefined) this.leaderIdValue = member.memberId;
    this.members.set(member.memberId, member);
    this.incrementSupportedProtocols(member.supportedProtocols);
    member.awaitingJoin = awaitingJoin;
    if (awaitingJoin !== undefined) this.numMembersAwaitingJoin++;
    this.pendingMembers.delete(member.memberId);
  }

  /**
   * Removes the member from every index. Parked calls are the caller's business (answer them first). The
   * leader passes to any remaining member, as Kafka does; a completing join re-elects among rejoined ones.
   */
  remove(memberId: string): MemberMetadata | undefined {
    const member = this.members.get(memberId);
    if (member !== undefined) {
      this.members.delete(memberId);
      this.decrementSupportedProtocols(member.supportedProtocols);
      if (member.isAwaitingJoin) this.numMembersAwaitingJoin--;
      if (member.isStaticMember) this.staticMembers.delete(member.groupInstanceId);
    }
    if (this.leaderIdValue === memberId) {
      const next = this.members.keys().next();
      this.leaderIdValue = next.done === true ? undefined : next.value;
    }
    this.pendingSyncMembers.delete(memberId);
    return member;
  }

  /**
   * Keeps the leader if it rejoined, else picks a rejoined member. False when no member rejoined (or there
   * is no leader): the join cannot produce a generation.
   */
  maybeElectNewJoinedLeader(): boolean {
    if (this.leaderIdValue === undefined) return false;
    const leader = this.members.get(this.leaderIdValue);
    if (leader !== undefined && leader.isAwaitingJoin) return true;
    for (const member of this.members.values()) {
      if (member.isAwaitingJoin) {
        this.leaderIdValue = member.memberId;
        return true;
      }
    }
    return false;
  }

  /**
   * A static member rejoined with an empty member id: the same member continues under `newMemberId`. Calls
   * parked under the old id belong to a fenced instance and are answered FENCED_INSTANCE_ID.
   */
  replaceStaticMember(groupInstanceId: string, oldMemberId: string, newMemberId: string): MemberMetadata {
    const member = this.members.get(oldMemberId);
    if (member === undefined) {
      throw brokenInvariant(`Cannot replace non-existing member id ${oldMemberId} of group ${this.groupId}`);
    }
    this.maybeInvokeJoinCallback(member, joinError(oldMemberId, ErrorCode.FENCED_INSTANCE_ID));
    this.maybeInvokeSyncCallback(member, syncError(ErrorCode.FENCED_INSTANCE_ID));
    this.members.delete(oldMemberId);
    member.memberId = newMemberId;
    member.heartbeat.memberId = newMemberId;
    this.members.set(newMemberId, member);
    if (this.leaderIdValue === oldMemberId) this.leaderIdValue = newMemberId;
    if (this.pendingSyncMembers.delete(oldMemberId)) this.pendingSyncMembers.add(newMemberId);
    this.staticMembers.set(groupInstanceId, newMemberId);
    return member;
  }

  isPendingMember(memberId: string): boolean {
    return this.pendingMembers.has(memberId);
  }

  addPendingMember(memberId: string, expiration: SessionTimer): void {
    if (this.members.has(memberId)) {
      throw brokenInvariant(
        `Attempt to add pending member ${memberId} which is already a member of ${this.groupId}`,
      );
    }
    this.pendingMembers.set(memberId, expiration);
  }

  /** Forgets a pending member id; returns its expiry task so the caller can cancel it. */
  removePendingMember(memberId: string): SessionTimer | undefined {
    const task = this.pendingMembers.get(memberId);
    this.pendingMembers.delete(memberId);
    return task;
  }

  /** Cancels every pending member's expiry (group deletion, shutdown). */
  clearPendingMembers(): void {
    for (const task of this.pendingMembers.values()) task.cancel();
    this.pendingMembers.clear();
  }

  addPendingSyncMember(memberId: string): void {
    if (!this.members.has(memberId)) {
      throw brokenInvariant(`Attempt to add a pending sync for ${memberId}, not a member of ${this.groupId}`);
    }
    this.pendingSyncMembers.add(memberId);
  }

  removePendingSyncMember(memberId: string): void {
    this.pendingSyncMembers.delete(memberId);
  }

  get hasReceivedSyncFromAllMembers(): boolean {
    return this.pendingSyncMembers.size === 0;
  }

  /** A copy: the caller removes these members while iterating. */
  allPendingSyncMembers(): string[] {
    return [...this.pendingSyncMembers];
  }

  clearPendingSyncMembers(): void {
    this.pendingSyncMembers.clear();
  }

  hasStaticMember(groupInstanceId: string): boolean {
    return this.staticMembers.has(groupInstanceId);
  }

  currentStaticMemberId(groupInstanceId: string): string | undefined {
    return this.staticMembers.get(groupInstanceId);
  }

  get numStaticMembers(): number {
    return this.staticMembers.size;
  }

  /** Every known member has a parked JoinGroup and no handed-out member id is still unused. */
  get hasAllMembersJoined(): boolean {
    return this.members.size === this.numMembersAwaitingJoin && this.pendingMembers.size === 0;
  }

  /**
   * Empty group: any non-empty protocol type and protocol list. Otherwise the type must match and at least
   * one of the offered protocols must be supported by every current member.
   */
  supportsProtocols(protocolType: string, protocols: readonly Protocol[]): boolean {
    if (this.stateValue === 'Empty') return protocolType !== '' && protocols.length > 0;
    if (this.protocolType !== protocolType) return false;
    const size = this.members.size;
    for (const protocol of protocols) {
      if ((this.supportedProtocols.get(protocol.name) ?? 0) === size) return true;
    }
    return false;
  }

  /**
   * The protocol of the next generation: each member votes for its most preferred protocol among those every
   * member supports; most votes wins, a tie goes to the protocol that got its first vote earliest.
   */
  selectProtocol(): string {
    const size = this.members.size;
    if (size === 0) throw brokenInvariant(`Cannot select a protocol for empty group ${this.groupId}`);
    const candidates = new Set<string>();
    for (const [name, count] of this.supportedProtocols) if (count === size) candidates.add(name);
    const votes = new Map<string, number>();
    for (const member of this.members.values()) {
      const choice = member.vote(candidates);
      votes.set(choice, (votes.get(choice) ?? 0) + 1);
    }
    let best = '';
    let bestVotes = -1;
    for (const [name, count] of votes) {
      if (count > bestVotes) {
        best = name;
        bestVotes = count;
      }
    }
    return best;
  }

  updateMember(
    member: MemberMetadata,
    protocols: readonly Protocol[],
    rebalanceTimeoutMs: number,
    sessionTimeoutMs: number,
    awaitingJoin: ParkedCall<JoinGroupResponse> | undefined,
  ): void {
    this.decrementSupportedProtocols(member.supportedProtocols);
    // A rejoin that changes nothing keeps the copy the member already holds.
    if (!member.matches(protocols)) member.supportedProtocols = retainProtocols(protocols);
    this.incrementSupportedProtocols(member.supportedProtocols);
    member.setTimeouts(rebalanceTimeoutMs, sessionTimeoutMs);
    if (awaitingJoin !== undefined && !member.isAwaitingJoin) this.numMembersAwaitingJoin++;
    else if (awaitingJoin === undefined && member.isAwaitingJoin) this.numMembersAwaitingJoin--;
    member.awaitingJoin = awaitingJoin;
  }

  /** Answers the member's parked JoinGroup, if any. */
  maybeInvokeJoinCallback(member: MemberMetadata, response: JoinGroupResponse): void {
    const call = member.awaitingJoin;
    if (call === undefined) return;
    member.awaitingJoin = undefined;
    this.numMembersAwaitingJoin--;
    call.complete(response);
  }

  /** Answers the member's parked SyncGroup, if any; true when there was one. */
  maybeInvokeSyncCallback(member: MemberMetadata, response: SyncGroupResponse): boolean {
    const call = member.awaitingSync;
    if (call === undefined) return false;
    member.awaitingSync = undefined;
    call.complete(response);
    return true;
  }

  /**
   * Loading, not a transition (the listener is not told): a fresh group whose members were just added takes
   * back the generation it had stored, Stable with its members or Empty without (Kafka's loadGroup).
   */
  restore(generationId: number, protocolType: string, protocolName: string, leaderId: string): void {
    if (this.stateValue !== 'Empty' || this.generationId !== 0) {
      throw brokenInvariant(`Group ${this.groupId} in state ${this.stateValue} cannot be restored`);
    }
    this.generationId = generationId;
    if (protocolType !== '') this.protocolType = protocolType;
    if (this.members.size === 0) return;
    if (!this.members.has(leaderId)) {
      throw brokenInvariant(`Group ${this.groupId} cannot be led by ${leaderId}, not a member`);
    }
    this.protocolName = protocolName;
    this.leaderIdValue = leaderId;
    this.stateValue = 'Stable';
  }

  /** Starts the next generation: CompletingRebalance with a chosen protocol, or Empty if no one is left. */
  initNextGeneration(): void {
    this.generationId++;
    if (this.members.size > 0) {
      this.protocolName = this.selectProtocol();
      this.transitionTo('CompletingRebalance');
    } else {
      this.protocolName = undefined;
      this.transitionTo('Empty');
    }
    this.pendingSyncMembers.clear();
  }

  /** Every member's metadata for the chosen protocol: what the leader needs to assign. */
  currentMemberMetadata(): JoinGroupMember[] {
    if (
      this.stateValue === 'Dead' ||
      this.stateValue === 'PreparingRebalance' ||
      this.protocolName === undefined
    ) {
      throw brokenInvariant(
        `Cannot obtain member metadata for group ${this.groupId} in state ${this.stateValue}`,
      );
    }
    const protocolName = this.protocolName;
    const result: JoinGroupMember[] = new Array(this.members.size);
    let i = 0;
    for (const member of this.members.values()) {
      result[i++] = {
        memberId: member.memberId,
        groupInstanceId: member.groupInstanceId,
        metadata: member.metadata(protocolName),
      };
    }
    return result;
  }

  private incrementSupportedProtocols(protocols: readonly Protocol[]): void {
    for (const protocol of protocols) {
      this.supportedProtocols.set(protocol.name, (this.supportedProtocols.get(protocol.name) ?? 0) + 1);
      this.protocolMetadataBytesValue += protocol.metadata.length;
    }
  }

  private decrementSupportedProtocols(protocols: readonly Protocol[]): void {
    for (const protocol of protocols) {
      this.protocolMetadataBytesValue -= protocol.metadata.length;
      const count = (this.supportedProtocols.get(protocol.name) ?? 0) - 1;
      if (count <= 0) this.supportedProtocols.delete(protocol.name);
      else this.supportedProtocols.set(protocol.name, count);
    }
  }
}
