import type {
  CoordinatorLoadSummary,
  CoordinatorPartitionWriter,
  CoordinatorRecordToWrite,
} from './coordinator-partition-writer';

const COMMITTED: Promise<void> = Promise.resolve();

/**
 * The `__consumer_offsets` partition of a coordinator without a log (GroupCoordinator on its own:
 * embedders, tests, benches). It starts empty and loaded, and every append is committed as it is made
 * (`commitsOnAppend`): the shard replays a write's records and ends it before the handler that made it
 * goes on, as a log whose high watermark passed them at once would. It keeps nothing, and never reads the
 * records (so they are never serialized): the shard's replay of what was written is the only copy, and
 * lives as long as the process.
 */
export class InMemoryPartitionWriter implements CoordinatorPartitionWriter {
  readonly key: string;
  readonly leaderEpoch: number;
  readonly isLoaded = true;
  readonly isResigned = false;
  readonly commitsOnAppend = true;

  constructor(partitionIndex = 0, leaderEpoch = 0) {
    this.key = `__consumer_offsets-${partitionIndex}`;
    this.leaderEpoch = leaderEpoch;
  }

  /** Nothing to read: the partition starts empty. */
  load(): Promise<CoordinatorLoadSummary> {
    return Promise.resolve({
      records: 0,
      bytes: 0,
      startOffset: 0,
      endOffset: 0,
      corruptBatches: 0,
      corruptBytes: 0,
    });
  }

  append(_records: readonly CoordinatorRecordToWrite[]): Promise<void> {
    return COMMITTED;
  }
}
