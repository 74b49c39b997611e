import * as fs from 'node:fs';
import * as path from 'node:path';
import { CohortError, ErrorCode } from '../../errors';
import type { Time } from '../../time';
import { ensureDirectory, fsyncDirectorySync, writeOrStorageError } from './file-io';
import { highWatermarkCheckpointPath, readHighWatermarkCheckpoint } from './high-watermark-checkpoint';
import {
  type EpochEntry,
  LeaderEpochCache,
  leaderEpochCheckpointPath,
  readLeaderEpochCheckpoint,
  UNDEFINED_EPOCH,
} from './leader-epoch-cache';
import { segmentIndexIn } from './local-log';
import type { LogConfig } from './log-config';
import {
  CorruptLogError,
  type LogFileRemovalReason,
  type LogRecoveryListener,
  type LogRecoveryOptions,
  type LogTruncationKind,
} from './log-recovery';
import { LogSegment, type SegmentOpenMode } from './log-segment';
import { RecordBatch } from './record-batch';
import {
  readRecoveryCheckpoint,
  recoveryCheckpointPath,
  type RecoveryCheckpoint,
  writeRecoveryCheckpointSync,
} from './recovery-checkpoint';
import {
  CLEANED_FILE_SUFFIX,
  INDEX_FILE_SUFFIX,
  LOG_FILE_SUFFIX,
  SWAP_FILE_SUFFIX,
  parseSegmentFileName,
  segmentFilePath,
} from './segment-file-names';

/**
 * The recovery of a partition log when it opens, after Kafka's LogLoader: what `PartitionLog.open` finds
 * in the directory becomes the segments, recovery point, leader epochs and high watermark it starts from.
 * What it repairs is reported to the recovery listener (`log-recovery.ts`); it logs nothing itself.
 *
 * - Leftover `.cleaned` files are deleted; `.swap` files complete their swap (the segments whose base
 *   offsets lie in the swap segment's range go, the suffix is dropped; see `log-cleaner.ts`).
 * - After a clean shutdown no segment is validated; after an unclean stop only the segments holding
 *   offsets at or after the recovery point are (from their last index entry, see `log-segment.ts`);
 *   segments wholly below it have their batch headers walked, not their CRCs checked.
 * - Bad bytes at or after the recovery point are a torn tail: they are cut, and every later segment is
 *   deleted, as Kafka does (what follows a torn write was never fsynced, so never acknowledged). Bad bytes
 *   below it, or in a segment that is not the last when there is no checkpoint, are damage: the open
 *   throws CorruptLogError, changing no `.log` file, unless `truncateCorruptLogs` is set; then only the
 *   damaged bytes are removed (the valid batches after them in that segment are kept, later segments too:
 *   their data is whole), and if the log would end below the recovery point an empty segment starts at
 *   it, so no offset that was handed out is ever reused. Every cut, deleted segment and rebuilt index is
 *   reported to the recovery listener.
 * - The leader-epoch entries at or above the recovery point are rebuilt from the batches (see
 *   `loadEpochEntries`), and the recovery checkpoint is rewritten as unclean before the first append.
 */
export interface LoadedLog {
  /** The recovered segments, oldest first: never empty (a new log gets one at offset 0). */
  readonly segments: LogSegment[];
  /** The checkpointed recovery point, capped to the recovered log: offsets below it are fsynced. */
  readonly recoveryPoint: number;
  readonly epochEntries: readonly EpochEntry[];
  /** The high watermark the checkpoint file holds (not capped); undefined without a readable file. */
  readonly highWatermark: number | undefined;
}

/** Makes the directory's entries durable; if that fails, the segments opened are closed before it throws. */
function syncOrClose(dir: string, segments: readonly LogSegment[]): void {
  try {
    fsyncDirectorySync(dir);
  } catch (error) {
    for (const segment of segments) segment.close();
    throw error;
  }
}

/**
 * Opens (creating if needed) the log directory `dir` and recovers it. Throws CorruptLogError when data
 * below the recovery point is damaged and `recovery.truncateCorruptLogs` is not set. `syncDirectories`
 * false: a directory it creates is not fsynced (see `PartitionLogOptions.syncDirectories`).
 */
export function loadLog(
  dir: string,
  config: LogConfig,
  time: Time,
  recovery: LogRecoveryOptions,
  syncDirectories: boolean,
): LoadedLog {
  if (syncDirectories) ensureDirectory(dir);
  else fs.mkdirSync(dir, { recursive: true });
  const nowMs = time.monotonicMs();
  const loaded = loadSegments(dir, config, nowMs, recovery);
  const segments = loaded.segments;
  const isNew = segments.length === 0 && loaded.checkpoint === null;
  if (segments.length === 0) {
    segments.push(LogSegment.create(dir, 0, config.indexIntervalBytes, nowMs));
    if (syncDirectories) syncOrClose(dir, segments);
  }
  const logStartOffset = segments[0]!.baseOffset;
  const logEndOffset = segments[segments.length - 1]!.nextOffset;
  // What was fsynced before the stop still is; without a checkpoint nothing is known to be.
  const recoveryPoint = Math.max(
    logStartOffset,
    Math.min(loaded.checkpoint?.recoveryPoint ?? 0, logEndOffset),
  );
  const checkpoint: RecoveryCheckpoint = { recoveryPoint, isCleanShutdown: false };
  const listener = recovery.listener;
  let highWatermark: number | undefined;
  let epochEntries: readonly EpochEntry[];
  try {
    const found = readHighWatermarkCheckpoint(dir);
    if (found === 'unreadable') {
      listener?.onHighWatermarkCheckpointUnreadable?.(dir, highWatermarkCheckpointPath(dir));
    }
    highWatermark = typeof found === 'number' ? found : undefined;
    // Before the recovery checkpoint below: the entries it covers must be on disk first.
    epochEntries = loadEpochEntries(dir, segments, loaded.checkpoint?.recoveryPoint ?? 0, listener);
    // A new log needs no checkpoint yet: it has nothing to protect, and its first one is written after
    // the sync that covers its first sealed segment. Skipping it saves a created partition two fsyncs and
    // a rename (a CreateTopics of 10,000 partitions would otherwise pay 20,000 fsyncs).
    if (
      !isNew &&
      (loaded.checkpoint === null ||
        loaded.checkpoint.isCleanShutdown ||
        loaded.checkpoint.recoveryPoint !== recoveryPoint)
    ) {
      // Before the first append: a clean-shutdown mark left in place would skip the recovery of what
      // this process appends and never fsyncs.
      writeOrStorageError(recoveryCheckpointPath(dir), () => writeRecoveryCheckpointSync(dir, checkpoint));
    }
  } catch (error) {
    for (const segment of segments) segment.close();
    if (error instanceof CohortError) throw error;
    throw new CohortError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot open the checkpoints of ${dir}`, {
      cause: error,
    });
  }
  return { segments, recoveryPoint, epochEntries, highWatermark };
}

/**
 * The leader-epoch entries of a log at open. The file may be behind the log or ahead of it (its writes are
 * asynchronous, see `leader-epoch-cache.ts`), but every entry it holds below the checkpointed recovery
 * point `trustedBelow` is right, and it holds every entry starting there. So:
 *
 * - The file's entries below the recovery point are kept (the one covering the log start is moved to
 *   it); those at or above it are dropped, and the batches from the recovery point (capped to the log) to
 *   the end are replayed with follower semantics. That is the part of the log an unclean open validates
 *   anyway, and nothing after a clean shutdown (the recovery point is then the log end). When the recovery
 *   point is at or below the log start, nothing of the file is kept and the whole log is replayed: the
 *   whole log lies above the recovery point then, and recovery validated it all.
 * - No file: a data directory written before leader epochs (magic 1, no epoch below the recovery point),
 *   a new log, or a file lost. One batch tells them apart: the one just below the recovery point. Without
 *   an epoch there is nothing to find below it (epochs only ever start after magic-1 batches), so only the
 *   tail is replayed; with one, the file was lost, and the log is rebuilt as for a damaged file.
 * - A damaged file: the entries are rebuilt from every batch of the log, read once and CRC-checked (the
 *   cost of validating the whole log, paid only when the file cannot be read), and reported.
 *
 * When the entries differ from what the file says (after a crash, a replay or a rebuild changed them), the
 * file is rewritten before returning, so the open's own recovery checkpoint never covers a stale entry.
 */
function loadEpochEntries(
  dir: string,
  segments: readonly LogSegment[],
  trustedBelow: number,
  listener: LogRecoveryListener | undefined,
): readonly EpochEntry[] {
  const logStartOffset = segments[0]!.baseOffset;
  const logEndOffset = segments[segments.length - 1]!.nextOffset;
  const found = readLeaderEpochCheckpoint(dir);
  const replayFrom = Math.max(logStartOffset, Math.min(trustedBelow, logEndOffset));
  let rebuild: 'missing' | 'unreadable' | null = found === 'unreadable' ? 'unreadable' : null;
  if (
    found === null &&
    replayFrom > logStartOffset &&
    epochBefore(segments, replayFrom) !== UNDEFINED_EPOCH
  ) {
    rebuild = 'missing';
  }
  const onFile = rebuild === null ? ((found as EpochEntry[] | null) ?? []) : [];
  const asFileSays = new LeaderEpochCache(dir, onFile, () => logEndOffset);
  asFileSays.truncateFromStart(logStartOffset);
  const isKept = rebuild === null && trustedBelow > logStartOffset;
  const from = isKept ? replayFrom : logStartOffset;
  const cache = new LeaderEpochCache(
    dir,
    isKept ? onFile.filter((entry) => entry.startOffset < from) : [],
    () => logEndOffset,
  );
  cache.truncateFromStart(logStartOffset);
  for (const segment of segments.slice(segmentIndexIn(segments, from))) {
    const position = segment.baseOffset >= from ? 0 : segment.translateOffset(from);
    if (position < 0) continue;
    for (const item of segment.scanBatches(position)) {
      if (item instanceof RecordBatch) cache.assign(item.partitionLeaderEpoch, item.baseOffset, true);
    }
  }
  const entries = cache.epochEntries();
  if (rebuild !== null) {
    listener?.onLeaderEpochCacheRebuilt?.({
      dir,
      file: leaderEpochCheckpointPath(dir),
      reason: rebuild,
      entries: entries.length,
    });
  }
  if (rebuild !== null || !sameEntries(entries, asFileSays.epochEntries())) {
    writeOrStorageError(cache.file, () => cache.writeSync());
  }
  return entries;
}

/** The leader epoch of the batch holding `offset - 1`; UNDEFINED_EPOCH when it has none. */
function epochBefore(segments: readonly LogSegment[], offset: number): number {
  const segment = segments[segmentIndexIn(segments, offset - 1)]!;
  const position = segment.translateOffset(offset - 1);
  if (position < 0) return UNDEFINED_EPOCH;
  for (const item of segment.scanBatches(position)) {
    // Damage where the batch should be: nothing known, so the caller rebuilds (0 is any epoch at all).
    return item instanceof RecordBatch ? item.partitionLeaderEpoch : 0;
  }
  return UNDEFINED_EPOCH;
}

function sameEntries(a: readonly EpochEntry[], b: readonly EpochEntry[]): boolean {
  return (
    a.length === b.length &&
    a.every((entry, i) => entry.epoch === b[i]!.epoch && entry.startOffset === b[i]!.startOffset)
  );
}

interface LoadedSegments {
  readonly segments: LogSegment[];
  /** The checkpoint found on open; null when there was none or it could not be read. */
  readonly checkpoint: RecoveryCheckpoint | null;
}

/**
 * Reads a partition directory: deletes `.cleaned` leftovers, completes `.swap`s, deletes index files
 * without a log, opens every segment (validating those the recovery point does not cover), cuts a torn
 * tail with every later segment, and refuses or cuts damage below the recovery point (see the top of
 * this file). Nothing in a `.log` file is changed before the decision to refuse is taken.
 */
function loadSegments(
  dir: string,
  config: LogConfig,
  nowMs: number,
  recovery: LogRecoveryOptions,
): LoadedSegments {
  const interval = config.indexIntervalBytes;
  const listener = recovery.listener;
  const found = readRecoveryCheckpoint(dir);
  if (found === 'unreadable') listener?.onCheckpointUnreadable?.(dir, recoveryCheckpointPath(dir));
  const checkpoint = found === 'unreadable' ? null : found;
  let names = fs.readdirSync(dir);
  let isChanged = false;
  const remove = (name: string, reason?: LogFileRemovalReason): void => {
    const file = path.join(dir, name);
    if (reason !== undefined && fs.existsSync(file)) listener?.onFileRemoved?.(dir, file, reason);
    fs.rmSync(file, { force: true });
    isChanged = true;
  };
  for (const name of names) {
    if (parseSegmentFileName(name)?.state === CLEANED_FILE_SUFFIX) remove(name, 'unfinished_compaction');
  }
  const swaps = names
    .map(parseSegmentFileName)
    .filter((file) => file !== null && file.state === SWAP_FILE_SUFFIX && file.kind === LOG_FILE_SUFFIX)
    .map((file) => file!.baseOffset)
    .sort((a, b) => a - b);
  for (const baseOffset of swaps) {
    // The swap segment was fsynced before it was renamed to .swap: it is whole and it is the truth.
    const swap = LogSegment.open(dir, baseOffset, interval, nowMs, SWAP_FILE_SUFFIX);
    const end = swap.nextOffset;
    for (const name of fs.readdirSync(dir)) {
      const file = parseSegmentFileName(name);
      if (file !== null && file.state === '' && file.baseOffset >= baseOffset && file.baseOffset < end)
        remove(name, 'replaced_by_swap');
    }
    fsyncDirectorySync(dir);
    swap.renameTo('');
    swap.close();
    isChanged = true;
  }
  names = fs.readdirSync(dir);
  const logs = new Set<number>();
  for (const name of names) {
    const file = parseSegmentFileName(name);
    if (file === null) continue;
    if (file.state !== '') remove(name, 'leftover');
    else if (file.kind === LOG_FILE_SUFFIX) logs.add(file.baseOffset);
  }
  for (const name of names) {
    const file = parseSegmentFileName(name);
    if (file !== null && file.state === '' && file.kind === INDEX_FILE_SUFFIX && !logs.has(file.baseOffset)) {
      remove(name, 'orphan_index');
    }
  }
  const recoveryPoint = checkpoint?.recoveryPoint ?? null;
  const report = (
    kind: LogTruncationKind,
    segment: LogSegment,
    position: number,
    truncatedBytes: number,
    deletedFiles: readonly string[] = [],
  ): void => {
    listener?.onTruncation?.({
      kind,
      dir,
      file: segment.path,
      offset: segment.nextOffset,
      position,
      truncatedBytes,
      deletedFiles,
      recoveryPoint,
    });
  };
  const segments: LogSegment[] = [];
  const baseOffsets = [...logs].sort((a, b) => a - b);
  let isCutBelowRecoveryPoint = false;
  try {
    for (let i = 0; i < baseOffsets.length; i++) {
      const isLast = i === baseOffsets.length - 1;
      // After a clean shutdown nothing needs validating; after an unclean stop, what the recovery point
      // does not cover; without a checkpoint, everything.
      let mode: SegmentOpenMode = 'validate';
      if (checkpoint !== null) {
        const isCovered =
          checkpoint.isCleanShutdown || (!isLast && baseOffsets[i + 1]! <= checkpoint.recoveryPoint);
        if (isCovered) mode = 'load';
      }
      const segment = LogSegment.open(dir, baseOffsets[i]!, interval, nowMs, '', mode);
      segments.push(segment);
      if (segment.wasIndexMissing || segment.indexEntriesDropped > 0 || segment.indexEntriesAdded > 0) {
        listener?.onIndexRebuild?.({
          dir,
          file: segment.indexPath,
          wasMissing: segment.wasIndexMissing,
          droppedEntries: segment.indexEntriesDropped,
          addedEntries: segment.indexEntriesAdded,
        });
      }
      const previous = segments[segments.length - 2];
      if (previous !== undefined && previous.nextOffset > segment.baseOffset) {
        // Overlap cannot come from cohort's own writes; trust the older segment up to the newer one's start.
        const position = previous.translateOffset(segment.baseOffset);
        const bytes = previous.truncateTo(segment.baseOffset);
        report('overlap', previous, position, bytes);
      }
      const invalidBytes = segment.invalidTailBytes;
      if (invalidBytes > 0) {
        const lostOffset = segment.nextOffset;
        const position = segment.invalidTailPosition;
        // Fsynced data cannot be torn by a crash. Without a checkpoint, a sealed segment's data counts as
        // fsynced: every sync after its roll covered it.
        const isDamage = recoveryPoint === null ? !isLast : lostOffset < recoveryPoint;
        if (isDamage) {
          if (recovery.truncateCorruptLogs !== true) {
            throw new CorruptLogError(segment.path, lostOffset, position, invalidBytes, recoveryPoint);
          }
          const removedBytes = segment.removeInvalidRegions();
          isCutBelowRecoveryPoint = true;
          listener?.onTruncation?.({
            kind: 'corrupt',
            dir,
            file: segment.path,
            offset: lostOffset,
            position,
            truncatedBytes: removedBytes,
            deletedFiles: [],
            recoveryPoint,
          });
        } else {
          segment.cutInvalidTail();
          const deletedFiles: string[] = [];
          let deletedBytes = 0;
          for (const later of baseOffsets.slice(i + 1)) {
            for (const kind of [LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX] as const) {
              const file = segmentFilePath(dir, later, kind);
              if (kind === LOG_FILE_SUFFIX && fs.existsSync(file)) {
                deletedBytes += fs.statSync(file).size;
                deletedFiles.push(file);
              }
              remove(path.basename(file));
            }
          }
          report('torn_tail', segment, position, invalidBytes + deletedBytes, deletedFiles);
          break;
        }
      }
      if (segment.isEmpty && !isLast && invalidBytes === 0) {
        // An empty segment that is not the last holds no offsets: drop it rather than keep a hole.
        segments.pop();
        segment.close();
        listener?.onFileRemoved?.(dir, segment.path, 'empty_segment');
        segment.deleteFiles();
        isChanged = true;
      }
    }
    const last = segments[segments.length - 1];
    if (
      isCutBelowRecoveryPoint &&
      last !== undefined &&
      recoveryPoint !== null &&
      last.nextOffset < recoveryPoint
    ) {
      // Offsets up to the recovery point were handed out (and perhaps read): the log goes on after them.
      if (last.isEmpty) {
        segments.pop();
        last.close();
        last.deleteFiles();
      }
      segments.push(LogSegment.create(dir, recoveryPoint, interval, nowMs));
      isChanged = true;
    }
  } catch (error) {
    for (const segment of segments) segment.close();
    throw error;
  }
  if (isChanged) syncOrClose(dir, segments);
  return { segments, checkpoint };
}
