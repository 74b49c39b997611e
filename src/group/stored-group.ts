import type { Protocol } from './group-protocol';

/**
 * A group as its metadata record holds it (`records/`): as of its last complete generation, or as Empty.
 * The coordinator writes one when a generation completes — after the leader's SyncGroup, before the group
 * becomes Stable and the assignment is handed out — when a group becomes Empty, and when a static member
 * is replaced without a rebalance; each replaces the group's previous one. A load brings the latest back:
 * Stable with its members, or Empty without. "" stands for none.
 */
export interface StoredGroup {
  readonly groupId: string;
  readonly protocolType: string;
  readonly generationId: number;
  /** The generation's protocol; "" for an Empty group. */
  readonly protocolName: string;
  readonly leaderId: string;
  /**
   * Wall-clock time of the group's last state change (Kafka's currentStateTimestamp): for an Empty group,
   * when it emptied, which its offsets' retention counts from, across restarts.
   */
  readonly currentStateTimestampMs: number;
  readonly members: readonly StoredMember[];
}

export interface StoredMember {
  readonly memberId: string;
  readonly groupInstanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  readonly rebalanceTimeoutMs: number;
  readonly sessionTimeoutMs: number;
  /** Every protocol the member offered, in its order of preference. */
  readonly protocols: readonly Protocol[];
  readonly assignment: Buffer;
}
