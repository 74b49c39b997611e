/**
 * Why a WatchGroups event was sent: the `reason` of a GroupEvent. A fixed set, so clients can switch on it
 * (a newer server may add reasons: treat an unknown one as "something changed"). docs/protocol.md,
 * "Watching groups", says when each is sent:
 *
 * - `snapshot`: the group's state when the watch opened (the first event of a group on the stream);
 * - `group-created`: a group came into being without a member yet (a dynamic member's first JoinGroup,
 *   an OffsetCommit outside the group protocol, a deletion a store could not carry out);
 * - `group-loaded`: the group came back from `__consumer_offsets` as the coordinator finished loading;
 * - the reasons a rebalance starts (Kafka's prepareRebalance reason), also sent for the same change while
 *   a rebalance is already under way: `member-joined`, `member-updated`, `leader-rejoined`,
 *   `static-member-replaced` (also when the group stays Stable: a restarted static member under a new
 *   member id), `member-left`, `session-expired`, `sync-expired`, `store-failed`, `over-capacity`;
 * - `rejoin-expired`: the join phase timed out; dynamic members that did not rejoin were removed, and it
 *   waits on for static members;
 * - `join-completed`: the join phase ended; the group is in CompletingRebalance with its new generation;
 * - `rebalance-completed`: the leader's assignment is stored; the group is Stable, assignments included;
 * - `group-emptied`: the rebalance ended with no member left; the group is Empty;
 * - `group-deleted`: DeleteGroups removed the group (state Dead, GROUP_ID_NOT_FOUND): its last event;
 * - `group-expired`: offset retention removed the Empty group (state Dead): its last event;
 * - `group-unloaded`: this node stopped coordinating the group (its `__consumer_offsets` partition moved
 *   to another leader): described NOT_COORDINATOR with no state; its last event from this node unless the
 *   partition comes back (`group-loaded`).
 */
export const GROUP_EVENT_REASONS = Object.freeze([
  'snapshot',
  'group-created',
  'group-loaded',
  'member-joined',
  'member-updated',
  'leader-rejoined',
  'static-member-replaced',
  'member-left',
  'session-expired',
  'sync-expired',
  'store-failed',
  'over-capacity',
  'rejoin-expired',
  'join-completed',
  'rebalance-completed',
  'group-emptied',
  'group-deleted',
  'group-expired',
  'group-unloaded',
] as const);

/** Why a WatchGroups event was sent: one of GROUP_EVENT_REASONS. */
export type GroupEventReason = (typeof GROUP_EVENT_REASONS)[number];
