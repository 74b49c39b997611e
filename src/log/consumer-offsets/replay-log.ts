import { SYSTEM_TIME, type Time, TurnBudget } from '../../time';
import { type CorruptRegion, type LogRecord, type PartitionLog, RecordBatch } from '../storage';

/**
 * Replays a log from its start to the log end offset it had when the replay began, handing each record to
 * `apply` in offset order (Kafka's `GroupMetadataManager.loadGroupsAndOffsets`). It works in steps of at
 * most DEFAULT_TURN_BUDGET_MS (10 ms) on `time`'s monotonic clock, checked after every record, and at most
 * `maxBytesPerRead` bytes, yielding to the event loop between two steps (TurnBudget), so a large log is
 * loaded while the server keeps answering (COORDINATOR_LOAD_IN_PROGRESS, health checks, other partitions'
 * heartbeats) instead of blocking for the whole load. Compaction gaps and empty batches need no handling:
 * offsets simply skip.
 *
 * A batch that fails its CRC or header checks is skipped, reported to `onCorruptBatch`, and the replay
 * goes on with the next valid batch (`PartitionLog.replayBatches`): the records it held are lost to the
 * view (the keys they wrote keep their earlier values), every later record still loads.
 */
export interface ReplayOptions {
  /** The clock a step's time is measured on; default the system clock. */
  readonly time?: Time;
  /**
   * Bytes replayed in one step at most; default DEFAULT_LOAD_STEP_BYTES. What ends a step on a clock
   * that does not move (a ManualTime); on a real clock the step's time usually ends it first.
   */
  readonly maxBytesPerRead?: number;
  /** Awaited between steps; default one `setImmediate` turn. */
  readonly pause?: () => Promise<void>;
  /** Damage skipped by the replay (the store logs and counts it). */
  readonly onCorruptBatch?: (region: CorruptRegion) => void;
}

export interface ReplayResult {
  readonly records: number;
  readonly bytes: number;
  /** Offsets [startOffset, endOffset) were replayed. */
  readonly startOffset: number;
  readonly endOffset: number;
  /** Regions of the log skipped because they held no valid batch, and their bytes. */
  readonly corruptBatches: number;
  readonly corruptBytes: number;
}

/**
 * The byte bound of a replay step: one read of the segment scanner (its 1 MiB chunk, which is what bounds
 * the replay's memory; Kafka's offsets.load.buffer.size is its 5 MiB read buffer). It bounds a step where
 * the time bound cannot, on a clock that does not move; 1 MiB decoded in 20-40 ms on the bench machine when the
 * load was written (bench:cluster's load section), so on a real clock the 10 ms time bound ends a step long before it.
 */
export const DEFAULT_LOAD_STEP_BYTES = 1024 * 1024;

export async function replayLog(
  log: PartitionLog,
  apply: (record: LogRecord) => void,
  options: ReplayOptions = {},
): Promise<ReplayResult> {
  const budget = new TurnBudget(options.time ?? SYSTEM_TIME, {
    maxUnits: options.maxBytesPerRead ?? DEFAULT_LOAD_STEP_BYTES,
    ...(options.pause === undefined ? {} : { pause: options.pause }),
  });
  const startOffset = log.logStartOffset;
  const endOffset = log.logEndOffset;
  let records = 0;
  let bytes = 0;
  let corruptBatches = 0;
  let corruptBytes = 0;
  for (const item of log.replayBatches(endOffset)) {
    budget.spend(item.sizeInBytes);
    if (!(item instanceof RecordBatch)) {
      corruptBatches++;
      corruptBytes += item.sizeInBytes;
      options.onCorruptBatch?.(item);
    } else {
      // The time is checked per record, not per batch: one batch may hold a megabyte of group records.
      // A pause inside a batch is safe: the batch's bytes stay in memory for its remaining records.
      for (const record of item.records()) {
        if (record.offset >= endOffset) break;
        apply(record);
        records++;
        if (budget.isSpent()) await budget.nextStep();
      }
      bytes += item.sizeInBytes;
    }
    if (budget.isSpent()) await budget.nextStep();
  }
  return { records, bytes, startOffset, endOffset, corruptBatches, corruptBytes };
}
