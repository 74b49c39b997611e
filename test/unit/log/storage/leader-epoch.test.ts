import * as fs from 'node:fs';
import * as path from 'node:path';
import { ErrorCode } from '../../../../src/errors';
import {
  LEADER_EPOCH_CHECKPOINT_FILE,
  PartitionLog,
  type LeaderEpochCacheRebuildEvent,
  type LogConfig,
  type LogRecord,
  type LogRecoveryListener,
} from '../../../../src/log/storage';
import { LogSegment } from '../../../../src/log/storage/log-segment';
import { writeRecoveryCheckpointSync } from '../../../../src/log/storage/recovery-checkpoint';
import { ManualTime } from '../../../../src/time';
import { readAll, segmentFiles, text, values } from './log-fixture';
import { downgradeToMagic1 } from './magic-1';
import { makeTempDir, removeTempDir } from './temp-dir';

/**
 * Leader epochs in the log: stamped on every batch (record batch magic 2), kept by follower appends,
 * truncation and compaction, and indexed by the leader-epoch cache and its `leader-epoch-checkpoint`.
 */
describe('PartitionLog leader epochs', () => {
  let root: string;
  let dir: string;
  const time = new ManualTime();
  const logs: PartitionLog[] = [];
  let rebuilds: LeaderEpochCacheRebuildEvent[];
  let refused: [number, number, number][];

  beforeEach(() => {
    root = makeTempDir();
    dir = path.join(root, 'topic-0');
    rebuilds = [];
    refused = [];
  });

  afterEach(async () => {
    for (const log of logs.splice(0)) await log.close();
    removeTempDir(root);
  });

  const listener: LogRecoveryListener = {
    onLeaderEpochCacheRebuilt: (event) => rebuilds.push(event),
    onNonMonotonicLeaderEpoch: (_dir, epoch, startOffset, latestEpoch) =>
      refused.push([epoch, startOffset, latestEpoch]),
  };

  function open(config: Partial<LogConfig> = {}): PartitionLog {
    const log = PartitionLog.open(dir, { time, config, recovery: { listener } });
    logs.push(log);
    return log;
  }

  async function reopen(log: PartitionLog, config: Partial<LogConfig> = {}): Promise<PartitionLog> {
    await log.close();
    return open(config);
  }

  function appendAt(log: PartitionLog, epoch: number, ...valuesToAppend: string[]): void {
    log.append(
      valuesToAppend.map((value) => ({ key: text(value), value: text(value) })),
      true,
      epoch,
    );
  }

  function fromLeader(offset: number, leaderEpoch: number, value = `v${offset}`): LogRecord {
    return { offset, timestampMs: 5, key: text(`k${offset}`), value: text(value), headers: [], leaderEpoch };
  }

  const epochsOf = (log: PartitionLog): number[] => readAll(log).map((record) => record.leaderEpoch);
  const entries = (log: PartitionLog): [number, number][] =>
    log.epochEntries().map((entry) => [entry.epoch, entry.startOffset]);
  const checkpointFile = (): string => path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE);
  const fileEntries = (): unknown =>
    (JSON.parse(fs.readFileSync(checkpointFile(), 'utf8')) as { entries: unknown }).entries;

  describe('in every batch', () => {
    test('a leader append stamps its epoch on the batch and on every record read back, also after a restart', async () => {
      let log = open();
      appendAt(log, 0, 'a');
      log.append([{ value: text('default') }]);
      appendAt(log, 3, 'b', 'c');
      expect(epochsOf(log)).toEqual([0, 0, 3, 3]);
      expect(log.read(0, 1 << 20).batches.map((batch) => [batch.magic, batch.partitionLeaderEpoch])).toEqual([
        [2, 0],
        [2, 0],
        [2, 3],
      ]);
      log = await reopen(log);
      expect(epochsOf(log)).toEqual([0, 0, 3, 3]);
    });

    test('a follower append keeps each record’s epoch: one batch per run of an epoch', async () => {
      let log = open();
      const info = log.appendAsFollower([
        fromLeader(0, 1),
        fromLeader(1, 1),
        fromLeader(4, 2),
        fromLeader(5, 2),
        fromLeader(6, 2),
        fromLeader(9, 5),
      ]);
      expect([info.firstOffset, info.lastOffset, info.recordCount]).toEqual([0, 9, 6]);
      const batches = log.read(0, 1 << 20).batches;
      expect(batches.map((b) => [b.baseOffset, b.lastOffset, b.partitionLeaderEpoch])).toEqual([
        [0, 1, 1],
        [4, 6, 2],
        [9, 9, 5],
      ]);
      expect(info.sizeInBytes).toBe(batches.reduce((sum, b) => sum + b.sizeInBytes, 0));
      await info.flushed;
      expect(log.recoveryPoint).toBe(10);
      expect(entries(log)).toEqual([
        [1, 0],
        [2, 4],
        [5, 9],
      ]);
      log = await reopen(log);
      expect(epochsOf(log)).toEqual([1, 1, 2, 2, 2, 5]);
    });

    test('a follower append that goes back in offsets across an epoch change writes nothing', () => {
      const log = open();
      expect(() => log.appendAsFollower([fromLeader(0, 1), fromLeader(5, 1), fromLeader(5, 2)])).toThrow(
        expect.objectContaining({ code: ErrorCode.INVALID_RECORD }),
      );
      expect([log.logEndOffset, entries(log)]).toEqual([0, []]);
    });

    test('a follower append with a batch too large for a segment writes none of its batches', () => {
      const log = open({ segmentBytes: 120 });
      const big = { ...fromLeader(1, 2), value: text('x'.repeat(200)) };
      expect(() => log.appendAsFollower([fromLeader(0, 1), big])).toThrow(
        expect.objectContaining({ code: ErrorCode.RECORD_LIST_TOO_LARGE }),
      );
      expect([log.logEndOffset, entries(log)]).toEqual([0, []]);
    });

    test('truncation inside a batch keeps the batch’s epoch', async () => {
      let log = open();
      appendAt(log, 4, 'a', 'b', 'c', 'd');
      log.truncateTo(2);
      expect(epochsOf(log)).toEqual([4, 4]);
      log = await reopen(log);
      expect(epochsOf(log)).toEqual([4, 4]);
      expect(entries(log)).toEqual([[4, 0]]);
    });

    test('compaction keeps each batch’s epoch', async () => {
      const log = open({ cleanupPolicy: 'compact', segmentBytes: 200 });
      for (let i = 0; i < 12; i++) {
        log.append([{ key: text(`k${i % 3}`), value: text(`v${i}`) }], true, Math.floor(i / 4));
      }
      expect(log.numberOfSegments).toBeGreaterThan(2);
      const before = new Map(readAll(log).map((record) => [record.offset, record.leaderEpoch]));
      const result = await log.compact();
      expect(result.recordsRemoved).toBeGreaterThan(0);
      const after = readAll(log);
      expect(after.length).toBeLessThan(before.size);
      for (const record of after) expect(record.leaderEpoch).toBe(before.get(record.offset));
      expect(new Set(after.map((record) => record.leaderEpoch)).size).toBeGreaterThan(1);
    });
  });

  describe('a data directory written before leader epochs (magic 1)', () => {
    async function writeOldLog(): Promise<void> {
      const log = open({ segmentBytes: 200 });
      for (let i = 0; i < 10; i++) log.append([{ key: text(`k${i}`), value: text(`v${i}`) }]);
      await log.close();
      logs.splice(0);
      downgradeToMagic1(dir);
    }

    test('opens with every record, as epoch -1, and an empty cache; new appends carry epochs', async () => {
      await writeOldLog();
      let log = open({ segmentBytes: 200 });
      expect(values(readAll(log))).toEqual(Array.from({ length: 10 }, (_, i) => [i, `v${i}`]));
      expect(new Set(epochsOf(log))).toEqual(new Set([-1]));
      expect(log.read(0, 1).batches[0]!.magic).toBe(1);
      expect([log.latestEpoch(), entries(log)]).toEqual([-1, []]);
      appendAt(log, 2, 'new');
      expect(entries(log)).toEqual([[2, 10]]);
      log = await reopen(log, { segmentBytes: 200 });
      expect(epochsOf(log)).toEqual([...Array<number>(10).fill(-1), 2]);
      expect(entries(log)).toEqual([[2, 10]]);
      expect(rebuilds).toEqual([]);
    });
    test('a missing file costs a look at the batch below the recovery point, not a scan of the log', async () => {
      await writeOldLog();
      const scans = jest.spyOn(LogSegment.prototype, 'scanBatches');
      try {
        const log = open({ segmentBytes: 200 });
        expect(log.numberOfSegments).toBeGreaterThan(3);
        // The last batch (epoch -1) says no epoch lies below it: nothing is rebuilt, nothing written.
        expect(scans).toHaveBeenCalledTimes(1);
        expect(rebuilds).toEqual([]);
        expect(fs.existsSync(checkpointFile())).toBe(false);
      } finally {
        scans.mockRestore();
      }
    });
  });

  describe('the cache', () => {
    test('a new epoch adds (epoch, base offset) in memory; the file follows off the event loop', async () => {
      const log = open();
      appendAt(log, 0, 'a', 'b');
      appendAt(log, 0, 'c');
      const info = log.append([{ key: text('e'), value: text('e') }], true, 3);
      expect(entries(log)).toEqual([
        [0, 0],
        [3, 3],
      ]);
      expect(log.latestEpoch()).toBe(3);
      expect(log.leaderEpochCache.latestEpoch()).toBe(3);
      // No write of the file on the append path, nor before the append is acknowledged.
      expect(fs.existsSync(checkpointFile())).toBe(false);
      await info.flushed;
      expect(log.leaderEpochCache.isDirty).toBe(true);
      await log.close();
      expect(fileEntries()).toEqual([
        { epoch: 0, startOffset: 0 },
        { epoch: 3, startOffset: 3 },
      ]);
    });
    test('a leader append below the latest epoch is refused before anything is written', () => {
      const log = open();
      appendAt(log, 5, 'a');
      expect(() => appendAt(log, 2, 'stale')).toThrow(
        expect.objectContaining({ code: ErrorCode.FENCED_LEADER_EPOCH }),
      );
      expect([log.logEndOffset, epochsOf(log), entries(log)]).toEqual([1, [5], [[5, 0]]]);
    });

    test('a follower append below the latest epoch is stored and removes the entries it contradicts', async () => {
      let log = open();
      log.appendAsFollower([fromLeader(0, 1), fromLeader(10, 3), fromLeader(20, 5)]);
      log.appendAsFollower([fromLeader(21, 4)]);
      expect(epochsOf(log)).toEqual([1, 3, 5, 4]);
      expect(entries(log)).toEqual([
        [1, 0],
        [3, 10],
        [4, 21],
      ]);
      expect(refused).toEqual([[4, 21, 5]]);
      log = await reopen(log);
      expect(entries(log)).toEqual([
        [1, 0],
        [3, 10],
        [4, 21],
      ]);
    });
    test('a batch without an epoch adds nothing', () => {
      const log = open();
      log.appendAsFollower([fromLeader(0, -1), fromLeader(1, 1)]);
      expect(entries(log)).toEqual([[1, 1]]);
    });

    test('endOffsetFor answers as Kafka: the log end for the latest, the next epoch’s start before it', () => {
      const log = open();
      log.appendAsFollower([fromLeader(0, 0), fromLeader(40, 2), fromLeader(90, 5), fromLeader(119, 5)]);
      expect(log.logEndOffset).toBe(120);
      const answer = (epoch: number): [number, number] => {
        const { leaderEpoch, endOffset } = log.endOffsetFor(epoch);
        return [leaderEpoch, endOffset];
      };
      expect(answer(5)).toEqual([5, 120]);
      expect(answer(4)).toEqual([2, 90]);
      expect(answer(3)).toEqual([2, 90]);
      expect(answer(2)).toEqual([2, 90]);
      expect(answer(1)).toEqual([0, 40]);
      expect(answer(0)).toEqual([0, 40]);
      expect(answer(6)).toEqual([-1, -1]);
      expect(answer(-1)).toEqual([-1, -1]);
      appendAt(log, 5, 'more');
      expect(answer(5)).toEqual([5, 121]);
    });

    test('below the first entry is UNDEFINED, and an empty cache answers UNDEFINED for everything', () => {
      const log = open();
      expect(log.endOffsetFor(0)).toEqual({ leaderEpoch: -1, endOffset: -1 });
      log.appendAsFollower([fromLeader(10, 3)]);
      expect(log.endOffsetFor(2)).toEqual({ leaderEpoch: -1, endOffset: -1 });
      expect(log.endOffsetFor(3)).toEqual({ leaderEpoch: 3, endOffset: 11 });
    });

    test('truncateTo removes the entries from the new log end on', async () => {
      let log = open();
      log.appendAsFollower([fromLeader(0, 1), fromLeader(10, 2), fromLeader(20, 3), fromLeader(30, 3)]);
      log.truncateTo(20);
      expect(entries(log)).toEqual([
        [1, 0],
        [2, 10],
      ]);
      log.truncateTo(11);
      expect(entries(log)).toEqual([
        [1, 0],
        [2, 10],
      ]);
      // The follower then takes the new leader's records from there.
      log.appendAsFollower([fromLeader(11, 4)]);
      log = await reopen(log);
      expect(entries(log)).toEqual([
        [1, 0],
        [2, 10],
        [4, 11],
      ]);
    });

    test('truncateFullyAndStartAt clears the cache', async () => {
      let log = open();
      log.appendAsFollower([fromLeader(0, 1), fromLeader(10, 2)]);
      log.truncateFullyAndStartAt(50);
      expect(entries(log)).toEqual([]);
      log.appendAsFollower([fromLeader(50, 1)]);
      log = await reopen(log);
      expect(entries(log)).toEqual([[1, 50]]);
    });

    test('retention keeps the entry covering the new log start, moved to it, also after a restart', async () => {
      const config: Partial<LogConfig> = { segmentBytes: 150, retentionBytes: 0, retentionMs: -1 };
      let log = open(config);
      for (let i = 0; i < 12; i++) appendAt(log, i < 4 ? 1 : i < 6 ? 2 : 7, `v${i}`);
      expect(entries(log)).toEqual([
        [1, 0],
        [2, 4],
        [7, 6],
      ]);
      expect(log.segmentBaseOffsets()).toEqual([0, 2, 4, 6, 8, 10]);
      // Inside epoch 1: its entry moves to the new start (not written: the open moves it again).
      expect(log.deleteOldSegments(2)).toBe(1);
      expect(entries(log)).toEqual([
        [1, 2],
        [2, 4],
        [7, 6],
      ]);
      log = await reopen(log, config);
      expect(entries(log)).toEqual([
        [1, 2],
        [2, 4],
        [7, 6],
      ]);
      // Exactly where epoch 7 starts: every entry before it goes.
      expect(log.deleteOldSegments(6)).toBe(2);
      const expected: [number, number][] = [[7, 6]];
      expect(entries(log)).toEqual(expected);
      log = await reopen(log, config);
      expect(fileEntries()).toEqual([{ epoch: 7, startOffset: 6 }]);
      expect(entries(log)).toEqual(expected);
    });

    test('a missing or damaged file is rebuilt from the batches’ epochs at open, and reported', async () => {
      let log = open();
      log.appendAsFollower([fromLeader(0, -1), fromLeader(3, 1), fromLeader(4, 1), fromLeader(9, 4)]);
      const expected = entries(log);
      await log.close();
      fs.rmSync(checkpointFile());
      log = open();
      expect(entries(log)).toEqual(expected);
      expect(rebuilds).toEqual([{ dir, file: checkpointFile(), reason: 'missing', entries: 2 }]);
      for (const garbage of [
        '{"version":1,"entries":[{"epoch":3,"startOffset":5},{"epoch":2,"startOffset":9}]}',
        'not json',
        '',
      ]) {
        await log.close();
        fs.writeFileSync(checkpointFile(), garbage);
        log = open();
        expect(entries(log)).toEqual(expected);
        expect(rebuilds.at(-1)).toEqual({ dir, file: checkpointFile(), reason: 'unreadable', entries: 2 });
      }
      expect(rebuilds).toHaveLength(4);
    });

    test('after a crash that tore the batch of a new epoch, the entry the file holds for it goes', async () => {
      const log = open();
      await log.append([{ value: text('a') }], true, 1).flushed;
      const torn = log.append([{ value: text('b'), key: text('b') }], true, 2);
      await torn.flushed;
      await log.close();
      logs.splice(0);
      // The crash: the last batch never reached the disk whole, and the recovery point is before it.
      const file = path.join(
        dir,
        segmentFiles(dir).find((name) => name.endsWith('.log'))!,
      );
      fs.truncateSync(file, fs.statSync(file).size - 3);
      writeRecoveryCheckpointSync(dir, { recoveryPoint: torn.firstOffset, isCleanShutdown: false });
      expect(fileEntries()).toEqual([
        { epoch: 1, startOffset: 0 },
        { epoch: 2, startOffset: 1 },
      ]);
      const recovered = open();
      expect(recovered.logEndOffset).toBe(1);
      expect(entries(recovered)).toEqual([[1, 0]]);
      expect(fileEntries()).toEqual([{ epoch: 1, startOffset: 0 }]);
      expect(recovered.endOffsetFor(1)).toEqual({ leaderEpoch: 1, endOffset: 1 });
    });

    test('a file behind the log (its write lost in a crash) gets the missing entries from the batches above the recovery point', async () => {
      let log = open({ segmentBytes: 150 });
      for (let i = 0; i < 6; i++) appendAt(log, 1, `v${i}`);
      await log.close();
      const recoveryPoint = 6;
      log = open({ segmentBytes: 150 });
      appendAt(log, 4, 'x', 'y');
      log.appendAsFollower([fromLeader(8, 6)]);
      const expected = entries(log);
      await log.close();
      logs.splice(0);
      // The crash: the appends are in the files, the epoch file and the recovery point are as before them.
      fs.writeFileSync(checkpointFile(), '{"version":1,"entries":[{"epoch":1,"startOffset":0}]}\n');
      writeRecoveryCheckpointSync(dir, { recoveryPoint, isCleanShutdown: false });
      const scans = jest.spyOn(LogSegment.prototype, 'scanBatches');
      try {
        log = open({ segmentBytes: 150 });
        expect(entries(log)).toEqual(expected);
        expect(expected).toEqual([
          [1, 0],
          [4, 6],
          [6, 8],
        ]);
        expect(rebuilds).toEqual([]);
        // Only the segments from the recovery point on were read.
        expect(
          scans.mock.instances.every(
            (segment) => (segment as unknown as LogSegment).nextOffset > recoveryPoint,
          ),
        ).toBe(true);
        expect(fileEntries()).toEqual(expected.map(([epoch, startOffset]) => ({ epoch, startOffset })));
      } finally {
        scans.mockRestore();
      }
    });

    test('a write a crash interrupted (a leftover temporary file) is ignored and removed', async () => {
      let log = open();
      appendAt(log, 3, 'a');
      await log.close();
      fs.writeFileSync(`${checkpointFile()}.tmp`, '{"version":1,"entries":[{"epoch":9,"startOffset":0}]}');
      log = open();
      expect(entries(log)).toEqual([[3, 0]]);
      expect(fs.existsSync(`${checkpointFile()}.tmp`)).toBe(false);
      expect(rebuilds).toEqual([]);
    });

    test('a new log writes no file until its first epoch', () => {
      open();
      expect(fs.existsSync(checkpointFile())).toBe(false);
    });
  });
});
