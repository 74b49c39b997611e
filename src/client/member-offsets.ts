import { type CohortError, ErrorCode } from '../errors';
import type { OffsetCommitTopic, OffsetFetchResponse } from '../protocol/group-messages';
import type { Time } from '../time';
import { errorFromCode } from './error-from-code';
import type { ResolvedGroupMemberOptions } from './group-member-options';
import type { CallOptions, GroupTransport } from './group-transport';
import type { MemberBackoff } from './member-backoff';
import type { MemberControl } from './member-control';
import { memberErrorAction } from './member-error-actions';
import type { RetryingCaller } from './retrying-caller';
import { compareTopicPartitions, type TopicPartition } from './topic-partition';

/** One offset to commit. Offsets are `bigint`, as everywhere in the SDK's API. */
export interface OffsetToCommit {
  readonly topic: string;
  readonly partition: number;
  /** The offset of the next record to consume (Kafka's convention). */
  readonly offset: bigint;
  readonly metadata?: string;
}

/** A committed offset; `offset` is null when nothing was committed for the partition. */
export interface CommittedOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint | null;
  readonly metadata: string;
}

/** What the offset calls run on: the member's own transport, clock, caller and backoff. */
export interface MemberOffsetsDependencies {
  readonly options: ResolvedGroupMemberOptions;
  readonly transport: GroupTransport;
  readonly time: Time;
  readonly caller: RetryingCaller;
  readonly backoff: MemberBackoff;
}

/**
 * A group member's OffsetCommit and OffsetFetch (Kafka's ConsumerCoordinator.commitOffsetsSync and
 * fetchCommittedOffsets, with the OffsetCommitResponseHandler). A commit carries the member id and
 * generation, so a member that lost its partitions cannot overwrite the new owner's progress; an answer
 * that says the generation is gone also costs the member its assignment, as a heartbeat's would. Both calls
 * are retried, on the member's backoff, while their codes are retriable and the member is not closed.
 */
export class MemberOffsets {
  private readonly options: ResolvedGroupMemberOptions;
  private readonly transport: GroupTransport;
  private readonly time: Time;
  private readonly caller: RetryingCaller;
  private readonly backoff: MemberBackoff;

  constructor(
    dependencies: MemberOffsetsDependencies,
    private readonly member: MemberControl,
  ) {
    this.options = dependencies.options;
    this.transport = dependencies.transport;
    this.time = dependencies.time;
    this.caller = dependencies.caller;
    this.backoff = dependencies.backoff;
  }

  /**
   * Commits `offsets` for the member's current generation (the caller checked that it has one). Throws a
   * RangeError at once, before anything is sent, for an offset that is not a bigint in [0, 2^53 - 1].
   */
  commit(offsets: readonly OffsetToCommit[], options: { timeoutMs?: number }): Promise<void> {
    const what = `OffsetCommit for group "${this.options.groupId}"`;
    const topics = new Map<string, OffsetCommitTopic>();
    for (const o of offsets) {
      if (typeof o.offset !== 'bigint' || o.offset < 0n || o.offset > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new RangeError(
          `offset for ${o.topic}-${o.partition} must be a bigint in [0, 2^53 - 1], got ${o.offset}`,
        );
      }
      let topic = topics.get(o.topic);
      if (topic === undefined) topics.set(o.topic, (topic = { name: o.topic, partitions: [] }));
      topic.partitions.push({
        partitionIndex: o.partition,
        committedOffset: Number(o.offset),
        committedLeaderEpoch: -1,
        committedMetadata: o.metadata ?? '',
      });
    }
    const generation = { generationId: this.member.generationId(), memberId: this.member.memberId() };
    const request = {
      groupId: this.options.groupId,
      ...generation,
      groupInstanceId: this.options.groupInstanceId ?? '',
      topics: [...topics.values()],
    };
    return this.retrying(what, options.timeoutMs, async (callOptions) => {
      const response = await this.transport.offsetCommit(request, callOptions);
      for (const topic of response.topics) {
        for (const p of topic.partitions) {
          if (p.errorCode !== ErrorCode.NONE) return this.onCommitError(p.errorCode, what, generation);
        }
      }
      return ErrorCode.NONE;
    });
  }

  /** The group's committed offsets for `partitions` (all of the group's when omitted), sorted. */
  async fetch(
    partitions: readonly TopicPartition[] | undefined,
    options: { timeoutMs?: number },
  ): Promise<CommittedOffset[]> {
    const what = `OffsetFetch for group "${this.options.groupId}"`;
    const byTopic = new Map<string, number[]>();
    for (const tp of partitions ?? []) {
      let list = byTopic.get(tp.topic);
      if (list === undefined) byTopic.set(tp.topic, (list = []));
      list.push(tp.partition);
    }
    const request = {
      groupId: this.options.groupId,
      topics: [...byTopic].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
      requireStable: true,
    };
    let result: OffsetFetchResponse | null = null;
    await this.retrying(what, options.timeoutMs, async (callOptions) => {
      const response = await this.transport.offsetFetch(request, callOptions);
      if (response.errorCode !== ErrorCode.NONE) return response.errorCode;
      for (const topic of response.topics) {
        for (const p of topic.partitions) if (p.errorCode !== ErrorCode.NONE) return p.errorCode;
      }
      result = response;
      return ErrorCode.NONE;
    });
    const out: CommittedOffset[] = [];
    for (const topic of (result as OffsetFetchResponse | null)?.topics ?? []) {
      for (const p of topic.partitions) {
        out.push({
          topic: topic.name,
          partition: p.partitionIndex,
          offset: p.committedOffset < 0 ? null : BigInt(p.committedOffset),
          metadata: p.metadata,
        });
      }
    }
    return out.sort(compareTopicPartitions);
  }

  /**
   * Sends until `attempt` reports NONE or a code that is not retriable, backing off between tries, within
   * `timeoutMs`. Rejects with the last error.
   */
  private async retrying(
    what: string,
    timeoutMs: number | undefined,
    attempt: (options: CallOptions) => Promise<ErrorCode>,
  ): Promise<void> {
    const deadlineMs = this.time.monotonicMs() + (timeoutMs ?? this.options.requestTimeoutMs);
    for (let failures = 0; ; failures++) {
      const remainingMs = deadlineMs - this.time.monotonicMs();
      const outcome = await this.caller.call(what, attempt, Math.max(1, remainingMs));
      let error: CohortError;
      if (outcome.kind === 'response') {
        if (outcome.response === ErrorCode.NONE) return;
        error = errorFromCode(outcome.response, what);
      } else if (outcome.kind === 'failed') {
        error = outcome.error;
      } else {
        throw errorFromCode(ErrorCode.REQUEST_TIMED_OUT, `${what} was cancelled`);
      }
      const waitMs = this.backoff.retryWaitMs(error.code, failures);
      if (!error.retriable || this.member.isTerminal() || this.time.monotonicMs() + waitMs >= deadlineMs)
        throw error;
      // Woken early by a rejoin (harmless: one earlier retry), by close, or by the new coordinator found.
      if (await this.backoff.backOffFrom(error.code, waitMs)) failures = -1;
      if (this.member.isTerminal()) throw error;
    }
  }

  /** Kafka's OffsetCommitResponseHandler: which codes cost the generation. Returns the code to report. */
  private onCommitError(
    code: ErrorCode,
    what: string,
    sent: { generationId: number; memberId: string },
  ): ErrorCode {
    const member = this.member;
    const unchanged = sent.generationId === member.generationId() && sent.memberId === member.memberId();
    const action = memberErrorAction(code);
    if (action.kind === 'generation-gone' && unchanged) {
      const error = errorFromCode(code, what);
      member.leaveGeneration(
        action.resetMemberId,
        action.lostReason,
        error,
        `OffsetCommit answered ${ErrorCode[code]}`,
      );
    } else if (action.kind === 'rejoin' && member.isSettled()) {
      member.rejoin('OffsetCommit answered REBALANCE_IN_PROGRESS');
    } else if (action.kind === 'fenced' && unchanged) {
      member.fail(errorFromCode(code, what));
    }
    return code;
  }
}
