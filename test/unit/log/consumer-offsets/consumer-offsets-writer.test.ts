import * as fs from 'node:fs';
import * as path from 'node:path';
import { CohortError, ErrorCode } from '../../../../src/errors';
import type { StoredGroup } from '../../../../src/group';
import type {
  ConsumerOffsetsWriter,
  ConsumerOffsetsWriterOptions,
} from '../../../../src/log/consumer-offsets';
import {
  decodeKey,
  encodeGroupMetadataKey,
  type OffsetCommitValue,
} from '../../../../src/group/records/consumer-offsets-record';
import {
  type CompactionResult,
  type LogConfig,
  type LogRecord,
  type PartitionLog,
} from '../../../../src/log/storage';
import { DEFAULT_TURN_BUDGET_MS, ManualTime } from '../../../../src/time';
import { downgradeToMagic1 } from '../storage/magic-1';
import { makeTempDir, removeTempDir } from '../storage/temp-dir';
import { LocalOffsetsTopic } from './local-offsets-topic';
import type { ReplayedPartition } from '../../../support/replayed-partition';

function offset(committedOffset: number, metadata = ''): OffsetCommitValue {
  return { committedOffset, committedLeaderEpoch: -1, metadata, commitTimestampMs: 1_000 };
}

function group(groupId: string, generationId: number, memberIds: string[] = ['m1', 'm2']): StoredGroup {
  return {
    groupId,
    protocolType: 'consumer',
    generationId,
    protocolName: 'range',
    leaderId: memberIds[0] ?? '',
    currentStateTimestampMs: 2_000,
    members: memberIds.map((memberId, i) => ({
      memberId,
      groupInstanceId: i === 0 ? 'instance-0' : '',
      clientId: 'client',
      clientHost: '/127.0.0.1',
      rebalanceTimeoutMs: 60_000,
      sessionTimeoutMs: 30_000,
      protocols: [
        { name: 'range', metadata: Buffer.from(`sub-${memberId}`) },
        { name: 'roundrobin', metadata: Buffer.alloc(0) },
      ],
      assignment: Buffer.from(`assignment-${memberId}-${generationId}`),
    })),
  };
}

/** Every committed offset the store holds, in a form jest can compare. */
function offsetsOf(store: ReplayedPartition): unknown {
  const offsets: Record<string, unknown> = {};
  for (const groupId of [...store.groupIds()].sort()) {
    offsets[groupId] = store
      .list(groupId)
      .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  }
  return offsets;
}

/** The groups the partition's records hold (the latest record of each that is not a tombstone). */
function loadedGroupsOf(store: ReplayedPartition): StoredGroup[] {
  return store.groups().sort((a, b) => a.groupId.localeCompare(b.groupId));
}

function allRecords(log: PartitionLog): LogRecord[] {
  if (log.logStartOffset === log.logEndOffset) return [];
  return log.read(log.logStartOffset, Number.MAX_SAFE_INTEGER).records;
}

type StoreOptions = Partial<Omit<ConsumerOffsetsWriterOptions, 'leaderEpoch'>> & {
  readonly logConfig?: Partial<LogConfig>;
};

describe("ConsumerOffsetsWriter with the group layer's records over it", () => {
  let dataDir: string;
  let dir: string;
  const time = new ManualTime();
  /** The single-node topic each store is partition 0 of. */
  const topics = new Map<ReplayedPartition, LocalOffsetsTopic>();

  /** The log's writer under `store`. */
  function writerOf(store: ReplayedPartition): ConsumerOffsetsWriter {
    return topics.get(store)!.writer(0);
  }

  /** Partition 0's store of a single-node server's `__consumer_offsets` on `dataDir`, not loaded. */
  function newStore(options: StoreOptions = {}): ReplayedPartition {
    const { logConfig, ...writer } = options;
    const topic = new LocalOffsetsTopic(dataDir, {
      time,
      writer,
      ...(logConfig === undefined ? {} : { logConfig }),
    });
    topics.set(topic.store(0), topic);
    return topic.store(0);
  }

  async function openStore(options: StoreOptions = {}): Promise<ReplayedPartition> {
    const store = newStore(options);
    await store.load();
    return store;
  }

  /** Stops the server the store is on (every log fsynced and closed) and starts another on its data dir. */
  async function reopen(store: ReplayedPartition, options: StoreOptions = {}): Promise<ReplayedPartition> {
    await topics.get(store)!.close();
    topics.delete(store);
    return openStore(options);
  }

  beforeEach(() => {
    dataDir = makeTempDir();
    dir = path.join(dataDir, '__consumer_offsets-0');
  });

  afterEach(async () => {
    for (const topic of topics.values()) await topic.close();
    topics.clear();
    removeTempDir(dataDir);
  });

  test('a log written before leader epochs (magic 1 batches) loads, and new writes go after it', async () => {
    const store = await openStore();
    await store.commit('g1', [
      { topic: 'orders', partition: 0, offset: offset(10, 'first') },
      { topic: 'orders', partition: 1, offset: offset(20) },
    ]);
    await store.storeGroup(group('g1', 3));
    await store.commit('g2', [{ topic: 'payments', partition: 3, offset: offset(7) }]);
    const before = offsetsOf(store);
    await topics.get(store)!.close();
    topics.delete(store);
    downgradeToMagic1(dir);

    const upgraded = await openStore();
    expect(offsetsOf(upgraded)).toEqual(before);
    expect(loadedGroupsOf(upgraded)).toEqual([group('g1', 3)]);
    expect(allRecords(writerOf(upgraded).log).map((record) => record.leaderEpoch)).toEqual([-1, -1, -1, -1]);
    await upgraded.commit('g2', [{ topic: 'payments', partition: 3, offset: offset(8) }]);
    const mixed = await reopen(upgraded);
    expect(mixed.get('g2', 'payments', 3)).toEqual(offset(8));
    expect(mixed.get('g1', 'orders', 0)).toEqual(offset(10, 'first'));
    expect(allRecords(writerOf(mixed).log).map((record) => record.leaderEpoch)).toEqual([-1, -1, -1, -1, 0]);
  });

  test('offsets and group metadata written before a close are all there after reopening', async () => {
    const store = await openStore();
    await store.commit('g1', [
      { topic: 'orders', partition: 0, offset: offset(10, 'first') },
      { topic: 'orders', partition: 1, offset: offset(20) },
    ]);
    await store.commit('g1', [{ topic: 'orders', partition: 0, offset: offset(11, 'second') }]);
    await store.commit('g2', [{ topic: 'payments', partition: 3, offset: offset(7) }]);
    await store.storeGroup(group('g1', 1));
    await store.storeGroup(group('g1', 2, ['m2', 'm3']));
    await store.storeGroup(group('g3', 5, []));
    const before = offsetsOf(store);
    expect(store.get('g1', 'orders', 0)).toEqual(offset(11, 'second'));

    const reopened = await reopen(store);
    expect(offsetsOf(reopened)).toEqual(before);
    expect(reopened.get('g1', 'orders', 0)).toEqual(offset(11, 'second'));
    // The latest record of each group comes back.
    expect(loadedGroupsOf(reopened)).toEqual([group('g1', 2, ['m2', 'm3']), group('g3', 5, [])]);
    expect(reopened.hasOffsets('g3')).toBe(false);
  });

  test('counts the partitions each group has an offset for, through deletes and a replay', async () => {
    const store = await openStore();
    await store.commit('g', [
      { topic: 'a', partition: 0, offset: offset(1) },
      { topic: 'a', partition: 1, offset: offset(1) },
      { topic: 'b', partition: 0, offset: offset(1) },
    ]);
    await store.commit('g', [{ topic: 'a', partition: 0, offset: offset(2) }]);
    await store.commit('h', [{ topic: 'a', partition: 0, offset: offset(1) }]);
    expect([store.committedPartitions('g'), store.committedPartitions('h')]).toEqual([3, 1]);
    await store.deleteOffsets('g', [
      { topic: 'a', partition: 1 },
      { topic: 'a', partition: 9 },
    ]);
    expect(store.committedPartitions('g')).toBe(2);
    await store.deleteGroup('h');
    expect(store.committedPartitions('h')).toBe(0);
    const reopened = await reopen(store);
    expect([reopened.committedPartitions('g'), reopened.committedPartitions('h')]).toEqual([2, 0]);
  });

  test('a commit reaches the view only when its append is committed (single node: durable), and resolves then', async () => {
    const store = await openStore();
    const committed = store.commit('g', [{ topic: 't', partition: 0, offset: offset(5) }]);
    const appendedAt = writerOf(store).log.logEndOffset - 1;
    expect(writerOf(store).log.recoveryPoint).toBeLessThanOrEqual(appendedAt);
    expect(store.get('g', 't', 0)).toBeUndefined();
    await committed;
    expect(writerOf(store).log.recoveryPoint).toBeGreaterThan(appendedAt);
    expect(store.get('g', 't', 0)).toEqual(offset(5));
  });

  test('writes change the view in log order even when the flush policy lets a later one through first', async () => {
    // With flushMessages 2, the first and third appends need no fsync of their own; the second does.
    const store = await openStore({ logConfig: { flushMessages: 2 } });
    const settled: number[] = [];
    const writes = [1, 2, 3].map((n) =>
      store.commit('g', [{ topic: 't', partition: 0, offset: offset(n) }]).then(() => {
        settled.push(n);
        expect(store.get('g', 't', 0)).toEqual(offset(n));
      }),
    );
    await Promise.all(writes);
    expect(settled).toEqual([1, 2, 3]);
    expect(store.get('g', 't', 0)).toEqual(offset(3));
  });

  test('deleting a group removes its metadata and offsets durably, and other groups keep theirs', async () => {
    const store = await openStore();
    await store.commit('doomed', [
      { topic: 't', partition: 0, offset: offset(1) },
      { topic: 'u', partition: 2, offset: offset(2) },
    ]);
    await store.storeGroup(group('doomed', 3));
    await store.commit('kept', [{ topic: 't', partition: 0, offset: offset(9) }]);
    await store.deleteGroup('doomed');
    expect(store.hasOffsets('doomed')).toBe(false);

    const reopened = await reopen(store);
    expect([...reopened.groupIds()]).toEqual(['kept']);
    expect(loadedGroupsOf(reopened)).toEqual([]);
    expect(reopened.get('kept', 't', 0)).toEqual(offset(9));
  });

  test('deleting offsets (their retention ran out) removes exactly those, durably; a later commit is kept', async () => {
    const store = await openStore();
    await store.commit('g', [
      { topic: 't', partition: 0, offset: offset(1) },
      { topic: 't', partition: 1, offset: offset(2) },
      { topic: 'u', partition: 2, offset: offset(3) },
    ]);
    await store.storeGroup(group('g', 4, []));
    const deleted = store.deleteOffsets('g', [
      { topic: 't', partition: 0 },
      { topic: 'u', partition: 2 },
    ]);
    // Appended after the tombstones: the newer record wins, in the view and in a replay.
    const recommitted = store.commit('g', [{ topic: 'u', partition: 2, offset: offset(30) }]);
    expect(store.get('g', 't', 0)).toEqual(offset(1));
    await Promise.all([deleted, recommitted]);
    expect(store.list('g')).toEqual([
      { topic: 't', partition: 1, offset: offset(2) },
      { topic: 'u', partition: 2, offset: offset(30) },
    ]);
    const live = offsetsOf(store);
    const reopened = await reopen(store);
    expect(offsetsOf(reopened)).toEqual(live);
    expect(loadedGroupsOf(reopened)).toEqual([group('g', 4, [])]);

    await reopened.deleteOffsets('g', [
      { topic: 't', partition: 1 },
      { topic: 'u', partition: 2 },
    ]);
    expect(reopened.hasOffsets('g')).toBe(false);
    // The group's metadata record is not an offset: it stays until the group is deleted.
    expect(loadedGroupsOf(await reopen(reopened)).map((g) => g.groupId)).toEqual(['g']);
  });

  test('a commit racing a group deletion ends the same in memory and after a replay', async () => {
    const store = await openStore();
    await store.commit('g', [{ topic: 't', partition: 0, offset: offset(1) }]);
    // The second commit is appended before the deletion but is not in the view yet, so the deletion has no
    // tombstone for it: the log keeps it, and so must the view.
    const racing = store.commit('g', [{ topic: 't', partition: 1, offset: offset(2) }]);
    const deleted = store.deleteGroup('g');
    await Promise.all([racing, deleted]);
    const live = offsetsOf(store);
    expect(store.get('g', 't', 0)).toBeUndefined();
    expect(store.get('g', 't', 1)).toEqual(offset(2));
    expect(offsetsOf(await reopen(store))).toEqual(live);
  });

  test('the partition directory exists from the start (created with the topic), empty until the first write', async () => {
    const store = await openStore();
    expect(fs.existsSync(dir)).toBe(true);
    expect(fs.existsSync(path.join(dataDir, 'topics', '__consumer_offsets.json'))).toBe(true);
    expect(writerOf(store).log.logEndOffset).toBe(0);
    expect(loadedGroupsOf(store)).toEqual([]);
    await store.commit('g', [{ topic: 't', partition: 0, offset: offset(1) }]);
    expect(offsetsOf(await reopen(store))).toEqual({ g: [{ topic: 't', partition: 0, offset: offset(1) }] });
  });

  test('writes before the load has finished are refused with COORDINATOR_LOAD_IN_PROGRESS', async () => {
    const store = newStore();
    const error = await store.commit('g', [{ topic: 't', partition: 0, offset: offset(1) }]).catch((e) => e);
    expect(error).toBeInstanceOf(CohortError);
    expect((error as CohortError).code).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS);
    await store.load();
    await store.commit('g', [{ topic: 't', partition: 0, offset: offset(1) }]);
    expect(store.get('g', 't', 0)).toEqual(offset(1));
  });

  test('the load reads the log in bounded steps and yields between them', async () => {
    const store = await openStore();
    for (let i = 0; i < 50; i++) {
      await store.commit(`g${i % 5}`, [{ topic: 't', partition: i, offset: offset(i) }]);
    }
    const before = offsetsOf(store);
    let pauses = 0;
    const reopened = await reopen(store, {
      replay: {
        // The node's clock does not move (a ManualTime): the byte bound alone ends a step.
        time,
        maxBytesPerRead: 256,
        pause: async () => {
          pauses++;
        },
      },
    });
    expect(offsetsOf(reopened)).toEqual(before);
    // A step ends after the batch that reaches 256 bytes, so it holds less than 256 + the largest batch.
    const log = writerOf(reopened).log;
    const largest = Math.max(
      ...log.read(log.logStartOffset, Number.MAX_SAFE_INTEGER).batches.map((batch) => batch.sizeInBytes),
    );
    expect(pauses).toBeGreaterThanOrEqual(Math.floor(log.sizeInBytes / (256 + largest)));
    expect(pauses).toBeLessThanOrEqual(Math.ceil(log.sizeInBytes / 256));
  });

  test('a load step ends once it has run 10 ms on the node clock, however few bytes it read', async () => {
    const store = await openStore();
    const partitions = 10;
    for (let i = 0; i < 20; i++) {
      await store.commit(
        `g${i % 5}`,
        Array.from({ length: partitions }, (_, p) => ({
          topic: 't',
          partition: p,
          offset: offset(i * partitions + p),
        })),
      );
    }
    const before = offsetsOf(store);
    const records = writerOf(store).log.logEndOffset - writerOf(store).log.logStartOffset;
    // A clock that moves 1 ms each time it is read: the replay reads it once per record it has applied,
    // so every record costs it 1 ms, and a batch of 10 records as much as the whole budget.
    let nowMs = 0;
    const ticking = { monotonicMs: () => ++nowMs, nowMs: () => time.nowMs() };
    let pauses = 0;
    const reopened = await reopen(store, {
      replay: {
        time: ticking,
        // No byte bound: only the time ends a step.
        maxBytesPerRead: Number.MAX_SAFE_INTEGER,
        pause: async () => {
          pauses++;
        },
      },
    });
    expect(offsetsOf(reopened)).toEqual(before);
    expect(reopened.isLoaded).toBe(true);
    // A step holds at most 10 records (10 ms): one pause per 10 records at least, not one per batch.
    expect(pauses).toBeGreaterThanOrEqual(Math.floor(records / DEFAULT_TURN_BUDGET_MS) - 1);
    expect(pauses).toBeLessThanOrEqual(records);
  });

  describe('compaction', () => {
    const SMALL = { segmentBytes: 400 };

    test('keeps the last record per key, drops deleted groups, and a replay still gives the same view', async () => {
      const store = await openStore({ logConfig: SMALL, minCleanableDirtyRatio: 1 });
      for (let round = 0; round < 6; round++) {
        await store.commit('g1', [
          { topic: 't', partition: 0, offset: offset(round) },
          { topic: 't', partition: 1, offset: offset(100 + round) },
        ]);
        await store.storeGroup(group('g1', round + 1));
      }
      await store.commit('gone', [{ topic: 't', partition: 0, offset: offset(1) }]);
      await store.storeGroup(group('gone', 4));
      await store.deleteGroup('gone');
      // Fill until the active segment holds only filler: everything above is then in sealed segments.
      const written = writerOf(store).log.logEndOffset;
      for (let i = 0; writerOf(store).log.segmentBaseOffsets().at(-1)! < written; i++) {
        await store.commit('filler', [{ topic: 'f', partition: 0, offset: offset(i) }]);
      }
      const before = offsetsOf(store);
      const recordsBefore = allRecords(writerOf(store).log).length;

      const result = await writerOf(store).compact();
      expect(result.isAborted).toBe(false);
      expect(result.recordsRemoved).toBeGreaterThan(0);
      const records = allRecords(writerOf(store).log);
      expect(records.length).toBe(recordsBefore - result.recordsRemoved);
      const activeBase = writerOf(store).log.segmentBaseOffsets().at(-1)!;
      const sealedKeys = records.filter((r) => r.offset < activeBase).map((r) => r.key!.toString('latin1'));
      expect(new Set(sealedKeys).size).toBe(sealedKeys.length);
      const groupsInLog = records.map((r) => decodeKey(r.key!)).map((k) => k.groupId);
      expect(groupsInLog).not.toContain('gone');
      expect(records.some((r) => r.key!.equals(encodeGroupMetadataKey('g1')))).toBe(true);

      expect(offsetsOf(store)).toEqual(before);
      const reopened = await reopen(store, { logConfig: SMALL });
      expect(offsetsOf(reopened)).toEqual(before);
      expect(loadedGroupsOf(reopened)).toEqual([group('g1', 6)]);
    });

    test('starts by itself once the dirty share of the log reaches the ratio, and not again until it does', async () => {
      const store = await openStore({ logConfig: SMALL, minCleanableDirtyRatio: 0.5 });
      let commits = 0;
      const commitOne = (): Promise<void> =>
        store.commit('g', [{ topic: 't', partition: commits % 2, offset: offset(commits++) }]);
      // The append, and the decision to compact, happen synchronously inside commit(); the compaction
      // itself runs in the background. Nothing was ever clean, so the first one starts as soon as a
      // segment is sealed.
      let firstCompaction: Promise<CompactionResult> | null = null;
      while (firstCompaction === null) {
        const committed = commitOne();
        firstCompaction = writerOf(store).compacting;
        expect(writerOf(store).log.numberOfSegments).toBe(firstCompaction === null ? 1 : 2);
        await committed;
      }
      const first = await firstCompaction;
      expect(first.isAborted).toBe(false);
      expect(first.recordsRemoved).toBeGreaterThan(0);
      const cleanBytes = first.bytesAfter;

      // No second compaction until the bytes written since make half the log.
      for (;;) {
        const committed = commitOne();
        const dirtyBytes = writerOf(store).log.sizeInBytes - cleanBytes;
        if (writerOf(store).compacting !== null) {
          expect(dirtyBytes).toBeGreaterThanOrEqual(writerOf(store).log.sizeInBytes * 0.5);
          await committed;
          break;
        }
        expect(dirtyBytes).toBeLessThan(writerOf(store).log.sizeInBytes * 0.5);
        await committed;
      }
      await writerOf(store).compacting;
    });

    test('keeps a log of two live keys small however much is written, reading a bounded amount per byte', async () => {
      const store = await openStore({ logConfig: SMALL, minCleanableDirtyRatio: 0.5 });
      const startedAtBytes: Promise<number>[] = [];
      let appendedBytes = 0;
      let largestBytes = 0;
      for (let i = 0; i < 300; i++) {
        const sizeBefore = writerOf(store).sizeInBytes;
        const committed = store.commit('g', [{ topic: 't', partition: i % 2, offset: offset(i) }]);
        appendedBytes += writerOf(store).sizeInBytes - sizeBefore;
        const started = writerOf(store).compacting;
        if (started !== null) startedAtBytes.push(started.then((result) => result.bytesBefore));
        largestBytes = Math.max(largestBytes, writerOf(store).sizeInBytes);
        await committed;
        // One thing at a time, so that what is measured does not depend on how fast fsync is.
        await writerOf(store).compacting;
      }
      await writerOf(store).compacting;
      const readBytes = (await Promise.all(startedAtBytes)).reduce((a, b) => a + b, 0);
      expect(startedAtBytes.length).toBeGreaterThan(3);
      // Each pass starts only once half the log is new since the last one: at most two bytes read per
      // byte appended, over the whole run.
      expect(readBytes).toBeLessThanOrEqual(2 * appendedBytes);
      expect(appendedBytes).toBeGreaterThan(40 * SMALL.segmentBytes);
      expect(largestBytes).toBeLessThanOrEqual(4 * SMALL.segmentBytes);
      expect(store.get('g', 't', 299 % 2)).toEqual(offset(299));
    });
  });
});
