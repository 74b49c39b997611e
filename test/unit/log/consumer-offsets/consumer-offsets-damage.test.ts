import * as fs from 'node:fs';
import * as path from 'node:path';
import { CorruptLogError, PartitionLog } from '../../../../src/log/storage';
import { writeRecoveryCheckpointSync } from '../../../../src/log/storage/recovery-checkpoint';
import { ManualTime } from '../../../../src/time';
import { makeTempDir, removeTempDir } from '../storage/temp-dir';
import { LocalOffsetsTopic } from './local-offsets-topic';
import type { ReplayedPartition } from '../../../support/replayed-partition';

/**
 * One flipped byte in `__consumer_offsets` must cost the write it hit and nothing else: the load skips
 * the damaged batch (or the record it cannot decode), reports it, and every group and offset written
 * before and after it loads. One test per place the byte can land in a batch.
 */
const offset = (committedOffset: number) => ({
  committedOffset,
  committedLeaderEpoch: -1,
  metadata: '',
  commitTimestampMs: 1_000,
});

const group = (groupId: string, generationId: number) => ({
  groupId,
  protocolType: 'consumer',
  generationId,
  protocolName: 'range',
  leaderId: 'm1',
  currentStateTimestampMs: 2_000,
  members: [
    {
      memberId: 'm1',
      groupInstanceId: '',
      clientId: 'client',
      clientHost: '/127.0.0.1',
      rebalanceTimeoutMs: 60_000,
      sessionTimeoutMs: 30_000,
      protocols: [{ name: 'range', metadata: Buffer.from('subscription') }],
      assignment: Buffer.from(`assignment-${generationId}`),
    },
  ],
});

describe('__consumer_offsets with a damaged log', () => {
  let dataDir: string;
  let dir: string;
  const time = new ManualTime();
  const topics = new Map<ReplayedPartition, LocalOffsetsTopic>();
  let damage: unknown[];

  beforeEach(() => {
    dataDir = makeTempDir();
    dir = path.join(dataDir, '__consumer_offsets-0');
    damage = [];
  });

  afterEach(async () => {
    for (const topic of topics.values()) await topic.close();
    topics.clear();
    removeTempDir(dataDir);
  });

  /** Partition 0's store of a single-node server's `__consumer_offsets` on `dataDir`, not loaded. */
  const newStore = (): ReplayedPartition => {
    const topic = new LocalOffsetsTopic(dataDir, {
      time,
      writer: { onCorruptRegion: (region) => damage.push({ region }) },
      store: { onCorruptRecord: (offset, error) => damage.push({ offset, error }) },
      recovery: { listener: { onTruncation: (event) => damage.push(event) } },
    });
    topics.set(topic.store(0), topic);
    return topic.store(0);
  };

  /** Stops the server the store is on: every log fsynced and closed. */
  const closeStore = async (store: ReplayedPartition): Promise<void> => {
    await topics.get(store)!.close();
    topics.delete(store);
  };

  /**
   * Writes g1's group and a first commit, then the victim (a commit, or g1's next generation), then later
   * writes of three groups; returns where the victim batch lies in the file.
   */
  async function writeWithVictim(victim: 'offset' | 'group'): Promise<{ position: number; size: number }> {
    const store = newStore();
    await store.load();
    await store.storeGroup(group('g1', 1));
    await store.commit('g1', [{ topic: 't', partition: 0, offset: offset(1) }]);
    if (victim === 'offset') await store.commit('g1', [{ topic: 't', partition: 1, offset: offset(2) }]);
    else await store.storeGroup(group('g1', 2));
    await store.commit('g1', [{ topic: 't', partition: 0, offset: offset(3) }]);
    await store.commit('g2', [{ topic: 'u', partition: 0, offset: offset(7) }]);
    await store.storeGroup(group('g3', 5));
    const batches = topics.get(store)!.writer(0).log.read(0, Number.MAX_SAFE_INTEGER).batches;
    await closeStore(store);
    const position = batches.slice(0, 2).reduce((sum, batch) => sum + batch.sizeInBytes, 0);
    return { position, size: batches[2]!.sizeInBytes };
  }

  function flipByte(at: number): void {
    const file = path.join(dir, '00000000000000000000.log');
    const fd = fs.openSync(file, 'r+');
    const byte = Buffer.alloc(1);
    fs.readSync(fd, byte, 0, 1, at);
    byte[0] = byte[0]! ^ 0x5a;
    fs.writeSync(fd, byte, 0, 1, at);
    fs.closeSync(fd);
  }

  /** Everything written but the victim. */
  function expectEverythingButTheVictim(store: ReplayedPartition): void {
    expectEverythingButTheVictimAnd(store, 3);
  }

  function expectEverythingButTheVictimAnd(store: ReplayedPartition, lastG1Offset: number): void {
    expect(store.isLoaded).toBe(true);
    expect(store.get('g1', 't', 0)?.committedOffset).toBe(lastG1Offset);
    expect(store.get('g1', 't', 1)).toBeUndefined();
    expect(store.get('g2', 'u', 0)?.committedOffset).toBe(7);
    const groups = new Map(store.groups().map((g) => [g.groupId, g.generationId]));
    expect(groups).toEqual(
      new Map([
        ['g1', 1],
        ['g3', 5],
      ]),
    );
  }

  // Byte positions inside a batch (see record-batch.ts) and in its only record.
  const places: [string, (size: number) => number][] = [
    ['baseOffset', () => 5],
    ['batchLength', () => 10],
    ['magic', () => 12],
    ['crc', () => 15],
    ['attributes', () => 18],
    ['lastOffsetDelta', () => 22],
    ['baseTimestampMs', () => 29],
    ['maxTimestampMs', () => 37],
    ['recordCount', () => 42],
    ['the record length', () => 43],
    ['the record key', () => 52],
    ['the record value', (size) => size - 3],
  ];

  for (const victim of ['offset', 'group'] as const) {
    for (const [place, at] of places) {
      test(`a flipped byte in ${place} of ${victim === 'offset' ? 'an offset commit' : 'a group record'} loses that write only, and is reported`, async () => {
        const { position, size } = await writeWithVictim(victim);
        flipByte(position + at(size));
        const store = newStore();
        const loaded = await store.load();
        expectEverythingButTheVictim(store);
        // Reported once: cut at the open when the header cannot be right (found without a CRC check),
        // or skipped by the replay when only the CRC tells.
        const file = path.join(dir, '00000000000000000000.log');
        expect(damage).toEqual([
          expect.objectContaining(
            loaded.corruptBatches === 1
              ? { region: { file, position, sizeInBytes: size, offset: 2 } }
              : { kind: 'corrupt', file, position, offset: 2, truncatedBytes: size },
          ),
        ]);
        expect(loaded.corruptBytes).toBe(loaded.corruptBatches === 1 ? size : 0);
        // Writes go on after the load, and the next load skips the same bytes the same way.
        await store.commit('g1', [{ topic: 't', partition: 0, offset: offset(4) }]);
        await closeStore(store);
        damage = [];
        const reopened = newStore();
        await reopened.load();
        expectEverythingButTheVictimAnd(reopened, 4);
        expect(damage).toHaveLength(loaded.corruptBatches);
      });
    }
  }

  test('a record whose batch is whole but whose key cannot be decoded is skipped and reported; the rest loads', async () => {
    const store = newStore();
    await store.load();
    await store.commit('g1', [{ topic: 't', partition: 0, offset: offset(1) }]);
    await closeStore(store);
    const log = PartitionLog.open(dir, { time, config: { cleanupPolicy: 'compact' } });
    await log.append([{ key: Buffer.from([9, 0, 0, 0, 0]), value: Buffer.from('x') }]).flushed;
    await log.close();
    const writer = newStore();
    await writer.load();
    await writer.commit('g1', [{ topic: 't', partition: 0, offset: offset(2) }]);
    await closeStore(writer);
    damage = [];
    const reopened = newStore();
    const loaded = await reopened.load();
    expect(reopened.get('g1', 't', 0)?.committedOffset).toBe(2);
    expect(loaded.corruptRecords).toBe(1);
    expect(damage).toEqual([{ offset: 1, error: expect.objectContaining({ code: 2 }) }]);
  });

  test('after an unclean stop, damage the recovery point covers is removed at the open (only the damaged batch)', async () => {
    const { position, size } = await writeWithVictim('offset');
    const end = 6;
    writeRecoveryCheckpointSync(dir, { recoveryPoint: end, isCleanShutdown: false });
    flipByte(position + size - 3);
    // A user partition would refuse to open this without --truncate-corrupt-logs.
    expect(() => PartitionLog.open(dir, { time })).toThrow(CorruptLogError);
    const store = newStore();
    const loaded = await store.load();
    expectEverythingButTheVictim(store);
    expect(loaded.corruptBatches).toBe(0);
    expect(damage).toEqual([
      expect.objectContaining({
        kind: 'corrupt',
        position,
        offset: 2,
        truncatedBytes: size,
        recoveryPoint: end,
      }),
    ]);
    expect(topics.get(store)!.writer(0).log.logEndOffset).toBe(end);
  });
});
