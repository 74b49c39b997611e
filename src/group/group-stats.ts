import type { GroupState } from './group-state';

/** How many groups are in one state, and how many members those groups hold. */
export interface GroupStateCount {
  groups: number;
  members: number;
}

/** Groups and members by state: what the coordinator reports for metrics, walking its groups once. */
export type GroupStats = Record<GroupState, GroupStateCount>;

/** Every state at zero, so a state without groups still reports 0 rather than vanishing. */
export function emptyGroupStats(): GroupStats {
  return {
    Empty: { groups: 0, members: 0 },
    PreparingRebalance: { groups: 0, members: 0 },
    CompletingRebalance: { groups: 0, members: 0 },
    Stable: { groups: 0, members: 0 },
    Dead: { groups: 0, members: 0 },
  };
}
