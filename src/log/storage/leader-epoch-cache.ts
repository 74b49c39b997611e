import * as path from 'node:path';
import { CohortError, ErrorCode } from '../../errors';
import {
  isOffset,
  parseCheckpointJson,
  readCheckpointFile,
  writeCheckpointFileSync,
} from './checkpoint-file';

/**
 * A partition's leader epochs and the offset each started at, after Kafka's LeaderEpochFileCache (KIP-101,
 * KIP-279): the entries (epoch, startOffset) say that the leader of `epoch` wrote offsets from
 * `startOffset` until the next entry's start offset (the latest epoch: until the log end). Both columns
 * increase strictly. A follower asks its leader for `endOffsetFor(its latest epoch)` and truncates to the
 * answer, so it never keeps records a later leader did not have.
 *
 * - Assignment: a leader append in a new epoch, or a follower append of a batch carrying a new epoch,
 *   adds (epoch, batch base offset). The same epoch again changes nothing. An epoch below the latest
 *   (records out of order: a stale leader, or a follower that did not truncate first) is refused and
 *   reported, as Kafka 1.x does, rather than cutting entries the log still holds batches for.
 * - Truncation: the log's `truncateTo` removes the entries starting at or after the new log end;
 *   `truncateFullyAndStartAt` removes all; retention (the log start moving up) removes the entries wholly
 *   below the new start and moves the one covering it to it.
 *
 * Worked example: entries [(0, 0), (2, 40), (5, 90)], log end 120. endOffsetFor(5) = {5, 120} (latest:
 * the log end); endOffsetFor(3) = {2, 90} (epoch 3 never wrote: epoch 2's records end where epoch 5's
 * start); endOffsetFor(0) = {0, 40}; endOffsetFor(6) = {-1, -1}. truncateTo(60) leaves [(0, 0), (2, 40)];
 * retention to log start 50 leaves [(2, 50), (5, 90)].
 *
 * On disk: `<partition-dir>/leader-epoch-checkpoint`, one JSON line
 * `{"version":1,"entries":[{"epoch":0,"startOffset":0},{"epoch":2,"startOffset":40}]}`, rewritten
 * crash-safely (`checkpoint-file.ts`) and synchronously whenever an entry is added or removed (a new epoch
 * or a truncation: rare), before the append that needs it writes its batch, as Kafka does. The file can
 * therefore be ahead of the log after a crash (an entry for a batch that was torn away), never behind;
 * the open trims it to the recovered log. A move of the first entry alone (retention) is not written: the
 * open applies the log start again. A directory without the file (data written before leader epochs) or
 * with a damaged one gets its cache rebuilt from the batches' epochs at open.
 */
export const LEADER_EPOCH_CHECKPOINT_FILE = 'leader-epoch-checkpoint';
/** Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET: what `endOffsetFor` answers for an unknown epoch. */
export const UNDEFINED_EPOCH = -1;
export const UNDEFINED_EPOCH_OFFSET = -1;
const VERSION = 1;

export interface EpochEntry {
  readonly epoch: number;
  readonly startOffset: number;
}

/** The answer to OffsetForLeaderEpoch: the largest epoch at or below the one asked for, and where it ended. */
export interface EpochEndOffset {
  readonly leaderEpoch: number;
  readonly endOffset: number;
}

/** Reported when an assignment is refused (the server logs it as a warning). */
export type EpochRefusedListener = (epoch: number, startOffset: number, latest: EpochEntry) => void;

const UNDEFINED: EpochEndOffset = Object.freeze({
  leaderEpoch: UNDEFINED_EPOCH,
  endOffset: UNDEFINED_EPOCH_OFFSET,
});

export function leaderEpochCheckpointPath(dir: string): string {
  return path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE);
}

/** The entries the file of `dir` holds; `null` without a file, `'unreadable'` when it does not parse. */
export function readLeaderEpochCheckpoint(dir: string): EpochEntry[] | 'unreadable' | null {
  const text = readCheckpointFile(leaderEpochCheckpointPath(dir));
  if (text === null) return null;
  const value = parseCheckpointJson(text, VERSION);
  if (value === 'unreadable' || !Array.isArray(value.entries)) return 'unreadable';
  const entries: EpochEntry[] = [];
  for (const item of value.entries as unknown[]) {
    if (typeof item !== 'object' || item === null) return 'unreadable';
    const { epoch, startOffset } = item as Record<string, unknown>;
    if (!isOffset(epoch) || !isOffset(startOffset)) return 'unreadable';
    const previous = entries[entries.length - 1];
    if (previous !== undefined && (epoch <= previous.epoch || startOffset <= previous.startOffset)) {
      return 'unreadable';
    }
    entries.push({ epoch, startOffset });
  }
  return entries;
}

export function writeLeaderEpochCheckpointSync(dir: string, entries: readonly EpochEntry[]): void {
  const text = JSON.stringify({
    version: VERSION,
    entries: entries.map(({ epoch, startOffset }) => ({ epoch, startOffset })),
  });
  writeCheckpointFileSync(leaderEpochCheckpointPath(dir), `${text}\n`);
}

export class LeaderEpochCache {
  private entries: readonly EpochEntry[];

  /**
   * `entries` must increase strictly in both columns; `logEndOffset` is the owning log's. The log builds
   * the cache (see `PartitionLog.open`); only the log changes it.
   */
  constructor(
    readonly dir: string,
    entries: readonly EpochEntry[],
    private readonly logEndOffset: () => number,
    private readonly onRefused?: EpochRefusedListener,
  ) {
    this.entries = Object.freeze(entries.map((entry) => Object.freeze({ ...entry })));
  }

  get file(): string {
    return leaderEpochCheckpointPath(this.dir);
  }

  /** The latest epoch, or -1 (UNDEFINED_EPOCH) when there is none. */
  latestEpoch(): number {
    return this.entries[this.entries.length - 1]?.epoch ?? UNDEFINED_EPOCH;
  }

  /** The entries, oldest first (a frozen snapshot: later changes make a new array). */
  epochEntries(): readonly EpochEntry[] {
    return this.entries;
  }

  /**
   * Kafka's endOffsetFor: for the latest epoch, the log end offset; for an earlier epoch, the largest
   * epoch at or below it and the start offset of the first epoch above it (where its records end);
   * {-1, -1} for an undefined epoch, one below the first entry (its records are gone or never were) and
   * one above the latest (no leader of it wrote here).
   */
  endOffsetFor(requestedEpoch: number): EpochEndOffset {
    const entries = this.entries;
    const count = entries.length;
    if (requestedEpoch === UNDEFINED_EPOCH || count === 0) return UNDEFINED;
    const latest = entries[count - 1]!;
    if (requestedEpoch === latest.epoch) return { leaderEpoch: latest.epoch, endOffset: this.logEndOffset() };
    if (requestedEpoch > latest.epoch || requestedEpoch < entries[0]!.epoch) return UNDEFINED;
    // The last entry at or below the requested epoch: one exists (the first is), and one follows it.
    let low = 0;
    let high = count - 1;
    while (low < high) {
      const mid = (low + high + 1) >>> 1;
      if (entries[mid]!.epoch <= requestedEpoch) low = mid;
      else high = mid - 1;
    }
    return { leaderEpoch: entries[low]!.epoch, endOffset: entries[low + 1]!.startOffset };
  }

  /**
   * Records that the leader of `epoch` wrote from `startOffset` (a batch's base offset at the log end).
   * Returns true if an entry was added. A negative epoch (a batch without one) is ignored. An epoch below
   * the latest, or a new epoch starting before the latest entry, is refused and reported. A new epoch at
   * the latest entry's start offset replaces it (that epoch wrote nothing that is still in the log).
   * Writes the file before returning; throws KAFKA_STORAGE_ERROR, changing nothing, if it cannot.
   */
  assign(epoch: number, startOffset: number): boolean {
    if (epoch < 0) return false;
    const entries = this.entries;
    const latest = entries[entries.length - 1];
    if (latest !== undefined) {
      if (epoch === latest.epoch) return false;
      if (epoch < latest.epoch || startOffset < latest.startOffset) {
        this.onRefused?.(epoch, startOffset, latest);
        return false;
      }
    }
    const kept = latest !== undefined && latest.startOffset === startOffset ? entries.slice(0, -1) : entries;
    this.replace([...kept, { epoch, startOffset }], true, true);
    return true;
  }

  /** Removes the entries starting at or after `endOffset` (the log was truncated to it). */
  truncateFromEnd(endOffset: number): void {
    let count = this.entries.length;
    while (count > 0 && this.entries[count - 1]!.startOffset >= endOffset) count--;
    if (count < this.entries.length) this.replace(this.entries.slice(0, count), true);
  }

  /**
   * The log now starts at `startOffset`: removes the entries wholly below it and moves the one covering it
   * to it. Written only when an entry was removed (a move alone is redone by the next open).
   */
  truncateFromStart(startOffset: number): void {
    const entries = this.entries;
    let first = 0;
    while (first + 1 < entries.length && entries[first + 1]!.startOffset <= startOffset) first++;
    const covering = entries[first];
    if (covering === undefined || (first === 0 && covering.startOffset >= startOffset)) return;
    const moved = covering.startOffset >= startOffset ? covering : { epoch: covering.epoch, startOffset };
    this.replace([moved, ...entries.slice(first + 1)], first > 0);
  }

  /** Removes every entry (the log was emptied). */
  clear(): void {
    if (this.entries.length > 0) this.replace([], true);
  }

  /** Writes the current entries (after a rebuild at open). */
  write(): void {
    this.replace(this.entries, true);
  }

  /**
   * Sets the entries and writes them. When the write fails an assignment changes nothing (its batch is not
   * written either), while a truncation keeps its new entries (the log's records are already gone; the
   * stale file is trimmed by the next open) and throws all the same.
   */
  private replace(entries: readonly EpochEntry[], isWritten: boolean, isAssignment = false): void {
    const frozen = Object.freeze(entries.map((entry) => Object.freeze({ ...entry })));
    if (!isAssignment) this.entries = frozen;
    if (isWritten) {
      try {
        writeLeaderEpochCheckpointSync(this.dir, frozen);
      } catch (error) {
        throw new CohortError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot write ${this.file}`, { cause: error });
      }
    }
    this.entries = frozen;
  }
}
