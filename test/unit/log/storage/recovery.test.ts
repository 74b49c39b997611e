import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import {
  LEADER_EPOCH_CHECKPOINT_FILE,
  PartitionLog,
  type LogConfig,
  type LogRecord,
} from '../../../../src/log/storage';
import {
  RECOVERY_CHECKPOINT_FILE,
  writeRecoveryCheckpointSync,
} from '../../../../src/log/storage/recovery-checkpoint';
import { ManualTime } from '../../../../src/time';
import { readAll, segmentFiles, text, values } from './log-fixture';
import { makeTempDir, removeTempDir } from './temp-dir';

/**
 * Crash recovery. A crash can only tear what was not yet fsynced, i.e. the tail of the log, so these tests
 * write and acknowledge records, close the log, then damage the files the way a crash would, set the
 * recovery-point checkpoint to what a crash would have left (`crashedAt`: nothing from that offset on was
 * fsynced), reopen, and check what recovery kept. Damage below the recovery point is in
 * damaged-log.test.ts.
 */
describe('PartitionLog recovery', () => {
  let root: string;
  let dir: string;
  let pristine: string;
  const time = new ManualTime();

  beforeEach(() => {
    root = makeTempDir();
    dir = path.join(root, 'topic-0');
    pristine = path.join(root, 'pristine');
  });

  afterEach(() => {
    removeTempDir(root);
  });

  const open = (config: Partial<LogConfig>): PartitionLog => PartitionLog.open(dir, { time, config });

  /** Appends batches of 1–4 records with values "<offset>" and waits for each acknowledgement. */
  async function writeAcknowledged(log: PartitionLog, batches: number, seed = 1): Promise<void> {
    for (let i = 0; i < batches; i++) {
      const count = 1 + ((i * 7 + seed) % 4);
      const start = log.logEndOffset;
      const info = log.append(
        Array.from({ length: count }, (_, j) => ({
          key: text(`k${(start + j) % 5}`),
          value: text(`${start + j}`.padEnd(1 + ((i * 13 + seed) % 40), '.')),
        })),
      );
      await info.flushed;
    }
  }

  function activeLogFile(): string {
    const logs = segmentFiles(dir).filter((name) => name.endsWith('.log'));
    return path.join(dir, logs[logs.length - 1]!);
  }

  /** Makes the last close look like a crash after which only offsets below `recoveryPoint` were fsynced. */
  function crashedAt(recoveryPoint: number): void {
    writeRecoveryCheckpointSync(dir, { recoveryPoint, isCleanShutdown: false });
  }

  function restore(): void {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.cpSync(pristine, dir, { recursive: true });
  }

  async function expectRecovered(
    config: Partial<LogConfig>,
    expected: LogRecord[],
    endOffset: number,
  ): Promise<void> {
    const log = open(config);
    try {
      expect(log.logEndOffset).toBe(endOffset);
      expect(values(readAll(log))).toEqual(values(expected));
      const next = log.append([{ key: text('after'), value: text('recovery') }]);
      expect(next.firstOffset).toBe(endOffset);
      await next.flushed;
      expect(values(log.read(endOffset, 1 << 20).records)).toEqual([[endOffset, 'recovery']]);
    } finally {
      await log.close();
    }
  }

  for (const indexIntervalBytes of [0, 4096]) {
    test(`cutting the last batch at every byte keeps every acknowledged record and appends continue (indexIntervalBytes ${indexIntervalBytes})`, async () => {
      const config = { segmentBytes: 1000, indexIntervalBytes };
      const log = open(config);
      await writeAcknowledged(log, 40);
      const before = readAll(log).map((r) => ({ ...r }));
      const last = log.append([
        { key: text('k'), value: text('last batch') },
        { key: text('k'), value: text('!') },
      ]);
      await last.flushed;
      await log.close();
      expect(segmentFiles(dir).filter((name) => name.endsWith('.log')).length).toBeGreaterThan(2);
      fs.cpSync(dir, pristine, { recursive: true });
      const size = fs.statSync(activeLogFile()).size;
      for (let cut = size - last.sizeInBytes; cut < size; cut++) {
        restore();
        crashedAt(last.firstOffset);
        fs.truncateSync(activeLogFile(), cut);
        await expectRecovered(config, before, last.firstOffset);
      }
    });
  }

  test('a cut anywhere in the active segment keeps exactly the whole batches before it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.constantFrom(0, 64, 4096),
        async (batches, seed, where, indexIntervalBytes) => {
          fs.rmSync(dir, { recursive: true, force: true });
          const config = { segmentBytes: 600, indexIntervalBytes };
          const log = open(config);
          await writeAcknowledged(log, batches, seed);
          // Batch boundaries of the active segment, from the log itself.
          const active = log.segmentBaseOffsets().at(-1)!;
          const read = log.read(active, Number.MAX_SAFE_INTEGER);
          const all = readAll(log);
          await log.close();
          const size = fs.statSync(activeLogFile()).size;
          const cut = Math.floor(where * size);
          let position = 0;
          let endOffset = active;
          for (const batch of read.batches) {
            if (position + batch.sizeInBytes > cut) break;
            position += batch.sizeInBytes;
            endOffset = batch.nextOffset;
          }
          fs.truncateSync(activeLogFile(), cut);
          crashedAt(active);
          await expectRecovered(
            config,
            all.filter((r) => r.offset < endOffset),
            endOffset,
          );
        },
      ),
      { numRuns: 40 },
    );
  });

  test('a corrupt byte anywhere in the tail batch truncates the log at that batch', async () => {
    const config = { segmentBytes: 1000, indexIntervalBytes: 64 };
    const log = open(config);
    await writeAcknowledged(log, 25);
    const before = readAll(log).map((r) => ({ ...r }));
    const last = log.append([{ key: text('k'), value: text('tail') }]);
    await last.flushed;
    await log.close();
    fs.cpSync(dir, pristine, { recursive: true });
    const size = fs.statSync(activeLogFile()).size;
    for (let at = size - last.sizeInBytes; at < size; at++) {
      restore();
      crashedAt(last.firstOffset);
      const fd = fs.openSync(activeLogFile(), 'r+');
      const byte = Buffer.alloc(1);
      fs.readSync(fd, byte, 0, 1, at);
      byte[0] = byte[0]! ^ 0x5a;
      fs.writeSync(fd, byte, 0, 1, at);
      fs.closeSync(fd);
      await expectRecovered(config, before, last.firstOffset);
    }
  });

  test('a corrupt batch in the middle of the tail loses it and everything after it, nothing before', async () => {
    const config = { segmentBytes: 100_000, indexIntervalBytes: 100_000 };
    const log = open(config);
    await writeAcknowledged(log, 10);
    const read = log.read(0, Number.MAX_SAFE_INTEGER);
    const all = readAll(log);
    await log.close();
    const victim = read.batches[6]!;
    const at = read.batches.slice(0, 6).reduce((sum, batch) => sum + batch.sizeInBytes, 0) + 20;
    const fd = fs.openSync(activeLogFile(), 'r+');
    fs.writeSync(fd, Buffer.from([0xee]), 0, 1, at);
    fs.closeSync(fd);
    crashedAt(victim.baseOffset);
    await expectRecovered(
      config,
      all.filter((r) => r.offset < victim.baseOffset),
      victim.baseOffset,
    );
  });

  test('zeros after the last batch (a file extended by a crash) are cut and nothing is lost', async () => {
    const config = { indexIntervalBytes: 0 };
    const log = open(config);
    await writeAcknowledged(log, 12);
    const all = readAll(log).map((r) => ({ ...r }));
    const end = log.logEndOffset;
    await log.close();
    fs.appendFileSync(activeLogFile(), Buffer.alloc(4096));
    await expectRecovered(config, all, end);
  });

  test('a torn tail in a segment that is not the last (past a stale recovery point) drops every later segment', async () => {
    const config = { segmentBytes: 300 };
    const log = open(config);
    await writeAcknowledged(log, 20);
    const bases = log.segmentBaseOffsets();
    expect(bases.length).toBeGreaterThan(2);
    const firstSegment = log.read(0, Number.MAX_SAFE_INTEGER, { maxOffset: bases[1]! });
    const all = readAll(log);
    await log.close();
    const lastBatch = firstSegment.batches.at(-1)!;
    const file = path.join(dir, `${'0'.padStart(20, '0')}.log`);
    fs.truncateSync(file, fs.statSync(file).size - 3);
    crashedAt(lastBatch.baseOffset);
    await expectRecovered(
      config,
      all.filter((r) => r.offset < lastBatch.baseOffset),
      lastBatch.baseOffset,
    );
    expect(segmentFiles(dir).filter((name) => name.endsWith('.log'))).toEqual([
      `${'0'.padStart(20, '0')}.log`,
    ]);
  });

  test('a missing or garbage index is rebuilt from the log', async () => {
    const config = { segmentBytes: 2000, indexIntervalBytes: 50 };
    const log = open(config);
    await writeAcknowledged(log, 30);
    const all = readAll(log).map((r) => ({ ...r }));
    const end = log.logEndOffset;
    await log.close();
    const indexes = segmentFiles(dir).filter((name) => name.endsWith('.index'));
    fs.rmSync(path.join(dir, indexes[0]!));
    fs.writeFileSync(
      path.join(dir, indexes[1]!),
      Buffer.from(Array.from({ length: 160 }, (_, i) => (i * 37) % 256)),
    );
    await expectRecovered(config, all, end);
    for (const index of indexes) expect(fs.statSync(path.join(dir, index)).size).toBeGreaterThan(0);
    const reopened = open(config);
    try {
      for (const offset of [0, 17, 33, end - 1]) {
        expect(reopened.read(offset, 1).records[0]!.offset).toBe(offset);
      }
    } finally {
      await reopened.close();
    }
  });

  test('an index file without its log and leftover .cleaned files are removed; other files are left alone', async () => {
    const log = open({});
    await writeAcknowledged(log, 3);
    await log.close();
    fs.writeFileSync(path.join(dir, '00000000000000000099.index'), Buffer.alloc(16));
    fs.writeFileSync(path.join(dir, '00000000000000000000.log.cleaned'), Buffer.alloc(10));
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'keep me');
    const reopened = open({});
    await reopened.close();
    expect(fs.readdirSync(dir).sort()).toEqual([
      '00000000000000000000.index',
      '00000000000000000000.log',
      LEADER_EPOCH_CHECKPOINT_FILE,
      'notes.txt',
      RECOVERY_CHECKPOINT_FILE,
    ]);
  });
});
