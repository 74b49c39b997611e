import * as path from 'node:path';
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
