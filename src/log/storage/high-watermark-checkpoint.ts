import * as path from 'node:path';
import { writeOrStorageError } from './file-io';
import {
  isOffset,
  parseCheckpointJson,
  readCheckpointFile,
  writeCheckpointFile,
  writeCheckpointFileSync,
} from './checkpoint-file';

/**
 * A partition's high watermark on disk, after Kafka's replication-offset-checkpoint (one file per
 * partition here, beside the recovery point):
 *
 *   <partition-dir>/high-watermark-checkpoint
 *   {"version":1,"highWatermark":4711}
 *
 * The owner (the replica manager) writes it every replica.high.watermark.checkpoint.interval.ms (5 s) for
 * each partition whose HW moved and that has followers or follows, and at close, off the event loop
 * (`checkpoint-file.ts`), a few partitions at a time (`checkpointHighWatermarks`). A restarted
 * leader with followers starts its HW there instead of at its log end: records above it may not be on
 * every in-sync replica, so they must not be shown to consumers before the followers have them again. A
 * stale value is safe: it is at most the HW of that time, and the HW only moves up from it, except
 * through a truncation below it (a follower diverging from a new leader), which therefore lowers the file
 * synchronously before it returns (`PartitionLog.truncateTo`): otherwise a follower that refilled past
 * the old value and crashed would restart with a HW above its leader's. It is capped to the recovered log
 * at open; a file that cannot be read counts as missing.
 */
export const HIGH_WATERMARK_CHECKPOINT_FILE = 'high-watermark-checkpoint';
/** Kafka's replica.high.watermark.checkpoint.interval.ms. */
export const HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS = 5_000;
const VERSION = 1;

export function highWatermarkCheckpointPath(dir: string): string {
  return path.join(dir, HIGH_WATERMARK_CHECKPOINT_FILE);
}

export function readHighWatermarkCheckpoint(dir: string): number | 'unreadable' | null {
  const text = readCheckpointFile(highWatermarkCheckpointPath(dir));
  if (text === null) return null;
  const value = parseCheckpointJson(text, VERSION);
  if (value === 'unreadable' || !isOffset(value.highWatermark)) return 'unreadable';
  return value.highWatermark;
}

function highWatermarkText(highWatermark: number): string {
  return `${JSON.stringify({ version: VERSION, highWatermark })}\n`;
}

/** Off the event loop; dropped (false) when `isCurrent` says no right before the rename. */
export function writeHighWatermarkCheckpoint(
  dir: string,
  highWatermark: number,
  isCurrent?: () => boolean,
): Promise<boolean> {
  return writeCheckpointFile(highWatermarkCheckpointPath(dir), highWatermarkText(highWatermark), isCurrent);
}

export function writeHighWatermarkCheckpointSync(dir: string, highWatermark: number): void {
  writeCheckpointFileSync(highWatermarkCheckpointPath(dir), highWatermarkText(highWatermark));
}

const RESOLVED: Promise<void> = Promise.resolve();
const ignore = (): void => undefined;

/**
 * One partition's file, as its log writes it: off the event loop and one write at a time, always the
 * newest value asked for, except below a truncation (`lowerTo`), which writes synchronously and drops
 * any asynchronous write in flight, so that an older, higher value never lands after it.
 */
export class HighWatermarkCheckpointWriter {
  /** The high watermark the file holds, as written (undefined: no file). */
  private onDisk: number | undefined;
  /** The last high watermark asked to be checkpointed. */
  private requested: number | undefined;
  private writing: Promise<void> | null = null;
  /** Bumped by every synchronous write: an asynchronous one started before it is dropped. */
  private generation = 0;

  /** `onDisk`: what the file held at open (undefined: no file, or unreadable). */
  constructor(
    readonly dir: string,
    onDisk: number | undefined,
  ) {
    this.onDisk = onDisk;
    this.requested = onDisk;
  }

  /** The high watermark the file holds, as written (undefined: no file). */
  get written(): number | undefined {
    return this.onDisk;
  }

  /**
   * Resolves at once when `highWatermark` is the value already written; while a write is under way the
   * newest value asked for is written after it, and the returned promise resolves once that is done.
   * Rejects with the I/O error of a failed write (the older file stays).
   */
  write(highWatermark: number): Promise<void> {
    this.requested = highWatermark;
    if (this.writing !== null) return this.writing;
    if (highWatermark === this.onDisk) return RESOLVED;
    this.writing = this.writeRequested();
    return this.writing;
  }

  /**
   * After a truncation to `offset`: the file must not stay above it, or the records appended there later
   * (not committed yet) would count as committed after a crash. Rare (a follower truncating below its
   * checkpointed HW), synchronous, and it drops any asynchronous write in flight. KAFKA_STORAGE_ERROR
   * when it cannot write.
   */
  lowerTo(offset: number): void {
    this.generation++;
    if (this.requested !== undefined && this.requested > offset) {
      this.requested = offset;
    }
    if (this.onDisk === undefined || this.onDisk <= offset) return;
    writeOrStorageError(highWatermarkCheckpointPath(this.dir), () =>
      writeHighWatermarkCheckpointSync(this.dir, offset),
    );
    this.onDisk = offset;
  }

  /** Resolves once no write is running. Never rejects. */
  async idle(): Promise<void> {
    await this.writing?.catch(ignore);
  }

  /** Writes the newest requested high watermark until the file holds it; one write at a time. */
  private async writeRequested(): Promise<void> {
    try {
      while (this.requested !== undefined && this.requested !== this.onDisk) {
        const value = this.requested;
        const generation = this.generation;
        const isWritten = await writeHighWatermarkCheckpoint(
          this.dir,
          value,
          () => generation === this.generation,
        );
        // Dropped: a truncation wrote a lower value meanwhile (and set what is requested now).
        if (isWritten) this.onDisk = value;
      }
    } finally {
      this.writing = null;
    }
  }
}

/**
 * Checkpoint writes a periodic pass runs at once: each is an open, write, fsync, close and directory
 * fsync on libuv's thread pool (4 threads by default), which the appends' fsyncs share, so a pass over
 * many partitions keeps at least half of it free for them.
 */
export const HIGH_WATERMARK_CHECKPOINT_CONCURRENCY = 2;

/** What `checkpointHighWatermarks` needs of a partition (a `Partition` has it). */
export interface HighWatermarkSource {
  readonly key: string;
  readonly highWatermark: number;
  readonly isLeader: boolean;
  readonly localNodeId: number;
  readonly replicas: readonly number[];
  readonly log: { checkpointHighWatermark(highWatermark: number): Promise<void> };
}

/**
 * Checkpoints the HW of each partition whose HW changed since its last checkpoint (the log skips the
 * others), `concurrency` partitions at a time. A leader without followers is skipped: it starts at its
 * log end, never at the file (and should followers be added later, a missing or older file only makes a
 * restart start lower, which is safe). A failure is handed to `onError` and the pass goes on.
 */
export async function checkpointHighWatermarks(
  partitions: Iterable<HighWatermarkSource>,
  onError: (error: unknown, key: string) => void,
  concurrency = HIGH_WATERMARK_CHECKPOINT_CONCURRENCY,
): Promise<void> {
  const due: HighWatermarkSource[] = [];
  for (const partition of partitions) {
    const isAlone = partition.isLeader && partition.replicas.every((id) => id === partition.localNodeId);
    if (!isAlone) due.push(partition);
  }
  let next = 0;
  const work = async (): Promise<void> => {
    while (next < due.length) {
      const partition = due[next++]!;
      try {
        await partition.log.checkpointHighWatermark(partition.highWatermark);
      } catch (error) {
        onError(error, partition.key);
      }
    }
  };
  const workers = Math.max(1, Math.min(concurrency, due.length));
  await Promise.all(Array.from({ length: workers }, work));
}
