import * as path from 'node:path';
import {
  isOffset,
  parseCheckpointJson,
  readCheckpointFile,
  writeCheckpointFile,
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
 *   adds (epoch, batch base offset). The same epoch again changes nothing. A leader append with an epoch
 *   below the latest (a stale leader) is refused by the log before anything is written. A follower
 *   append with an epoch below the latest (a follower that did not truncate first) is stored, and the
 *   entries it contradicts (epoch at or above it, or starting at or after it) are removed first, as Kafka
 *   2.x's maybeTruncateNonMonotonicEntries does: the cache always describes the batches the log holds.
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
 * crash-safely (`checkpoint-file.ts`). Changes are made in memory and the file follows off the event loop
 * (`flush`), so no append or truncation waits for an fsync of it. The file may therefore be behind the
 * log, or ahead of it, after a crash; what makes that safe is one rule the log keeps: the recovery-point
 * checkpoint is never written before the file holds every entry starting below that recovery point
 * (`PartitionLog` flushes the cache before each such write). Entries below the checkpointed recovery point
 * are thus exactly right; those at or above it are ignored at open and rebuilt from the batches from the
 * recovery point on, the part of the log an unclean open validates anyway (none after a clean shutdown).
 * See `loadEpochEntries` in `log-loader.ts` for the cases of a missing or damaged file.
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

/**
 * Reported when a follower append carries an epoch below the latest and the entries it contradicts are
 * removed (the server logs it as a warning).
 */
export type NonMonotonicEpochListener = (epoch: number, startOffset: number, latest: EpochEntry) => void;

const RESOLVED: Promise<void> = Promise.resolve();

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

function leaderEpochCheckpointText(entries: readonly EpochEntry[]): string {
  const text = JSON.stringify({
    version: VERSION,
    entries: entries.map(({ epoch, startOffset }) => ({ epoch, startOffset })),
  });
  return `${text}\n`;
}

export function writeLeaderEpochCheckpointSync(dir: string, entries: readonly EpochEntry[]): void {
  writeCheckpointFileSync(leaderEpochCheckpointPath(dir), leaderEpochCheckpointText(entries));
}

/** Writes `entries` to the file of `dir` off the event loop (see `checkpoint-file.ts`). */
export async function writeLeaderEpochCheckpoint(dir: string, entries: readonly EpochEntry[]): Promise<void> {
  await writeCheckpointFile(leaderEpochCheckpointPath(dir), leaderEpochCheckpointText(entries));
}

/**
 * Adds (epoch, startOffset) to `entries` in place, as a follower (and the replay at open) does, after
 * Kafka 2.x's LeaderEpochFileCache.assign: the same epoch as the latest changes nothing, a negative one
 * (a batch without an epoch) is ignored; otherwise the entries with an epoch at or above `epoch` or a start
 * offset at or after `startOffset` are removed first (Kafka's maybeTruncateNonMonotonicEntries: the batch
 * is in the log, so the cache must describe it, and what it contradicts goes). Returns the number of
 * entries removed, or -1 when nothing changed.
 */
export function assignEpochEntry(entries: EpochEntry[], epoch: number, startOffset: number): number {
  if (epoch < 0) return -1;
  const latest = entries[entries.length - 1];
  if (latest !== undefined && epoch === latest.epoch && startOffset >= latest.startOffset) return -1;
  let kept = entries.length;
  while (kept > 0 && (entries[kept - 1]!.epoch >= epoch || entries[kept - 1]!.startOffset >= startOffset)) {
    kept--;
  }
  const removed = entries.length - kept;
  entries.length = kept;
  entries.push({ epoch, startOffset });
  return removed;
}

export class LeaderEpochCache {
  private entries: readonly EpochEntry[];
  /** Bumped by every change of the entries. */
  private version = 0;
  /** The version the file holds (as far as this process knows). */
  private writtenVersion: number;
  private writing: Promise<void> | null = null;

  /**
   * `entries` must increase strictly in both columns; `logEndOffset` is the owning log's. The log builds
   * the cache (see `log-loader.ts`); only the log changes it. `isWritten` says whether the file
   * already holds `entries` (or an older state the open repairs the same way).
   */
  constructor(
    readonly dir: string,
    entries: readonly EpochEntry[],
    private readonly logEndOffset: () => number,
    private readonly onNonMonotonic?: NonMonotonicEpochListener,
    isWritten = true,
  ) {
    this.entries = Object.freeze(entries.map((entry) => Object.freeze({ ...entry })));
    this.writtenVersion = isWritten ? 0 : -1;
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

  /** True while the file may be behind the entries (a change not yet flushed). */
  get isDirty(): boolean {
    return this.writtenVersion !== this.version;
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
   * Records that the leader of `epoch` wrote from `startOffset` (a batch's base offset at the log end), with
   * follower semantics (see `assignEpochEntry`): an epoch below the latest removes the entries it
   * contradicts, and that is reported (`quiet`: not, for the replay at open). Returns true if the entries
   * changed. In memory only: the file follows with `flush`.
   */
  assign(epoch: number, startOffset: number, quiet = false): boolean {
    const latest = this.entries[this.entries.length - 1];
    const entries = [...this.entries];
    const removed = assignEpochEntry(entries, epoch, startOffset);
    if (removed < 0) return false;
    if (!quiet && latest !== undefined && epoch < latest.epoch) {
      this.onNonMonotonic?.(epoch, startOffset, latest);
    }
    this.replace(entries);
    return true;
  }

  /** Removes the entries starting at or after `endOffset` (the log was truncated to it). */
  truncateFromEnd(endOffset: number): void {
    let count = this.entries.length;
    while (count > 0 && this.entries[count - 1]!.startOffset >= endOffset) count--;
    if (count < this.entries.length) this.replace(this.entries.slice(0, count));
  }

  /**
   * The log now starts at `startOffset`: removes the entries wholly below it and moves the one covering it
   * to it. A move alone does not make the file dirty (the open applies the log start again).
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
    if (this.entries.length > 0) this.replace([]);
  }

  /**
   * Resolves once the file holds the entries of the moment of the call (or later ones), writing them off
   * the event loop: one write at a time, the newest entries each time. Rejects with the I/O error of a
   * failed write (the file keeps what it held; the next flush tries again).
   */
  flush(): Promise<void> {
    if (this.writing !== null) return this.writing.then(() => this.flush());
    if (!this.isDirty) return RESOLVED;
    this.writing = this.writeEntries().finally(() => {
      this.writing = null;
    });
    return this.writing;
  }

  /** Writes the entries before returning (the open, after it repaired them). */
  writeSync(): void {
    writeLeaderEpochCheckpointSync(this.dir, this.entries);
    this.writtenVersion = this.version;
  }

  private async writeEntries(): Promise<void> {
    while (this.isDirty) {
      const version = this.version;
      await writeLeaderEpochCheckpoint(this.dir, this.entries);
      this.writtenVersion = version;
    }
  }

  private replace(entries: readonly EpochEntry[], isFileChange = true): void {
    this.entries = Object.freeze(entries.map((entry) => Object.freeze({ ...entry })));
    if (isFileChange) this.version++;
  }
}
