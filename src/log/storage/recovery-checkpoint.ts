import * as path from 'node:path';
import {
  isOffset,
  parseCheckpointJson,
  readCheckpointFile,
  writeCheckpointFile,
  writeCheckpointFileSync,
} from './checkpoint-file';

/**
 * A partition's recovery point on disk, after Kafka's `recovery-point-offset-checkpoint` and its
 * `.kafka_cleanshutdown` marker, in one small file per partition directory:
 *
 *   <partition-dir>/recovery-point-offset-checkpoint
 *   {"version":1,"recoveryPoint":4711,"isCleanShutdown":false}
 *
 * `recoveryPoint`: every offset below it was fsynced before the file was written, so a crash cannot have
 * torn it. `isCleanShutdown`: the log was closed cleanly with everything fsynced (then `recoveryPoint` is
 * the log end offset). The log rewrites the file as unclean when it opens (not a new, empty log: it has
 * nothing to protect yet), after a sync that covers a
 * newly sealed segment, at most once a minute otherwise, after a truncation below it, and at close.
 *
 * A stale value is safe: it only makes the next recovery look at more of the log. Writes are crash-safe
 * (`checkpoint-file.ts`). A file that cannot be read counts as missing.
 */
export const RECOVERY_CHECKPOINT_FILE = 'recovery-point-offset-checkpoint';
const VERSION = 1;

export interface RecoveryCheckpoint {
  readonly recoveryPoint: number;
  readonly isCleanShutdown: boolean;
}

export function recoveryCheckpointPath(dir: string): string {
  return path.join(dir, RECOVERY_CHECKPOINT_FILE);
}

/** Whether a file in a partition directory belongs to the checkpoint (the file or a leftover temp file). */
export function isRecoveryCheckpointFile(name: string): boolean {
  return name.startsWith(RECOVERY_CHECKPOINT_FILE);
}

/**
 * Reads the checkpoint of `dir`, deleting leftover temporary files. `null` when there is none;
 * `'unreadable'` when the file exists but does not parse (the caller treats it as missing and says so).
 */
export function readRecoveryCheckpoint(dir: string): RecoveryCheckpoint | 'unreadable' | null {
  const text = readCheckpointFile(recoveryCheckpointPath(dir));
  if (text === null) return null;
  const value = parseCheckpointJson(text, VERSION);
  if (value === 'unreadable') return value;
  const { recoveryPoint, isCleanShutdown } = value;
  if (!isOffset(recoveryPoint) || typeof isCleanShutdown !== 'boolean') return 'unreadable';
  return { recoveryPoint, isCleanShutdown };
}

function encode(checkpoint: RecoveryCheckpoint): string {
  return `${JSON.stringify({ version: VERSION, ...checkpoint })}\n`;
}

/** Writes the checkpoint durably before returning (open and truncation: rare, and must not race). */
export function writeRecoveryCheckpointSync(dir: string, checkpoint: RecoveryCheckpoint): void {
  writeCheckpointFileSync(recoveryCheckpointPath(dir), encode(checkpoint));
}

/**
 * Writes the checkpoint off the event loop. `isCurrent` is asked on the event loop right before the
 * rename: when it says no (a truncation wrote a lower recovery point meanwhile, or the log closed), the
 * write is dropped, so an older, higher value never replaces a newer, lower one.
 */
export function writeRecoveryCheckpoint(
  dir: string,
  checkpoint: RecoveryCheckpoint,
  isCurrent: () => boolean,
): Promise<boolean> {
  return writeCheckpointFile(recoveryCheckpointPath(dir), encode(checkpoint), isCurrent);
}
