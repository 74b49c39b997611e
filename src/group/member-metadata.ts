import type { ErrorCode } from '../errors';
import type { TimerTask } from '../timer';
import { brokenInvariant } from './broken-invariant';
import type { ParkedCall } from './parked-call';
import { retainProtocols } from './retained-bytes';
import type { GenerationWatcher, JoinGroupResponse, Protocol, SyncGroupResponse } from './group-protocol';

const EMPTY_BUFFER = Buffer.alloc(0);

/**
 * A member's session timer as the group model holds it: a timer task that knows the member id it watches
 * (a static member's task follows the member to a new id). DelayedHeartbeat implements it; the model declares
 * it so that it does not import the task built over it.
 */
export interface SessionTimer extends TimerTask {
  memberId: string;
}

/**
 * One member of a classic group (Kafka's MemberMetadata / ClassicGroupMember): its identity, timeouts,
 * supported protocols in preference order, its assignment, and the calls it has parked.
 */
export class MemberMetadata {
  /** Changes only when a static member rejoins with an empty member id and is given a new one. */
  memberId: string;
  /** "" for a dynamic member. */
  readonly groupInstanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  readonly protocolType: string;
  /** Set with `setTimeouts`, which gives a member without a rebalance timeout its session timeout. */
  rebalanceTimeoutMs = 0;
  sessionTimeoutMs = 0;
  supportedProtocols: readonly Protocol[];
  assignment: Buffer = EMPTY_BUFFER;
  /** Set while its JoinGroup is parked (Kafka's `awaitingJoinCallback`). */
  awaitingJoin: ParkedCall<JoinGroupResponse> | undefined = undefined;
  /** Set while its SyncGroup is parked (Kafka's `awaitingSyncCallback`). */
  awaitingSync: ParkedCall<SyncGroupResponse> | undefined = undefined;
  /**
   * True from the member's first JoinGroup until that join completes. A new member cannot heartbeat usefully
   * yet, so it lives on the fixed new-member timeout instead of its session timeout, and being parked in
   * JoinGroup does not keep it alive (KIP-394's answer to clients that disconnect mid-rebalance).
   */
  isNew = false;
  /** The member's one session timer; assigned right after construction. */
  heartbeat!: SessionTimer;
  /** Who hears that this member's generation is over (its heartbeat stream), if anyone; one slot, no list. */
  generationWatcher: GenerationWatcher | undefined = undefined;

  constructor(
    memberId: string,
    groupInstanceId: string,
    clientId: string,
    clientHost: string,
    rebalanceTimeoutMs: number,
    sessionTimeoutMs: number,
    protocolType: string,
    supportedProtocols: readonly Protocol[],
  ) {
    this.memberId = memberId;
    this.groupInstanceId = groupInstanceId;
    this.clientId = clientId;
    this.clientHost = clientHost;
    this.setTimeouts(rebalanceTimeoutMs, sessionTimeoutMs);
    this.protocolType = protocolType;
    this.supportedProtocols = retainProtocols(supportedProtocols);
  }

  /**
   * proto3 sends 0 for a field the client never set: a member without a rebalance timeout (0, or a
   * negative one) gets its session timeout, as JoinGroup v0, which had none. Taken as given, 0 would
   * expire every join and sync at once, and the group could never become Stable. Applies to members
   * restored from the store too (one stored before this rule could hold 0).
   */
  setTimeouts(rebalanceTimeoutMs: number, sessionTimeoutMs: number): void {
    this.rebalanceTimeoutMs = rebalanceTimeoutMs > 0 ? rebalanceTimeoutMs : sessionTimeoutMs;
    this.sessionTimeoutMs = sessionTimeoutMs;
  }

  /** A rebalance started with the member in the group: tell its watcher, which stays for the next one. */
  notifyRebalance(errorCode: ErrorCode): void {
    this.generationWatcher?.onGenerationOver(errorCode);
  }

  /** The member id is over (removed, or fenced by its instance's new id): tell its watcher, once, and forget it. */
  notifyGone(errorCode: ErrorCode): void {
    const watcher = this.generationWatcher;
    if (watcher === undefined) return;
    this.generationWatcher = undefined;
    watcher.onGenerationOver(errorCode);
  }

  get isStaticMember(): boolean {
    return this.groupInstanceId !== '';
  }

  get isAwaitingJoin(): boolean {
    return this.awaitingJoin !== undefined;
  }

  get isAwaitingSync(): boolean {
    return this.awaitingSync !== undefined;
  }

  /**
   * Whether an expiring session timer should leave the member alone: an existing member parked in JoinGroup
   * or SyncGroup is, by definition, alive (its timer is re-armed when that call is answered).
   */
  get hasSatisfiedHeartbeat(): boolean {
    if (this.isNew) return false;
    return this.isAwaitingJoin || this.isAwaitingSync;
  }

  /**
   * When the coordinator last heard from the member (a Heartbeat, SyncGroup or OffsetCommit that restarted
   * its session, or its completed join), on the wall clock; 0 when it does not know: a member still on its
   * first join (it lives on the fixed new-member timeout, not on heartbeats), or one whose session timer is
   * not running (it expired while the member is parked in JoinGroup or SyncGroup).
   *
   * Nothing is recorded per heartbeat: the session task's deadline is the last restart plus the session
   * timeout it was armed with, so the restart is derived from the task when asked. The task's deadline is
   * on the monotonic clock; `wallNowMs` and `monotonicNowMs`, read together by the caller once for a whole
   * description, turn it into wall-clock time.
   *
   * Worked example: session timeout 10,000 ms, a heartbeat at monotonic 5,000 arms the task for 15,000; asked
   * at monotonic 8,000 and wall 1,700,000,008,000, the last heartbeat is 15,000 - 10,000 = 5,000, which is
   * 3,000 ms ago: wall 1,700,000,005,000.
   */
  lastHeartbeatMs(wallNowMs: number, monotonicNowMs: number): number {
    const task = this.heartbeat;
    if (this.isNew || !task.isPending) return 0;
    const restartedAtMs = task.deadlineMs - Math.ceil(task.delayMs);
    return wallNowMs - Math.max(0, monotonicNowMs - restartedAtMs);
  }

  /** The metadata the member sent for `protocolName`. */
  metadata(protocolName: string): Buffer {
    for (const protocol of this.supportedProtocols) {
      if (protocol.name === protocolName) return protocol.metadata;
    }
    throw brokenInvariant(`Member ${this.memberId} does not support protocol ${protocolName}`);
  }

  /** Same protocols, same order, same metadata bytes: a rejoin that changes nothing. */
  matches(protocols: readonly Protocol[]): boolean {
    if (protocols.length !== this.supportedProtocols.length) return false;
    for (let i = 0; i < protocols.length; i++) {
      const a = protocols[i];
      const b = this.supportedProtocols[i];
      if (a.name !== b.name || !a.metadata.equals(b.metadata)) return false;
    }
    return true;
  }

  /** The member's most preferred protocol among `candidates`. */
  vote(candidates: ReadonlySet<string>): string {
    for (const protocol of this.supportedProtocols) {
      if (candidates.has(protocol.name)) return protocol.name;
    }
    throw brokenInvariant(`Member ${this.memberId} does not support any of the candidate protocols`);
  }
}
