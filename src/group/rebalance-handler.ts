import type { DelayedOperation } from '../purgatory';
import type { GroupMetadata } from './group-metadata';

/** The coordinator's side of DelayedJoin, InitialDelayedJoin and DelayedSync (Kafka calls back the same way). */
export interface RebalanceHandler {
  /** Completes `operation` if every known member rejoined and no pending member id is left. */
  tryCompleteJoin(group: GroupMetadata, operation: DelayedOperation): boolean;
  onCompleteJoin(group: GroupMetadata): void;
  /** KIP-134: extend the initial delay if members arrived meanwhile, else complete the join. */
  onCompleteInitialJoin(group: GroupMetadata, delayMs: number, remainingMs: number): void;
  tryCompletePendingSync(group: GroupMetadata, generationId: number, operation: DelayedOperation): boolean;
  onExpirePendingSync(group: GroupMetadata, generationId: number): void;
}
