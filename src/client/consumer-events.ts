import type { AssignedEvent, LostEvent, RevokedEvent } from './group-member-events';
import type { OffsetToCommit } from './group-member';

/** Offsets the consumer committed, automatically or through `commit()`. */
export interface CommittedEvent {
  /** The generation the commit was fenced by. */
  readonly generationId: number;
  readonly offsets: readonly OffsetToCommit[];
}

/**
 * The events a `Consumer` emits, for `consumer.on(name, listener)`. `assigned`, `revoked` and `lost` are its
 * group member's (see `GroupMemberEvents`), after the consumer acted on them: `revoked` comes once no
 * handler runs on the partitions any more and, with `autoCommit`, their offsets are committed; its
 * `waitUntil` holds the rebalance for your own work (a manual `commit()`, say). Fatal errors are not
 * events: `run()` rejects with them.
 */
export interface ConsumerEvents {
  assigned: [event: AssignedEvent];
  revoked: [event: RevokedEvent];
  lost: [event: LostEvent];
  committed: [event: CommittedEvent];
  /** The consumer has left its group and stopped. */
  closed: [];
}
