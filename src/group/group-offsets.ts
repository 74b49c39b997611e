import { ErrorCode } from '../errors';
import { isLegalTopicName } from './check-request';
import { CommittedOffsets, type ReadonlyCommittedOffsets } from './committed-offsets';
import type { CoordinatorResult } from './coordinator-result';
import { INVALID_OFFSET } from './group-coordinator-options';
import type { GroupCoordinatorRuntime } from './group-coordinator-runtime';
import { emptyGroupSnapshot } from './empty-group-snapshot';
import type { GroupMetadata } from './group-metadata';
import type { GroupShardState } from './group-shard-state';
import type {
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchPartition,
  OffsetFetchRequest,
  OffsetFetchResponse,
  OffsetFetchTopicResponse,
  RequestContext,
} from './group-protocol';
import type { MemberMetadata } from './member-metadata';
import type { RetentionTally } from './offset-retention-check';
import {
  type CoordinatorRecord,
  groupMetadataRecord,
  type OffsetCommitRecord,
  offsetCommitRecord,
} from './records/coordinator-record';
import { UncommittedOffsets } from './uncommitted-offsets';

/** An OffsetCommit handler's result, with the response its caller gets should the append fail. */
export interface OffsetCommitResult extends CoordinatorResult<OffsetCommitResponse, OffsetCommitRecord> {
  /** The response for a failed append: `errorCode` for the accepted partitions, refused ones keep theirs. */
  errorResponse(errorCode: ErrorCode): OffsetCommitResponse;
}

/**
 * Committed offsets of one coordinator shard, as Kafka's OffsetMetadataManager: the offsets themselves
 * (`committed`, Kafka's offsets cache, which only `replay` changes), OffsetCommit (a handler,
 * `commitOffset`, that validates and returns records, written by the shard's runtime and acknowledged only
 * once committed), OffsetFetch, and the per-group work of offset retention (KIP-211) that OffsetRetention
 * schedules over every shard. Its own file because offsets are not the group's membership: a commit outside
 * any membership (generation -1) still makes a group, and a group with offsets outlives its members.
 *
 * Two views of the offsets, as Kafka's timeline gives them: committed ones (`committed`: a replay of the
 * partition's committed records), which every reader sees (OffsetFetch, lag, the live page, retention);
 * and the partitions written but not yet committed (`uncommitted`), which validation counts and
 * require_stable reports as unstable.
 */
export class GroupOffsets {
  private readonly shard: GroupShardState;
  private readonly runtime: GroupCoordinatorRuntime;
  private readonly committed = new CommittedOffsets();
  private readonly uncommitted = new UncommittedOffsets();

  constructor(shard: GroupShardState, runtime: GroupCoordinatorRuntime) {
    this.shard = shard;
    this.runtime = runtime;
  }

  /** The committed offsets, for reading (the router's readers, the load's count and restore). */
  get committedOffsets(): ReadonlyCommittedOffsets {
    return this.committed;
  }

  /** Kafka's replay of an offset commit record: its offset is committed now, or deleted (a tombstone). */
  replay(record: OffsetCommitRecord): void {
    const { groupId, topic, partition, value } = record;
    if (value === null) this.committed.remove(groupId, topic, partition);
    else this.committed.put(groupId, topic, partition, value);
  }

  /** Adds to `records` a tombstone for every offset `groupId` has committed now. */
  addOffsetTombstones(groupId: string, records: CoordinatorRecord[]): void {
    for (const { topic, partition } of this.committed.list(groupId)) {
      records.push(offsetCommitRecord(groupId, topic, partition, null));
    }
  }

  /**
   * OffsetCommit through the shard's runtime: the handler (`commitOffset`) changes the state and returns
   * its records and response; the runtime appends the records and answers once they are committed (and
   * replayed into `committed`), or reverts and answers the code Kafka gives for the failed append.
   */
  offsetCommit(request: OffsetCommitRequest, context: RequestContext): Promise<OffsetCommitResponse> {
    const result = this.commitOffset(request);
    const { groupId } = request;
    return this.shard.scheduleWriteOperation(
      result,
      {
        onCommitted: () => this.onCommitted(groupId, result.records),
        onFailed: (code) => {
          this.uncommitted.remove(groupId, result.records);
          return result.errorResponse(code);
        },
      },
      context,
      context.onCancel === undefined ? undefined : commitResponse(request, ErrorCode.REQUEST_TIMED_OUT),
    );
  }

  /**
   * Kafka's commitOffset: validates the commit against the group as it is now and the offsets as written
   * (committed or not), and returns the offset commit records of the partitions it accepts with the
   * response for when they are committed. Synchronous; its changes to the state are made before it
   * returns: the group a commit outside any membership creates, the member's session kept alive, and the
   * accepted partitions counted as written (`uncommitted`), which the write ends (`offsetCommit`).
   */
  commitOffset(request: OffsetCommitRequest): OffsetCommitResult {
    if (this.shard.availability !== ErrorCode.NONE) return refusedWhole(request, this.shard.availability);
    // The empty group id is allowed for offsets, as in Kafka (old clients commit under it).
    let group = this.shard.groups.get(request.groupId);
    if (group === undefined) {
      // Generation -1: a client managing its own partitions; it gets an Empty group to hold its offsets.
      if (request.generationId >= 0) {
        const code = this.shard.fenced(
          request.groupId,
          request.memberId,
          request.groupInstanceId,
          ErrorCode.ILLEGAL_GENERATION,
        );
        return refusedWhole(request, code);
      }
      if (this.runtime.numGroups() >= this.shard.config.maxGroups) {
        return refusedWhole(request, ErrorCode.GROUP_MAX_SIZE_REACHED);
      }
      // Kept should the append fail: watchers have heard of it, and retention removes a group that has
      // no offset at its next check, as it does one whose every partition was refused.
      group = this.shard.createGroup(request.groupId);
      this.runtime.notifyWatchers(group.groupId, 'group-created');
    }
    const error = this.validateOffsetCommit(group, request);
    if (error !== ErrorCode.NONE) return refusedWhole(request, error);
    switch (group.state) {
      case 'Empty':
        return this.acceptOffsets(group, request);
      case 'Stable':
      case 'PreparingRebalance':
        // Still allowed while preparing: the member learns of the rebalance from its next heartbeat.
        this.shard.keepAlive(group.get(request.memberId) as MemberMetadata);
        return this.acceptOffsets(group, request);
      case 'CompletingRebalance':
        // The member already has the new generation's JoinGroup answer but not its assignment.
        return refusedWhole(request, ErrorCode.REBALANCE_IN_PROGRESS);
      case 'Dead':
        return refusedWhole(request, ErrorCode.COORDINATOR_NOT_AVAILABLE);
    }
  }

  /**
   * An OffsetCommit's records are committed, and replayed: the offsets are no longer only written. A group
   * that was deleted while they were written exists again, as in Kafka's replay (a group holds the offsets
   * the log keeps).
   */
  private onCommitted(groupId: string, records: readonly OffsetCommitRecord[]): void {
    this.uncommitted.remove(groupId, records);
    if (!this.shard.groups.has(groupId)) {
      this.shard.createGroup(groupId);
      this.runtime.notifyWatchers(groupId, 'group-created');
    }
  }

  private validateOffsetCommit(group: GroupMetadata, request: OffsetCommitRequest): ErrorCode {
    const { generationId, memberId, groupInstanceId } = request;
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    // Generation -1 is a commit from outside the group protocol (an admin tool, manual assignment): only
    // an Empty group accepts it.
    if (generationId < 0 && group.is('Empty')) return ErrorCode.NONE;
    if (generationId >= 0 || memberId !== '' || groupInstanceId !== '') {
      const error = this.shard.validateCurrentMember(group, memberId, groupInstanceId);
      if (error !== ErrorCode.NONE) return error;
      if (generationId === group.generationId) return ErrorCode.NONE;
      return this.shard.fenced(group.groupId, memberId, groupInstanceId, ErrorCode.ILLEGAL_GENERATION);
    }
    return ErrorCode.UNKNOWN_MEMBER_ID;
  }

  /** The partitions of a valid commit, one by one: a record for each accepted, a code for each refused. */
  private acceptOffsets(group: GroupMetadata, request: OffsetCommitRequest): OffsetCommitResult {
    const maxBytes = this.shard.config.offsetMetadataMaxBytes;
    const commitTimestampMs = this.shard.time.nowMs();
    const { groupId } = group;
    const records: OffsetCommitRecord[] = [];
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
        records.push(
          offsetCommitRecord(groupId, topic.name, partition.partitionIndex, {
            committedOffset: partition.committedOffset,
            committedLeaderEpoch: partition.committedLeaderEpoch,
            metadata: partition.committedMetadata,
            commitTimestampMs,
          }),
        );
      }
    }
    if (refused !== undefined && this.runtime.listener?.onOffsetCommitRefused !== undefined) {
      const counts = new Map<ErrorCode, number>();
      for (const code of refused) if (code !== undefined) counts.set(code, (counts.get(code) ?? 0) + 1);
      for (const [code, partitions] of counts)
        this.runtime.listener.onOffsetCommitRefused(groupId, code, partitions);
    }
    const errorResponse = (code: ErrorCode): OffsetCommitResponse =>
      refused === undefined
        ? commitResponse(request, code)
        : commitResponseWithRefused(request, code, refused);
    this.uncommitted.add(groupId, records);
    return { records, response: errorResponse(ErrorCode.NONE), errorResponse };
  }

  /**
   * groupMaxCommittedPartitions: undefined when the request cannot take the group past the limit even if
   * every partition in it were new (the common case, decided in O(1)); else what admits the partitions that
   * already have an offset (committed or only written) and new ones only while they fit.
   */
  private newPartitionAllowance(
    group: GroupMetadata,
    request: OffsetCommitRequest,
  ): { admit(topic: string, partition: number): boolean } | undefined {
    const limit = this.shard.config.groupMaxCommittedPartitions;
    const groupId = group.groupId;
    const offsets = this.committed;
    const committed = offsets.committedPartitions(groupId);
    let requested = 0;
    for (const topic of request.topics) requested += topic.partitions.length;
    if (committed + this.uncommitted.size(groupId) + requested <= limit) return undefined;
    const isKnown = (topic: string, partition: number): boolean =>
      offsets.get(groupId, topic, partition) !== undefined || this.uncommitted.has(groupId, topic, partition);
    // Partitions written and not committed yet will count once they are.
    let counted = committed;
    for (const { topic, partition } of this.uncommitted.partitions(groupId)) {
      if (offsets.get(groupId, topic, partition) === undefined) counted++;
    }
    const admitted = new Set<string>();
    return {
      admit: (topic, partition) => {
        const key = partitionKey(topic, partition);
        if (isKnown(topic, partition) || admitted.has(key)) return true;
        if (counted >= limit) return false;
        counted++;
        admitted.add(key);
        return true;
      },
    };
  }

  offsetFetch(request: OffsetFetchRequest, _context: RequestContext): Promise<OffsetFetchResponse> {
    if (this.shard.availability !== ErrorCode.NONE)
      return Promise.resolve({ errorCode: this.shard.availability, topics: [] });
    const { groupId, requireStable } = request;
    // Readers see committed offsets only. With requireStable, a partition with an offset written and not
    // yet committed answers UNSTABLE_OFFSET_COMMIT so the client retries instead of reading an offset about
    // to change.
    const partitionOf = (topic: string, partitionIndex: number): OffsetFetchPartition => {
      if (requireStable && this.uncommitted.has(groupId, topic, partitionIndex)) {
        return noOffset(partitionIndex, ErrorCode.UNSTABLE_OFFSET_COMMIT);
      }
      const committed = this.committed.get(groupId, topic, partitionIndex);
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
      for (const { topic, partition } of this.committed.list(groupId)) {
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

  /**
   * Kafka's `removeExpiredOffsets` for one Empty group, and the group's removal when nothing is left. A
   * group that had members (it has a protocol type) loses all its offsets `offsetsRetentionMinutes` after
   * it became Empty; one that never had members (commits outside any membership, generation -1) loses each
   * offset that long after its own commit. An offset written again and not yet committed is kept, and so is
   * a group with pending member ids (a member is about to join). Returns how many offsets it looked at.
   *
   * Kafka also expires, in a Stable consumer group, the offsets of topics no member subscribes to any more;
   * that needs the consumer protocol's subscriptions, which cohort does not parse, so such offsets stay
   * until the group empties.
   */
  removeExpiredOffsetsOf(
    group: GroupMetadata,
    nowMs: number,
    retentionMs: number,
    tally: RetentionTally,
  ): number {
    const { groupId } = group;
    // Until its earliest possible expiry there is nothing to list: for a group that had members, retention
    // after it emptied; for one that never had, the bound the last listing left (commits only move later).
    const notBeforeMs =
      group.protocolType === undefined
        ? group.offsetsExpireNotBeforeMs
        : group.currentStateTimestampMs + retentionMs;
    if (nowMs < notBeforeMs && this.committed.hasOffsets(groupId)) return 0;
    const offsets = this.committed.list(groupId);
    // Looked up once: a group with a commit in flight while retention lists it is rare.
    const hasUncommitted = this.uncommitted.size(groupId) > 0;
    // The expired offsets' tombstones: the records of their write.
    const expired: OffsetCommitRecord[] = [];
    let nextExpiryMs = Number.POSITIVE_INFINITY;
    for (const { topic, partition, offset } of offsets) {
      const sinceMs =
        group.protocolType === undefined ? offset.commitTimestampMs : group.currentStateTimestampMs;
      if (
        nowMs - sinceMs >= retentionMs &&
        !(hasUncommitted && this.uncommitted.has(groupId, topic, partition))
      ) {
        expired.push(offsetCommitRecord(groupId, topic, partition, null));
      } else {
        nextExpiryMs = Math.min(nextExpiryMs, sinceMs + retentionMs);
      }
    }
    group.offsetsExpireNotBeforeMs = nextExpiryMs;
    tally.offsetsListed += offsets.length;
    tally.offsetsExpired += expired.length;
    if (expired.length === offsets.length && !hasUncommitted && group.numPending === 0) {
      tally.groupsExpired++;
      this.expireGroup(group, expired);
    } else if (expired.length > 0) {
      this.expireOffsets(group, expired);
    }
    return offsets.length;
  }

  /**
   * An Empty group with no offsets left goes Dead at once, as DeleteGroups makes it, and the shard's
   * runtime writes its tombstones (its metadata's and its offsets', one batch); the listener hears of the
   * expiry once they are committed. Should the append fail, what the log kept still belongs to a group:
   * the group comes back Empty and the next check tries again.
   */
  private expireGroup(group: GroupMetadata, expired: readonly OffsetCommitRecord[]): void {
    const { groupId } = group;
    const removed = emptyGroupSnapshot(group);
    this.shard.deleteGroup(group);
    this.runtime.notifyWatchers(groupId, 'group-expired');
    // Every offset the group has is expired: their tombstones, and its metadata's, are its deletion's
    // records (as groupDeletionRecords makes them, without listing the offsets again). A pass may remove
    // a million offsets: nothing else per offset is kept while the write is in flight.
    const partitions = expired.length;
    this.shard.scheduleInternalWriteOperation([groupMetadataRecord(groupId, null), ...expired], {
      onCommitted: () => this.runtime.listener?.onOffsetsExpired?.(groupId, partitions, true),
      onFailed: (_code, cause) => {
        if (!this.shard.isActive) return undefined;
        // What the log kept still belongs to a group: back as it was, and the next check tries again.
        if (!this.shard.groups.has(groupId)) this.shard.bringBackEmptyGroup(removed);
        this.runtime.listener?.onOffsetExpiryFailed?.(groupId, cause);
        return undefined;
      },
    });
  }

  /**
   * The expired offsets' tombstones, written by the shard's runtime; readers see the offsets until they
   * are committed. On a failed append they stay, and the group is listed again at the next check.
   */
  private expireOffsets(group: GroupMetadata, expired: readonly OffsetCommitRecord[]): void {
    const { groupId } = group;
    const partitions = expired.length;
    this.shard.scheduleInternalWriteOperation(expired, {
      onCommitted: () => this.runtime.listener?.onOffsetsExpired?.(groupId, partitions, false),
      onFailed: (_code, cause) => {
        if (!this.shard.isActive) return undefined;
        // They are still there, and the bound the check left does not count them: list the group again.
        group.offsetsExpireNotBeforeMs = 0;
        this.runtime.listener?.onOffsetExpiryFailed?.(groupId, cause);
        return undefined;
      },
    });
  }
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

/** A commit refused whole, before any partition was looked at: no records, one code for every partition. */
function refusedWhole(request: OffsetCommitRequest, errorCode: ErrorCode): OffsetCommitResult {
  const response = commitResponse(request, errorCode);
  return { records: [], response, errorResponse: () => response };
}

/** One code for every partition of the request, in the request's order. */
export function commitResponse(request: OffsetCommitRequest, errorCode: ErrorCode): OffsetCommitResponse {
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
