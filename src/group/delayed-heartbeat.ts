import { TimerTask } from '../timer';
import type { GroupMetadata } from './group-metadata';
import type { SessionTimer } from './member-metadata';

/** What a DelayedHeartbeat calls when it fires; the coordinator implements it. */
export interface HeartbeatExpirationHandler {
  onExpireHeartbeat(group: GroupMetadata, memberId: string, isPending: boolean): void;
}

/**
 * The session timer of one member (or the expiry of one pending member id, KIP-394).
 *
 * Kafka allocates a new DelayedHeartbeat operation in a purgatory for every heartbeat and completes the old
 * one. Heartbeats are cohort's hot path, so each member owns exactly one task for its whole life and a valid
 * heartbeat re-arms it: `timer.add(task)` on a pending task moves it to its new deadline without allocating.
 * Whether the member really failed is decided when the task fires (`onExpireHeartbeat`), exactly as Kafka
 * decides in `onExpireHeartbeat`: members parked in JoinGroup or SyncGroup are alive by definition.
 */
export class DelayedHeartbeat extends TimerTask implements SessionTimer {
  /** Mutable: a static member keeps its task when a rejoin gives it a new member id. */
  memberId: string;
  readonly isPendingMember: boolean;
  private readonly handler: HeartbeatExpirationHandler;
  private readonly group: GroupMetadata;

  constructor(
    handler: HeartbeatExpirationHandler,
    group: GroupMetadata,
    memberId: string,
    isPendingMember: boolean,
  ) {
    super(0);
    this.handler = handler;
    this.group = group;
    this.memberId = memberId;
    this.isPendingMember = isPendingMember;
  }

  run(): void {
    this.handler.onExpireHeartbeat(this.group, this.memberId, this.isPendingMember);
  }
}
