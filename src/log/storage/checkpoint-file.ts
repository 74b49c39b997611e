import * as fs from 'node:fs';
import * as path from 'node:path';
import { fsyncDirectory, fsyncDirectorySync } from './file-io';

/**
 * The crash-safe small files a partition directory keeps beside its segments (the recovery point, the
 * leader-epoch cache, the high watermark), after Kafka's CheckpointFile: a write goes to a temporary file
 * that is fsynced and renamed over the old one, and the directory is fsynced, so a crash leaves the old
 * file or the new one, never a mix. Each file holds one JSON line whose format its owner defines.
 *
 * Synchronous writes (rare: an open that repaired something, a truncation below a checkpointed value)
 * and asynchronous ones (off the event loop: after syncs, periodic checkpoints, close) use their own
 * temporary file, so one of each can be under way at once; an owner runs at most one asynchronous write
 * of a file at a time.
 */
const SYNC_TEMP_SUFFIX = '.tmp';
const ASYNC_TEMP_SUFFIX = '.async.tmp';

/**
 * Reads `file`, deleting leftover temporary files first (a write a crash interrupted). `null` when the
 * file does not exist; other I/O errors are thrown.
 */
export function readCheckpointFile(file: string): string | null {
  for (const suffix of [SYNC_TEMP_SUFFIX, ASYNC_TEMP_SUFFIX]) fs.rmSync(file + suffix, { force: true });
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** Writes `text` to `file` durably before returning. */
export function writeCheckpointFileSync(file: string, text: string): void {
  const temp = file + SYNC_TEMP_SUFFIX;
  const fd = fs.openSync(temp, 'w');
  try {
    // writeFileSync loops until every byte is written; a single writeSync may write only part of them.
    fs.writeFileSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
  fsyncDirectorySync(path.dirname(file));
}

/**
 * Writes `text` to `file` off the event loop (only the rename is synchronous). `isCurrent` is asked on the
 * event loop right before the rename: when it says no (a synchronous write replaced the state meanwhile,
 * or the owner closed), the write is dropped and false returned, so an older value never replaces a newer
 * one.
 */
export async function writeCheckpointFile(
  file: string,
  text: string,
  isCurrent: () => boolean = () => true,
): Promise<boolean> {
  const temp = file + ASYNC_TEMP_SUFFIX;
  const handle = await fs.promises.open(temp, 'w');
  try {
    // FileHandle.writeFile loops until every byte is written (a single write may be short).
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (!isCurrent()) {
    fs.rmSync(temp, { force: true });
    return false;
  }
  fs.renameSync(temp, file);
  await fsyncDirectory(path.dirname(file));
  return true;
}

/** Parses one JSON line; `'unreadable'` when it is not JSON or not an object of the given version. */
export function parseCheckpointJson(text: string, version: number): Record<string, unknown> | 'unreadable' {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return 'unreadable';
    const record = value as Record<string, unknown>;
    return record.version === version ? record : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

export function isOffset(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
