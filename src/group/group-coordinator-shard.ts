import { ErrorCode } from '../errors';
import { TurnBudget } from '../time';
import { brokenInvariant } from './broken-invariant';
import { checkStoredGroup } from './check-stored-group';
import type {
  CoordinatorLoadSummary,
  CoordinatorLogRecord,
  CoordinatorPartitionWriter,
  CoordinatorRecordToWrite,
} from './coordinator-partition-writer';
import type { CoordinatorResult } from './coordinator-result';
import { DelayedHeartbeat } from './delayed-heartbeat';
import { emptyGroupSnapshot, type EmptyGroupSnapshot } from './empty-group-snapshot';
import type { GroupConfig } from './group-config';
import { NEW_MEMBER_JOIN_TIMEOUT_MS } from './group-coordinator-options';
import type { GroupCoordinatorRuntime } from './group-coordinator-runtime';
import { GroupMembership } from './group-membership';
import { GroupMetadata } from './group-metadata';
import { GroupOffsets } from './group-offsets';
import type {
  DeletableGroupResult,
  DescribedGroup,
  DescribedGroupMember,
  ListGroupsResponse,
  MemberLastHeartbeat,
} from './group-protocol';
import { EMPTY_BUFFER, joinError, syncError } from './group-responses';
import type { GroupState } from './group-state';
import type { GroupRecordWrite, GroupShardState, WriteOperation } from './group-shard-state';
import type { GroupStats } from './group-stats';
import { MemberMetadata } from './member-metadata';
import { type CallCancellation, ParkedCall } from './parked-call';
import { OFFSET_COMMIT_KEY_TYPE } from './records/consumer-offsets-record';
import {
  type CoordinatorRecord,
  deserializeRecord,
  groupMetadataRecord,
  recordToWrite,
  storedGroupOf,
} from './records/coordinator-record';
import { storeErrorCode, storeGroupErrorCode } from './store-error-code';
import type { StoredGroup, StoredMember } from './stored-group';

/**
 * Groups a load's step handles at most (checks, restores, or starts the sessions of), for a clock that
 * does not move (a ManualTime); on a real clock a step ends after DEFAULT_TURN_BUDGET_MS (10 ms) first,
 * whatever a group costs (TurnBudget).
 */
export const RESTORE_GROUPS_PER_SLICE = 100;

/** A stored group the coordinator cannot take back as it is fails the load (checkStoredGroup). */
function checkOrThrow(group: StoredGroup): void {
  const problem = checkStoredGroup(group);
  if (problem !== undefined) throw brokenInvariant(`cannot load group metadata: ${problem}`);
}

type ListedGroup = ListGroupsResponse['groups'][number];

/**
 * The coordinator of the groups of one `__consumer_offsets` partition, for as long as this node leads it at
 * one leader epoch: Kafka's coordinator shard (the group coordinator runtime keeps one per partition,
 * GroupMetadataManager's state per partition before it). It is the one owner of the partition's state: its
 * groups, its committed offsets (GroupOffsets keeps them, Kafka's offsets cache) and its load state. The
 * partition's writer (`CoordinatorPartitionWriter`) holds records only; the timers, the rebalance purgatory
 * and the reply dispatcher are the runtime's, shared with the other shards, and every task or key it puts
 * there belongs to one of its groups.
 *
 * The state is what the partition's records add up to. `replay` applies one record: the load replays every
 * record of the partition through it, and a write (`scheduleWriteOperation`) replays the records its
 * handler returned once the writer says they are committed, so what readers see is always a replay of a
 * committed prefix of the partition. Group metadata records make groups at the load's end (`restoreSlices`);
 * once the shard serves, a group's live state is its handlers', and its records only follow it.
 *
 * Life: created by an election, it loads (`load`: COORDINATOR_LOAD_IN_PROGRESS meanwhile, with Kafka's
 * exceptions per request), serves, and ends with `unload` — a resignation (NOT_COORDINATOR) or shutdown
 * (COORDINATOR_NOT_AVAILABLE) — after which every late append does nothing: a new election makes a new
 * shard, so a deposed shard's writes can never touch its successor's state.
 *
 * The request families are in their own files, working on this state: GroupMembership (join, sync,
 * heartbeat, leave and the rebalance), GroupOffsets (commit, fetch, retention's per-group work, the
 * committed offsets); admin (describe, list, delete) is small and lives here.
 */
export class GroupCoordinatorShard implements GroupShardState {
  readonly config: GroupConfig;
  readonly time: GroupCoordinatorRuntime['time'];
  readonly partitionIndex: number;
  readonly leaderEpoch: number;
  /** This partition's groups (any state but Dead). */
  readonly groups = new Map<string, GroupMetadata>();
  /** Where the partition's records are appended, and read back by the load. */
  readonly writer: CoordinatorPartitionWriter;
  /**
   * The group metadata records the load has replayed, the latest per group, until the load's end makes
   * them groups (`restoreSlices` takes them once); undefined otherwise.
   */
  private loadedGroups: Map<string, StoredGroup> | undefined;
  /** Records the load skipped because they could not be decoded. */
  private corruptRecords = 0;
  /** Writes whose records are being appended, each with what ends it with a code; unload ends them. */
  private readonly pendingWrites = new Set<(errorCode: ErrorCode, cause?: unknown) => void>();
  readonly membership: GroupMembership;
  readonly offsets: GroupOffsets;
  /** False after unload: late appends and a late load do nothing. */
  isActive = true;
  /**
   * What every request of the shard's groups gets before anything else: NONE when serving,
   * COORDINATOR_LOAD_IN_PROGRESS while loading, COORDINATOR_NOT_AVAILABLE after shutdown or a failed load,
   * NOT_COORDINATOR after resignation.
   */
  availability: ErrorCode = ErrorCode.NONE;
  private readonly runtime: GroupCoordinatorRuntime;

  constructor(
    runtime: GroupCoordinatorRuntime,
    partitionIndex: number,
    leaderEpoch: number,
    writer: CoordinatorPartitionWriter,
  ) {
    this.runtime = runtime;
    this.config = runtime.config;
    this.time = runtime.time;
    this.partitionIndex = partitionIndex;
    this.leaderEpoch = leaderEpoch;
    this.writer = writer;
    this.membership = new GroupMembership(this, runtime);
    this.offsets = new GroupOffsets(this, runtime);
  }

  /** Groups currently known (any state but Dead). */
  get numGroups(): number {
    return this.groups.size;
  }

  /** Loaded and leading: its groups are served. */
  get isServing(): boolean {
    return this.isActive && this.availability === ErrorCode.NONE;
  }

  /** Adds this shard's groups and members, by state, to `stats` (metrics on scrape, never per request). */
  addGroupStats(stats: GroupStats): void {
    for (const group of this.groups.values()) {
      const count = stats[group.state];
      count.groups++;
      count.members += group.size;
    }
  }

  /**
   * Kafka's load operation for this shard: every record of the partition is replayed (`replay`, read by
   * the writer in bounded steps, which waits for the high watermark to cover them), then every group the
   * records hold comes back — Stable with its generation, protocol, leader and members, or Empty — and
   * every group that has only offsets comes back Empty, in steps of at most 10 ms of the event loop
   * (restoreInSlices). Until then every group request gets COORDINATOR_LOAD_IN_PROGRESS (clients retry).
   * Each restored member's session timer starts afresh once every group is in, as Kafka's does when a
   * coordinator takes over groups: the members kept heartbeating to a coordinator that was not there and
   * must not be expired for it.
   *
   * The listener hears what the replay read and brought back (`onPartitionReplayed`), and of each record
   * it skipped because it could not be decoded (`onCorruptRecord`). If the replay fails (the log could not
   * be read), or a stored group is unusable, the shard serves nothing (COORDINATOR_NOT_AVAILABLE) rather
   * than partial state, and the returned promise rejects; if the shard was unloaded first (resigned, shut
   * down), it resolves: its successor loads on its own. Call once.
   */
  load(): Promise<void> {
    if (this.availability === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) {
      return Promise.reject(brokenInvariant('the coordinator is already loading'));
    }
    if (!this.isActive) return Promise.reject(brokenInvariant('the coordinator has shut down'));
    this.availability = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    const loadedGroups = new Map<string, StoredGroup>();
    this.loadedGroups = loadedGroups;
    let replayed: Promise<CoordinatorLoadSummary>;
    try {
      replayed = this.writer.load((record) => this.replayLogRecord(record));
    } catch (error) {
      // A writer that throws instead of rejecting must not leave the shard loading for ever.
      replayed = Promise.reject(error);
    }
    return replayed
      .then((summary) => {
        this.runtime.listener?.onPartitionReplayed?.(this.partitionIndex, this.leaderEpoch, {
          ...summary,
          groups: loadedGroups.size,
          offsets: this.offsets.committedOffsets.size,
          corruptRecords: this.corruptRecords,
        });
      })
      .then(
        () => this.restoreInSlices(),
        (error: unknown) => {
          this.loadedGroups = undefined;
          // Unloaded meanwhile (resigned: the log resigns the writer first, which fails its load): the
          // successor loads on its own, and this load ends as the router says, without an error.
          if (!this.isActive) return;
          this.availability = ErrorCode.COORDINATOR_NOT_AVAILABLE;
          throw error;
        },
      );
  }

  /**
   * Kafka's replay: applies one committed record of the partition to the state. An offset commit record
   * sets its offset, its tombstone deletes it (GroupOffsets). A group metadata record, while loading,
   * replaces the group's earlier one and its tombstone drops it: the load's end makes groups of what is
   * left. Once the shard serves, a group's record was written by a handler that changed the group
   * already, so it changes nothing here.
   */
  replay(record: CoordinatorRecord): void {
    if (record.type === OFFSET_COMMIT_KEY_TYPE) this.offsets.replay(record);
    else if (this.loadedGroups !== undefined) {
      const stored = storedGroupOf(record);
      if (stored === undefined) this.loadedGroups.delete(record.groupId);
      else this.loadedGroups.set(record.groupId, stored);
    }
  }

  /**
   * Replays one record the load read. A record that cannot be decoded is skipped and reported: its key
   * keeps the value an earlier record gave it, and the load goes on. It stays in the log, so a version of
   * cohort that can read it still finds it.
   */
  private replayLogRecord(record: CoordinatorLogRecord): void {
    let decoded: CoordinatorRecord;
    try {
      decoded = deserializeRecord(record);
    } catch (error) {
      this.corruptRecords++;
      this.runtime.listener?.onCorruptRecord?.(this.partitionIndex, record.offset, error);
      return;
    }
    this.replay(decoded);
  }

  /**
   * The replayed groups come back in steps of at most 10 ms (or RESTORE_GROUPS_PER_SLICE groups on a
   * clock that does not move), one per event-loop turn, so a partition of thousands of groups never holds
   * the loop (heartbeats of other partitions, replication) for long: every stored group is checked, then
   * restored, then the groups with offsets only, then the restored members' sessions start. The shard
   * answers COORDINATOR_LOAD_IN_PROGRESS until the last step is done. The sessions start in the last steps,
   * after every group is in: from the end of the load (a step or two before it, on a real clock).
   */
  private async restoreInSlices(): Promise<void> {
    if (!this.isActive) return;
    try {
      await this.restoreSlices();
    } catch (error) {
      if (this.isActive) this.availability = ErrorCode.COORDINATOR_NOT_AVAILABLE;
      throw error;
    }
  }

  private async restoreSlices(): Promise<void> {
    const budget = new TurnBudget(this.time, { maxUnits: RESTORE_GROUPS_PER_SLICE });
    /** Runs `each` over `items` in the budget's steps; false if the shard was unloaded during a pause. */
    const inSteps = async <T>(items: readonly T[], each: (item: T) => void): Promise<boolean> => {
      for (const item of items) {
        each(item);
        budget.spend(1);
        if (budget.isSpent()) {
          await budget.nextStep();
          // Unloaded meanwhile (resigned, shut down): its successor loads on its own.
          if (!this.isActive) return false;
        }
      }
      return true;
    };
    // Taken once: from here on a group lives in `groups` alone.
    const stored = [...(this.loadedGroups?.values() ?? [])];
    this.loadedGroups = undefined;
    // All or nothing: every group is checked before any is restored.
    if (!(await inSteps(stored, checkOrThrow))) return;
    const restored: GroupMetadata[] = [];
    const restore = (group: StoredGroup): void => {
      if (!this.groups.has(group.groupId)) restored.push(this.restoreGroup(group));
    };
    if (!(await inSteps(stored, restore))) return;
    // Nothing is written while loading: the ids stay true.
    const offsetGroupIds = [...this.offsets.committedOffsets.groupIds()];
    if (!(await inSteps(offsetGroupIds, (groupId) => this.restoreOffsetOnlyGroup(groupId)))) return;
    if (!(await inSteps(restored, (group) => this.startRestoredSessions(group)))) return;
    this.availability = ErrorCode.NONE;
    // Watches opened while loading saw COORDINATOR_LOAD_IN_PROGRESS: now every group as it is.
    if (this.runtime.events.size > 0)
      for (const groupId of [...this.groups.keys()]) this.runtime.notifyWatchers(groupId, 'group-loaded');
  }

  /** A group with offsets and no stored record comes back Empty. */
  private restoreOffsetOnlyGroup(groupId: string): void {
    if (!this.groups.has(groupId)) this.createGroup(groupId);
  }

  /** A stored group and its members, without their sessions (startRestoredSessions starts them). */
  private restoreGroup(stored: StoredGroup): GroupMetadata {
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
      member.heartbeat = new DelayedHeartbeat(this.membership, group, each.memberId, false);
      group.add(member, undefined);
    }
    group.restore(stored.generationId, stored.protocolType, stored.protocolName, stored.leaderId);
    // The stored time of its last change, not the restart's: an Empty group's offsets expire from it.
    group.currentStateTimestampMs = stored.currentStateTimestampMs;
    return group;
  }

  /** A restored group's members' sessions start now. */
  private startRestoredSessions(group: GroupMetadata): void {
    for (const member of group.allMembers()) this.scheduleSessionTimeout(member);
    // A group.max.size lowered since the group was stored: rebalance so the members that rejoin last go
    // (Kafka's onGroupLoaded does the same).
    if (group.size > this.config.groupMaxSize) this.membership.prepareRebalance(group, 'over-capacity', '');
  }

  /** DescribeGroups' answer for one group of this shard (or the shard's own code while it cannot serve). */
  describeGroup(groupId: string): DescribedGroup {
    if (this.availability !== ErrorCode.NONE) return describedError(groupId, this.availability, '', '');
    const group = this.groups.get(groupId);
    if (group === undefined || group.is('Dead')) {
      return describedError(groupId, ErrorCode.GROUP_ID_NOT_FOUND, 'Dead', `Group ${groupId} not found.`);
    }
    // Member metadata is only meaningful for the protocol of a Stable group.
    const protocolName = group.is('Stable') ? (group.protocolName ?? '') : '';
    const members: DescribedGroupMember[] = [];
    // One read of each clock for the whole group: ages derived from session deadlines (member-metadata.ts).
    const wallNowMs = this.time.nowMs();
    const monotonicNowMs = this.time.monotonicMs();
    for (const member of group.allMembers()) {
      members.push({
        memberId: member.memberId,
        groupInstanceId: member.groupInstanceId,
        clientId: member.clientId,
        clientHost: member.clientHost,
        memberMetadata: protocolName === '' ? EMPTY_BUFFER : member.metadata(protocolName),
        memberAssignment: member.assignment,
        lastHeartbeatMs: member.lastHeartbeatMs(wallNowMs, monotonicNowMs),
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

  /** The last heartbeat of each member of `groupId` (group-protocol.ts), or undefined while not served. */
  lastHeartbeats(groupId: string): MemberLastHeartbeat[] | undefined {
    if (this.availability !== ErrorCode.NONE) return undefined;
    const group = this.groups.get(groupId);
    if (group === undefined || group.is('Dead')) return undefined;
    const wallNowMs = this.time.nowMs();
    const monotonicNowMs = this.time.monotonicMs();
    const heartbeats: MemberLastHeartbeat[] = [];
    for (const member of group.allMembers())
      heartbeats.push([member.memberId, member.lastHeartbeatMs(wallNowMs, monotonicNowMs)]);
    return heartbeats;
  }

  /** ListGroups: adds the groups of this shard whose state `wanted` has (every group when undefined). */
  addListedGroups(wanted: ReadonlySet<GroupState> | undefined, into: ListedGroup[]): void {
    for (const group of this.groups.values()) {
      if (wanted !== undefined && !wanted.has(group.state)) continue;
      into.push({
        groupId: group.groupId,
        protocolType: group.protocolType ?? '',
        groupState: group.state,
      });
    }
  }

  /**
   * DeleteGroups for groups of this shard (each once): answered once the tombstones of every deleted group
   * are committed, one result per group in the order given.
   */
  deleteGroups(groupIds: readonly string[]): Promise<DeletableGroupResult[]> {
    const results: DeletableGroupResult[] = [];
    const deleted: DeletableGroupResult[] = [];
    const removedGroups = new Map<string, EmptyGroupSnapshot>();
    for (const groupId of groupIds) {
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
        this.runtime.notifyWatchers(groupId, 'group-deleted');
        deleted.push(result);
      }
    }
    if (deleted.length === 0) return Promise.resolve(results);

    // One write (one batch of tombstones) per deleted group, so that a crash keeps all or none of each
    // group's; the answer goes once every one has ended.
    let unloadCode: ErrorCode | undefined;
    const writes = deleted.map((result) => {
      const removed = removedGroups.get(result.groupId) as EmptyGroupSnapshot;
      return this.scheduleWriteOperation<ErrorCode>(
        { records: this.groupDeletionRecords(result.groupId), response: ErrorCode.NONE },
        {
          onCommitted: () => undefined,
          onFailed: (code) => {
            if (!this.isActive) unloadCode = code;
            // What the log kept (offsets, metadata) still belongs to a group.
            else if (!this.groups.has(result.groupId)) this.bringBackEmptyGroup(removed);
            return code;
          },
        },
        undefined,
        undefined,
      );
    });
    return Promise.all(writes).then((codes) => {
      // An unload that ended one of the writes answers the whole request with its code.
      deleted.forEach((result, i) => (result.errorCode = unloadCode ?? codes[i]!));
      return results;
    });
  }

  /**
   * The tombstones of a group's deletion: its metadata record and every offset it has committed now (Kafka's
   * createGroupTombstoneRecords and deleteAllOffsets). Once they are committed exactly those offsets go: a
   * commit written earlier but not committed yet has no tombstone here, and stays, as it does in the log.
   */
  groupDeletionRecords(groupId: string): CoordinatorRecord[] {
    const records: CoordinatorRecord[] = [groupMetadataRecord(groupId, null)];
    this.offsets.addOffsetTombstones(groupId, records);
    return records;
  }

  /**
   * Kafka's CoordinatorRuntime write operation, for this shard. `result` is what a handler returned after
   * changing the in-memory state; its records are serialized and appended through the partition's writer
   * and, in the order the appends were made, each write ends one way:
   *
   * - committed: the records are replayed (`replay`) into what readers see, then `onCommitted` finishes
   *   the handler's change, and the caller gets `result.response`. A writer that commits as it appends
   *   (`commitsOnAppend`, a partition in memory) ends the write so before this returns;
   * - failed: `onFailed` reverts the change, and the caller gets its response for the code Kafka answers
   *   for that append error (storeErrorCode);
   * - unloaded first (resignation, shutdown): `onFailed` with the unload's code and no cause, at once (the
   *   shard is no longer active); the append's late end does nothing, the shard's successor replays
   *   whatever the log kept.
   *
   * A result without records is answered at once. The caller may go away meanwhile (`abortedResponse`,
   * ParkedCall): the write goes on, since the change is made.
   */
  scheduleWriteOperation<Response>(
    result: CoordinatorResult<Response, CoordinatorRecord>,
    operation: WriteOperation<Response>,
    caller: CallCancellation | undefined,
    abortedResponse: Response | undefined,
  ): Promise<Response> {
    if (result.records.length === 0) return Promise.resolve(result.response);
    const call = new ParkedCall<Response>(this.runtime.dispatcher, caller, abortedResponse);
    this.write(result, operation, (response) => call.complete(response));
    return call.promise;
  }

  /**
   * A write nobody waits for (retention's expiries): as scheduleWriteOperation, without an answer to
   * park and deliver, for a pass may write ten thousand of them in a few turns.
   */
  scheduleInternalWriteOperation(
    records: readonly CoordinatorRecord[],
    operation: WriteOperation<void>,
  ): void {
    if (records.length > 0) this.write({ records, response: undefined }, operation, ignoreAnswer);
  }

  private write<Response>(
    result: CoordinatorResult<Response, CoordinatorRecord>,
    operation: WriteOperation<Response>,
    answer: (response: Response) => void,
  ): void {
    const appended = this.append(result.records);
    if (this.writer.commitsOnAppend === true) {
      // Committed as it was appended: the write ends now, as if the high watermark had passed it at once,
      // and nothing of it outlives this call. Such a writer has nothing to reject; if it ever did, that is
      // a bug to surface, not a rejection left unhandled.
      appended.catch((error: unknown) => {
        throw brokenInvariant(`a writer that commits on append rejected an append: ${String(error)}`);
      });
      this.endCommitted(result, operation, answer);
      return;
    }
    let isEnded = false;
    const fail = (errorCode: ErrorCode, cause?: unknown): void => {
      if (isEnded) return;
      isEnded = true;
      this.pendingWrites.delete(fail);
      answer(operation.onFailed(errorCode, cause));
    };
    this.pendingWrites.add(fail);
    appended.then(
      () => {
        if (isEnded) return;
        isEnded = true;
        this.pendingWrites.delete(fail);
        this.endCommitted(result, operation, answer);
      },
      (error: unknown) => fail(storeErrorCode(error), error),
    );
  }

  /** A write's records are committed: replayed into what readers see, then the handler's change ends. */
  private endCommitted<Response>(
    result: CoordinatorResult<Response, CoordinatorRecord>,
    operation: WriteOperation<Response>,
    answer: (response: Response) => void,
  ): void {
    for (const record of result.records) this.replay(record);
    operation.onCommitted();
    answer(result.response);
  }

  /**
   * The records, as one batch. The writer serializes each as it reads it (`recordToWrite`); a record that
   * cannot be serialized fails the write.
   */
  private append(records: readonly CoordinatorRecord[]): Promise<void> {
    try {
      const batch: CoordinatorRecordToWrite[] = new Array(records.length);
      for (let i = 0; i < records.length; i++) batch[i] = recordToWrite(records[i]!);
      return this.writer.append(batch);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  createGroup(groupId: string): GroupMetadata {
    const group = new GroupMetadata(groupId, this.runtime.onTransition);
    group.currentStateTimestampMs = this.time.nowMs();
    this.groups.set(groupId, group);
    return group;
  }

  /**
   * A removed Empty group back as it was (its protocol type, generation and state timestamp, so retention
   * goes on counting from when it emptied), when its tombstones could not be written.
   */
  bringBackEmptyGroup(removed: EmptyGroupSnapshot): void {
    const group = this.createGroup(removed.groupId);
    group.restore(removed.generationId, removed.protocolType ?? '', '', '');
    group.currentStateTimestampMs = removed.currentStateTimestampMs;
    this.runtime.notifyWatchers(group.groupId, 'group-created');
  }

  /** An Empty group goes Dead and is forgotten; tasks still holding it find it Dead and do nothing. */
  deleteGroup(group: GroupMetadata): void {
    group.transitionTo('Dead');
    group.clearPendingMembers();
    if (this.groups.get(group.groupId) === group) this.groups.delete(group.groupId);
  }

  // ---------------------------------------------------------------------------------------------------
  // Group metadata

  /**
   * Kafka's storeGroup as a write of the shard's runtime: the handler has changed the group; its metadata
   * record — generation, protocol, leader and members, with `assignments` (default: the members' current
   * ones) — is appended, and once committed `operation.onCommitted` finishes the change (answers the
   * parked calls); on a failed append `operation.onFailed` gets the code members get for it
   * (storeGroupErrorCode) and the listener hears of the failure. The members' calls are parked on them,
   * so the write itself has nobody to answer. An unload ends the write with nothing to do: it answered
   * every parked call, and a successor replays what the log kept.
   */
  writeGroupRecord(
    group: GroupMetadata,
    assignments: ReadonlyMap<string, Buffer> | undefined,
    operation: GroupRecordWrite,
  ): void {
    const value = this.groupMetadataValueOf(group, assignments);
    this.scheduleInternalWriteOperation([groupMetadataRecord(group.groupId, value)], {
      onCommitted: () => operation.onCommitted(),
      onFailed: (code, cause) => {
        if (!this.isActive) {
          operation.onUnloaded?.(code);
          return;
        }
        this.runtime.listener?.onGroupStoreFailed?.(group.groupId, value.generationId, cause);
        operation.onFailed(storeGroupErrorCode(cause), cause);
      },
    });
  }

  private groupMetadataValueOf(
    group: GroupMetadata,
    assignments: ReadonlyMap<string, Buffer> | undefined,
  ): Omit<StoredGroup, 'groupId'> {
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
      protocolType: group.protocolType ?? '',
      generationId: group.generationId,
      protocolName: isEmpty ? '' : (group.protocolName ?? ''),
      leaderId: isEmpty ? '' : (group.leaderId ?? ''),
      currentStateTimestampMs: group.currentStateTimestampMs,
      members,
    };
  }
  /**
   * KIP-345's fencing plus membership: an instance id must map to this member id (else FENCED_INSTANCE_ID,
   * or UNKNOWN_MEMBER_ID for an unknown instance), and the member id must be in the group.
   */
  validateCurrentMember(group: GroupMetadata, memberId: string, groupInstanceId: string): ErrorCode {
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
  fenced(groupId: string, memberId: string, groupInstanceId: string, errorCode: ErrorCode): ErrorCode {
    this.runtime.listener?.onFenced?.(groupId, memberId, groupInstanceId, errorCode);
    return errorCode;
  }

  /** Starts the member's session timer over: its session timeout, or the new-member timeout until its first join completes. */
  scheduleSessionTimeout(member: MemberMetadata): void {
    this.runtime.schedule(
      member.heartbeat,
      member.isNew ? NEW_MEMBER_JOIN_TIMEOUT_MS : member.sessionTimeoutMs,
    );
  }

  /**
   * A valid Heartbeat, SyncGroup or OffsetCommit restarts the session. A new member's fixed timeout is not
   * extended this way: it ends with its first completed join or with the member.
   */
  keepAlive(member: MemberMetadata): void {
    if (!member.isNew) this.runtime.schedule(member.heartbeat, member.sessionTimeoutMs);
  }

  /**
   * Ends the shard: every parked call (JoinGroup, SyncGroup, an OffsetCommit or DeleteGroups waiting for
   * its records) is answered `errorCode`, each member's session task, each pending member id and each
   * group's DelayedJoin / DelayedSync is cancelled (they are on the shared timers, so one by one, not by
   * shutting a timer down), and late appends do nothing from now on. With `isResignation` (NOT_COORDINATOR)
   * the heartbeat streams of its members hear the code too (their member now lives elsewhere) and the groups
   * are unloaded; a shutdown leaves the streams to the server closing them. Idempotent.
   */
  unload(errorCode: ErrorCode, isResignation: boolean): void {
    if (!this.isActive) return;
    this.isActive = false;
    this.availability = errorCode;
    const purgatory = this.runtime.rebalancePurgatory;
    for (const group of this.groups.values()) {
      for (const member of group.allMembers()) {
        group.maybeInvokeJoinCallback(member, joinError(member.memberId, errorCode));
        group.maybeInvokeSyncCallback(member, syncError(errorCode));
        member.heartbeat.cancel();
        if (isResignation) member.notifyGone(errorCode);
      }
      group.clearPendingMembers();
      purgatory.cancelForKey(group.joinKey);
      purgatory.cancelForKey(group.syncKey);
    }
    for (const fail of [...this.pendingWrites]) fail(errorCode);
    if (isResignation) this.groups.clear();
  }
}

function ignoreAnswer(): void {}

export function describedError(
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
