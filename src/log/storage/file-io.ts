import * as fs from 'node:fs';
import * as path from 'node:path';
import { CohortError, ErrorCode } from '../../errors';

/**
 * The few file operations storage needs, with the loops and durability steps Node leaves to callers:
 * positional writes and reads that handle short transfers, and directory fsyncs (a new, renamed or
 * deleted file is durable only once its directory is).
 *
 * Writes and reads are synchronous on purpose: they hit the page cache and take microseconds, and doing
 * them inline keeps every append and read atomic with respect to the event loop (no interleaving, no
 * locks). Only fsync, which waits for the device, runs on libuv's thread pool.
 */
export function writeFully(fd: number, buffer: Uint8Array, position: number): void {
  let written = 0;
  while (written < buffer.length) {
    written += fs.writeSync(fd, buffer, written, buffer.length - written, position + written);
  }
}

/** Reads `length` bytes at `position` into a new buffer; fewer if the file ends first. */
export function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let read = 0;
  while (read < length) {
    const n = fs.readSync(fd, buffer, read, length - read, position + read);
    if (n === 0) break;
    read += n;
  }
  return read === length ? buffer : buffer.subarray(0, read);
}

export function fsyncDirectorySync(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fsync(fd, (error) => (error ? reject(error) : resolve())));
}

export async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Creates `dir` (and missing parents), making each new entry durable in its parent directory. */
export function ensureDirectory(dir: string): void {
  const created: string[] = [];
  let current = path.resolve(dir);
  while (!fs.existsSync(current)) {
    created.push(current);
    current = path.dirname(current);
  }
  if (created.length === 0) return;
  fs.mkdirSync(dir, { recursive: true });
  for (const made of created) fsyncDirectorySync(path.dirname(made));
}

/**
 * Runs `write`, a synchronous write of `file`; a failure becomes KAFKA_STORAGE_ERROR naming the file, the
 * code that takes a log offline (its cause kept).
 */
export function writeOrStorageError(file: string, write: () => void): void {
  try {
    write();
  } catch (error) {
    throw new CohortError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot write ${file}`, { cause: error });
  }
}
