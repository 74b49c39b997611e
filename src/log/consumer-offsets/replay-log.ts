import { type CorruptRegion, type LogRecord, type PartitionLog, RecordBatch } from '../storage';

/**
 * Replays a log from its start to the log end offset it had when the replay began, handing each record to
 * `apply` in offset order (Kafka's `GroupMetadataManager.loadGroupsAndOffsets`). It yields to the event
 * loop after every `maxBytesPerRead` bytes, so a large log is loaded while the server keeps answering
 * (COORDINATOR_LOAD_IN_PROGRESS, health checks) instead of blocking for the whole load. Compaction gaps
 * and empty batches need no handling: offsets simply skip.
 *
 * A batch that fails its CRC or header checks is skipped, reported to `onCorruptBatch`, and the replay
 * goes on with the next valid batch (`PartitionLog.replayBatches`): the records it held are lost to the
 * view (the keys they wrote keep their earlier values), every later record still loads.
 */
export interface ReplayOptions {
  /** Bytes replayed between two pauses; default 5 MiB (Kafka's offsets.load.buffer.size). */
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

export const DEFAULT_LOAD_BUFFER_BYTES = 5 * 1024 * 1024;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export async function replayLog(
  log: PartitionLog,
  apply: (record: LogRecord) => void,
  options: ReplayOptions = {},
): Promise<ReplayResult> {
  const maxBytes = options.maxBytesPerRead ?? DEFAULT_LOAD_BUFFER_BYTES;
  const pause = options.pause ?? nextTurn;
  const startOffset = log.logStartOffset;
  const endOffset = log.logEndOffset;
  let records = 0;
  let bytes = 0;
  let corruptBatches = 0;
  let corruptBytes = 0;
  let stepBytes = 0;
  for (const item of log.replayBatches(endOffset)) {
    if (!(item instanceof RecordBatch)) {
      corruptBatches++;
      corruptBytes += item.sizeInBytes;
      options.onCorruptBatch?.(item);
      continue;
    }
    for (const record of item.records()) {
      if (record.offset >= endOffset) break;
      apply(record);
      records++;
    }
    bytes += item.sizeInBytes;
    stepBytes += item.sizeInBytes;
    if (stepBytes >= maxBytes) {
      stepBytes = 0;
      await pause();
    }
  }
  return { records, bytes, startOffset, endOffset, corruptBatches, corruptBytes };
}
