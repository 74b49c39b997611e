import { ErrorCode } from '../errors';
import { isLegalTopicName } from './check-request';
import { callStore } from './call-store';
import { INVALID_OFFSET } from './group-coordinator-options';
import type { GroupCoordinatorRuntime } from './group-coordinator-runtime';
import { emptyGroupSnapshot } from './empty-group-snapshot';
import type { GroupMetadata } from './group-metadata';
import type { GroupShardState, StoreWait } from './group-shard-state';
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
import type { TopicPartition, TopicPartitionOffset } from './offset-store';
import { ParkedCall } from './parked-call';
import type { RetentionTally } from './offset-retention-check';
import { storeErrorCode } from './store-error-code';

/**
 * Committed offsets of one coordinator shard: OffsetCommit (parked until the shard's offset store has the
 * commit, acknowledged only once durable), OffsetFetch, and the per-group work of offset retention
 * (KIP-211) that OffsetRetention schedules over every shard. Its own file because offsets live in the
 * store, not in the group's membership: a commit outside any membership (generation -1) still makes a
 * group, and a group with offsets outlives its members.
 */
export class GroupOffsets {
  private readonly shard: GroupShardState;
  private readonly runtime: GroupCoordinatorRuntime;

  constructor(shard: GroupShardState, runtime: GroupCoordinatorRuntime) {
    this.shard = shard;
    this.runtime = runtime;
  }

  offsetCommit(request: OffsetCommitRequest, context: RequestContext): Promise<OffsetCommitResponse> {
    if (this.shard.availability !== ErrorCode.NONE)
      return Promise.resolve(commitResponse(request, this.shard.availability));
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
        return Promise.resolve(commitResponse(request, code));
      }
      if (this.runtime.numGroups() >= this.shard.config.maxGroups) {
        return Promise.resolve(commitResponse(request, ErrorCode.GROUP_MAX_SIZE_REACHED));
      }
      group = this.shard.createGroup(request.groupId);
      this.runtime.notifyWatchers(group.groupId, 'group-created');
    }
    const error = this.validateOffsetCommit(group, request);
    if (error !== ErrorCode.NONE) return Promise.resolve(commitResponse(request, error));
    switch (group.state) {
      case 'Empty':
        return this.storeOffsets(group, request, context);
      case 'Stable':
      case 'PreparingRebalance':
        // Still allowed while preparing: the member learns of the rebalance from its next heartbeat.
        this.shard.keepAlive(group.get(request.memberId) as MemberMetadata);
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
      const error = this.shard.validateCurrentMember(group, memberId, groupInstanceId);
      if (error !== ErrorCode.NONE) return error;
      if (generationId === group.generationId) return ErrorCode.NONE;
      return this.shard.fenced(group.groupId, memberId, groupInstanceId, ErrorCode.ILLEGAL_GENERATION);
    }
    return ErrorCode.UNKNOWN_MEMBER_ID;
  }

  private storeOffsets(
    group: GroupMetadata,
    request: OffsetCommitRequest,
    context: RequestContext,
  ): Promise<OffsetCommitResponse> {
    const maxBytes = this.shard.config.offsetMetadataMaxBytes;
    const commitTimestampMs = this.shard.time.nowMs();
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
    if (refused !== undefined && this.runtime.listener?.onOffsetCommitRefused !== undefined) {
      const counts = new Map<ErrorCode, number>();
      for (const code of refused) if (code !== undefined) counts.set(code, (counts.get(code) ?? 0) + 1);
      for (const [code, partitions] of counts)
        this.runtime.listener.onOffsetCommitRefused(group.groupId, code, partitions);
    }
    const codeFor = (code: ErrorCode): OffsetCommitResponse =>
      refused === undefined
        ? commitResponse(request, code)
        : commitResponseWithRefused(request, code, refused);
    if (accepted.length === 0) return Promise.resolve(codeFor(ErrorCode.NONE));

    const aborted =
      context.onCancel === undefined ? undefined : commitResponse(request, ErrorCode.REQUEST_TIMED_OUT);
    const call = new ParkedCall<OffsetCommitResponse>(this.runtime.dispatcher, context, aborted);
    for (const { topic, partition } of accepted) {
      const key = partitionKey(topic, partition);
      group.pendingOffsetCommits.set(key, (group.pendingOffsetCommits.get(key) ?? 0) + 1);
    }
    const wait: StoreWait = {
      abandon: (code) => call.complete(codeFor(code)),
    };
    this.shard.storeWaits.add(wait);
    const finish = (code: ErrorCode): void => {
      this.shard.storeWaits.delete(wait);
      for (const { topic, partition } of accepted) {
        const key = partitionKey(topic, partition);
        const count = (group.pendingOffsetCommits.get(key) ?? 1) - 1;
        if (count === 0) group.pendingOffsetCommits.delete(key);
        else group.pendingOffsetCommits.set(key, count);
      }
      // The group was deleted while the commit was being stored: the offsets exist, so must a group.
      if (
        code === ErrorCode.NONE &&
        group.is('Dead') &&
        this.shard.isActive &&
        !this.shard.groups.has(group.groupId)
      ) {
        this.shard.createGroup(group.groupId);
        this.runtime.notifyWatchers(group.groupId, 'group-created');
      }
      call.complete(codeFor(code));
    };
    const stored = callStore(() => this.shard.offsetStore.commit(group.groupId, accepted));
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
    const limit = this.shard.config.groupMaxCommittedPartitions;
    const committed = this.shard.offsetStore.committedPartitions(group.groupId);
    let requested = 0;
    for (const topic of request.topics) requested += topic.partitions.length;
    if (committed + group.pendingOffsetCommits.size + requested <= limit) return undefined;
    const groupId = group.groupId;
    const isKnown = (topic: string, partition: number, key: string): boolean =>
      this.shard.offsetStore.get(groupId, topic, partition) !== undefined ||
      group.pendingOffsetCommits.has(key);
    // Partitions being stored that the store does not have yet will count once they are.
    let counted = committed;
    for (const key of group.pendingOffsetCommits.keys()) {
      const at = key.lastIndexOf('\u0000');
      if (this.shard.offsetStore.get(groupId, key.slice(0, at), Number(key.slice(at + 1))) === undefined)
        counted++;
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
    if (this.shard.availability !== ErrorCode.NONE)
      return Promise.resolve({ errorCode: this.shard.availability, topics: [] });
    const { groupId, requireStable } = request;
    const pending = this.shard.groups.get(groupId)?.pendingOffsetCommits;
    // With requireStable, a partition whose commit is still being stored answers UNSTABLE_OFFSET_COMMIT so
    // the client retries instead of reading an offset about to change.
    const partitionOf = (topic: string, partitionIndex: number): OffsetFetchPartition => {
      if (requireStable && pending !== undefined && pending.has(partitionKey(topic, partitionIndex))) {
        return noOffset(partitionIndex, ErrorCode.UNSTABLE_OFFSET_COMMIT);
      }
      const committed = this.shard.offsetStore.get(groupId, topic, partitionIndex);
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
      for (const { topic, partition } of this.shard.offsetStore.list(groupId)) {
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
   * offset that long after its own commit. An offset whose commit is still being stored is kept, and so is
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
    if (nowMs < notBeforeMs && this.shard.offsetStore.hasOffsets(groupId)) return 0;
    const offsets = this.shard.offsetStore.list(groupId);
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
    this.shard.deleteGroup(group);
    this.runtime.notifyWatchers(groupId, 'group-expired');
    let remaining = this.shard.groupStores.length;
    let failed = false;
    for (const store of this.shard.groupStores) {
      const removal = callStore(() => store.deleteGroup(groupId));
      removal.then(
        () => {
          if (--remaining === 0 && !failed && this.shard.isActive) {
            this.runtime.listener?.onOffsetsExpired?.(groupId, partitions, true);
          }
        },
        (error: unknown) => {
          remaining--;
          failed = true;
          if (!this.shard.isActive) return;
          if (!this.shard.groups.has(groupId)) this.shard.bringBackEmptyGroup(removed);
          this.runtime.listener?.onOffsetExpiryFailed?.(groupId, error);
        },
      );
    }
  }

  private expireOffsets(group: GroupMetadata, expired: readonly TopicPartition[]): void {
    const { groupId } = group;
    const removal = callStore(() => this.shard.offsetStore.deleteOffsets(groupId, expired));
    removal.then(
      () => {
        if (this.shard.isActive) this.runtime.listener?.onOffsetsExpired?.(groupId, expired.length, false);
      },
      (error: unknown) => {
        // They are still there, and the bound the check left does not count them: list the group again.
        group.offsetsExpireNotBeforeMs = 0;
        if (this.shard.isActive) this.runtime.listener?.onOffsetExpiryFailed?.(groupId, error);
      },
    );
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
