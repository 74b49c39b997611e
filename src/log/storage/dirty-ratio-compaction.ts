import type { CompactionResult, PartitionLog } from './partition-log';

/** Kafka's min.cleanable.dirty.ratio. */
export const DEFAULT_MIN_CLEANABLE_DIRTY_RATIO = 0.5;

export interface DirtyRatioCompactionOptions {
  /** Compaction cleans only segments wholly below this offset (the owner passes its high watermark). */
  readonly maxOffset: () => number;
  readonly minCleanableDirtyRatio?: number;
  /** A background compaction failed (the log stays as it was; a later append may try again). */
  readonly onError?: (error: unknown) => void;
}

/**
 * When a compacted log is compacted (Kafka's LogCleanerManager, for one log): `maybeCompact()` after an
 * append starts a background compaction once the log holds a sealed segment and at least
 * `minCleanableDirtyRatio` of its bytes were written since the last one (Kafka's
 * min.cleanable.dirty.ratio). Each pass reads the sealed segments below `maxOffset` once; the next waits
 * for the log to have grown by the ratio again, so cleaning reads a bounded amount per byte appended and
 * the log stays within about twice its live data plus one segment.
 *
 * Worked example, ratio 0.5: a pass leaves 10 MB; none starts again until the log is 20 MB (10 MB of it
 * new since the pass).
 */
export class DirtyRatioCompaction {
  private readonly minCleanableDirtyRatio: number;
  private compactingValue: Promise<CompactionResult> | null = null;
  /** The log's size right after the last compaction: what is beyond it is dirty. */
  private cleanBytes = 0;

  constructor(
    private readonly log: PartitionLog,
    private readonly options: DirtyRatioCompactionOptions,
  ) {
    const ratio = options.minCleanableDirtyRatio ?? DEFAULT_MIN_CLEANABLE_DIRTY_RATIO;
    if (!(ratio > 0 && ratio <= 1)) {
      throw new RangeError(`minCleanableDirtyRatio must be in (0, 1], got ${ratio}`);
    }
    this.minCleanableDirtyRatio = ratio;
  }

  /** The compaction running now, if any. */
  get compacting(): Promise<CompactionResult> | null {
    return this.compactingValue;
  }

  /** Compacts below `maxOffset()` now; concurrent calls share one run. */
  compact(): Promise<CompactionResult> {
    this.compactingValue ??= this.log
      .compact(this.options.maxOffset())
      .then((result) => {
        if (!result.isAborted) this.cleanBytes = result.bytesAfter;
        return result;
      })
      .finally(() => {
        this.compactingValue = null;
      });
    return this.compactingValue;
  }

  /** Starts a compaction in the background if the dirty share of the log has reached the ratio. */
  maybeCompact(): void {
    if (this.compactingValue !== null) return;
    const log = this.log;
    if (log.numberOfSegments < 2) return;
    const size = log.sizeInBytes;
    if (size - this.cleanBytes < size * this.minCleanableDirtyRatio) return;
    this.compact().catch((error: unknown) => this.options.onError?.(error));
  }
}
