import { type CohortError, ErrorCode } from '../errors';
import type { Time } from '../time';
import { errorFromCode } from './error-from-code';
import type { ResolvedGroupMemberOptions } from './group-member-options';
import type { GroupTransport, HeartbeatStream } from './group-transport';
import type { MemberBackoff } from './member-backoff';
import type { MemberControl } from './member-control';
import { memberErrorAction } from './member-error-actions';
import { ABANDONED, type RetryingCaller } from './retrying-caller';
import type { ScheduledTask, Scheduler } from './scheduler';

/**
 * One run of heartbeats, from a JoinGroup answer to the next JoinGroup (or a stop). Identity is what counts:
 * an answer for a run that is over is dropped. Its signal, aborted when the run ends, is made only if a unary
 * heartbeat asks for one: stream heartbeats never do.
 */
class HeartbeatRun {
  private controller: AbortController | null = null;
  private isOver = false;

  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.isOver) this.controller.abort(ABANDONED);
    }
    return this.controller.signal;
  }

  end(): void {
    this.isOver = true;
    this.controller?.abort(ABANDONED);
  }
}

/** What heartbeats run on: the member's own transport, clock, caller and backoff. */
export interface HeartbeatDependencies {
  readonly options: ResolvedGroupMemberOptions;
  readonly transport: GroupTransport;
  readonly time: Time;
  readonly scheduler: Scheduler;
  readonly caller: RetryingCaller;
  readonly backoff: MemberBackoff;
}

/**
 * A group member's heartbeats (Kafka's HeartbeatThread, its Heartbeat timers and its
 * HeartbeatResponseHandler), on the member's event loop.
 *
 * Heartbeats run on their own timer from the JoinGroup response until the next JoinGroup is sent, one in
 * flight at a time, each `heartbeatIntervalMs` after the previous was sent; a retriable failure retries after
 * a jittered backoff. What an answer's code means is the member's table (member-error-actions.ts):
 * REBALANCE_IN_PROGRESS in Stable starts a rebalance; a generation gone (for the generation the heartbeat
 * was sent with) means the assignment is `lost`; FENCED_INSTANCE_ID is fatal. If no heartbeat succeeds for
 * `sessionTimeoutMs` the coordinator has certainly expired the member (its timer started before our last
 * success arrived), so the assignment is `lost` and the member rejoins.
 *
 * Heartbeats go over a HeartbeatStream when the transport has one (`heartbeatOverStream`): one stream per
 * member id, opened at its first heartbeat and kept across generations (the protocol lets the generation
 * change from request to request; a rebalance then costs no stream), closed when the member id changes or
 * the member stops. The same requests and answers, plus pushes handled as the same code from a heartbeat
 * answer would be, at once; a push that comes while no heartbeats run (JoinGroup in flight) is left to the
 * JoinGroup answer. UNIMPLEMENTED means unary heartbeats from then on; a stream that breaks otherwise costs
 * that one heartbeat its stream (it goes unary) and the next one opens a new stream.
 */
export class MemberHeartbeats {
  private readonly options: ResolvedGroupMemberOptions;
  private readonly transport: GroupTransport;
  private readonly time: Time;
  private readonly scheduler: Scheduler;
  private readonly caller: RetryingCaller;
  private readonly backoff: MemberBackoff;

  /** The run in progress; null when heartbeats are stopped. */
  private run: HeartbeatRun | null = null;
  /** The next heartbeat, or the retry of a failed one. */
  private nextTask: ScheduledTask | null = null;
  private sessionTask: ScheduledTask | null = null;
  /** Failed heartbeats in a row, for the backoff. */
  private failures = 0;
  private lastSentMs = 0;
  /** The member id's stream, opened at its first heartbeat; null when none is open. */
  private stream: HeartbeatStream | null = null;
  /** The member id `stream` carries (its first request fixed it). */
  private streamMemberId = '';
  /** Set when the server answered HeartbeatStream with UNIMPLEMENTED: unary heartbeats from then on. */
  private streamUnsupported = false;

  constructor(
    dependencies: HeartbeatDependencies,
    private readonly member: MemberControl,
  ) {
    this.options = dependencies.options;
    this.transport = dependencies.transport;
    this.time = dependencies.time;
    this.scheduler = dependencies.scheduler;
    this.caller = dependencies.caller;
    this.backoff = dependencies.backoff;
  }

  /** Starts a run: from a JoinGroup answer, the first heartbeat `heartbeatIntervalMs` later. */
  start(): void {
    this.stop();
    this.run = new HeartbeatRun();
    this.resetSessionTimer();
    this.nextTask = this.scheduler.schedule(this.options.heartbeatIntervalMs, () => this.send());
  }

  /** Ends the run: no more heartbeats, answers still to come are dropped; the stream stays open. */
  stop(): void {
    this.nextTask?.cancel();
    this.sessionTask?.cancel();
    this.nextTask = this.sessionTask = null;
    this.run?.end();
    this.run = null;
    this.failures = 0;
  }

  /** Ends the member id's stream (a new member id, or the member stops). */
  closeStream(): void {
    this.stream?.close();
    this.stream = null;
  }

  private resetSessionTimer(): void {
    this.sessionTask?.cancel();
    this.sessionTask = this.scheduler.schedule(this.options.sessionTimeoutMs, () => this.onSessionTimeout());
  }

  private send(): void {
    const scope = this.run;
    if (scope === null) return;
    const o = this.options;
    const sent = { generationId: this.member.generationId(), memberId: this.member.memberId() };
    const request = { groupId: o.groupId, ...sent, groupInstanceId: o.groupInstanceId ?? '' };
    this.lastSentMs = this.time.monotonicMs();
    const stream = this.openStream();
    if (stream !== null) return this.sendOnStream(stream, scope, request, sent);
    this.sendUnary(scope, request, sent);
  }

  /** The current run's stream, opened if need be; null when heartbeats go unary. */
  private openStream(): HeartbeatStream | null {
    if (!this.options.heartbeatOverStream || this.streamUnsupported) return null;
    const open = this.transport.openHeartbeatStream;
    if (open === undefined) return null;
    // A stream's first request fixed its member id: another id needs another stream.
    if (this.stream !== null && this.streamMemberId !== this.member.memberId()) {
      this.closeStream();
    }
    if (this.stream === null) {
      const stream: HeartbeatStream = open.call(this.transport, (code) => this.onPush(stream, code));
      this.stream = stream;
      this.streamMemberId = this.member.memberId();
    }
    return this.stream;
  }

  private sendOnStream(
    stream: HeartbeatStream,
    scope: HeartbeatRun,
    request: { groupId: string; generationId: number; memberId: string; groupInstanceId: string },
    sent: { generationId: number; memberId: string },
  ): void {
    const o = this.options;
    let settled = false;
    // The same bound as a unary heartbeat's deadline: an answer that never comes is a timed-out heartbeat.
    const timeout = this.scheduler.schedule(Math.min(o.requestTimeoutMs, o.sessionTimeoutMs), () => {
      if (settled) return;
      settled = true;
      if (this.stream === stream) this.stream = null;
      stream.close();
      if (scope !== this.run) return;
      const error = errorFromCode(
        ErrorCode.REQUEST_TIMED_OUT,
        `Heartbeat of group "${o.groupId}": no answer on the stream`,
      );
      this.onAnswer(error.code, sent, error);
    });
    stream.send(request).then(
      (code) => {
        if (settled) return;
        settled = true;
        timeout.cancel();
        if (scope !== this.run) return;
        this.onAnswer(code, sent);
      },
      () => {
        if (settled) return;
        settled = true;
        timeout.cancel();
        if (this.stream === stream) this.stream = null;
        if (scope !== this.run) return;
        // Not served: unary for good. Broken otherwise: this heartbeat goes unary, the next reopens a stream.
        if (stream.unsupported) this.streamUnsupported = true;
        this.sendUnary(scope, request, sent);
      },
    );
  }

  /** A push on `stream`: handled as the same code in a heartbeat answer, but now rather than at the next one. */
  private onPush(stream: HeartbeatStream, code: ErrorCode): void {
    // A stream we closed (another member id) speaks of an id we left. With no heartbeats running a
    // JoinGroup is in flight, and its answer says the same.
    if (stream !== this.stream || this.run === null || this.member.isShut()) return;
    const error = (): CohortError =>
      errorFromCode(code, `HeartbeatStream of group "${this.options.groupId}" pushed`);
    const action = memberErrorAction(code);
    if (action.kind === 'rejoin') {
      if (this.member.isSettled()) this.member.rejoin('the group is rebalancing (pushed)');
    } else if (action.kind === 'generation-gone' && action.resetMemberId) {
      // Only a member id that is gone: a push names no generation (the stream outlives them), so it is
      // the next heartbeat's answer, for the generation it was sent with, that says whether one is over.
      this.member.leaveGeneration(
        true,
        action.lostReason,
        error(),
        `HeartbeatStream pushed ${ErrorCode[code]}`,
      );
    } else if (action.kind === 'fenced') {
      this.member.fail(error());
    }
  }

  private sendUnary(
    scope: HeartbeatRun,
    request: { groupId: string; generationId: number; memberId: string; groupInstanceId: string },
    sent: { generationId: number; memberId: string },
  ): void {
    const o = this.options;
    void this.caller
      .call(
        `Heartbeat of group "${o.groupId}"`,
        (options) => this.transport.heartbeat(request, options),
        Math.min(o.requestTimeoutMs, o.sessionTimeoutMs),
        scope.signal,
      )
      .then((outcome) => {
        if (outcome.kind === 'aborted' || scope !== this.run) return;
        if (outcome.kind === 'failed') this.onAnswer(outcome.error.code, sent, outcome.error);
        else this.onAnswer(outcome.response.errorCode, sent);
      });
  }

  /**
   * A heartbeat's outcome: `code`, and `failure` when it failed without an answer. The error a code stands
   * for is built only when it is reported: an answer NONE costs no error object.
   */
  private onAnswer(
    code: ErrorCode,
    sent: { generationId: number; memberId: string },
    failure?: CohortError,
  ): void {
    const error = (): CohortError =>
      failure ?? errorFromCode(code, `Heartbeat of group "${this.options.groupId}"`);
    const unchanged =
      sent.generationId === this.member.generationId() && sent.memberId === this.member.memberId();
    const action = memberErrorAction(code);
    if (action.kind === 'proceed' || action.kind === 'rejoin') {
      // Both prove the coordinator holds our session; heartbeats go on while the group rebalances (Kafka).
      this.failures = 0;
      this.resetSessionTimer();
      if (action.kind === 'rejoin' && this.member.isSettled()) {
        // Cooperative: the rejoin stops heartbeats at once, by sending JoinGroup.
        this.member.rejoin('the group is rebalancing');
        if (this.run === null) return;
      }
      const dueInMs = this.lastSentMs + this.options.heartbeatIntervalMs - this.time.monotonicMs();
      // An answer later than the interval: the next heartbeat is overdue, send it now.
      if (dueInMs <= 0) return this.send();
      this.nextTask = this.scheduler.schedule(dueInMs, () => this.send());
      return;
    }
    if (this.member.isClosing()) return this.stop();
    if (action.kind === 'generation-gone') {
      if (!unchanged) return; // an answer about a generation we already left
      return this.member.leaveGeneration(
        action.resetMemberId,
        action.lostReason,
        error(),
        `Heartbeat answered ${ErrorCode[code]}`,
      );
    }
    if (action.kind === 'fenced') {
      if (unchanged) this.member.fail(error());
      return;
    }
    if (action.kind === 'retry') {
      this.nextTask = this.backoff.retryTask(
        code,
        this.backoff.retryWaitMs(code, this.failures++),
        (isFound) => {
          if (isFound) this.failures = 0;
          this.send();
        },
      );
      return;
    }
    this.member.fail(error());
  }

  private onSessionTimeout(): void {
    this.sessionTask = null;
    if (this.member.isShut()) return; // closing included
    const error = errorFromCode(
      ErrorCode.REQUEST_TIMED_OUT,
      `no heartbeat of group "${this.options.groupId}" succeeded for sessionTimeoutMs (${this.options.sessionTimeoutMs} ms); the coordinator has expired this member`,
    );
    // Keep the member id, as Kafka does: if the coordinator still knows it, the rejoin is cheaper.
    this.member.leaveGeneration(false, 'session-expired', error, 'session timed out');
  }
}
