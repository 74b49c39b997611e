import { brokenInvariant } from './broken-invariant';

/**
 * The five states of a classic group, named as Kafka names them (the names travel in DescribeGroups and
 * ListGroups). What each request gets in each state is listed in docs/protocol.md.
 *
 *   Empty ──join──▶ PreparingRebalance ──join completes──▶ CompletingRebalance ──leader syncs──▶ Stable
 *     ▲                 │      ▲                                  │                              │
 *     └─ no members ────┘      └──── member joins, leaves, fails, or is fenced ◀──────────────────┘
 *
 * Every state may go to Dead (the group is deleted); Dead is final.
 */
export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

export const GROUP_STATES: readonly GroupState[] = Object.freeze([
  'Empty',
  'PreparingRebalance',
  'CompletingRebalance',
  'Stable',
  'Dead',
]);

/** For each state, the states a group may be in just before entering it (Kafka's `validPreviousStates`). */
export const VALID_PREVIOUS_STATES: Readonly<Record<GroupState, ReadonlySet<GroupState>>> = Object.freeze({
  Empty: new Set<GroupState>(['PreparingRebalance']),
  PreparingRebalance: new Set<GroupState>(['Stable', 'CompletingRebalance', 'Empty']),
  CompletingRebalance: new Set<GroupState>(['PreparingRebalance']),
  Stable: new Set<GroupState>(['CompletingRebalance']),
  Dead: new Set<GroupState>(['Stable', 'PreparingRebalance', 'CompletingRebalance', 'Empty', 'Dead']),
});

export function isLegalTransition(from: GroupState, to: GroupState): boolean {
  return VALID_PREVIOUS_STATES[to].has(from);
}

/**
 * Throws when `from → to` is not a legal transition. Reaching it means the coordinator's own bookkeeping is
 * wrong (no request can ask for a transition), so it is a broken invariant, not a protocol outcome.
 */
export function assertLegalTransition(groupId: string, from: GroupState, to: GroupState): void {
  if (!isLegalTransition(from, to)) {
    throw brokenInvariant(
      `Group ${groupId} should be in one of [${[...VALID_PREVIOUS_STATES[to]].join(', ')}] before moving to ${to}, but is ${from}`,
    );
  }
}

/** Case-insensitive lookup used by ListGroups' states filter, as Kafka compares them. */
export function parseGroupState(name: string): GroupState | undefined {
  const lower = name.toLowerCase();
  for (const state of GROUP_STATES) if (state.toLowerCase() === lower) return state;
  return undefined;
}
