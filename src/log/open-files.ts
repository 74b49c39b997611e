import * as fs from 'node:fs';

/**
 * The process's file descriptors, for the budget CreateTopics checks before it touches the disk (see
 * TopicCreator). Node has no getrlimit: on Linux the limit is the soft "Max open files" line of
 * /proc/self/limits and the descriptors in use are the entries of /proc/self/fd. Elsewhere both read as
 * undefined and the caller falls back (a configured limit, its own count of open logs).
 */

/** The limit assumed where it cannot be read: the usual soft limit of a login shell (`ulimit -n`). */
export const FALLBACK_OPEN_FILE_LIMIT = 1_024;
/**
 * Descriptors a new partition opens: its first segment's `.log`. Its `.index` opens with its first entry
 * (offset-index.ts), and each segment rolled later adds two; the headroom below is there for those.
 */
export const FILE_DESCRIPTORS_PER_NEW_PARTITION = 1;
/** The least headroom kept free of partitions, for connections, segment rolls and the offsets log. */
export const MIN_OPEN_FILES_HEADROOM = 128;

/**
 * Descriptors CreateTopics leaves free: a tenth of the limit, at least MIN_OPEN_FILES_HEADROOM. Client
 * connections, directory fsyncs, the `.index` a partition opens when it takes data and every segment
 * rolled later draw on it.
 */
export function openFilesHeadroom(limit: number): number {
  return Math.max(MIN_OPEN_FILES_HEADROOM, Math.floor(limit / 10));
}

/** The soft limit in a /proc/<pid>/limits text, or undefined ("unlimited", or no such line). */
export function parseOpenFileLimit(limitsText: string): number | undefined {
  const line = /^Max open files\s+(\S+)/m.exec(limitsText);
  if (line === null) return undefined;
  const soft = Number(line[1]);
  return Number.isSafeInteger(soft) && soft > 0 ? soft : undefined;
}

/** This process's open-file limit, or undefined where /proc/self/limits cannot be read. */
export function readOpenFileLimit(): number | undefined {
  try {
    return parseOpenFileLimit(fs.readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return undefined;
  }
}

/** Descriptors this process has open, or undefined where /proc/self/fd cannot be listed. */
export function countOpenFileDescriptors(): number | undefined {
  try {
    // The listing's own descriptor on the directory is in it.
    return fs.readdirSync('/proc/self/fd').length - 1;
  } catch {
    return undefined;
  }
}
