import { CohortError, ErrorCode } from '../errors';
import { DelayedOperation } from '../purgatory';
import type { PartitionLookup } from './partition-lookup';

/** One partition of an acks=-1 Produce: what it waits for, and what it will answer. */
export interface ProducePartitionStatus {
  /** The partition's purgatory key, "<topic>-<partition>". */
  readonly key: string;
  /** The offset after the appended records: the HW must reach it. */
  readonly requiredOffset: number;
  /** Still waiting for replication or the leader's fsync. False from the start for a failed append. */
  acksPending: boolean;
  /** The leader's fsync covering the records is done (true from the start when the policy needs none). */
  isFlushed: boolean;
  /** REQUEST_TIMED_OUT while pending, as in Kafka, so an expiry answers it without touching it. */
  errorCode: ErrorCode;
}

/** The error code a failed fsync answers with: a CohortError's own, anything else UNKNOWN_SERVER_ERROR. */
export function flushErrorCode(error: unknown): ErrorCode {
  return error instanceof CohortError ? error.code : ErrorCode.UNKNOWN_SERVER_ERROR;
}

/**
 * A Produce with acks=-1, watched under every partition it appended to (Kafka's DelayedProduce). A
 * partition is done when
 *
 * - every in-sync replica has its records (the HW reached `requiredOffset`) and the leader's own fsync
 *   has covered them: NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR meanwhile shrank below
 *   `minInsyncReplicas`;
 * - or the partition failed: no longer led here (NOT_LEADER_OR_FOLLOWER), gone, or its fsync failed.
 *
 * The operation completes when every partition is done, or at `timeoutMs`, when the partitions still
 * pending answer REQUEST_TIMED_OUT. The records stay appended either way: a timeout says only that they
 * were not confirmed in time.
 *
 * Waking it (ReplicaManager): HW moves (a follower fetched, the ISR shrank) check the partition's key;
 * a resolved or failed fsync checks the operation itself.
 */
export class DelayedProduce extends DelayedOperation {
  private isAborted = false;

  constructor(
    timeoutMs: number,
    readonly statuses: readonly ProducePartitionStatus[],
    private readonly partitions: PartitionLookup,
    private readonly respond: () => void,
    private readonly onExpired: () => void = () => undefined,
  ) {
    super(timeoutMs);
  }

  override tryComplete(): boolean {
    let isPending = false;
    for (let i = 0; i < this.statuses.length; i++) {
      const status = this.statuses[i]!;
      if (!status.acksPending) continue;
      const partition = this.partitions.getPartition(status.key);
      if (partition === undefined) {
        status.acksPending = false;
        status.errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
        continue;
      }
      const check = partition.checkEnoughReplicasReachOffset(status.requiredOffset);
      if (check.errorCode !== ErrorCode.NONE) {
        status.acksPending = false;
        status.errorCode = check.errorCode;
      } else if (check.hasEnough && status.isFlushed) {
        status.acksPending = false;
        status.errorCode = ErrorCode.NONE;
      } else {
        isPending = true;
      }
    }
    return isPending ? false : this.forceComplete();
  }

  override onComplete(): void {
    if (!this.isAborted) this.respond();
  }

  override onExpiration(): void {
    if (!this.isAborted) this.onExpired();
  }

  /** Waits for `flushed`, the leader's fsync of `status`'s records: `onFlushed` or `onFlushFailed`. */
  awaitFlush(status: ProducePartitionStatus, flushed: Promise<unknown>): void {
    flushed.then(
      () => this.onFlushed(status),
      (error: unknown) => this.onFlushFailed(status, flushErrorCode(error)),
    );
  }

  /** The leader's fsync covered `status`'s records. */
  onFlushed(status: ProducePartitionStatus): void {
    status.isFlushed = true;
    if (!this.isCompleted) this.tryComplete();
  }

  /** The leader's fsync failed (or a truncation removed the records first): the partition fails. */
  onFlushFailed(status: ProducePartitionStatus, errorCode: ErrorCode): void {
    if (this.isCompleted || !status.acksPending) return;
    status.acksPending = false;
    status.errorCode = errorCode;
    this.tryComplete();
  }

  /** The caller went away: complete without answering. The records stay appended. */
  abort(): void {
    if (this.isCompleted) return;
    this.isAborted = true;
    this.forceComplete();
  }
}
