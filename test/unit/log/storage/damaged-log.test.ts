import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCode } from '../../../../src/errors';
import {
  CorruptLogError,
  PartitionLog,
  type LogConfig,
  type LogIndexRebuildEvent,
  type LogRecoveryOptions,
  type LogTruncationEvent,
} from '../../../../src/log/storage';
import {
  RECOVERY_CHECKPOINT_FILE,
  readRecoveryCheckpoint,
  writeRecoveryCheckpointSync,
} from '../../../../src/log/storage/recovery-checkpoint';
import { ManualTime } from '../../../../src/time';
import { readAll, segmentFiles, text, values } from './log-fixture';
import { makeTempDir, removeTempDir } from './temp-dir';

/**
 * Damage a crash cannot explain: bytes below the recovery point (they were fsynced) or, without a
 * checkpoint, in a sealed segment. Recovery must never cut them silently: the open refuses, names the
 * file, offset and bytes, and changes no .log file; with `truncateCorruptLogs` it cuts the damaged
 * segment at the bad batch, keeps every later segment, reuses no offset, and reports what it cut.
 */
describe('PartitionLog with damaged files', () => {
  let root: string;
  let dir: string;
  const time = new ManualTime();
  const config: Partial<LogConfig> = { segmentBytes: 400, indexIntervalBytes: 64 };
  let truncations: LogTruncationEvent[];
  let rebuilds: LogIndexRebuildEvent[];

  beforeEach(() => {
    root = makeTempDir();
    dir = path.join(root, 'topic-0');
    truncations = [];
    rebuilds = [];
  });

  afterEach(() => {
    removeTempDir(root);
  });

  const recovery = (truncateCorruptLogs = false): LogRecoveryOptions => ({
    truncateCorruptLogs,
    listener: {
      onTruncation: (event) => truncations.push(event),
      onIndexRebuild: (event) => rebuilds.push(event),
    },
  });
  const open = (options: LogRecoveryOptions = recovery()): PartitionLog =>
    PartitionLog.open(dir, { time, config, recovery: options });

  /** 200 acknowledged records, one per batch, over many sealed segments (as in the reproduction). */
  async function writeSegments(): Promise<{ bases: number[]; end: number }> {
    const log = open();
    for (let i = 0; i < 200; i++) {
      await log.append([{ key: text(`k${i}`), value: text(`value ${i}`) }]).flushed;
    }
    const bases = log.segmentBaseOffsets();
    const end = log.logEndOffset;
    await log.close();
    expect(bases.length).toBeGreaterThan(10);
    return { bases, end };
  }

  function logFile(base: number): string {
    return path.join(dir, `${String(base).padStart(20, '0')}.log`);
  }

  function flipByte(file: string, at: number): void {
    const fd = fs.openSync(file, 'r+');
    const byte = Buffer.alloc(1);
    fs.readSync(fd, byte, 0, 1, at);
    byte[0] = byte[0]! ^ 0x5a;
    fs.writeSync(fd, byte, 0, 1, at);
    fs.closeSync(fd);
  }

  /** Where the last batch of a segment starts, and its offset. */
  async function lastBatchOf(
    base: number,
    nextBase: number,
  ): Promise<{ position: number; offset: number; size: number }> {
    const log = open();
    try {
      const read = log.read(base, Number.MAX_SAFE_INTEGER, { maxOffset: nextBase });
      const last = read.batches.at(-1)!;
      return {
        position: read.sizeInBytes - last.sizeInBytes,
        offset: last.baseOffset,
        size: last.sizeInBytes,
      };
    } finally {
      await log.close();
    }
  }

  function snapshot(): Map<string, Buffer> {
    return new Map(
      segmentFiles(dir)
        .filter((name) => name.endsWith('.log'))
        .map((name) => [name, fs.readFileSync(path.join(dir, name))]),
    );
  }

  describe('a flipped byte in the last batch of an old sealed segment, logs without a checkpoint', () => {
    // The reproduction: a data directory written before recovery points were checkpointed, so
    // every segment is validated and the damage is found.
    async function damaged(): Promise<{
      bases: number[];
      end: number;
      victim: number;
      batch: Awaited<ReturnType<typeof lastBatchOf>>;
    }> {
      const { bases, end } = await writeSegments();
      const victim = 3;
      const batch = await lastBatchOf(bases[victim]!, bases[victim + 1]!);
      fs.rmSync(path.join(dir, RECOVERY_CHECKPOINT_FILE));
      flipByte(logFile(bases[victim]!), batch.position + batch.size - 2);
      return { bases, end, victim, batch };
    }

    test('the open refuses, naming the file, the offset and the bytes, and changes no .log file', async () => {
      const { bases, victim, batch } = await damaged();
      const before = snapshot();
      let error: unknown;
      try {
        open();
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(CorruptLogError);
      const corrupt = error as CorruptLogError;
      expect(corrupt.code).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
      expect(corrupt.file).toBe(logFile(bases[victim]!));
      expect(corrupt.offset).toBe(batch.offset);
      expect(corrupt.position).toBe(batch.position);
      expect(corrupt.corruptBytes).toBe(batch.size);
      expect(corrupt.message).toContain(logFile(bases[victim]!));
      expect(corrupt.message).toContain(`offset ${batch.offset}`);
      expect(corrupt.message).toContain('--truncate-corrupt-logs');
      expect(snapshot()).toEqual(before);
      expect(truncations).toEqual([]);
    });

    test('with truncateCorruptLogs only the bad batch is cut, later segments stay, and the cut is reported', async () => {
      const { bases, end, victim, batch } = await damaged();
      const log = open(recovery(true));
      try {
        expect(log.segmentBaseOffsets()).toEqual(bases);
        expect(log.logEndOffset).toBe(end);
        const kept = values(readAll(log));
        expect(kept).toHaveLength(199);
        expect(kept.map(([offset]) => offset)).not.toContain(batch.offset);
        expect(kept.at(-1)).toEqual([199, 'value 199']);
        expect(truncations).toEqual([
          {
            kind: 'corrupt',
            dir,
            file: logFile(bases[victim]!),
            offset: batch.offset,
            position: batch.position,
            truncatedBytes: batch.size,
            deletedFiles: [],
            recoveryPoint: null,
          },
        ]);
        // No offset is reused: the next record goes after every one that was handed out.
        expect(log.append([{ key: text('k'), value: text('next') }]).firstOffset).toBe(end);
      } finally {
        await log.close();
      }
      // The cut is durable and needs no second flag: the next open is clean.
      truncations = [];
      const reopened = open();
      expect(reopened.logEndOffset).toBe(end + 1);
      expect(truncations).toEqual([]);
      await reopened.close();
    });
  });

  test('after a crash, a sealed segment below the recovery point is not validated: its records fail only when read', async () => {
    const { bases, end } = await writeSegments();
    const batch = await lastBatchOf(bases[3]!, bases[4]!);
    writeRecoveryCheckpointSync(dir, { recoveryPoint: end, isCleanShutdown: false });
    // A payload byte: the header is intact, only the CRC can tell.
    flipByte(logFile(bases[3]!), batch.position + batch.size - 2);
    const log = open();
    try {
      expect(log.segmentBaseOffsets()).toEqual(bases);
      expect(log.logEndOffset).toBe(end);
      expect(truncations).toEqual([]);
      expect(() => log.read(batch.offset, 1 << 20)).toThrow(
        expect.objectContaining({ code: ErrorCode.CORRUPT_MESSAGE }),
      );
      expect(log.read(batch.offset + 1, 1 << 20).records[0]!.offset).toBe(batch.offset + 1);
    } finally {
      await log.close();
    }
  });

  test('below the recovery point a header that cannot be right is found without a CRC check, and refused', async () => {
    const { bases, end } = await writeSegments();
    const batch = await lastBatchOf(bases[3]!, bases[4]!);
    writeRecoveryCheckpointSync(dir, { recoveryPoint: end, isCleanShutdown: false });
    flipByte(logFile(bases[3]!), batch.position + 9); // batchLength
    expect(() => open()).toThrow(CorruptLogError);
    expect(() => open()).toThrow(`below the recovery point ${end}`);
  });

  describe('damage in the active segment below the recovery point', () => {
    async function writeActive(): Promise<{ active: number; end: number; sizes: number[] }> {
      const log = open();
      const activeBatches = (): number =>
        log.read(log.segmentBaseOffsets().at(-1)!, Number.MAX_SAFE_INTEGER).batches.length;
      // Until the active segment holds exactly two batches: an open validates a segment from its last
      // index entry, and with indexIntervalBytes 64 the third batch is the first to get one.
      for (let i = 0; i < 25 || activeBatches() !== 2; i++) {
        await log.append([{ key: text(`k${i}`), value: text(`v${i}`) }]).flushed;
      }
      const active = log.segmentBaseOffsets().at(-1)!;
      const read = log.read(active, Number.MAX_SAFE_INTEGER);
      const end = log.logEndOffset;
      await log.close();
      expect(read.batches.length).toBeGreaterThanOrEqual(2);
      // An unclean stop right after everything was fsynced.
      writeRecoveryCheckpointSync(dir, { recoveryPoint: end, isCleanShutdown: false });
      return { active, end, sizes: read.batches.map((batch) => batch.sizeInBytes) };
    }

    test('is refused; with the flag only the bad batch goes and the batches after it stay', async () => {
      const { active, end, sizes } = await writeActive();
      flipByte(logFile(active), 20);
      expect(() => open()).toThrow(CorruptLogError);
      const repaired = open(recovery(true));
      try {
        expect(
          truncations.map((event) => [event.kind, event.offset, event.position, event.truncatedBytes]),
        ).toEqual([['corrupt', active, 0, sizes[0]]]);
        expect(repaired.logEndOffset).toBe(end);
        expect(values(readAll(repaired)).map(([offset]) => offset)).toEqual(
          Array.from({ length: end }, (_, i) => i).filter((offset) => offset !== active),
        );
        expect(repaired.append([{ key: text('k'), value: text('after') }]).firstOffset).toBe(end);
      } finally {
        await repaired.close();
      }
    });

    test('with the flag a log whose last batch went still ends at the recovery point: no offset is reused', async () => {
      const { active, end, sizes } = await writeActive();
      const lastPosition = sizes.slice(0, -1).reduce((sum, size) => sum + size, 0);
      flipByte(logFile(active), lastPosition + 20);
      const repaired = open(recovery(true));
      try {
        expect(truncations.map((event) => [event.kind, event.offset, event.truncatedBytes])).toEqual([
          ['corrupt', end - 1, sizes.at(-1)],
        ]);
        expect(repaired.logEndOffset).toBe(end);
        expect(repaired.segmentBaseOffsets().at(-1)).toBe(end);
        expect(repaired.append([{ key: text('k'), value: text('after') }]).firstOffset).toBe(end);
      } finally {
        await repaired.close();
      }
    });
  });

  test('a torn tail past the recovery point is cut as a crash leaves it, and reported with what it deleted', async () => {
    const { bases } = await writeSegments();
    const batch = await lastBatchOf(bases[3]!, bases[4]!);
    writeRecoveryCheckpointSync(dir, { recoveryPoint: batch.offset, isCleanShutdown: false });
    const deletedBytes = bases.slice(4).reduce((sum, base) => sum + fs.statSync(logFile(base)).size, 0);
    fs.truncateSync(logFile(bases[3]!), batch.position + 5);
    const log = open();
    try {
      expect(log.logEndOffset).toBe(batch.offset);
      expect(truncations).toEqual([
        {
          kind: 'torn_tail',
          dir,
          file: logFile(bases[3]!),
          offset: batch.offset,
          position: batch.position,
          truncatedBytes: 5 + deletedBytes,
          deletedFiles: bases.slice(4).map(logFile),
          recoveryPoint: batch.offset,
        },
      ]);
    } finally {
      await log.close();
    }
  });

  test('a missing index is rebuilt and reported', async () => {
    const { bases } = await writeSegments();
    fs.rmSync(path.join(dir, `${String(bases[2]).padStart(20, '0')}.index`));
    const log = open();
    try {
      expect(rebuilds).toEqual([
        expect.objectContaining({
          file: path.join(dir, `${String(bases[2]).padStart(20, '0')}.index`),
          wasMissing: true,
        }),
      ]);
      expect(rebuilds[0]!.addedEntries).toBeGreaterThan(0);
      expect(log.read(bases[2]! + 3, 1).records[0]!.offset).toBe(bases[2]! + 3);
    } finally {
      await log.close();
    }
  });

  test('compaction reads past a damaged batch of a sealed segment, leaves it out, and reports it', async () => {
    const compact = { cleanupPolicy: 'compact', segmentBytes: 200 } as const;
    const writer = PartitionLog.open(dir, { time, config: compact });
    for (const key of ['a', 'b', 'c'])
      await writer.append([{ key: text(key), value: text(`${key}1`) }]).flushed;
    while (writer.numberOfSegments < 3)
      await writer.append([{ key: text('filler'), value: text('x') }]).flushed;
    const second = writer.read(1, 1).batches[0]!;
    const position = writer.read(0, 1).batches[0]!.sizeInBytes;
    await writer.close();
    flipByte(logFile(0), position + second.sizeInBytes - 2);
    const log = PartitionLog.open(dir, { time, config: compact, recovery: recovery() });
    try {
      const result = await log.compact();
      expect(result.isAborted).toBe(false);
      expect(truncations).toEqual([
        expect.objectContaining({
          kind: 'corrupt',
          file: logFile(0),
          offset: 1,
          position,
          truncatedBytes: second.sizeInBytes,
        }),
      ]);
      const keys = readAll(log).map((record) => record.key!.toString());
      expect(keys.slice(0, 2)).toEqual(['a', 'c']);
      truncations = [];
      await log.compact();
      expect(truncations).toEqual([]);
    } finally {
      await log.close();
    }
  });

  test('a torn trailing index entry is cut and reported as a dropped entry', async () => {
    const { bases } = await writeSegments();
    const index = path.join(dir, `${String(bases[1]).padStart(20, '0')}.index`);
    fs.appendFileSync(index, Buffer.alloc(7));
    const log = open();
    try {
      expect(rebuilds).toEqual([
        expect.objectContaining({ file: index, wasMissing: false, droppedEntries: 1 }),
      ]);
      expect(fs.statSync(index).size % 16).toBe(0);
    } finally {
      await log.close();
    }
  });

  test('files holding no data that an open removes are reported with the reason', async () => {
    const log = open();
    await log.append([{ key: text('k'), value: text('v') }]).flushed;
    await log.close();
    fs.writeFileSync(path.join(dir, '00000000000000000099.index'), Buffer.alloc(16));
    fs.writeFileSync(path.join(dir, '00000000000000000000.log.cleaned'), Buffer.alloc(10));
    const removed: [string, string][] = [];
    const reopened = PartitionLog.open(dir, {
      time,
      config,
      recovery: {
        listener: { onFileRemoved: (_dir, file, reason) => removed.push([path.basename(file), reason]) },
      },
    });
    await reopened.close();
    expect(removed.sort()).toEqual([
      ['00000000000000000000.log.cleaned', 'unfinished_compaction'],
      ['00000000000000000099.index', 'orphan_index'],
    ]);
  });

  describe('the recovery-point checkpoint', () => {
    test('a clean close marks it clean at the log end; an open marks it unclean before any append', async () => {
      const log = open();
      // A new log writes none at open: it has nothing to protect yet, and a created partition saves the fsyncs.
      expect(readRecoveryCheckpoint(dir)).toBeNull();
      for (let i = 0; i < 5; i++) await log.append([{ key: text('k'), value: text(`${i}`) }]).flushed;
      expect(readRecoveryCheckpoint(dir)).toBeNull();
      await log.close();
      expect(readRecoveryCheckpoint(dir)).toEqual({ recoveryPoint: 5, isCleanShutdown: true });
      const reopened = open();
      expect(readRecoveryCheckpoint(dir)).toEqual({ recoveryPoint: 5, isCleanShutdown: false });
      await reopened.close();
    });

    test('a sync that covers a newly sealed segment checkpoints it', async () => {
      const checkpoints: number[] = [];
      let onCheckpoint = (): void => undefined;
      const log = open({
        listener: {
          onCheckpoint: (_dir, recoveryPoint) => {
            checkpoints.push(recoveryPoint);
            onCheckpoint();
          },
        },
      });
      try {
        while (log.numberOfSegments < 3) await log.append([{ key: text('k'), value: text('v') }]).flushed;
        const sealedEnd = log.segmentBaseOffsets().at(-1)!;
        // The write runs off the event loop after the sync that covered the roll.
        while (!checkpoints.some((recoveryPoint) => recoveryPoint >= sealedEnd)) {
          await new Promise<void>((resolve) => (onCheckpoint = resolve));
        }
        const checkpoint = readRecoveryCheckpoint(dir) as { recoveryPoint: number };
        expect(checkpoint.recoveryPoint).toBeGreaterThanOrEqual(sealedEnd);
        expect(checkpoint.recoveryPoint).toBeLessThanOrEqual(log.logEndOffset);
        // No sealed segment since, and not a minute later: appends are not checkpointed one by one.
        const written = checkpoints.length;
        for (let i = 0; i < 3; i++) await log.append([{ key: text('k'), value: text('v') }]).flushed;
        expect(checkpoints).toHaveLength(written);
      } finally {
        await log.close();
      }
    });

    test('a truncation lowers it before it cuts, so later unflushed appends are never taken for damage', async () => {
      const log = open();
      for (let i = 0; i < 40; i++) await log.append([{ key: text('k'), value: text(`${i}`) }]).flushed;
      await log.close();
      const reopened = open();
      try {
        expect(readRecoveryCheckpoint(dir)).toEqual({ recoveryPoint: 40, isCleanShutdown: false });
        reopened.truncateTo(25);
        expect(readRecoveryCheckpoint(dir)).toEqual({ recoveryPoint: 25, isCleanShutdown: false });
      } finally {
        await reopened.close();
      }
    });

    test('an unreadable checkpoint is reported and the log is recovered as if it had none', async () => {
      const log = open();
      await log.append([{ key: text('k'), value: text('v') }]).flushed;
      await log.close();
      fs.writeFileSync(path.join(dir, RECOVERY_CHECKPOINT_FILE), 'garbage');
      const unreadable: string[] = [];
      const reopened = PartitionLog.open(dir, {
        time,
        config,
        recovery: { listener: { onCheckpointUnreadable: (_dir, file) => unreadable.push(file) } },
      });
      try {
        expect(unreadable).toEqual([path.join(dir, RECOVERY_CHECKPOINT_FILE)]);
        expect(reopened.logEndOffset).toBe(1);
        expect(readRecoveryCheckpoint(dir)).toEqual({ recoveryPoint: 0, isCleanShutdown: false });
      } finally {
        await reopened.close();
      }
    });
  });
});
