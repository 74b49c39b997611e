import { REBALANCE_REASONS } from '../group';
import type { DescribedGroup } from '../protocol/group-messages';
import type { BoardMember, Rebalance } from './board-views';
import { ownLists, pushBounded, type GroupEntry } from './group-entry';

/*
 * A group's history as the page shows it: its last rebalances (start, reasons, generation, end) and the
 * members that left, each list bounded (BOARD_HISTORY_LENGTH), built from the group's changes in order.
 */

/** Rebalances and departed members each group remembers. */
export const BOARD_HISTORY_LENGTH = 20;

/**
 * Reasons that start (or join into) a rebalance: Kafka's prepareRebalance reasons, and the join phase
 * timing out with members removed (`rejoin-expired`), which the same rebalance goes on with.
 */
const REBALANCE_CAUSES: ReadonlySet<string> = new Set<string>([...REBALANCE_REASONS, 'rejoin-expired']);

/** Groups with this many members or more are looked up by a Set of their ids, smaller ones by a loop. */
const MEMBER_SET_SIZE = 16;

function hasMemberId(members: readonly BoardMember[], memberId: string): boolean {
  for (const m of members) if (m.memberId === memberId) return true;
  return false;
}

/**
 * The rebalance timeline and departed members, from one change of a known group (`after`, its `members`
 * as the page shows them, the change's `reason` and time), before the entry takes the change: members the
 * entry had that `after` lacks depart with the change's reason; a cause opens a rebalance (or adds its
 * reason to the open one), `join-completed` moves it to the new generation, Stable or Empty closes it.
 */
export function trackTimeline(
  entry: GroupEntry,
  after: DescribedGroup,
  members: readonly BoardMember[],
  reason: string,
  atMs: number,
): void {
  ownLists(entry);
  const ids = members.length >= MEMBER_SET_SIZE ? new Set(members.map((m) => m.memberId)) : undefined;
  for (const m of entry.members) {
    if (ids === undefined ? hasMemberId(members, m.memberId) : ids.has(m.memberId)) continue;
    pushBounded(
      entry.departed,
      {
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        reason,
        atMs,
      },
      BOARD_HISTORY_LENGTH,
    );
  }
  const rebalances = entry.rebalances;
  const lastIndex = rebalances.length - 1;
  let last: Rebalance | undefined = rebalances[lastIndex];
  const isOpen = last !== undefined && last.endMs === null;
  const isRebalancing =
    after.groupState === 'PreparingRebalance' || after.groupState === 'CompletingRebalance';
  const isCause = REBALANCE_CAUSES.has(reason);
  if (isCause || reason === 'join-completed') {
    if (isOpen) {
      // A rebalance is never changed in place: a view may hold it (GroupEntry).
      if (isCause && !last!.reasons.includes(reason))
        last = rebalances[lastIndex] = { ...last!, reasons: [...last!.reasons, reason] };
      if (reason === 'join-completed')
        last = rebalances[lastIndex] = { ...last!, generationId: after.generationId };
    } else if (isRebalancing) {
      pushBounded(
        rebalances,
        { startMs: atMs, reasons: [reason], generationId: after.generationId, endMs: null, endState: null },
        BOARD_HISTORY_LENGTH,
      );
    }
  }
  if (isOpen && !isRebalancing && (after.groupState === 'Stable' || after.groupState === 'Empty')) {
    rebalances[lastIndex] = {
      ...last!,
      generationId: after.generationId,
      endMs: atMs,
      endState: after.groupState,
    };
  }
}
