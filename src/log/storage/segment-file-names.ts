import * as path from 'node:path';

/**
 * Segment files are named by their base offset, zero-padded to 20 digits so that names sort like offsets,
 * exactly as Kafka names them: `00000000000000000000.log` and `00000000000000000000.index`.
 *
 * Compaction writes a replacement under a state suffix and renames it through these states, so a crash
 * at any step leaves names that say what to do on the next open (see `log-loader.ts`):
 *   `.cleaned`  being written: delete it;
 *   `.swap`     complete and fsynced: finish the swap (drop the segments it replaces, drop the suffix).
 */
export const LOG_FILE_SUFFIX = '.log';
export const INDEX_FILE_SUFFIX = '.index';
export const CLEANED_FILE_SUFFIX = '.cleaned';
export const SWAP_FILE_SUFFIX = '.swap';

export type SegmentFileState = '' | typeof CLEANED_FILE_SUFFIX | typeof SWAP_FILE_SUFFIX;

export interface SegmentFileName {
  readonly baseOffset: number;
  readonly kind: typeof LOG_FILE_SUFFIX | typeof INDEX_FILE_SUFFIX;
  readonly state: SegmentFileState;
}

const PATTERN = /^(\d{20})(\.log|\.index)(\.cleaned|\.swap)?$/;

export function segmentFilePath(
  dir: string,
  baseOffset: number,
  kind: SegmentFileName['kind'],
  state: SegmentFileState = '',
): string {
  return path.join(dir, String(baseOffset).padStart(20, '0') + kind + state);
}

/** Parses a file name in a partition directory; null for anything that is not a segment file. */
export function parseSegmentFileName(name: string): SegmentFileName | null {
  const match = PATTERN.exec(name);
  if (match === null) return null;
  const baseOffset = Number(match[1]);
  if (!Number.isSafeInteger(baseOffset)) return null;
  return {
    baseOffset,
    kind: match[2] as SegmentFileName['kind'],
    state: (match[3] ?? '') as SegmentFileState,
  };
}
