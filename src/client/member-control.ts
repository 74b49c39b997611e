import type { LostReason } from './group-member-events';

/** The generation id of a member in none (Kafka's Generation.NO_GENERATION). */
export const NO_GENERATION = -1;

/**
 * The group member as its parts see it (the heartbeats, the offset calls): what they read of it and what
 * an answer lets them do to it. The member keeps its state and decides how each of these is done; a part
 * only says that it should be, so a code means the same to the member whichever part heard it.
 */
export interface MemberControl {
  /** The member id and generation a request sent now is for (an answer is checked against them). */
  memberId(): string;
  generationId(): number;
  /** `closing`: revoked listeners may still commit and heartbeats go on, until the first failure. */
  isClosing(): boolean;
  /** Closing, closed or failed. */
  isShut(): boolean;
  /** Closed or failed: nothing runs any more. */
  isTerminal(): boolean;
  /** Stable, with no rebalance under way: an answer REBALANCE_IN_PROGRESS then starts one. */
  isSettled(): boolean;
  /** Join again (the generation is still valid). */
  rejoin(reason: string): void;
  /** The generation is gone: forget it (and the member id if `resetMemberId`), lose what it gave, rejoin. */
  leaveGeneration(resetMemberId: boolean, lostReason: LostReason, error: Error, rejoinReason: string): void;
  /** A fatal error: the member stops. */
  fail(error: Error): void;
}
