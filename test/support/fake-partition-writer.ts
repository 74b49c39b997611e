import { CohortError, ErrorCode } from '../../src/errors';
import type {
  CoordinatorLoadSummary,
  CoordinatorLogRecord,
  CoordinatorPartitionWriter,
  CoordinatorRecordToWrite,
} from '../../src/group';

interface PendingAppend {
  readonly records: readonly CoordinatorRecordToWrite[];
  /** The same records as they joined the partition, with their offsets. */
  readonly logRecords: readonly CoordinatorLogRecord[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  /** The append's promise, settled or not, as the coordinator got it. */
  readonly outcome: Promise<void>;
}

/**
 * A `__consumer_offsets` partition in memory for the group layer's tests: its records are a list, a load
 * replays them (and resolves when the test says, `releaseLoad`, or at once), and appends join the list as
 * they are made but resolve only when the test releases them (`releaseAppends`), oldest first, or fails
 * one (`failAppend`): what the coordinator does between writing a record and seeing it committed is
 * visible and steerable, as Kafka's coordinator tests steer their MockPartitionWriter.
 */
export class FakePartitionWriter implements CoordinatorPartitionWriter {
  readonly key: string;
  readonly leaderEpoch: number;
  /** Every record in the partition, in offset order (appended ones as soon as they are appended). */
  readonly records: CoordinatorLogRecord[] = [];
  readonly pending: PendingAppend[] = [];
  /**
   * The records committed so far, in offset order: those the partition started with, then those of every
   * append released (not those of an append still pending, failed, or ended by the resignation). What a
   * restart on this partition loads.
   */
  readonly committed: CoordinatorLogRecord[] = [];
  /** False: loads resolve only at `releaseLoad()`. */
  isLoadImmediate = true;
  /** When set, every append is refused at once with it, and nothing joins the partition. */
  rejectAppendsWith: unknown = undefined;
  private phase: 'new' | 'loading' | 'ready' | 'resigned' = 'new';
  private loadReleased: (() => void) | undefined;
  private loadFailed: ((error: unknown) => void) | undefined;

  constructor(partitionIndex = 0, leaderEpoch = 0, records: readonly CoordinatorRecordToWrite[] = []) {
    this.key = `__consumer_offsets-${partitionIndex}`;
    this.leaderEpoch = leaderEpoch;
    for (const record of records) this.records.push({ offset: this.records.length, ...record });
    this.committed.push(...this.records);
  }

  get isLoaded(): boolean {
    return this.phase === 'ready';
  }

  get isResigned(): boolean {
    return this.phase === 'resigned';
  }

  async load(replay: (record: CoordinatorLogRecord) => void): Promise<CoordinatorLoadSummary> {
    this.phase = 'loading';
    const endOffset = this.records.length;
    for (const record of this.records.slice(0, endOffset)) replay(record);
    if (!this.isLoadImmediate) {
      await new Promise<void>((resolve, reject) => {
        this.loadReleased = resolve;
        this.loadFailed = reject;
      });
    }
    if (this.phase !== 'loading') throw this.notLeading();
    this.phase = 'ready';
    return {
      records: endOffset,
      bytes: 0,
      startOffset: 0,
      endOffset,
      corruptBatches: 0,
      corruptBytes: 0,
    };
  }

  /** Ends a load held by `isLoadImmediate = false`. */
  releaseLoad(): void {
    this.loadReleased?.();
  }

  /** Fails a load held by `isLoadImmediate = false` with `error` (what reading the log failed with). */
  failLoad(error: unknown): void {
    this.loadFailed?.(error);
  }

  append(records: readonly CoordinatorRecordToWrite[]): Promise<void> {
    if (this.phase !== 'ready') {
      return Promise.reject(
        this.phase === 'resigned'
          ? this.notLeading()
          : new CohortError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, `${this.key} is still loading`),
      );
    }
    if (this.rejectAppendsWith !== undefined) return Promise.reject(this.rejectAppendsWith);
    const logRecords: CoordinatorLogRecord[] = [];
    for (const record of records) {
      const logRecord = { offset: this.records.length, key: record.key, value: record.value };
      this.records.push(logRecord);
      logRecords.push(logRecord);
    }
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const outcome = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.pending.push({ records, logRecords, resolve, reject, outcome });
    return outcome;
  }

  /**
   * Resolves once the pending append at `index` has settled, however: the coordinator's callbacks on it,
   * attached when it appended, have run by then (a test awaits an append whose caller is gone).
   */
  pendingOutcome(index: number): Promise<void> {
    const append = this.pending[index];
    if (append === undefined) throw new Error(`no append pending at ${index}`);
    return append.outcome.then(
      () => undefined,
      () => undefined,
    );
  }

  /** Commits the oldest `count` appends (all by default), in order. */
  releaseAppends(count = this.pending.length): void {
    for (const append of this.pending.splice(0, count)) {
      if (this.phase === 'resigned') append.reject(this.notLeading());
      else {
        this.committed.push(...append.logRecords);
        append.resolve();
      }
    }
  }

  /** Fails the oldest append with `error`. */
  failAppend(error: unknown): void {
    const append = this.pending.shift();
    if (append === undefined) throw new Error('no append is pending');
    append.reject(error);
  }

  resign(): void {
    this.phase = 'resigned';
  }

  private notLeading(): CohortError {
    return new CohortError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${this.key} is not led here any more`);
  }
}
