import { CohortError, ErrorCode } from '../../errors';
import type { Time } from '../../time';
import { GroupCommit } from './group-commit';
import type { LocalLog } from './local-log';

const ignore = (): void => undefined;

/**
 * When a partition log's writes become durable, after Kafka's flush policy (flush.messages, flush.ms) and
 * its log flusher. Every fsync goes through one `GroupCommit` over `LocalLog.sync`, so flushes asked for
 * together share one fsync; this class decides when to ask:
 *
 * - After an append (`isDueAfterAppend`): once `flushMessages` offsets are written and not yet handed to
 *   the group commit. Under the default (`flushMessages` 1) that is every acknowledged append, which then
 *   waits for an fsync covering it; appends that arrive together still share it.
 * - By time (`isIntervalElapsed`): when the last fsync ended `flushIntervalMs` ago or more; the owner
 *   asks periodically (`PartitionLog.maybeFlush`).
 * - After segment files were deleted (`syncDirectorySoon`): a sync whose directory fsync makes the
 *   unlinks durable, although no offset waits for it.
 *
 * The first sync after the open fsyncs every segment and the directory (see `LocalLog`), so nothing the
 * recovery kept is reported durable before it is. A failed sync fails every later one: the log is
 * offline (`error`).
 */
export class LogFlusher {
  private readonly groupCommit: GroupCommit;
  /** Exclusive: offsets below it have been handed to the group commit. */
  private requestedOffset: number;
  private lastFlushMonotonicMs: number;

  /**
   * @param recoveryPoint offsets below it are durable already.
   * @param onSynced called after each sync, once `flushedOffset` includes it.
   */
  constructor(
    private readonly log: LocalLog,
    private readonly time: Time,
    recoveryPoint: number,
    nowMonotonicMs: number,
    onSynced: () => void,
  ) {
    this.requestedOffset = log.logEndOffset;
    this.lastFlushMonotonicMs = nowMonotonicMs;
    this.groupCommit = new GroupCommit(() => this.sync(), recoveryPoint, onSynced);
  }

  /** Offsets below this are known to be fsynced (Kafka's recovery point). */
  get flushedOffset(): number {
    return this.groupCommit.flushedOffset;
  }

  /** fsync rounds completed. */
  get syncCount(): number {
    return this.groupCommit.syncCount;
  }

  /** The error of the sync that failed, or null: after one, the log is offline. */
  get error(): unknown {
    return this.groupCommit.error;
  }

  /** Resolves once every record up to `offset` (one that exists) is fsynced. */
  request(offset: number): Promise<void> {
    if (offset >= this.requestedOffset) this.requestedOffset = offset + 1;
    return this.groupCommit.request(offset);
  }

  /**
   * Whether the append of a batch ending at `nextOffset` asks for a flush: only an acknowledged one, and
   * only once `flushMessages` offsets wait for one. An unacknowledged append (acks=0: nobody waits) never
   * pays for an fsync of its own; its offsets count toward the next.
   */
  isDueAfterAppend(nextOffset: number, isAcknowledged: boolean): boolean {
    const unflushedMessages = nextOffset - Math.max(this.flushedOffset, this.requestedOffset);
    return isAcknowledged && unflushedMessages >= this.log.config.flushMessages;
  }

  /** Whether the last sync ended `flushIntervalMs` ago or more. */
  isIntervalElapsed(): boolean {
    return this.time.monotonicMs() - this.lastFlushMonotonicMs >= this.log.config.flushIntervalMs;
  }

  /** A sync off the event loop for a change of the directory alone (segments deleted); failures, as any. */
  syncDirectorySoon(): void {
    this.groupCommit.requestSync().catch(ignore);
  }

  /**
   * Truncation to `offset`: nothing from it on is durable or asked for any more, whatever a running sync
   * reports, and every waiter for such an offset is rejected.
   */
  lowerTo(offset: number): void {
    if (offset < this.requestedOffset) this.requestedOffset = offset;
    this.groupCommit.lowerTo(offset, truncatedError(offset));
  }

  /** The log restarted empty at `offset` (after `lowerTo` its old start): nothing below it is left to ask. */
  restartAt(offset: number): void {
    this.requestedOffset = offset;
  }

  /** Resolves when no sync is running or queued. Never rejects. */
  idle(): Promise<void> {
    return this.groupCommit.idle();
  }

  /** The group commit's sync: the segments' fsync, then the time the flush interval counts from. */
  private async sync(): Promise<number> {
    const target = await this.log.sync();
    this.lastFlushMonotonicMs = this.time.monotonicMs();
    return target;
  }
}

function truncatedError(offset: number): CohortError {
  return new CohortError(
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    `records from offset ${offset} were truncated before they were flushed`,
  );
}
