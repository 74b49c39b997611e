import { CoordinatorRecordStore } from '../../../src/group';
import {
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
} from '../../../src/group/records/consumer-offsets-record';
import { ConsumerOffsetsWriter } from '../../../src/log/consumer-offsets';
import { PartitionLog } from '../../../src/log/storage';
import { LedOffsetsStores } from '../../../src/server/led-offsets-stores';
import { ManualTime } from '../../../src/time';
import { makeTempDir, removeTempDir } from '../log/storage/temp-dir';

const OFFSET = { committedOffset: 5, committedLeaderEpoch: -1, metadata: '', commitTimestampMs: 1_000 };

/**
 * What reads offsets outside the coordinator (consumer-lag metrics, the live page) sees of a store still
 * loading: nothing, until its load is done, since a load waits for the HW to cover what it replayed and
 * the view may hold records a failover could still take back.
 */
test('a store is read only once loaded: not while its load waits for the HW', async () => {
  const dir = makeTempDir();
  const log = PartitionLog.open(dir, { time: new ManualTime(), config: { cleanupPolicy: 'compact' } });
  try {
    await log.append([{ key: encodeOffsetCommitKey('g', 't', 0), value: encodeOffsetCommitValue(OFFSET) }])
      .flushed;
    let committed!: () => void;
    const highWatermark = new Promise<void>((resolve) => (committed = resolve));
    const writer = new ConsumerOffsetsWriter({
      key: '__consumer_offsets-0',
      log,
      highWatermark: 0,
      appendCommitted: () => Promise.reject(new Error('nothing is written here')),
      awaitHighWatermark: () => highWatermark,
    });
    const store = new CoordinatorRecordStore(writer);
    const stores = new LedOffsetsStores(() => 0);
    stores.elect(0, store);
    const loading = store.load();
    for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
    // Replayed: the store's view has the commit, but it is not committed yet.
    expect(store.get('g', 't', 0)).toEqual(OFFSET);
    expect([stores.list('g'), stores.committedPartitions('g'), [...stores.groupIds()]]).toEqual([[], 0, []]);
    committed();
    await loading;
    expect(stores.list('g')).toEqual([{ topic: 't', partition: 0, offset: OFFSET }]);
    expect([stores.committedPartitions('g'), [...stores.groupIds()]]).toEqual([1, ['g']]);
    stores.resign(0, 0);
    expect(stores.list('g')).toEqual([]);
  } finally {
    await log.close();
    removeTempDir(dir);
  }
});
