import { ErrorCode } from '../errors';
import { isCoordinatorMoved } from './coordinator-cache';
import { isRetriable } from './error-from-code';
import type { LostReason } from './group-member-events';

/**
 * What a code in an answer means to a group member, whichever request it answered (JoinGroup, SyncGroup,
 * Heartbeat and its stream's pushes, OffsetCommit). Kafka spreads this over one response handler per
 * request; here it is one table, so the handlers cannot drift apart on what a code means. Each handler
 * still decides what it can do about it: a heartbeat answer about a generation the member already left is
 * dropped, a JoinGroup's "rejoin" is the next turn of its loop, an OffsetCommit reports the code to its
 * caller as well.
 *
 * - `proceed`: NONE.
 * - `take-member-id`: MEMBER_ID_REQUIRED (KIP-394): the coordinator gave this member an id in the
 *   JoinGroup answer; join again at once with it.
 * - `generation-gone`: UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION. The generation is over, so what it assigned
 *   is `lost` (not revoked: another member may own it already) and the member joins again. UNKNOWN_MEMBER_ID
 *   also forgets the member id; Kafka keeps it on ILLEGAL_GENERATION, where it may still be valid.
 * - `rejoin`: REBALANCE_IN_PROGRESS. The generation is still valid: join the rebalance, keeping the
 *   assignment until it says otherwise.
 * - `fenced`: FENCED_INSTANCE_ID. Another member took this one's static instance id: fatal.
 * - `retry`: any retriable code. Send again after a backoff; when the code says the coordinator moved or
 *   went away (`coordinatorMoved`), as soon as the transport knows another one, if that is sooner.
 * - `fatal`: everything else. The member stops with the error.
 */
export type MemberErrorAction =
  | { readonly kind: 'proceed' }
  | { readonly kind: 'take-member-id' }
  | { readonly kind: 'generation-gone'; readonly resetMemberId: boolean; readonly lostReason: LostReason }
  | { readonly kind: 'rejoin' }
  | { readonly kind: 'fenced' }
  | { readonly kind: 'retry'; readonly coordinatorMoved: boolean }
  | { readonly kind: 'fatal' };

const PROCEED: MemberErrorAction = { kind: 'proceed' };
const RETRY: MemberErrorAction = { kind: 'retry', coordinatorMoved: false };
const FIND_COORDINATOR: MemberErrorAction = { kind: 'retry', coordinatorMoved: true };
const FATAL: MemberErrorAction = { kind: 'fatal' };

/** The codes with a meaning of their own; the others are retried or fatal by the error table's flag. */
const MEMBER_ERROR_ACTIONS: ReadonlyMap<ErrorCode, MemberErrorAction> = new Map<ErrorCode, MemberErrorAction>(
  [
    [ErrorCode.NONE, PROCEED],
    [ErrorCode.MEMBER_ID_REQUIRED, { kind: 'take-member-id' }],
    [
      ErrorCode.UNKNOWN_MEMBER_ID,
      { kind: 'generation-gone', resetMemberId: true, lostReason: 'unknown-member' },
    ],
    [
      ErrorCode.ILLEGAL_GENERATION,
      { kind: 'generation-gone', resetMemberId: false, lostReason: 'illegal-generation' },
    ],
    [ErrorCode.REBALANCE_IN_PROGRESS, { kind: 'rejoin' }],
    [ErrorCode.FENCED_INSTANCE_ID, { kind: 'fenced' }],
  ],
);

/** What `code` means to a group member; see `MemberErrorAction`. */
export function memberErrorAction(code: ErrorCode): MemberErrorAction {
  const action = MEMBER_ERROR_ACTIONS.get(code);
  if (action !== undefined) return action;
  if (isCoordinatorMoved(code)) return FIND_COORDINATOR;
  return isRetriable(code) ? RETRY : FATAL;
}
