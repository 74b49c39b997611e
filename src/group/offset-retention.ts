import type { Time } from '../time';
import { SystemTimer } from '../timer';
import type { GroupConfig } from './group-config';
import { type GroupCoordinatorListener, RETENTION_CHECK_OFFSETS_PER_TURN } from './group-coordinator-options';
import type { GroupCoordinatorShard } from './group-coordinator-shard';
import type { GroupMetadata } from './group-metadata';
import {
  newRetentionTally,
  OffsetRetentionCheck,
  type OffsetRetentionHandler,
} from './offset-retention-check';

/**
 * The groups of one retention check, as they were when it started, each with the shard it belonged to
 * then (parallel arrays: no object per group), and the next one to look at.
 */
interface RetentionPass {
  readonly groups: readonly GroupMetadata[];
  readonly shards: readonly GroupCoordinatorShard[];
  next: number;
}

/**
 * Offset retention (KIP-211) for every shard of the node: one timer task, one pass at a time over the
 * groups of every serving shard, sliced per event-loop turn. One for the node, not one per shard, so that 50
 * partitions make one check every offsetsRetentionCheckIntervalMs whose turns stay within
 * RETENTION_CHECK_OFFSETS_PER_TURN, instead of 50 checks whose slices would share a turn. What expires in
 * a group is the shard's business (GroupOffsets.removeExpiredOffsetsOf, against the shard's store).
 */
export class OffsetRetention implements OffsetRetentionHandler {
  /** A timer of its own so the Heartbeat purgatory counts sessions only. */
  private readonly timer: SystemTimer;
  private readonly check: OffsetRetentionCheck;
  private readonly offsetsPerTurn: number;
  /** The groups a check has still to visit; undefined between checks. */
  private pass: RetentionPass | undefined;
  private tally = newRetentionTally(0);
  private isActive = true;

  constructor(
    private readonly config: GroupConfig,
    private readonly time: Time,
    /** The shards now led by this node. */
    private readonly shards: () => Iterable<GroupCoordinatorShard>,
    private readonly listener: GroupCoordinatorListener | undefined,
    private readonly onTimerError: ((error: unknown) => void) | undefined,
    offsetsPerTurn: number = RETENTION_CHECK_OFFSETS_PER_TURN,
  ) {
    if (!(offsetsPerTurn >= 1)) {
      throw new RangeError(`retentionCheckOffsetsPerTurn must be >= 1, got ${offsetsPerTurn}`);
    }
    this.offsetsPerTurn = offsetsPerTurn;
    const onTaskError = onTimerError === undefined ? undefined : (error: unknown) => onTimerError(error);
    this.timer = new SystemTimer({ name: 'group-offset-retention', time, onTaskError });
    this.check = new OffsetRetentionCheck(this, config.offsetsRetentionCheckIntervalMs);
    this.timer.add(this.check);
  }

  /**
   * The periodic check: Kafka's cleanupGroupMetadata over the groups known when it starts, a slice of
   * `offsetsPerTurn` offsets per event-loop turn; the next check is armed one interval after the pass ends
   * (passes never overlap).
   */
  onOffsetRetentionCheck(): void {
    // A pass still running arms the next check when it ends: one pass at a time.
    if (!this.isActive || this.pass !== undefined) return;
    // A snapshot, not a live iterator: a group brought back by a failed deletion, or created meanwhile,
    // waits for the next check instead of being met again (and failing again) in this one. A shard still
    // loading has not all its groups back, one that failed to load serves nothing: both are passed over.
    const groups: GroupMetadata[] = [];
    const shards: GroupCoordinatorShard[] = [];
    let isAnyServing = false;
    for (const shard of this.shards()) {
      if (!shard.isServing) continue;
      isAnyServing = true;
      for (const group of shard.groups.values()) {
        groups.push(group);
        shards.push(shard);
      }
    }
    // Nothing served at all (the only partition still loading): try again next time, quietly.
    if (!isAnyServing) {
      this.timer.add(this.check);
      return;
    }
    this.pass = { groups, shards, next: 0 };
    this.tally = newRetentionTally(this.time.monotonicMs());
    this.continuePass();
  }

  /**
   * One turn of the pass: checks groups until the turn's budget is spent, then yields to other I/O with
   * `setImmediate`. Whatever happens, the pass either goes on or ends and arms the next check; an error
   * escaping a turn goes to `onTimerError` (a later turn runs outside the timer that started the pass).
   */
  private readonly continuePass = (): void => {
    if (this.pass === undefined || !this.isActive) return;
    let isDone = true;
    try {
      isDone = this.slice(this.pass);
    } catch (error) {
      if (this.onTimerError === undefined) throw error;
      this.onTimerError(error);
    } finally {
      if (isDone) this.endPass();
      else setImmediate(this.continuePass);
    }
  };

  /** Returns whether the pass is over. */
  private slice(pass: RetentionPass): boolean {
    const nowMs = this.time.nowMs();
    const retentionMs = this.config.offsetsRetentionMinutes * 60_000;
    const tally = this.tally;
    tally.turns++;
    let budget = this.offsetsPerTurn;
    while (pass.next < pass.groups.length) {
      const shard = pass.shards[pass.next];
      const group = pass.groups[pass.next++];
      // Its shard unloaded (or is loading again), or the group was removed, or deleted and replaced, since
      // the pass began.
      if (!shard.isServing || !group.is('Empty') || shard.groups.get(group.groupId) !== group) continue;
      tally.groupsChecked++;
      budget--;
      try {
        budget -= shard.offsets.removeExpiredOffsetsOf(group, nowMs, retentionMs, tally);
      } catch (error) {
        // One group's failure (a read of its offsets, say) must stop neither the others nor the next check.
        this.listener?.onOffsetExpiryFailed?.(group.groupId, error);
      }
      if (budget <= 0) return pass.next >= pass.groups.length;
    }
    return true;
  }

  private endPass(): void {
    this.pass = undefined;
    if (!this.isActive) return;
    this.timer.add(this.check);
    const { startedMs, ...counts } = this.tally;
    this.listener?.onOffsetRetentionCheckCompleted?.({
      ...counts,
      durationMs: this.time.monotonicMs() - startedMs,
    });
  }

  /** Stops the timer; a pass in progress stops at its next turn. Idempotent. */
  shutdown(): void {
    if (!this.isActive) return;
    this.isActive = false;
    this.timer.shutdown();
  }
}
