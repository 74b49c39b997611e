import { DelayedOperation } from '../purgatory';
import type { GroupMetadata } from './group-metadata';
import type { RebalanceHandler } from './rebalance-handler';

/**
 * Parks a group in PreparingRebalance, watched under the group's join key.
 *
 * Every JoinGroup (and every member removal) checks it; it completes as soon as every known member has a
 * parked JoinGroup and no pending member id is outstanding. If the timeout (the largest rebalance timeout
 * among the members when the rebalance began) passes first, it completes anyway: members that did not
 * rejoin are then dropped (dynamic) or kept (static) by `onCompleteJoin`.
 */
export class DelayedJoin extends DelayedOperation {
  protected readonly handler: RebalanceHandler;
  protected readonly group: GroupMetadata;

  constructor(handler: RebalanceHandler, group: GroupMetadata, rebalanceTimeoutMs: number) {
    super(rebalanceTimeoutMs);
    this.handler = handler;
    this.group = group;
  }

  tryComplete(): boolean {
    return this.handler.tryCompleteJoin(this.group, this);
  }

  onComplete(): void {
    this.handler.onCompleteJoin(this.group);
  }

  onExpiration(): void {
    // Nothing beyond onComplete: an expired join completes with whoever rejoined.
  }
}
