import type { LocalLog } from './local-log';
import { isTombstone, type LogRecord } from './log-record';
import { type CorruptRegion, LogSegment } from './log-segment';
import { MAX_OFFSET_DELTA, RecordBatch } from './record-batch';
import { CLEANED_FILE_SUFFIX } from './segment-file-names';

/**
 * Compaction of a log, after Kafka's LogCleaner, in two passes over the cleanable segments (every segment
 * but the active one, which is still being written):
 *
 * 1. `buildOffsetMap`: key → offset of the last record with that key.
 * 2. `cleanGroup`, per group of consecutive segments whose sizes add up to at most one segment: write a
 *    `.cleaned` segment at the group's base offset holding only the records that are still the latest for
 *    their key and are not tombstones (null or empty value). Batches keep their base and last offsets and
 *    their leader epoch, so offsets never change (gaps are allowed) and the leader-epoch cache stays
 *    right; a batch left with no record is dropped, except the group's last one, which stays as an empty
 *    batch so the cleaned segment ends where the group did. That end is how recovery knows which
 *    segments an interrupted swap replaces (see `log-loader.ts`).
 *
 * Keyless records are dropped, as Kafka's cleaner does (a compacted log rejects them on append anyway).
 * Bytes that hold no valid batch (damage in a sealed segment, found by `LogSegment.scanBatches`) are
 * skipped by both passes and left out of the cleaned segment; the cleaner returns them so the log can
 * report what it removed. Kafka's cleaner stops at such a batch and never cleans the log again.
 * A tombstone is removed in the same pass that removes the records it deletes: every older record of its
 * key is in the cleaned range, and newer ones (in the active segment) are never touched.
 *
 * Worked example: segments [0: a=1 b=1] [2: a=2 b=<tombstone>] [4: c=1 (active)] clean to one segment
 * [0: a=2 at offset 2, empty batch ending at 3] and the active segment; reads from 0 return a=2, c=1.
 *
 * Both passes stop every `pauseEveryBytes` to let other work run; `pause` resolves false when the log
 * changed under the cleaner (truncation, close), which abandons the pass.
 *
 * `cleanLog` runs both passes over a log's cleanable segments and swaps each cleaned group in as soon as
 * it is written (`LocalLog.replaceSegments`), so an abort keeps the groups already swapped.
 */
export const PAUSE_EVERY_BYTES = 1 << 20;

export interface CompactionResult {
  readonly isAborted: boolean;
  readonly segmentsBefore: number;
  readonly segmentsAfter: number;
  readonly recordsRemoved: number;
  readonly bytesBefore: number;
  readonly bytesAfter: number;
}

export interface CleanedGroup {
  readonly cleaned: LogSegment;
  readonly recordsRemoved: number;
  /** Damaged bytes of the group that the cleaned segment leaves out (the caller reports them). */
  readonly corruptRegions: readonly CorruptRegion[];
}

function keyOf(record: LogRecord): string | null {
  return record.key === null ? null : record.key.toString('latin1');
}

/** key (as a latin1 string: one char per byte) → offset of its last record in `segments`. Null if aborted. */
export async function buildOffsetMap(
  segments: readonly LogSegment[],
  pause: () => Promise<boolean>,
  pauseEveryBytes = PAUSE_EVERY_BYTES,
): Promise<Map<string, number> | null> {
  const offsetMap = new Map<string, number>();
  let bytesSincePause = 0;
  for (const segment of segments) {
    for (const batch of segment.scanBatches()) {
      if (!(batch instanceof RecordBatch)) continue;
      for (const record of batch.records()) {
        const key = keyOf(record);
        if (key !== null) offsetMap.set(key, record.offset);
      }
      bytesSincePause += batch.sizeInBytes;
      if (bytesSincePause >= pauseEveryBytes) {
        bytesSincePause = 0;
        if (!(await pause())) return null;
      }
    }
  }
  return offsetMap;
}

/** Splits segments into runs that fit one segment of `maxSegmentBytes` and 32-bit relative offsets. */
export function groupSegmentsBySize(
  segments: readonly LogSegment[],
  maxSegmentBytes: number,
): LogSegment[][] {
  const groups: LogSegment[][] = [];
  let i = 0;
  while (i < segments.length) {
    const first = segments[i]!;
    const group = [first];
    let size = first.sizeInBytes;
    for (i++; i < segments.length; i++) {
      const next = segments[i]!;
      if (size + next.sizeInBytes > maxSegmentBytes) break;
      if (next.nextOffset - 1 - first.baseOffset > MAX_OFFSET_DELTA) break;
      group.push(next);
      size += next.sizeInBytes;
    }
    groups.push(group);
  }
  return groups;
}

/**
 * Writes and fsyncs the cleaned replacement of `group` as `<base>.log.cleaned` / `.index.cleaned`.
 * Returns null (and removes the partial files) if `pause` reports the log changed.
 */
export async function cleanGroup(
  group: readonly LogSegment[],
  offsetMap: ReadonlyMap<string, number>,
  indexIntervalBytes: number,
  createdMonotonicMs: number,
  pause: () => Promise<boolean>,
  pauseEveryBytes = PAUSE_EVERY_BYTES,
): Promise<CleanedGroup | null> {
  const first = group[0]!;
  const groupEnd = group[group.length - 1]!.nextOffset;
  const cleaned = LogSegment.create(
    first.dir,
    first.baseOffset,
    indexIntervalBytes,
    createdMonotonicMs,
    CLEANED_FILE_SUFFIX,
  );
  let isDone = false;
  try {
    let recordsRemoved = 0;
    let bytesSincePause = 0;
    let lastBatch: { baseOffset: number; maxTimestampMs: number; partitionLeaderEpoch: number } | null = null;
    const corruptRegions: CorruptRegion[] = [];
    for (const segment of group) {
      for (const batch of segment.scanBatches()) {
        if (!(batch instanceof RecordBatch)) {
          corruptRegions.push(batch);
          continue;
        }
        const records = batch.records();
        const kept = records.filter((record) => {
          const key = keyOf(record);
          return key !== null && !isTombstone(record) && offsetMap.get(key) === record.offset;
        });
        recordsRemoved += records.length - kept.length;
        if (kept.length > 0) {
          cleaned.append(
            RecordBatch.encode(kept, {
              baseOffset: batch.baseOffset,
              lastOffset: batch.lastOffset,
              partitionLeaderEpoch: batch.partitionLeaderEpoch,
            }),
          );
        }
        lastBatch = {
          baseOffset: batch.baseOffset,
          maxTimestampMs: batch.maxTimestampMs,
          partitionLeaderEpoch: batch.partitionLeaderEpoch,
        };
        bytesSincePause += batch.sizeInBytes;
        if (bytesSincePause >= pauseEveryBytes) {
          bytesSincePause = 0;
          if (!(await pause())) return null;
        }
      }
    }
    if (lastBatch !== null && cleaned.nextOffset < groupEnd) {
      cleaned.append(
        RecordBatch.encode([], {
          baseOffset: Math.max(lastBatch.baseOffset, cleaned.nextOffset),
          lastOffset: groupEnd - 1,
          defaultTimestampMs: lastBatch.maxTimestampMs,
          partitionLeaderEpoch: lastBatch.partitionLeaderEpoch,
        }),
      );
    }
    // The cleaned segment replaces older ones and takes no appends: it keeps no tail batch in memory.
    cleaned.releaseTail();
    await cleaned.flush();
    if (!(await pause())) return null;
    isDone = true;
    return { cleaned, recordsRemoved, corruptRegions };
  } finally {
    if (!isDone) {
      cleaned.close();
      cleaned.deleteFiles();
    }
  }
}

const pauseImmediately = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Compacts the segments of `log` that lie wholly below `maxOffset`, never the active one (see
 * `PartitionLog.compact`). A lone segment whose cleaning removes nothing is left as it is. The run is
 * abandoned (`isAborted`) when `isClosing` says so, or when a segment it read changed meanwhile (a
 * truncation, a retention deletion). Damage the cleaner read past is left out of the cleaned segment and
 * handed to `onDamageRemoved` once that segment is in the log.
 */
export async function cleanLog(
  log: LocalLog,
  maxOffset: number,
  isClosing: () => boolean,
  onDamageRemoved: (region: CorruptRegion) => void,
): Promise<CompactionResult> {
  let cleanableCount = 0;
  while (
    cleanableCount < log.segments.length - 1 &&
    log.segments[cleanableCount + 1]!.baseOffset <= maxOffset
  ) {
    cleanableCount++;
  }
  const cleanable = log.segments.slice(0, cleanableCount);
  const segmentsBefore = log.segments.length;
  const bytesBefore = log.sizeInBytes;
  // The offset map describes every cleanable segment, so a change to any of them (not only to the group
  // being cleaned) makes it stale: a truncation could remove the record that made an older one obsolete.
  const tracked = new Map(cleanable.map((segment) => [segment, segment.sizeInBytes]));
  let recordsRemoved = 0;
  const result = (isAborted: boolean): CompactionResult => ({
    isAborted,
    segmentsBefore,
    segmentsAfter: log.segments.length,
    recordsRemoved,
    bytesBefore,
    bytesAfter: log.sizeInBytes,
  });
  const isIntact = (): boolean => {
    if (isClosing()) return false;
    const present = new Set(log.segments);
    for (const [segment, size] of tracked) {
      if (segment.isClosed || !present.has(segment) || segment.sizeInBytes !== size) return false;
    }
    return true;
  };
  const pause = async (): Promise<boolean> => {
    await pauseImmediately();
    return isIntact();
  };
  if (cleanable.length === 0) return result(false);
  const offsetMap = await buildOffsetMap(cleanable, pause);
  if (offsetMap === null) return result(true);
  for (const group of groupSegmentsBySize(cleanable, log.config.segmentBytes)) {
    if (!isIntact()) return result(true);
    const cleaned = await cleanGroup(
      group,
      offsetMap,
      log.config.indexIntervalBytes,
      group[0]!.createdMonotonicMs,
      pause,
    );
    if (cleaned === null) return result(true);
    if (cleaned.recordsRemoved === 0 && group.length === 1 && cleaned.corruptRegions.length === 0) {
      cleaned.cleaned.close();
      cleaned.cleaned.deleteFiles();
      continue;
    }
    log.replaceSegments(group, cleaned.cleaned);
    for (const region of cleaned.corruptRegions) onDamageRemoved(region);
    for (const old of group) tracked.delete(old);
    tracked.set(cleaned.cleaned, cleaned.cleaned.sizeInBytes);
    recordsRemoved += cleaned.recordsRemoved;
  }
  return result(false);
}
