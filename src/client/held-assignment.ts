import type {
  AssignedEvent,
  GroupMemberEvents,
  LostReason,
  RevokeReason,
  RevokedEvent,
} from './group-member-events';
import type { MemberSleep } from './member-backoff';
import { NO_GENERATION } from './member-control';
import { topicPartitionKey, type TopicPartition } from './topic-partition';

/** What the held assignment needs of its member: its events, a wait, and the work it runs for the user. */
export interface HeldAssignmentHost {
  /** Emits one of the member's events; a listener that throws does not get in the way. */
  emit<K extends 'assigned' | 'revoked' | 'lost'>(name: K, ...args: GroupMemberEvents[K]): void;
  /** A wait that also ends when the member abandons the attempt in progress. */
  sleep(ms: number): MemberSleep;
  /** Aborts the signal of the work the member runs (`GroupMember.process`). */
  abortWork(reason: Error): void;
}

/**
 * The partitions a member holds, and the three ways it tells the user they change hands (Kafka's
 * ConsumerCoordinator with its rebalance listener's onPartitionsAssigned, onPartitionsRevoked and
 * onPartitionsLost). `revoked` is the orderly way: the generation is still valid, so the user can still
 * commit the partitions' offsets, and the member waits, bounded, for the work the listener hands to
 * `waitUntil` before it goes on. `lost` is for a generation that is already gone: another member may own the
 * partitions, a commit would be refused, so the user is told to stop and the member's work is aborted.
 */
export class HeldAssignment {
  private owned: readonly TopicPartition[] | null = null;
  private ownedGenerationId = NO_GENERATION;

  constructor(private readonly host: HeldAssignmentHost) {}

  /** The partitions held; null when none are (never joined, revoked for an eager rebalance, lost). */
  get partitions(): readonly TopicPartition[] | null {
    return this.owned;
  }

  /** The generation that assigned the partitions held (a cooperative subscription says so, KIP-429). */
  get generationId(): number {
    return this.ownedGenerationId;
  }

  /** What `partitions`, a new assignment, takes away from the one held and what it adds. */
  changesTo(partitions: readonly TopicPartition[]): {
    revoked: TopicPartition[];
    added: TopicPartition[];
  } {
    const before = new Set((this.owned ?? []).map(topicPartitionKey));
    const after = new Set(partitions.map(topicPartitionKey));
    const revoked = (this.owned ?? []).filter((tp) => !after.has(topicPartitionKey(tp)));
    const added = partitions.filter((tp) => !before.has(topicPartitionKey(tp)));
    return { revoked, added };
  }

  /** Holds the assignment of `event` from now on, and tells the user (`assigned`). */
  assign(event: AssignedEvent): void {
    this.owned = event.partitions;
    this.ownedGenerationId = event.generationId;
    this.host.emit('assigned', event);
  }

  /** Emits `revoked` and waits for its `waitUntil` promises, at most `boundMs` (less if abandoned). */
  async revoke(partitions: readonly TopicPartition[], reason: RevokeReason, boundMs: number): Promise<void> {
    const waits: PromiseLike<unknown>[] = [];
    let sealed = false;
    const event: RevokedEvent = {
      generationId: this.ownedGenerationId,
      partitions,
      reason,
      waitUntil: (work) => {
        if (sealed) throw new Error('waitUntil must be called synchronously inside the revoked listener');
        waits.push(work);
      },
    };
    this.host.emit('revoked', event);
    sealed = true;
    if (waits.length > 0) {
      const bound = this.host.sleep(boundMs);
      await Promise.race([Promise.allSettled(waits), bound.promise]);
      bound.cancel();
    }
    if (this.owned === null) return; // lost meanwhile: `lost` already told the user
    const gone = new Set(partitions.map(topicPartitionKey));
    const kept = this.owned.filter((tp) => !gone.has(topicPartitionKey(tp)));
    this.owned = kept.length > 0 || reason === 'reassigned' ? kept : null;
  }

  /** Drops the assignment held, if any: the member's work is aborted and the user told (`lost`). */
  lose(reason: LostReason, error?: Error): void {
    if (this.owned === null) return;
    const partitions = this.owned;
    this.owned = null;
    this.host.abortWork(error ?? new Error(`assignment lost: ${reason}`));
    this.host.emit('lost', {
      generationId: this.ownedGenerationId,
      partitions,
      reason,
      ...(error ? { error } : {}),
    });
  }
}
