import type { Time } from '../time';
import { SystemTimer } from '../timer';
import type { Timer } from '../timer';
import type { Partition } from './partition';
import type { PartitionLookup } from './partition-lookup';
import { PeriodicTask } from './periodic-task';
import {
  checkpointHighWatermarks,
  DirtyRatioCompaction,
  HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
} from './storage';

/** What the maintenance works on and whom it tells (ReplicaManager). */
export interface LogMaintenanceHost {
  readonly time: Time;
  /** The partitions hosted now (a compaction's failure is reported only while its partition is hosted). */
  readonly partitions: PartitionLookup & { hostedPartitions(): Iterable<Partition> };
  /** shutdown() has begun: a compaction cut by it is not a failure. */
  isShuttingDown(): boolean;
  /** The ISR expiry dropped followers from a leader's ISR (which was `isrBefore`). */
  afterIsrChange(partition: Partition, isrBefore: readonly number[]): void;
  /** Retention deleted segments: reads made before may name records that are gone. */
  onSegmentsDeleted(): void;
  reportError(error: unknown, what: string): void;
}

export interface LogMaintenanceOptions {
  /** The ISR expiry runs every half of it (Kafka's replica.lag.time.max.ms). */
  readonly replicaLagTimeMaxMs: number;
  /** How often retention runs (Kafka's log.retention.check.interval.ms). */
  readonly retentionCheckIntervalMs: number;
  /** The logs' time-based flush interval; Number.MAX_SAFE_INTEGER (or more) for none. */
  readonly flushIntervalMs: number;
  /** The dirty ratio a follower's compaction uses: the offsets stores'. Default DirtyRatioCompaction's. */
  readonly minCleanableDirtyRatio?: number;
  /** A task on the maintenance timer threw. */
  readonly onTaskError: (error: unknown) => void;
}

const ignore = (): void => undefined;

/**
 * The periodic work on the hosted partitions (Kafka's scheduler tasks of ReplicaManager and LogManager),
 * on a timer of its own: ISR expiry every half of replicaLagTimeMaxMs (leaders), retention, the
 * time-based flush if set, and the high-watermark checkpoint, which also runs once more at close. Also
 * the compaction of compacted follower replicas, which the fetched records start.
 */
export class LogMaintenance {
  /** The maintenance tasks' timer; the replica fetchers' waits run on it too. */
  readonly timer: Timer;
  private readonly tasks: PeriodicTask[] = [];
  /** The high-watermark checkpoint pass under way, if any (a slow one is not overlapped). */
  private highWatermarkCheckpointing: Promise<void> | null = null;
  /** The compaction of each compacted follower replica (a leader's is its store's). */
  private readonly followerCompactions = new WeakMap<Partition, DirtyRatioCompaction>();

  constructor(
    private readonly host: LogMaintenanceHost,
    private readonly options: LogMaintenanceOptions,
  ) {
    this.timer = new SystemTimer({
      name: 'log-maintenance',
      time: host.time,
      onTaskError: options.onTaskError,
    });
  }

  /** Runs retention once now and starts the periodic tasks. */
  start(): void {
    const periodMs = Math.max(1, Math.floor(this.options.replicaLagTimeMaxMs / 2));
    this.schedule(periodMs, () => this.maybeShrinkIsr());
    this.deleteOldSegments();
    this.schedule(this.options.retentionCheckIntervalMs, () => this.deleteOldSegments());
    const flushIntervalMs = this.options.flushIntervalMs;
    if (flushIntervalMs < Number.MAX_SAFE_INTEGER) {
      this.schedule(Math.max(1, Math.floor(flushIntervalMs / 2)), () => this.maybeFlush());
    }
    this.schedule(HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS, () => void this.checkpointHighWatermarks());
  }

  /** Stops the periodic tasks for good. */
  cancelTasks(): void {
    for (const task of this.tasks) task.cancel();
  }

  /** Stops the timer (the fetchers' waits with it). */
  shutdown(): void {
    this.timer.shutdown();
  }

  /**
   * The last checkpoint, at close: after the pass under way, if any, one more, so a restart starts from
   * the last HWs. Never rejects (a failure is reported and must not keep the logs open).
   */
  async checkpointLastHighWatermarks(): Promise<void> {
    await this.highWatermarkCheckpointing?.catch(ignore);
    await this.checkpointHighWatermarks().catch(ignore);
  }

  /**
   * Kafka's cleaner runs on every replica: a follower of a compacted topic compacts its own copy, by the
   * same dirty ratio as the leader's store and only below its own HW (a record above it may still be
   * truncated when it follows a new leader). Offsets never change, so the copy still matches the leader's
   * offset for offset wherever both hold a record.
   */
  maybeCompactFollower(partition: Partition): void {
    if (partition.log.config.cleanupPolicy !== 'compact') return;
    let compaction = this.followerCompactions.get(partition);
    if (compaction === undefined) {
      const ratio = this.options.minCleanableDirtyRatio;
      compaction = new DirtyRatioCompaction(partition.log, {
        maxOffset: () => partition.highWatermark,
        ...(ratio === undefined ? {} : { minCleanableDirtyRatio: ratio }),
        onError: (error) => {
          if (!this.host.isShuttingDown() && this.host.partitions.getPartition(partition.key) === partition) {
            this.host.reportError(error, `compaction of ${partition.key} failed`);
          }
        },
      });
      this.followerCompactions.set(partition, compaction);
    }
    compaction.maybeCompact();
  }

  private schedule(periodMs: number, action: () => void): void {
    this.tasks.push(new PeriodicTask(this.timer, periodMs, action).start());
  }

  private maybeShrinkIsr(): void {
    const nowMs = this.host.time.monotonicMs();
    for (const partition of this.host.partitions.hostedPartitions()) {
      const isrBefore = partition.isr;
      const removed = partition.maybeShrinkIsr(nowMs);
      if (removed.length > 0) this.host.afterIsrChange(partition, isrBefore);
    }
  }

  private deleteOldSegments(): void {
    for (const partition of this.host.partitions.hostedPartitions()) {
      try {
        if (partition.deleteOldSegments() > 0) this.host.onSegmentsDeleted();
      } catch (error) {
        this.host.reportError(error, `retention of ${partition.key} failed`);
      }
    }
  }

  /** Kafka's checkpointHighWatermarks: each partition whose HW moved since its last checkpoint. */
  private checkpointHighWatermarks(): Promise<void> {
    this.highWatermarkCheckpointing ??= checkpointHighWatermarks(
      this.host.partitions.hostedPartitions(),
      (error, key) => this.host.reportError(error, `high watermark checkpoint of ${key} failed`),
    ).finally(() => {
      this.highWatermarkCheckpointing = null;
    });
    return this.highWatermarkCheckpointing;
  }

  private maybeFlush(): void {
    for (const partition of this.host.partitions.hostedPartitions()) {
      partition.log
        .maybeFlush()
        ?.catch((error: unknown) => this.host.reportError(error, `flush of ${partition.key} failed`));
    }
  }
}
