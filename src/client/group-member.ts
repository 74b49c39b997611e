/**
 * A member of a consumer group: Kafka's AbstractCoordinator + ConsumerCoordinator, on one event loop.
 *
 * The rebalance loop (Kafka's joinGroupIfNeeded):
 *   prepare  – eager: revoke everything owned (`revoked`, waiting for `waitUntil`); cooperative: keep it.
 *   join     – JoinGroup with the encoded subscription (cooperative: owned partitions + generation inside).
 *              What an error code means is the member's one table (member-error-actions.ts): join again at
 *              once, after losing the generation if it is gone, back off and join again, or fail.
 *   sync     – the leader decodes every subscription, runs the voted assignor, encodes; everybody sends
 *              SyncGroup. Errors as for join, except that a failed sync always goes back to join.
 *   complete – cooperative: partitions taken away are revoked first, then `assigned`; if anything was taken
 *              away, rejoin at once so the leader can hand it out (the follow-up rebalance).
 *
 * Heartbeats (member-heartbeats.ts) run on their own timer from the JoinGroup answer until the next
 * JoinGroup is sent, over the member's HeartbeatStream when there is one.
 *
 * This file keeps the member's state, the rebalance loop, close and failure. Its other parts have a file
 * each: the heartbeats, offset commits and fetches (member-offsets.ts), the stall guard (stall-guard.ts),
 * the leader's assignment (leader-assignment.ts), the partitions held and the events that hand them over
 * (held-assignment.ts), the waits between tries (member-backoff.ts) and what each error code means to a
 * member (member-error-actions.ts). The parts that act on the member see it through MemberControl.
 *
 * Nothing here waits on user code except `waitUntil` promises, and those only with a bound; user code can
 * never delay a heartbeat short of blocking the event loop itself.
 *
 * Abandoning: every step of the loop runs under an epoch. Anything that invalidates the attempt in progress
 * (a lost generation, the stall guard, close, a fatal error) bumps the epoch, aborts its calls and wakes its
 * sleeps; the old loop sees the epoch moved and returns without touching state.
 */
import { EventEmitter } from 'node:events';
import { CohortError, ErrorCode } from '../errors';
import { SYSTEM_TIME, type Time } from '../time';
import type { RebalanceProtocol } from './assignors/partition-assignor';
import { decodeAssignment, encodeSubscription } from './consumer-protocol';
import type { JoinGroupResponse, SyncGroupAssignment } from '../protocol/group-messages';
import { errorFromCode } from './error-from-code';
import { ExponentialBackoff } from './exponential-backoff';
import type { GroupMemberEvents, LostReason } from './group-member-events';
import {
  resolveGroupMemberOptions,
  type GroupMemberOptions,
  type ResolvedGroupMemberOptions,
} from './group-member-options';
import type { GroupTransport } from './group-transport';
import { HeldAssignment } from './held-assignment';
import { assignAsLeader } from './leader-assignment';
import { MemberBackoff } from './member-backoff';
import { NO_GENERATION, type MemberControl } from './member-control';
import { memberErrorAction, type MemberErrorAction } from './member-error-actions';
import { MemberHeartbeats } from './member-heartbeats';
import { MemberOffsets, type CommittedOffset, type OffsetToCommit } from './member-offsets';
import { StallGuard } from './stall-guard';
import { TimeScheduler } from './time-scheduler';
import { ABANDONED, RetryingCaller } from './retrying-caller';
import type { TopicPartition } from './topic-partition';

/**
 * Where a member is, in Kafka's words: `unjoined` (waiting to join), `preparing-rebalance` (JoinGroup sent),
 * `completing-rebalance` (joined, SyncGroup under way), `stable`; then cohort's own: `stalled` (left the
 * group by the stall guard, rejoins when work ends), `closing`, `closed`, and `failed` (a fatal error).
 */
export type GroupMemberState =
  | 'unjoined'
  | 'preparing-rebalance'
  | 'completing-rebalance'
  | 'stable'
  | 'stalled'
  | 'closing'
  | 'closed'
  | 'failed';

/** What a `GroupMember` runs on. Only `transport` is required. */
export interface GroupMemberDependencies {
  readonly transport: GroupTransport;
  /** Default: the system clock. Tests pass a `ManualTime` and advance it. */
  readonly time?: Time;
  /** Source of jitter for backoffs, numbers in [0, 1). Default `Math.random`. */
  readonly random?: () => number;
}

export type { CommittedOffset, OffsetToCommit } from './member-offsets';

/** Kafka's JOIN_GROUP_TIMEOUT_LAPSE: JoinGroup and SyncGroup may park for the rebalance timeout, plus this. */
const REBALANCE_CALL_GRACE_MS = 5_000;

/**
 * A member of a cohort consumer group. Create it with `CohortClient.join` (or directly, with any
 * `GroupTransport`); it starts joining on the next microtask, so attach listeners right away.
 *
 * ```ts
 * const member = client.join({ groupId: 'billing', topics: ['orders'], partitionsPerTopic: new Map([['orders', 12]]) });
 * member.on('assigned', ({ partitions }) => start(partitions));
 * member.on('revoked', (event) => event.waitUntil(stopAndCommit(event.partitions)));
 * member.on('lost', ({ partitions }) => abandon(partitions));
 * member.on('error', (error) => log.error(error));
 * ```
 */
export class GroupMember extends EventEmitter<GroupMemberEvents> {
  /** The settings in force, defaults filled in. */
  readonly options: ResolvedGroupMemberOptions;
  /** `cooperative` when every protocol is; otherwise `eager`. */
  readonly rebalanceProtocol: RebalanceProtocol;

  private readonly transport: GroupTransport;
  private readonly time: Time;
  private readonly scheduler: TimeScheduler;
  private readonly backoff: MemberBackoff;
  /** Every call ends when the member closes (`lifetime`), besides its own deadline and scope. */
  private readonly caller: RetryingCaller;

  private _state: GroupMemberState = 'unjoined';
  private _memberId = '';
  private _generationId = NO_GENERATION;
  private _protocolName = '';
  private _leaderId = '';
  private _failure: Error | null = null;
  private readonly held: HeldAssignment;

  private epoch = 0;
  private attempt = new AbortController();
  private rebalancing = false;
  private rejoinReason = 'initial join';

  private readonly heartbeats: MemberHeartbeats;
  private readonly offsets: MemberOffsets;
  private readonly stallGuard: StallGuard;

  private closePromise: Promise<void> | null = null;
  /** Aborted when the member is closed: ends every call still in flight. */
  private readonly lifetime = new AbortController();
  private readonly detachSignal: () => void = () => {};

  constructor(options: GroupMemberOptions, dependencies: GroupMemberDependencies) {
    super();
    this.options = resolveGroupMemberOptions(options);
    this.rebalanceProtocol = this.options.protocols.every((p) => p.rebalanceProtocol === 'cooperative')
      ? 'cooperative'
      : 'eager';
    this.transport = dependencies.transport;
    this.time = dependencies.time ?? SYSTEM_TIME;
    this.scheduler = new TimeScheduler(this.time);
    const backoff = new ExponentialBackoff({
      initialMs: this.options.retryBackoffMs,
      maxMs: this.options.retryBackoffMaxMs,
      ...(dependencies.random ? { random: dependencies.random } : {}),
    });
    this.backoff = new MemberBackoff(this.scheduler, backoff, this.transport, this.options.groupId);
    this.caller = new RetryingCaller(this.time, this.scheduler, backoff, this.lifetime.signal);
    const control: MemberControl = {
      memberId: () => this._memberId,
      generationId: () => this._generationId,
      isClosing: () => this._state === 'closing',
      isShut: () => this.isShut(),
      isTerminal: () => this.isTerminal(),
      isSettled: () => this.isSettled(),
      rejoin: (reason) => this.rejoin(reason),
      leaveGeneration: (resetMemberId, lostReason, error, rejoinReason) =>
        this.leaveGeneration(resetMemberId, lostReason, error, rejoinReason),
      fail: (error) => this.fail(error, false),
    };
    const parts = {
      options: this.options,
      transport: this.transport,
      time: this.time,
      scheduler: this.scheduler,
      caller: this.caller,
      backoff: this.backoff,
    };
    this.heartbeats = new MemberHeartbeats(parts, control);
    this.offsets = new MemberOffsets(parts, control);
    this.stallGuard = new StallGuard(this.time, this.scheduler, this.options.maxProcessingIntervalMs, {
      isGuarding: () => this._state !== 'stalled' && !this.isShut(),
      onStall: () => this.onStall(),
    });
    this.held = new HeldAssignment({
      emit: (name, ...args) => this.emitSafely(name, ...args),
      sleep: (ms) => this.backoff.sleep(ms),
      abortWork: (reason) => this.stallGuard.abortAll(reason),
    });
    const signal = options.signal;
    if (signal?.aborted) {
      void this.close();
    } else {
      if (signal !== undefined) {
        const onAbort = (): void => void this.close();
        signal.addEventListener('abort', onAbort, { once: true });
        this.detachSignal = () => signal.removeEventListener('abort', onAbort);
      }
      // Not synchronously: the caller attaches listeners first.
      queueMicrotask(() => this.rejoin('initial join'));
    }
  }

  /** The member's state; see `GroupMemberState`. */
  get state(): GroupMemberState {
    return this._state;
  }

  /** The id the coordinator gave this member; empty before the first JoinGroup answer. */
  get memberId(): string {
    return this._memberId;
  }

  /** The generation joined, or -1. */
  get generationId(): number {
    return this._generationId;
  }

  /** The leader of the current generation; empty when not in one. */
  get leaderId(): string {
    return this._leaderId;
  }

  /** Whether this member leads the current generation (and so runs the assignor). */
  get isLeader(): boolean {
    return this._generationId !== NO_GENERATION && this._leaderId !== '' && this._leaderId === this._memberId;
  }

  /** The assignor the group voted for in the current generation; empty when not in one. */
  get protocolName(): string {
    return this._protocolName;
  }

  /** The partitions held now, or null when none are (before the first assignment, after a loss). */
  get assignment(): readonly TopicPartition[] | null {
    return this.held.partitions;
  }

  /** The fatal error that stopped the member, if it failed. */
  get failure(): Error | null {
    return this._failure;
  }

  /**
   * Runs `work` under the stall guard. If any work runs longer than `maxProcessingIntervalMs`, the member
   * leaves the group (`lost`, reason `processing-stalled`, and `signal` is aborted) so its partitions move
   * to members that make progress; once no work is left running it rejoins. Without
   * `maxProcessingIntervalMs` this only tracks the work and aborts its signal when the assignment is lost.
   */
  async process<T>(work: (signal: AbortSignal) => PromiseLike<T> | T): Promise<T> {
    if (this.isShut()) throw new Error(`group member of "${this.options.groupId}" is ${this._state}`);
    const entry = this.stallGuard.begin();
    try {
      return await work(entry.controller.signal);
    } finally {
      this.stallGuard.end(entry);
      if (this._state === 'stalled' && this.stallGuard.isIdle)
        this.rejoin('processing resumed after a stall');
    }
  }

  /**
   * Commits offsets in the current generation, so a member that lost its partitions cannot overwrite the
   * new owner's progress. Retriable failures are retried with backoff until `timeoutMs` (default
   * `requestTimeoutMs`). Rejects with a `CohortError`: REBALANCE_IN_PROGRESS while the group rebalances,
   * ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID when the generation is gone (the member then rejoins).
   */
  async commitOffsets(
    offsets: readonly OffsetToCommit[],
    options: { timeoutMs?: number } = {},
  ): Promise<void> {
    // `closing` too: revoked listeners commit during close() while the generation is still valid.
    if ((this._state !== 'stable' && this._state !== 'closing') || this._generationId === NO_GENERATION) {
      const code = this.rebalancing ? ErrorCode.REBALANCE_IN_PROGRESS : ErrorCode.ILLEGAL_GENERATION;
      const what = `OffsetCommit for group "${this.options.groupId}"`;
      throw errorFromCode(code, `${what}: the member is ${this._state}, not in a stable generation`);
    }
    await this.offsets.commit(offsets, options);
  }

  /**
   * Reads the group's committed offsets for `partitions` (all of the group's when omitted). Retriable
   * failures are retried until `timeoutMs` (default `requestTimeoutMs`); others reject with a `CohortError`.
   */
  fetchOffsets(
    partitions?: readonly TopicPartition[],
    options: { timeoutMs?: number } = {},
  ): Promise<CommittedOffset[]> {
    return this.offsets.fetch(partitions, options);
  }

  /**
   * Leaves the group and stops. Partitions held in a valid generation are `revoked` first (reason `close`)
   * so their offsets can be committed; a dynamic member then sends LeaveGroup so the group rebalances at
   * once, while a static member sends nothing (a restart within the session timeout causes no rebalance).
   * Bounded by `timeoutMs` (default `closeTimeoutMs`): whatever is unfinished then is dropped. Safe to call
   * more than once; every call returns the same promise. Never rejects.
   */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.closePromise ??= this.shutdown(options.timeoutMs ?? this.options.closeTimeoutMs);
    return this.closePromise;
  }

  // ---- the rebalance loop ----

  private rejoin(reason: string): void {
    if (this.isShut()) return;
    this.abandonAttempt();
    this.rebalancing = true;
    this.rejoinReason = reason;
    const epoch = this.epoch;
    this.runRebalance(epoch).catch((error: unknown) => {
      // Reached only by surprises: an assignor or partitionsPerTopic that throws, a listener bug. Fatal.
      if (epoch === this.epoch) this.fail(asError(error), true);
    });
  }

  private async runRebalance(epoch: number): Promise<void> {
    const o = this.options;
    // Kafka's onJoinPrepare: eager rebalancing starts from nothing.
    const held = this.held.partitions;
    if (held !== null && this.rebalanceProtocol === 'eager') {
      await this.held.revoke(held, 'rebalance', o.rebalanceTimeoutMs);
      if (epoch !== this.epoch) return;
    }
    const rebalanceCallMs = Math.max(o.requestTimeoutMs, o.rebalanceTimeoutMs + REBALANCE_CALL_GRACE_MS);
    let failures = 0;
    const backOff = async (code: ErrorCode): Promise<boolean> => {
      if (await this.backoff.backOffFrom(code, this.backoff.retryWaitMs(code, failures++))) failures = 0;
      return epoch === this.epoch;
    };

    for (;;) {
      this.heartbeats.stop();
      this.setState('preparing-rebalance');
      const request = this.joinRequest();
      const join = await this.caller.call(
        `JoinGroup of group "${o.groupId}"`,
        (options) => this.transport.joinGroup(request, options),
        rebalanceCallMs,
        this.attempt.signal,
      );
      if (epoch !== this.epoch || join.kind === 'aborted') return;
      const joinCode = join.kind === 'response' ? join.response.errorCode : join.error.code;
      if (joinCode !== ErrorCode.NONE) {
        const error =
          join.kind === 'failed' ? join.error : errorFromCode(joinCode, `JoinGroup of group "${o.groupId}"`);
        const action = memberErrorAction(joinCode);
        if (action.kind === 'take-member-id' && join.kind === 'response') {
          this._memberId = join.response.memberId; // KIP-394: rejoin at once with the id given
          continue;
        }
        if (this.joinsAgainAfter(action, error)) continue;
        if (action.kind === 'retry' && (await backOff(joinCode))) continue;
        if (epoch === this.epoch) this.fail(error, false);
        return;
      }

      const joined = (join as { response: JoinGroupResponse }).response;
      const assignor = this.options.protocols.find((p) => p.name === joined.protocolName);
      if ((joined.protocolType !== '' && joined.protocolType !== o.protocolType) || assignor === undefined) {
        const detail = `the group chose ${joined.protocolType}/${joined.protocolName}, this member speaks ${o.protocolType}/${this.options.protocols.map((p) => p.name).join(',')}`;
        return this.fail(errorFromCode(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, `JoinGroup: ${detail}`), true);
      }
      this._memberId = joined.memberId;
      this._generationId = joined.generationId;
      this._protocolName = joined.protocolName;
      this._leaderId = joined.leaderId;
      this.setState('completing-rebalance');
      this.heartbeats.start();

      let assignments: SyncGroupAssignment[] = [];
      if (joined.leaderId === joined.memberId && !joined.skipAssignment) {
        assignments = await assignAsLeader(o.groupId, assignor, joined.members, o.partitionsPerTopic);
        if (epoch !== this.epoch) return;
      }
      const syncRequest = {
        groupId: o.groupId,
        generationId: joined.generationId,
        memberId: joined.memberId,
        groupInstanceId: o.groupInstanceId ?? '',
        protocolType: o.protocolType,
        protocolName: joined.protocolName,
        assignments,
      };
      const sync = await this.caller.call(
        `SyncGroup of group "${o.groupId}"`,
        (options) => this.transport.syncGroup(syncRequest, options),
        rebalanceCallMs,
        this.attempt.signal,
      );
      if (epoch !== this.epoch || sync.kind === 'aborted') return;
      const syncCode = sync.kind === 'response' ? sync.response.errorCode : sync.error.code;
      if (syncCode !== ErrorCode.NONE) {
        const error =
          sync.kind === 'failed' ? sync.error : errorFromCode(syncCode, `SyncGroup of group "${o.groupId}"`);
        const action = memberErrorAction(syncCode);
        if (this.joinsAgainAfter(action, error)) continue;
        if (action.kind === 'retry' && (await backOff(syncCode))) continue;
        if (epoch === this.epoch) this.fail(error, false);
        return;
      }
      const synced = (
        sync as { response: { protocolType: string; protocolName: string; assignment: Buffer } }
      ).response;
      if (
        (synced.protocolType !== '' && synced.protocolType !== o.protocolType) ||
        (synced.protocolName !== '' && synced.protocolName !== joined.protocolName)
      ) {
        const detail = `SyncGroup answered ${synced.protocolType}/${synced.protocolName} for ${o.protocolType}/${joined.protocolName}`;
        return this.fail(errorFromCode(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, detail), true);
      }
      const assignment = decodeAssignment(synced.assignment); // a garbage assignment is fatal (see rejoin)
      failures = 0;

      // Kafka's onJoinComplete.
      this.setState('stable');
      const { revoked, added } = this.held.changesTo(assignment.partitions);
      if (revoked.length > 0) {
        await this.held.revoke(revoked, 'reassigned', o.rebalanceTimeoutMs);
        if (epoch !== this.epoch) return;
      }
      this.held.assign({
        generationId: joined.generationId,
        memberId: joined.memberId,
        leaderId: joined.leaderId,
        isLeader: joined.leaderId === joined.memberId,
        protocolName: joined.protocolName,
        partitions: assignment.partitions,
        added,
        userData: assignment.userData,
      });
      if (revoked.length > 0) {
        // Cooperative follow-up: what we let go of was withheld from its new owner until we rejoin.
        this.rejoinReason = 'partitions were revoked for reassignment';
        continue;
      }
      this.rebalancing = false;
      this.stallGuard.arm();
      return;
    }
  }

  /**
   * Whether a failed JoinGroup or SyncGroup sends the loop straight back to JoinGroup: a rebalance is on,
   * or the generation is gone (it is forgotten and its assignment lost first). Retries and fatal errors
   * are the loop's to handle.
   */
  private joinsAgainAfter(action: MemberErrorAction, error: Error): boolean {
    if (action.kind === 'rejoin') return true;
    if (action.kind !== 'generation-gone') return false;
    this.resetGeneration(action.resetMemberId);
    this.held.lose(action.lostReason, error);
    return true;
  }

  private joinRequest() {
    const o = this.options;
    const cooperative = this.rebalanceProtocol === 'cooperative';
    const held = this.held.partitions;
    const metadata = encodeSubscription({
      topics: o.topics,
      ownedPartitions: cooperative ? (held ?? []) : [],
      userData: o.userData,
      generationId: cooperative && held !== null ? this.held.generationId : NO_GENERATION,
    });
    return {
      groupId: o.groupId,
      memberId: this._memberId,
      groupInstanceId: o.groupInstanceId ?? '',
      sessionTimeoutMs: o.sessionTimeoutMs,
      rebalanceTimeoutMs: o.rebalanceTimeoutMs,
      protocolType: o.protocolType,
      protocols: o.protocols.map((p) => ({ name: p.name, metadata })),
      clientId: o.clientId,
      reason: this.rejoinReason,
    };
  }

  /**
   * The generation is gone (an answer said so, or the session expired) outside the rebalance loop: forget
   * it, tell the user the assignment is lost, join again.
   */
  private leaveGeneration(
    resetMemberId: boolean,
    lostReason: LostReason,
    error: Error,
    rejoinReason: string,
  ): void {
    this.resetGeneration(resetMemberId);
    this.held.lose(lostReason, error);
    this.rejoin(rejoinReason);
  }

  private resetGeneration(resetMemberId: boolean): void {
    this._generationId = NO_GENERATION;
    this._protocolName = '';
    this._leaderId = '';
    if (resetMemberId) {
      this._memberId = '';
      this.heartbeats.closeStream(); // its first request fixed the id we just dropped
    }
    this.heartbeats.stop();
    this.setState('unjoined');
  }

  /** Invalidates the attempt in progress: its calls are aborted, its sleeps end, its loop returns. */
  private abandonAttempt(): void {
    this.epoch++;
    this.attempt.abort(ABANDONED);
    this.attempt = new AbortController();
    this.backoff.wakeAll();
  }

  // ---- the stall guard's verdict ----

  /** Work ran past `maxProcessingIntervalMs` (see StallGuard): leave the group until no work is left. */
  private onStall(): void {
    const o = this.options;
    const error = new Error(
      `work held longer than maxProcessingIntervalMs (${o.maxProcessingIntervalMs} ms); member left group "${o.groupId}" and rejoins when its work ends`,
    );
    this.abandonAttempt();
    this.rebalancing = false;
    this.leaveBestEffort('processing stalled (maxProcessingIntervalMs exceeded)');
    this.resetGeneration(true); // Kafka's resetGenerationOnLeaveGroup
    this.setState('stalled');
    this.stallGuard.abortAll(error); // the stuck work is why we left, whatever we owned
    this.held.lose('processing-stalled', error);
  }

  // ---- close and failure ----

  private async shutdown(timeoutMs: number): Promise<void> {
    if (this._state === 'failed' || this._state === 'closed') return this.finish('closed');
    const deadlineMs = this.time.monotonicMs() + Math.max(0, timeoutMs);
    const remainingMs = (): number => Math.max(0, deadlineMs - this.time.monotonicMs());
    const wasStalled = this._state === 'stalled';
    this.abandonAttempt();
    this.rebalancing = false;
    this.setState('closing');
    this.stallGuard.disarm();
    const held = this.held.partitions;
    if (held !== null) {
      // Kafka's onLeavePrepare: an orderly revoke while the generation is valid, a loss otherwise.
      if (this._generationId !== NO_GENERATION && !wasStalled)
        await this.held.revoke(held, 'close', remainingMs());
      else this.held.lose('closed');
    }
    this.heartbeats.stop();
    if (this.sendsLeaveGroup() && remainingMs() > 0) {
      await this.leaveGroup('the member is closing', Math.min(remainingMs(), this.options.requestTimeoutMs));
    }
    this.finish('closed');
  }

  /** A fatal error: stop everything, tell the user. `leave`: we are in the group and should get out. */
  private fail(error: Error, leave: boolean): void {
    if (this.isShut()) return;
    this.abandonAttempt();
    this.rebalancing = false;
    this.heartbeats.stop();
    this.stallGuard.disarm();
    this.held.lose(
      error instanceof CohortError && memberErrorAction(error.code).kind === 'fenced' ? 'fenced' : 'failed',
      error,
    );
    if (leave) this.leaveBestEffort('the member failed');
    this._failure = error;
    this.finish('failed');
    // Outside any of our promise chains, so an unhandled `error` surfaces as Node's EventEmitter intends.
    queueMicrotask(() => this.emit('error', error));
  }

  private finish(state: 'closed' | 'failed'): void {
    this.heartbeats.stop();
    this.heartbeats.closeStream();
    this.stallGuard.disarm();
    this.stallGuard.abortAll(new Error(`group member ${state}`));
    if (this._state === 'closed') return;
    // No generation any more (Kafka resets it when leaving); the member id stays readable for logs.
    this._generationId = NO_GENERATION;
    this._leaderId = '';
    this._protocolName = '';
    this.setState(state);
    if (state === 'closed') {
      // In this order: sleeping retries wake and see the member closed, calls in flight end as aborted, and
      // only then do the timers go, so no promise of ours is left waiting on a timer that will never fire.
      this.backoff.wakeAll();
      this.lifetime.abort();
      this.scheduler.shutdown();
      this.detachSignal();
      this.emitSafely('closed');
    }
  }

  /**
   * Whether leaving sends LeaveGroup, so the group rebalances at once: only for a dynamic member with an id.
   * A static member sends nothing, so that a restart within the session timeout causes no rebalance.
   */
  private sendsLeaveGroup(): boolean {
    return this.options.groupInstanceId === undefined && this._memberId !== '';
  }

  /** LeaveGroup without waiting for its answer (the stall guard, a failure). */
  private leaveBestEffort(reason: string): void {
    if (this.sendsLeaveGroup()) void this.leaveGroup(reason, this.options.requestTimeoutMs);
  }

  private leaveGroup(reason: string, timeoutMs: number): Promise<unknown> {
    const request = {
      groupId: this.options.groupId,
      members: [{ memberId: this._memberId, groupInstanceId: '', reason }],
    };
    return this.caller.call(
      `LeaveGroup of group "${this.options.groupId}"`,
      (options) => this.transport.leaveGroup(request, options),
      timeoutMs,
    );
  }

  // ---- plumbing ----

  private emitSafely<K extends keyof GroupMemberEvents>(name: K, ...args: GroupMemberEvents[K]): void {
    try {
      (this.emit as (name: K, ...args: GroupMemberEvents[K]) => boolean)(name, ...args);
    } catch (error) {
      // A listener threw. The member's own state must not depend on it, so report it the way Node reports
      // errors thrown from event-loop callbacks: uncaught, on a fresh stack.
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  private setState(state: GroupMemberState): void {
    this._state = state;
  }

  /** Closed or failed: nothing runs any more. */
  private isTerminal(): boolean {
    return this._state === 'closed' || this._state === 'failed';
  }

  /** Stable with no rebalance under way: an answer REBALANCE_IN_PROGRESS starts one. */
  private isSettled(): boolean {
    return this._state === 'stable' && !this.rebalancing;
  }

  /** Closing, closed or failed: no new joins, no new work. */
  private isShut(): boolean {
    return this._state === 'closing' || this.isTerminal();
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
