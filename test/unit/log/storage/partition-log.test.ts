import * as fs from 'node:fs';
import { CohortError, ErrorCode } from '../../../../src/errors';
import { positionDiff, type PartitionLog, type SimpleRecord } from '../../../../src/log/storage';
import * as fileIo from '../../../../src/log/storage/file-io';
import { readRecoveryCheckpoint } from '../../../../src/log/storage/recovery-checkpoint';
import { LogFixture, readAll, segmentFiles, text, values } from './log-fixture';

function codeOf(fn: () => unknown): ErrorCode | 'none' {
  try {
    fn();
    return 'none';
  } catch (error) {
    if (!(error instanceof CohortError)) throw error;
    return error.code;
  }
}

async function rejectionCode(promise: Promise<unknown>): Promise<ErrorCode | 'none'> {
  try {
    await promise;
    return 'none';
  } catch (error) {
    if (!(error instanceof CohortError)) throw error;
    return error.code;
  }
}

const record = (value: string, key?: string): SimpleRecord => ({
  value: text(value),
  key: key === undefined ? null : text(key),
});

/** Appends `count` single-record batches with values "v<offset>". */
function appendMany(log: PartitionLog, count: number): void {
  for (let i = 0; i < count; i++) log.append([record(`v${log.logEndOffset}`)]);
}

describe('PartitionLog', () => {
  let fixture: LogFixture;

  beforeEach(() => {
    fixture = new LogFixture();
  });

  afterEach(async () => {
    await fixture.cleanup();
  });

  describe('append and read', () => {
    test('append gives consecutive offsets from the log end offset and reads return them', async () => {
      const log = fixture.open();
      const first = log.append([record('a'), record('b')]);
      const second = log.append([record('c')]);
      expect([first.firstOffset, first.lastOffset, first.recordCount]).toEqual([0, 1, 2]);
      expect([second.firstOffset, second.lastOffset]).toEqual([2, 2]);
      expect(log.logEndOffset).toBe(3);
      expect(first.logAppendTimeMs).toBe(fixture.time.nowMs());
      await second.flushed;
      expect(values(log.read(1, 1 << 20).records)).toEqual([
        [1, 'b'],
        [2, 'c'],
      ]);
    });

    test('records keep their keys, headers and timestamps; missing timestamps become the append time', () => {
      const log = fixture.open();
      log.append([
        { key: text('k'), value: text('v'), timestampMs: 5, headers: [{ key: 'h', value: text('x') }] },
        { value: null },
      ]);
      const [a, b] = log.read(0, 1 << 20).records;
      expect([a!.key!.toString(), a!.value!.toString(), a!.timestampMs, a!.headers[0]!.key]).toEqual([
        'k',
        'v',
        5,
        'h',
      ]);
      expect([b!.key, b!.value, b!.timestampMs]).toEqual([null, null, fixture.time.nowMs()]);
    });

    test('reading from the log end offset returns nothing; outside the log is OFFSET_OUT_OF_RANGE', () => {
      const log = fixture.open();
      appendMany(log, 3);
      const atEnd = log.read(3, 1 << 20);
      expect(atEnd.records).toEqual([]);
      expect(atEnd.nextFetchOffset).toBe(3);
      expect(codeOf(() => log.read(4, 1 << 20))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
      expect(codeOf(() => log.read(-1, 1 << 20))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
      expect(codeOf(() => log.read(0, -1))).toBe(ErrorCode.INVALID_FETCH_SIZE);
    });

    test('maxOffset (the high watermark) hides later records', () => {
      const log = fixture.open();
      appendMany(log, 5);
      const read = log.read(1, 1 << 20, { maxOffset: 3 });
      expect(read.records.map((r) => r.offset)).toEqual([1, 2]);
      expect(read.nextFetchOffset).toBe(3);
      expect(log.read(3, 1 << 20, { maxOffset: 3 }).records).toEqual([]);
    });

    test('a batch larger than maxBytes is still returned when it comes first, unless minOneMessage is off', () => {
      const log = fixture.open();
      log.append([record('x'.repeat(500))]);
      log.append([record('y')]);
      expect(log.read(0, 10).records.map((r) => r.offset)).toEqual([0]);
      expect(log.read(0, 10, { minOneMessage: false }).records).toEqual([]);
    });

    test('an empty append is INVALID_RECORD and a batch over maxMessageBytes is MESSAGE_TOO_LARGE', () => {
      const log = fixture.open({ maxMessageBytes: 200 });
      expect(codeOf(() => log.append([]))).toBe(ErrorCode.INVALID_RECORD);
      expect(codeOf(() => log.append([record('z'.repeat(300))]))).toBe(ErrorCode.MESSAGE_TOO_LARGE);
      expect(log.logEndOffset).toBe(0);
    });

    test('a batch received at a size of its own (compressed) is held to maxMessageBytes at that size', () => {
      const log = fixture.open({ maxMessageBytes: 200 });
      // Stored larger than the limit, received within it: taken, as Kafka takes a compressed batch.
      expect(log.append([record('z'.repeat(300))], true, 0, 150).firstOffset).toBe(0);
      // Received over the limit, however small it is stored.
      expect(codeOf(() => log.append([record('z')], true, 0, 201))).toBe(ErrorCode.MESSAGE_TOO_LARGE);
      expect(log.logEndOffset).toBe(1);
    });

    test('a follower batch larger than a segment is RECORD_LIST_TOO_LARGE', () => {
      const log = fixture.open({ segmentBytes: 100 });
      const records = [
        { offset: 0, timestampMs: 1, key: null, value: text('q'.repeat(200)), headers: [], leaderEpoch: 0 },
      ];
      expect(codeOf(() => log.appendAsFollower(records))).toBe(ErrorCode.RECORD_LIST_TOO_LARGE);
    });

    test('a follower appends with the leader offsets, gaps included, but never behind its log end', () => {
      const log = fixture.open();
      const at = (offset: number, value: string) => ({
        offset,
        timestampMs: 7,
        key: null,
        value: text(value),
        headers: [],
        leaderEpoch: 0,
      });
      log.appendAsFollower([at(0, 'a'), at(3, 'b')]);
      log.appendAsFollower([at(10, 'c')]);
      expect(log.logEndOffset).toBe(11);
      expect(values(readAll(log))).toEqual([
        [0, 'a'],
        [3, 'b'],
        [10, 'c'],
      ]);
      expect(codeOf(() => log.appendAsFollower([at(10, 'again')]))).toBe(ErrorCode.INVALID_RECORD);
      expect(log.read(4, 1 << 20).records.map((r) => r.offset)).toEqual([10]);
    });

    test('a compacted log rejects records without a key as INVALID_RECORD', () => {
      const log = fixture.open({ cleanupPolicy: 'compact' });
      expect(codeOf(() => log.append([record('v', 'k'), record('no key')]))).toBe(ErrorCode.INVALID_RECORD);
      expect(log.logEndOffset).toBe(0);
    });

    test('an invalid config is INVALID_CONFIG naming every bad key', () => {
      try {
        fixture.open({ segmentBytes: 1, flushMessages: 0 });
        throw new Error('expected INVALID_CONFIG');
      } catch (error) {
        expect((error as CohortError).code).toBe(ErrorCode.INVALID_CONFIG);
        expect((error as Error).message).toMatch(/segmentBytes.*flushMessages/);
      }
    });
  });

  describe('segments', () => {
    test('rolls a new segment, named by its first offset, before one would exceed segmentBytes', () => {
      const log = fixture.open({ segmentBytes: 200 });
      appendMany(log, 12);
      const bases = log.segmentBaseOffsets();
      expect(bases.length).toBeGreaterThan(2);
      expect(bases[0]).toBe(0);
      expect(segmentFiles(fixture.partitionDir).filter((f) => f.endsWith('.log'))).toEqual(
        bases.map((base) => `${String(base).padStart(20, '0')}.log`),
      );
      for (const name of segmentFiles(fixture.partitionDir).filter((f) => f.endsWith('.log'))) {
        expect(fs.statSync(`${fixture.partitionDir}/${name}`).size).toBeLessThanOrEqual(200);
      }
    });

    test('rolls a non-empty segment once it is segmentMs old', () => {
      const log = fixture.open({ segmentMs: 1000 });
      appendMany(log, 2);
      fixture.time.advance(999);
      appendMany(log, 1);
      expect(log.numberOfSegments).toBe(1);
      fixture.time.advance(1);
      appendMany(log, 1);
      expect(log.segmentBaseOffsets()).toEqual([0, 3]);
    });

    test('reads cross segment boundaries up to maxBytes', () => {
      const log = fixture.open({ segmentBytes: 150 });
      appendMany(log, 20);
      expect(log.numberOfSegments).toBeGreaterThan(3);
      expect(readAll(log).map((r) => r.offset)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      const bounded = log.read(3, 3 * log.read(0, 0).sizeInBytes);
      expect(bounded.records.map((r) => r.offset)).toEqual([3, 4, 5]);
      expect(bounded.nextFetchOffset).toBe(6);
    });

    test('data survives close and reopen, and appends continue from the log end offset', async () => {
      const log = fixture.open({ segmentBytes: 150 });
      appendMany(log, 10);
      await log.close();
      const reopened = fixture.open({ segmentBytes: 150 });
      expect(reopened.logEndOffset).toBe(10);
      expect(reopened.append([record('next')]).firstOffset).toBe(10);
      expect(values(readAll(reopened)).slice(-2)).toEqual([
        [9, 'v9'],
        [10, 'next'],
      ]);
    });

    test('offsetForTimestamp finds the first record at or after a time across segments', () => {
      const log = fixture.open({ segmentBytes: 150 });
      for (let i = 0; i < 12; i++) log.append([{ value: text('x'), timestampMs: 1000 + 10 * i }]);
      expect(log.offsetForTimestamp(0)).toEqual({ offset: 0, timestampMs: 1000 });
      expect(log.offsetForTimestamp(1055)).toEqual({ offset: 6, timestampMs: 1060 });
      expect(log.offsetForTimestamp(1111)).toBeNull();
    });

    test('offset metadata gives byte distances within a segment and none across segments', () => {
      const log = fixture.open({ segmentBytes: 150 });
      appendMany(log, 2);
      const batchBytes = log.read(0, 0).sizeInBytes;
      const at0 = log.convertToOffsetMetadata(0);
      expect(positionDiff(log.convertToOffsetMetadata(1), at0)).toBe(batchBytes);
      expect(positionDiff(log.logEndOffsetMetadata, at0)).toBe(2 * batchBytes);
      appendMany(log, 10);
      expect(positionDiff(log.logEndOffsetMetadata, at0)).toBeNull();
      expect(log.read(1, 1 << 20).fetchOffsetMetadata).toEqual(log.convertToOffsetMetadata(1));
    });
  });

  describe('retention', () => {
    test('deletes segments whose newest record is older than retentionMs, never the active one', () => {
      const log = fixture.open({ segmentBytes: 150, retentionMs: 10_000 });
      appendMany(log, 6);
      fixture.time.advance(5_000);
      appendMany(log, 6);
      const before = log.segmentBaseOffsets();
      expect(log.deleteOldSegments()).toBe(0);
      fixture.time.advance(5_001);
      const deleted = log.deleteOldSegments();
      expect(deleted).toBeGreaterThan(0);
      // Everything written at the first time is gone, nothing written 5 s later.
      expect(log.logStartOffset).toBeGreaterThan(0);
      expect(log.logStartOffset).toBeLessThanOrEqual(6);
      expect(readAll(log).every((r) => r.offset >= log.logStartOffset)).toBe(true);
      expect(readAll(log).map((r) => r.offset)).toContain(6);
      expect(log.segmentBaseOffsets()).toEqual(before.slice(deleted));
      fixture.time.advance(1_000_000);
      log.deleteOldSegments();
      expect(log.numberOfSegments).toBe(1);
      expect(log.logEndOffset).toBe(12);
      expect(codeOf(() => log.read(0, 100))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
    });

    test('deletes the oldest segments while the log stays at or above retentionBytes without them', () => {
      const log = fixture.open({ segmentBytes: 150, retentionBytes: 400, retentionMs: -1 });
      appendMany(log, 30);
      fixture.time.advance(1_000_000_000);
      expect(log.sizeInBytes).toBeGreaterThan(400 + 150);
      expect(log.deleteOldSegments()).toBeGreaterThan(0);
      // Kafka's rule: a segment goes only if the log is still at least retentionBytes without it.
      const oldest = fs.statSync(`${fixture.partitionDir}/${segmentFiles(fixture.partitionDir)[1]}`).size;
      expect(segmentFiles(fixture.partitionDir)[1]).toMatch(/\.log$/);
      expect(log.sizeInBytes).toBeGreaterThanOrEqual(400);
      expect(log.sizeInBytes - oldest).toBeLessThan(400);
      expect(log.logEndOffset).toBe(30);
      expect(log.deleteOldSegments()).toBe(0);
    });

    test('a deletion (retention, truncation) is followed by a sync, whose directory fsync makes it durable', async () => {
      const config = { segmentBytes: 150, retentionBytes: 400, retentionMs: -1 };
      let log = fixture.open(config);
      appendMany(log, 29);
      await log.flush();
      const fsyncs = jest.spyOn(fileIo, 'fsyncDirectory');
      try {
        let syncs = log.flushCount;
        expect(log.deleteOldSegments()).toBeGreaterThan(0);
        // Off the event loop; close waits for it. Without it a power loss could bring the segment back.
        expect(fsyncs).not.toHaveBeenCalled();
        await log.close();
        expect(log.flushCount).toBe(syncs + 1);
        log = fixture.open(config);
        await log.flush();
        syncs = log.flushCount;
        fsyncs.mockClear();
        log.truncateTo(log.segmentBaseOffsets().at(-1)! - 1);
        expect(fsyncs).not.toHaveBeenCalled();
        await log.close();
        expect(log.flushCount).toBe(syncs + 1);
        expect(fsyncs).toHaveBeenCalledWith(fixture.partitionDir);
      } finally {
        fsyncs.mockRestore();
      }
    });

    test('a compacted log ignores retention', () => {
      const log = fixture.open({ segmentBytes: 150, retentionMs: 1, cleanupPolicy: 'compact' });
      for (let i = 0; i < 10; i++) log.append([record('v', `k${i}`)]);
      fixture.time.advance(1000);
      expect(log.deleteOldSegments()).toBe(0);
    });
  });

  describe('truncation', () => {
    test('truncateTo removes the records from an offset on across segments and appends continue there', async () => {
      const log = fixture.open({ segmentBytes: 150 });
      appendMany(log, 20);
      log.truncateTo(7);
      expect(log.logEndOffset).toBe(7);
      expect(readAll(log).map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expect(log.segmentBaseOffsets().every((base) => base < 7)).toBe(true);
      expect(log.append([record('new')]).firstOffset).toBe(7);
      await log.close();
      const reopened = fixture.open({ segmentBytes: 150 });
      expect(values(readAll(reopened)).slice(-2)).toEqual([
        [6, 'v6'],
        [7, 'new'],
      ]);
    });

    test('truncateTo inside a multi-record batch keeps the records before the offset', () => {
      const log = fixture.open();
      log.append([record('a'), record('b'), record('c'), record('d')]);
      log.truncateTo(2);
      expect(values(readAll(log))).toEqual([
        [0, 'a'],
        [1, 'b'],
      ]);
      expect(log.append([record('e')]).firstOffset).toBe(2);
    });

    test('truncateTo into a gap lowers the recovery point to the new log end, not to the offset', async () => {
      // A batch of records 0-1, then one of 5 (a gap, as compaction leaves): truncating to 4 ends the
      // log at 2. A record appended there must lie above the checkpointed recovery point, so that a crash's
      // open scans it (and rebuilds its epoch) instead of taking it as fsynced.
      const first = fixture.open();
      const at = (offset: number) => ({
        offset,
        timestampMs: 7,
        key: null,
        value: text(`r${offset}`),
        headers: [],
        leaderEpoch: 0,
      });
      first.appendAsFollower([at(0), at(1)]);
      first.appendAsFollower([at(5)]);
      // A clean close checkpoints the recovery point at the log end, 6.
      await first.close();
      const log = fixture.open();
      log.truncateTo(4);
      expect(log.logEndOffset).toBe(2);
      expect(readRecoveryCheckpoint(fixture.partitionDir)).toEqual(
        expect.objectContaining({ recoveryPoint: 2 }),
      );
      log.append([record('after')], false, 3);
      const crashed = fixture.crashCopy();
      const reopened = fixture.open({}, crashed);
      expect(values(readAll(reopened))).toEqual([
        [0, 'r0'],
        [1, 'r1'],
        [2, 'after'],
      ]);
      expect(reopened.epochEntries().map((e) => [e.epoch, e.startOffset])).toEqual([
        [0, 0],
        [3, 2],
      ]);
    });

    test('truncateTo at or after the log end offset changes nothing', () => {
      const log = fixture.open();
      appendMany(log, 3);
      log.truncateTo(3);
      log.truncateTo(100);
      expect(log.logEndOffset).toBe(3);
    });

    test('truncateFullyAndStartAt empties the log and restarts it at an offset, durably', async () => {
      const log = fixture.open({ segmentBytes: 150 });
      appendMany(log, 10);
      log.truncateFullyAndStartAt(500);
      expect([log.logStartOffset, log.logEndOffset]).toEqual([500, 500]);
      expect(log.append([record('x')]).firstOffset).toBe(500);
      await log.close();
      const reopened = fixture.open({ segmentBytes: 150 });
      expect(values(readAll(reopened))).toEqual([[500, 'x']]);
      expect(segmentFiles(fixture.partitionDir)).toEqual([
        '00000000000000000500.index',
        '00000000000000000500.log',
      ]);
    });

    test('a flush waiting for truncated records is rejected with NOT_LEADER_OR_FOLLOWER', async () => {
      const log = fixture.open();
      appendMany(log, 2);
      const info = log.append([record('doomed')]);
      log.truncateTo(2);
      expect(await rejectionCode(info.flushed!)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
      const next = log.append([record('kept')]);
      await next.flushed;
      expect(log.recoveryPoint).toBe(3);
    });
  });

  describe('flush policy', () => {
    test('by default every append waits for an fsync, and appends made together share one', async () => {
      const log = fixture.open();
      await log.flush();
      const before = log.flushCount;
      const infos = Array.from({ length: 100 }, (_, i) => log.append([record(`r${i}`)]));
      expect(infos.every((info) => info.flushed !== null)).toBe(true);
      expect(log.recoveryPoint).toBe(0);
      await Promise.all(infos.map((info) => info.flushed));
      expect(log.flushCount - before).toBe(1);
      expect(log.recoveryPoint).toBe(100);
    });

    test('an unacknowledged append (acks=0) asks for no fsync; the next acknowledged one covers it', async () => {
      const log = fixture.open();
      await log.flush();
      const before = log.flushCount;
      const unacknowledged = [log.append([record('fire')], false), log.append([record('forget')], false)];
      expect(unacknowledged.map((info) => info.flushed)).toEqual([null, null]);
      await new Promise((resolve) => setImmediate(resolve));
      expect([log.flushCount - before, log.recoveryPoint]).toEqual([0, 0]);
      const acknowledged = log.append([record('wait')]);
      await acknowledged.flushed;
      expect([log.flushCount - before, log.recoveryPoint]).toEqual([1, 3]);
    });

    test('appends made while an fsync runs share the next one', async () => {
      const log = fixture.open();
      const first = log.append([record('first')]);
      // Let the group commit start its fsync, then append while it is in flight.
      await new Promise((resolve) => setImmediate(resolve));
      const later = [log.append([record('a')]), log.append([record('b')]), log.append([record('c')])];
      await Promise.all([first.flushed, ...later.map((info) => info.flushed)]);
      expect(log.flushCount).toBe(2);
      expect(log.recoveryPoint).toBe(4);
    });

    test('with flushMessages N only every Nth message asks for an fsync', async () => {
      const log = fixture.open({ flushMessages: 3 });
      const infos = Array.from({ length: 7 }, () => log.append([record('m')]));
      expect(infos.map((info) => info.flushed !== null)).toEqual([
        false,
        false,
        true,
        false,
        false,
        true,
        false,
      ]);
      await infos[5]!.flushed;
      expect(log.recoveryPoint).toBeGreaterThanOrEqual(6);
    });

    test('maybeFlush flushes unflushed data once flushIntervalMs has passed since the last flush', async () => {
      const log = fixture.open({ flushMessages: Number.MAX_SAFE_INTEGER, flushIntervalMs: 1000 });
      const info = log.append([record('lazy')]);
      expect(info.flushed).toBeNull();
      expect(log.maybeFlush()).toBeNull();
      fixture.time.advance(1000);
      await log.maybeFlush();
      expect(log.recoveryPoint).toBe(1);
      expect(log.maybeFlush()).toBeNull();
    });

    test('a failed fsync takes the log offline: its waiters and every later append get KAFKA_STORAGE_ERROR', async () => {
      const log = fixture.open();
      await log.flush();
      // The module object itself (an `import *` namespace cannot be spied on); file-io reads it per call.
      const nodeFs = jest.requireActual<typeof fs>('node:fs');
      const fsync = jest
        .spyOn(nodeFs, 'fsync')
        .mockImplementation(((_fd: number, callback: (e: Error) => void) =>
          callback(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }))) as typeof fs.fsync);
      try {
        const info = log.append([record('lost?')]);
        expect(await rejectionCode(info.flushed as Promise<void>)).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
        expect(codeOf(() => log.append([record('after')]))).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
        // Nothing written after the failure, and nothing reported durable that was not.
        expect(log.logEndOffset).toBe(1);
        expect(log.recoveryPoint).toBe(0);
      } finally {
        fsync.mockRestore();
      }
    });

    test('an explicit flush of an offset beyond the log is OFFSET_OUT_OF_RANGE', async () => {
      const log = fixture.open();
      expect(await rejectionCode(log.flush(5))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
      await log.flush();
    });
  });

  describe('close', () => {
    test('a closed log refuses appends and reads', async () => {
      const log = fixture.open();
      appendMany(log, 1);
      await log.close();
      expect(codeOf(() => log.append([record('late')]))).toBe(ErrorCode.UNKNOWN_SERVER_ERROR);
      expect(codeOf(() => log.read(0, 100))).toBe(ErrorCode.UNKNOWN_SERVER_ERROR);
    });

    test('closing twice at once waits for the same close, after which compaction is refused', async () => {
      const log = fixture.open({ cleanupPolicy: 'compact' });
      log.append([record('v', 'k')]);
      const [a, b] = [log.close(), log.close()];
      expect(a).toBe(b);
      await a;
      expect(await rejectionCode(log.compact())).toBe(ErrorCode.UNKNOWN_SERVER_ERROR);
    });

    test('close fsyncs what the flush policy left unflushed', async () => {
      const log = fixture.open({ flushMessages: 1000 });
      appendMany(log, 5);
      expect(log.recoveryPoint).toBe(0);
      await log.close();
      expect(log.recoveryPoint).toBe(5);
    });
  });
});
