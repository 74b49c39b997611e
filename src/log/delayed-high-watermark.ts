import { ErrorCode } from '../errors';
import { DelayedOperation } from '../purgatory';
import type { PartitionLookup } from './partition-lookup';

/**
 * A wait for a leader's HW to reach `requiredOffset`: what a new leader of `__consumer_offsets` waits for
 * before its coordinator serves what it loaded (the records it got from the old leader above the HW are
 * not committed yet, and a failover could take them back). It is watched under the partition's key in the
 * produce purgatory, so it wakes on every event that wakes an acks=-1 Produce: a follower fetch that moves
 * the HW, an ISR shrink that moves it, a change of the partition's role.
 *
 * Done with NONE once the HW reaches `requiredOffset`, or with NOT_LEADER_OR_FOLLOWER once `partitions`
 * no longer finds the partition (not led here at the epoch any more: a new epoch, a follower, unassigned,
 * the session lost, shutdown). Unlike a DelayedProduce, the ISR's size does not matter: below
 * min.insync.replicas the HW stays put, and the wait goes on. Its timeout is the timer's longest delay:
 * the wait lasts as long as the leadership does, and ends with it.
 */
export class DelayedHighWatermark extends DelayedOperation {
  /** NONE once the HW reached the offset; NOT_LEADER_OR_FOLLOWER once the leadership ended. */
  errorCode: ErrorCode = ErrorCode.REQUEST_TIMED_OUT;

  constructor(
    timeoutMs: number,
    private readonly key: string,
    readonly requiredOffset: number,
    private readonly partitions: PartitionLookup,
    private readonly respond: () => void,
  ) {
    super(timeoutMs);
  }

  override tryComplete(): boolean {
    const partition = this.partitions.getPartition(this.key);
    if (partition === undefined) this.errorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER;
    else if (partition.highWatermark >= this.requiredOffset) this.errorCode = ErrorCode.NONE;
    else return false;
    return this.forceComplete();
  }

  override onComplete(): void {
    this.respond();
  }

  override onExpiration(): void {}
}
