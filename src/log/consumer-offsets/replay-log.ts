import { CohortError, ErrorCode } from '../../errors';
import type { LogRecord, PartitionLog } from '../storage';

/**
 * Replays a log from its start to the log end offset it had when the replay began, handing each record to
 * `apply` in offset order (Kafka's `GroupMetadataManager.loadGroupsAndOffsets`). It reads at most
 * `maxBytesPerRead` per step and yields to the event loop between steps, so a large log is loaded while
 * the server keeps answering (COORDINATOR_LOAD_IN_PROGRESS, health checks) instead of blocking for the
 * whole load. Compaction gaps and empty batches are skipped by the reads themselves.
 */
export interface ReplayOptions {
  /** Bytes read per step; default 5 MiB (Kafka's offsets.load.buffer.size). */
  readonly maxBytesPerRead?: number;
  /** Awaited between steps; default one `setImmediate` turn. */
  readonly pause?: () => Promise<void>;
}

export interface ReplayResult {
  readonly records: number;
  readonly bytes: number;
  /** Offsets [startOffset, endOffset) were replayed. */
  readonly startOffset: number;
  readonly endOffset: number;
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
  let offset = startOffset;
  let records = 0;
  let bytes = 0;
  while (offset < endOffset) {
    const read = log.read(offset, maxBytes, { maxOffset: endOffset });
    if (read.nextFetchOffset <= offset) {
      throw new CohortError(ErrorCode.CORRUPT_MESSAGE, `replay of ${log.dir} made no progress at ${offset}`);
    }
    for (const record of read.records) apply(record);
    records += read.records.length;
    bytes += read.sizeInBytes;
    offset = read.nextFetchOffset;
    if (offset < endOffset) await pause();
  }
  return { records, bytes, startOffset, endOffset };
}
