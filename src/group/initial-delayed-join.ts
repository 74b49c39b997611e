import type { GroupMetadata } from './group-metadata';
import { DelayedJoin } from './delayed-join';
import type { RebalanceHandler } from './rebalance-handler';

/**
 * The join of a group leaving Empty (KIP-134): instead of completing the moment the first member is in, wait
 * `group.initial.rebalance.delay.ms` so the other members of a starting application join the same
 * generation. Each time the delay passes with new members added meanwhile, wait again (at most the delay,
 * at most what is left of the rebalance timeout). Never completes early.
 *
 * Example, delay 3 s, rebalance timeout 10 s: first member at t=0 (remaining 7 s); a second member joins at
 * t=1; at t=3 the wait is extended to t=6 (remaining 4 s); nobody new by t=6, so the join completes then.
 */
export class InitialDelayedJoin extends DelayedJoin {
  private readonly remainingMs: number;

  constructor(handler: RebalanceHandler, group: GroupMetadata, delayMs: number, remainingMs: number) {
    super(handler, group, delayMs);
    this.remainingMs = remainingMs;
  }

  override tryComplete(): boolean {
    return false;
  }

  override onComplete(): void {
    this.handler.onCompleteInitialJoin(this.group, this.delayMs, this.remainingMs);
  }
}
