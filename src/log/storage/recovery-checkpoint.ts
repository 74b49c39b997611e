import * as path from 'node:path';
import { writeOrStorageError } from './file-io';
import type { Time } from '../../time';
import {
  isOffset,
  parseCheckpointJson,
  readCheckpointFile,
  writeCheckpointFile,
  writeCheckpointFileSync,
} from './checkpoint-file';
import type { LogRecoveryListener } from './log-recovery';

/**
 * A partition's recovery point on disk, after Kafka's `recovery-point-offset-checkpoint` and its
 * `.kafka_cleanshutdown` marker, in one small file per partition directory:
 *
 *   <partition-dir>/recovery-point-offset-checkpoint
 *   {"version":1,"recoveryPoint":4711,"isCleanShutdown":false}
 *
 * `recoveryPoint`: every offset below it was fsynced before the file was written, so a crash cannot have
 * torn it. `isCleanShutdown`: the log was closed cleanly with everything fsynced (then `recoveryPoint` is
 * the log end offset). The log rewrites the file as unclean when it opens (not a new, empty log: it has
 * nothing to protect yet), after a sync that covers a
 * newly sealed segment, at most once a minute otherwise, after a truncation below it, and at close.
 *
 * A stale value is safe: it only makes the next recovery look at more of the log. Writes are crash-safe
 * (`checkpoint-file.ts`). A file that cannot be read counts as missing.
 */
export const RECOVERY_CHECKPOINT_FILE = 'recovery-point-offset-checkpoint';
const VERSION = 1;

export interface RecoveryCheckpoint {
  readonly recoveryPoint: number;
  readonly isCleanShutdown: boolean;
}

export function recoveryCheckpointPath(dir: string): string {
  return path.join(dir, RECOVERY_CHECKPOINT_FILE);
}

/** Whether a file in a partition directory belongs to the checkpoint (the file or a leftover temp file). */
export function isRecoveryCheckpointFile(name: string): boolean {
  return name.startsWith(RECOVERY_CHECKPOINT_FILE);
}

/**
 * Reads the checkpoint of `dir`, deleting leftover temporary files. `null` when there is none;
 * `'unreadable'` when the file exists but does not parse (the caller treats it as missing and says so).
 */
export function readRecoveryCheckpoint(dir: string): RecoveryCheckpoint | 'unreadable' | null {
  const text = readCheckpointFile(recoveryCheckpointPath(dir));
  if (text === null) return null;
  const value = parseCheckpointJson(text, VERSION);
  if (value === 'unreadable') return value;
  const { recoveryPoint, isCleanShutdown } = value;
  if (!isOffset(recoveryPoint) || typeof isCleanShutdown !== 'boolean') return 'unreadable';
  return { recoveryPoint, isCleanShutdown };
}

function encode(checkpoint: RecoveryCheckpoint): string {
  return `${JSON.stringify({ version: VERSION, ...checkpoint })}\n`;
}

/** Writes the checkpoint durably before returning (open and truncation: rare, and must not race). */
export function writeRecoveryCheckpointSync(dir: string, checkpoint: RecoveryCheckpoint): void {
  writeCheckpointFileSync(recoveryCheckpointPath(dir), encode(checkpoint));
}

/**
 * Writes the checkpoint off the event loop. `isCurrent` is asked on the event loop right before the
 * rename: when it says no (a truncation wrote a lower recovery point meanwhile, or the log closed), the
 * write is dropped, so an older, higher value never replaces a newer, lower one.
 */
export function writeRecoveryCheckpoint(
  dir: string,
  checkpoint: RecoveryCheckpoint,
  isCurrent: () => boolean,
): Promise<boolean> {
  return writeCheckpointFile(recoveryCheckpointPath(dir), encode(checkpoint), isCurrent);
}

/**
 * The recovery point is checkpointed at most this often by time (Kafka's
 * log.flush.offset.checkpoint.interval.ms), and in any case after a sync that covers a sealed segment.
 */
export const RECOVERY_POINT_CHECKPOINT_INTERVAL_MS = 60_000;

/** Where a log stands when a sync ends, as `RecoveryCheckpointWriter.afterSync` needs it. */
export interface RecoveryPointState {
  /** Offsets below it are fsynced. */
  readonly recoveryPoint: number;
  /** The active segment's base offset: the offsets below it lie in sealed segments. */
  readonly sealedEndOffset: number;
}

/** What a `RecoveryCheckpointWriter` asks of its log. */
export interface RecoveryPointSource {
  /** Null while the log closes, once it is closed, and when it is offline: no checkpoint follows a sync. */
  recoveryPointState(): RecoveryPointState | null;
  /** A write after a sync that would end after the log closed is dropped. */
  isClosed(): boolean;
  /**
   * Makes the leader-epoch file hold every entry, before a checkpoint says the entries below it are right
   * (see `leader-epoch-cache.ts`).
   */
  flushLeaderEpochs(): Promise<void>;
}

/**
 * Keeps one partition's checkpoint file in step with its log: when it is written, and that an older,
 * higher value never lands after a newer, lower one.
 *
 * - After a sync (`afterSync`), off the event loop and one write at a time: when the sync covered a
 *   segment sealed since the last checkpoint, or when the last one is
 *   `RECOVERY_POINT_CHECKPOINT_INTERVAL_MS` old. A checkpoint asked for while one is written is decided
 *   again once that one ends.
 * - Before a truncation cuts (`lowerTo`), synchronously: the file must not claim offsets that are about
 *   to be removed and then written again, unflushed, by later appends.
 * - At a clean close (`writeCleanShutdown`), with the clean-shutdown mark.
 *
 * The leader-epoch file is flushed before each asynchronous write. Written checkpoints and failed writes
 * are reported to the recovery listener; a failed write leaves the older, safe, file.
 */
export class RecoveryCheckpointWriter {
  /** The recovery point the file holds (or an asynchronous write is about to make it hold). */
  private checkpointedValue: number;
  private lastWriteMonotonicMs: number;
  /** Bumped by every synchronous write: an asynchronous one started before it is dropped. */
  private generation = 0;
  private writing: Promise<void> | null = null;
  private isPending = false;

  /** `checkpointed` is the recovery point the file holds after the open. */
  constructor(
    readonly dir: string,
    private readonly time: Time,
    checkpointed: number,
    nowMonotonicMs: number,
    private readonly log: RecoveryPointSource,
    private readonly listener: LogRecoveryListener | undefined,
  ) {
    this.checkpointedValue = checkpointed;
    this.lastWriteMonotonicMs = nowMonotonicMs;
  }

  /** The recovery point the file holds (or an asynchronous write is about to make it hold). */
  get checkpointed(): number {
    return this.checkpointedValue;
  }

  /** Resolves once no asynchronous write after a sync is running. Never rejects. */
  async idle(): Promise<void> {
    await this.writing;
  }

  /** After a sync: writes the recovery point off the event loop when it is due (see the class comment). */
  afterSync(): void {
    const state = this.log.recoveryPointState();
    if (state === null) return;
    const { recoveryPoint, sealedEndOffset: sealedEnd } = state;
    if (recoveryPoint <= this.checkpointedValue) return;
    const isSealedCovered = this.checkpointedValue < sealedEnd && recoveryPoint >= sealedEnd;
    const nowMs = this.time.monotonicMs();
    const isDue = nowMs - this.lastWriteMonotonicMs >= RECOVERY_POINT_CHECKPOINT_INTERVAL_MS;
    if (!isSealedCovered && !isDue) return;
    if (this.writing !== null) {
      this.isPending = true;
      return;
    }
    const generation = this.generation;
    this.lastWriteMonotonicMs = nowMs;
    // The leader-epoch file first: the open trusts its entries below the checkpointed recovery point.
    this.writing = this.log
      .flushLeaderEpochs()
      .then(() =>
        writeRecoveryCheckpoint(
          this.dir,
          { recoveryPoint, isCleanShutdown: false },
          () => generation === this.generation && !this.log.isClosed(),
        ),
      )
      .then((isWritten) => {
        if (!isWritten) return;
        this.checkpointedValue = recoveryPoint;
        this.listener?.onCheckpoint?.(this.dir, recoveryPoint, false);
      })
      .catch((error: unknown) => this.listener?.onCheckpointError?.(this.dir, error))
      .finally(() => {
        this.writing = null;
        if (this.isPending) {
          this.isPending = false;
          this.afterSync();
        }
      });
  }

  /**
   * Before a truncation to `offset`: the checkpoint must not claim offsets that are about to be removed
   * and then written again, unflushed, by later appends (a crash would make those look damaged).
   * Synchronous, and it drops any asynchronous write in flight. KAFKA_STORAGE_ERROR when it cannot write.
   */
  lowerTo(offset: number): void {
    this.generation++;
    if (this.checkpointedValue <= offset) return;
    writeOrStorageError(recoveryCheckpointPath(this.dir), () =>
      writeRecoveryCheckpointSync(this.dir, { recoveryPoint: offset, isCleanShutdown: false }),
    );
    this.checkpointedValue = offset;
  }

  /**
   * At close, once everything up to `logEndOffset` is fsynced: the next open validates nothing (Kafka's
   * clean-shutdown marker). A failure is reported, not thrown: the older file only makes the next open
   * look at more.
   */
  async writeCleanShutdown(logEndOffset: number): Promise<void> {
    const checkpoint = { recoveryPoint: logEndOffset, isCleanShutdown: true };
    const generation = this.generation;
    // The leader-epoch file first (see `afterSync`): it then holds every entry, and the next open
    // replays no batch.
    await this.log
      .flushLeaderEpochs()
      .then(() => writeRecoveryCheckpoint(this.dir, checkpoint, () => generation === this.generation))
      .then((isWritten) => {
        if (!isWritten) return;
        this.checkpointedValue = checkpoint.recoveryPoint;
        this.listener?.onCheckpoint?.(this.dir, checkpoint.recoveryPoint, true);
      })
      .catch((error: unknown) => this.listener?.onCheckpointError?.(this.dir, error));
  }
}
