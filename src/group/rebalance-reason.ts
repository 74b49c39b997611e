/**
 * Why a group started a rebalance (Kafka passes a free-form reason string to prepareRebalance; cohort names
 * a fixed set, so metrics can count them and logs can be searched for them):
 *
 * - `member-joined`: a new member (or a static member new to the group) joined;
 * - `member-updated`: a member rejoined with protocols that differ from what the group knows;
 * - `leader-rejoined`: the leader rejoined a Stable group (it may have seen metadata change);
 * - `static-member-replaced`: a static member came back under a new member id and the group must move on;
 * - `member-left`: LeaveGroup, or an administrative removal by instance id;
 * - `session-expired`: a member's session timed out (or a new member never finished its first join);
 * - `sync-expired`: members that got their JoinGroup answer never sent SyncGroup in time;
 * - `store-failed`: the generation could not be stored, so it cannot become Stable;
 * - `over-capacity`: a group loaded with more members than group.max.size now allows.
 */
export type RebalanceReason =
  | 'member-joined'
  | 'member-updated'
  | 'leader-rejoined'
  | 'static-member-replaced'
  | 'member-left'
  | 'session-expired'
  | 'sync-expired'
  | 'store-failed'
  | 'over-capacity';

export const REBALANCE_REASONS: readonly RebalanceReason[] = Object.freeze([
  'member-joined',
  'member-updated',
  'leader-rejoined',
  'static-member-replaced',
  'member-left',
  'session-expired',
  'sync-expired',
  'store-failed',
  'over-capacity',
]);
