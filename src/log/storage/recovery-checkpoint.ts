import * as fs from 'node:fs';
import * as path from 'node:path';
import { fsyncDirectory, fsyncDirectorySync } from './file-io';

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
 * A stale value is safe: it only makes the next recovery look at more of the log. A write goes to a
 * temporary file that is fsynced and renamed over the old one, and the directory is fsynced, so a crash
 * leaves the old file or the new one, never a mix. A file that cannot be read counts as missing.
 */
export const RECOVERY_CHECKPOINT_FILE = 'recovery-point-offset-checkpoint';
/** Synchronous writes (open, truncation) and asynchronous ones (after syncs, close) use their own temp file. */
const SYNC_TEMP_SUFFIX = '.tmp';
const ASYNC_TEMP_SUFFIX = '.async.tmp';
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
  const file = recoveryCheckpointPath(dir);
  for (const suffix of [SYNC_TEMP_SUFFIX, ASYNC_TEMP_SUFFIX]) fs.rmSync(file + suffix, { force: true });
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const value = JSON.parse(text) as Partial<Record<keyof RecoveryCheckpoint | 'version', unknown>>;
    const { recoveryPoint, isCleanShutdown } = value;
    if (
      value.version !== VERSION ||
      typeof recoveryPoint !== 'number' ||
      !Number.isSafeInteger(recoveryPoint) ||
      recoveryPoint < 0 ||
      typeof isCleanShutdown !== 'boolean'
    ) {
      return 'unreadable';
    }
    return { recoveryPoint, isCleanShutdown };
  } catch {
    return 'unreadable';
  }
}

function encode(checkpoint: RecoveryCheckpoint): string {
  return `${JSON.stringify({ version: VERSION, ...checkpoint })}\n`;
}

/** Writes the checkpoint durably before returning (open and truncation: rare, and must not race). */
export function writeRecoveryCheckpointSync(dir: string, checkpoint: RecoveryCheckpoint): void {
  const file = recoveryCheckpointPath(dir);
  const temp = file + SYNC_TEMP_SUFFIX;
  const fd = fs.openSync(temp, 'w');
  try {
    fs.writeSync(fd, encode(checkpoint));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
  fsyncDirectorySync(dir);
}

/**
 * Writes the checkpoint off the event loop. `isCurrent` is asked on the event loop right before the
 * rename: when it says no (a truncation wrote a lower recovery point meanwhile, or the log closed), the
 * write is dropped, so an older, higher value never replaces a newer, lower one.
 */
export async function writeRecoveryCheckpoint(
  dir: string,
  checkpoint: RecoveryCheckpoint,
  isCurrent: () => boolean,
): Promise<boolean> {
  const file = recoveryCheckpointPath(dir);
  const temp = file + ASYNC_TEMP_SUFFIX;
  const handle = await fs.promises.open(temp, 'w');
  try {
    await handle.writeFile(encode(checkpoint));
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (!isCurrent()) {
    fs.rmSync(temp, { force: true });
    return false;
  }
  fs.renameSync(temp, file);
  await fsyncDirectory(dir);
  return true;
}
