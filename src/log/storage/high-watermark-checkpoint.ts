import * as path from 'node:path';
import { isOffset, parseCheckpointJson, readCheckpointFile, writeCheckpointFile } from './checkpoint-file';

/**
 * A partition's high watermark on disk, after Kafka's replication-offset-checkpoint (one file per
 * partition here, beside the recovery point):
 *
 *   <partition-dir>/high-watermark-checkpoint
 *   {"version":1,"highWatermark":4711}
 *
 * The owner (the replica manager) writes it every replica.high.watermark.checkpoint.interval.ms (5 s) for
 * each partition whose HW moved, and at close, off the event loop (`checkpoint-file.ts`). A restarted
 * leader with followers starts its HW there instead of at its log end: records above it may not be on
 * every in-sync replica, so they must not be shown to consumers before the followers have them again. A
 * stale value is safe: it is at most the HW of that time, and the HW only moves up from it. It is capped
 * to the recovered log at open; a file that cannot be read counts as missing.
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

export function writeHighWatermarkCheckpoint(dir: string, highWatermark: number): Promise<boolean> {
  const text = `${JSON.stringify({ version: VERSION, highWatermark })}\n`;
  return writeCheckpointFile(highWatermarkCheckpointPath(dir), text);
}

/** What `checkpointHighWatermarks` needs of a partition. */
export interface HighWatermarkSource {
  readonly key: string;
  readonly highWatermark: number;
  readonly log: { checkpointHighWatermark(highWatermark: number): Promise<void> };
}

/**
 * Checkpoints the HW of each partition whose HW changed since its last checkpoint (the log skips the
 * others), one partition at a time: a pass over many partitions must not fill libuv's thread pool, which
 * the appends' fsyncs share. A failure is handed to `onError` and the pass goes on.
 */
export async function checkpointHighWatermarks(
  partitions: Iterable<HighWatermarkSource>,
  onError: (error: unknown, key: string) => void,
): Promise<void> {
  for (const partition of [...partitions]) {
    try {
      await partition.log.checkpointHighWatermark(partition.highWatermark);
    } catch (error) {
      onError(error, partition.key);
    }
  }
}
