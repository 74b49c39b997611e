import * as fs from 'node:fs';
import * as path from 'node:path';
import type { StoredGroup } from '../../../../src/group';
import {
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
  type OffsetCommitValue,
} from '../../../../src/group/records/consumer-offsets-record';
import { CONSUMER_OFFSETS_LOG_CONFIG } from '../../../../src/log/consumer-offsets';
import { PartitionLog, type SimpleRecord } from '../../../../src/log/storage';
import { ManualTime } from '../../../../src/time';
import { makeTempDir, removeTempDir } from '../storage/temp-dir';
import { LocalOffsetsTopic } from './local-offsets-topic';

function offset(committedOffset: number): OffsetCommitValue {
  return {
    committedOffset,
    committedLeaderEpoch: 4,
    metadata: `m${committedOffset}`,
    commitTimestampMs: 1_000,
  };
}

const GROUP: StoredGroup = {
  groupId: 'g1',
  protocolType: 'consumer',
  generationId: 3,
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
      assignment: Buffer.from('assignment'),
    },
  ],
};

/**
 * Data directories and the topic's partition count: the count is the data directory's, recorded when the
 * topic is first created, and a data directory from before the topic was replicated keeps its one
 * partition with everything in it.
 */
describe('__consumer_offsets in a single-node data directory', () => {
  const time = new ManualTime();
  let dataDir: string;
  const topics: LocalOffsetsTopic[] = [];

  beforeEach(() => {
    dataDir = makeTempDir();
  });

  afterEach(async () => {
    for (const topic of topics.splice(0)) await topic.close();
    removeTempDir(dataDir);
  });

  function start(numPartitions: number): LocalOffsetsTopic {
    const topic = new LocalOffsetsTopic(dataDir, { time, numPartitions });
    topics.push(topic);
    return topic;
  }

  async function stop(topic: LocalOffsetsTopic): Promise<void> {
    topics.splice(topics.indexOf(topic), 1);
    await topic.close();
  }

  const partitionDirs = (): string[] =>
    fs
      .readdirSync(dataDir)
      .filter((name) => name.startsWith('__consumer_offsets-'))
      .sort();

  /**
   * The data directory as cohort's store wrote it before the topic was replicated: one compacted
   * PartitionLog in `__consumer_offsets-0`, opened with the topic's settings, each write one batch
   * appended at the default leader epoch; no topic registry entry.
   */
  async function writeOldDataDir(): Promise<void> {
    const log = PartitionLog.open(path.join(dataDir, '__consumer_offsets-0'), {
      time,
      config: { ...CONSUMER_OFFSETS_LOG_CONFIG, cleanupPolicy: 'compact' },
      recovery: { truncateCorruptLogs: true },
    });
    const commit = (groupId: string, partition: number, n: number): SimpleRecord => ({
      timestampMs: 1_000,
      key: encodeOffsetCommitKey(groupId, 'orders', partition),
      value: encodeOffsetCommitValue(offset(n)),
    });
    const batches: SimpleRecord[][] = [
      [commit('g1', 0, 10), commit('g1', 1, 20)],
      [{ timestampMs: 2_000, key: encodeGroupMetadataKey('g1'), value: encodeGroupMetadataValue(GROUP) }],
      [commit('g1', 0, 11)],
      [commit('gone', 0, 1)],
      [
        { key: encodeGroupMetadataKey('gone'), value: null },
        { key: encodeOffsetCommitKey('gone', 'orders', 0), value: null },
      ],
      [commit('g2', 5, 7)],
    ];
    for (const records of batches) await log.append(records).flushed;
    await log.close();
  }

  it('keeps the one partition of a data directory from before the topic was replicated, with nothing lost', async () => {
    await writeOldDataDir();
    const topic = start(8);
    expect(topic.startup).toEqual({ outcome: 'adopted', numPartitions: 1, configuredNumPartitions: 8 });
    expect(topic.calls).toEqual([{ call: 'election', partitionIndex: 0, leaderEpoch: 0 }]);
    expect(partitionDirs()).toEqual(['__consumer_offsets-0']);
    const store = topic.store(0);
    const loaded = await store.load();
    expect(loaded).toMatchObject({ groups: 1, offsets: 3, corruptRecords: 0, corruptBatches: 0 });
    expect(store.list('g1')).toEqual([
      { topic: 'orders', partition: 0, offset: offset(11) },
      { topic: 'orders', partition: 1, offset: offset(20) },
    ]);
    expect(store.get('g2', 'orders', 5)).toEqual(offset(7));
    expect(store.hasOffsets('gone')).toBe(false);
    expect(store.groups()).toEqual([GROUP]);
    await store.commit('g2', [{ topic: 'orders', partition: 5, offset: offset(8) }]);
    await stop(topic);

    // Registered now: a later start keeps one partition, whatever it is configured with.
    const again = start(50);
    expect(again.startup).toEqual({ outcome: 'kept', numPartitions: 1, configuredNumPartitions: 50 });
    expect(again.manager.offsetsTopicPartitionCount()).toBe(1);
    const reloaded = again.store(0);
    await reloaded.load();
    expect(reloaded.get('g2', 'orders', 5)).toEqual(offset(8));
    expect(reloaded.get('g1', 'orders', 0)).toEqual(offset(11));
    expect(partitionDirs()).toEqual(['__consumer_offsets-0']);
  });

  it('creates the configured partitions at the first start, every directory at once, and keeps that count', async () => {
    const topic = start(3);
    expect(topic.startup).toEqual({ outcome: 'created', numPartitions: 3, configuredNumPartitions: 3 });
    expect(topic.calls.map((c) => [c.call, c.partitionIndex, c.leaderEpoch])).toEqual([
      ['election', 0, 0],
      ['election', 1, 0],
      ['election', 2, 0],
    ]);
    expect(partitionDirs()).toEqual(['__consumer_offsets-0', '__consumer_offsets-1', '__consumer_offsets-2']);
    const store = topic.store(2);
    await store.load();
    await store.commit('g', [{ topic: 't', partition: 0, offset: offset(1) }]);
    await stop(topic);
    expect(topic.calls.slice(3).map((c) => [c.call, c.partitionIndex])).toEqual([
      ['resignation', 0],
      ['resignation', 1],
      ['resignation', 2],
    ]);

    const again = start(5);
    expect(again.startup).toEqual({ outcome: 'kept', numPartitions: 3, configuredNumPartitions: 5 });
    expect(partitionDirs()).toHaveLength(3);
    const reloaded = again.store(2);
    await reloaded.load();
    expect(reloaded.get('g', 't', 0)).toEqual(offset(1));
    expect(again.writer(0).log.logEndOffset).toBe(0);
  });
});
