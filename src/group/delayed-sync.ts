import { DelayedOperation } from '../purgatory';
import type { GroupMetadata } from './group-metadata';
import type { RebalanceHandler } from './rebalance-handler';

/**
 * Watches a generation from join completion until every member has sent SyncGroup, under the group's sync
 * key. If the rebalance timeout passes first, the members that never synced are removed and the group
 * rebalances: a member that got its JoinGroup answer and vanished must not hold the group's partitions.
 * It completes quietly as soon as the generation moves on or the group leaves CompletingRebalance/Stable.
 */
export class DelayedSync extends DelayedOperation {
  private readonly handler: RebalanceHandler;
  private readonly group: GroupMetadata;
  private readonly generationId: number;

  constructor(
    handler: RebalanceHandler,
    group: GroupMetadata,
    generationId: number,
    rebalanceTimeoutMs: number,
  ) {
    super(rebalanceTimeoutMs);
    this.handler = handler;
    this.group = group;
    this.generationId = generationId;
  }

  tryComplete(): boolean {
    return this.handler.tryCompletePendingSync(this.group, this.generationId, this);
  }

  onComplete(): void {
    // Completion itself changes nothing; expiry does the work.
  }

  onExpiration(): void {
    this.handler.onExpirePendingSync(this.group, this.generationId);
  }
}
