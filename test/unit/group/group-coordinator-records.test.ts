import { CohortError, ErrorCode } from '../../../src/errors';
import type { CoordinatorLoadResult, GroupCoordinatorListener } from '../../../src/group';
import { GroupCoordinatorRouter } from '../../../src/group/group-coordinator-router';
import {
  decodeKey,
  decodeOffsetCommitValue,
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
  OFFSET_COMMIT_KEY_TYPE,
} from '../../../src/group/records/consumer-offsets-record';
import { ManualTime } from '../../../src/time';
import { FakePartitionWriter } from '../../support/fake-partition-writer';
import {
  PROTOCOL_NAME,
  PROTOCOL_TYPE,
  PROTOCOLS,
  TEST_GROUP_CONFIG,
  Tracked,
  offsetCommitRequest,
} from '../../support/group-harness';

const CONTEXT = { clientHost: '/127.0.0.1' };

const committed = (committedOffset: number) => ({
  committedOffset,
  committedLeaderEpoch: -1,
  metadata: '',
  commitTimestampMs: 1_000,
});

/** An offset commit record of `groupId` for topic-0, as the coordinator writes it. */
const offsetRecord = (groupId: string, offset: number) => ({
  key: encodeOffsetCommitKey(groupId, 'topic', 0),
  value: encodeOffsetCommitValue(committed(offset)),
});

/** A Stable one-member group's metadata record. */
const groupRecord = (groupId: string, memberId: string, generationId: number) => ({
  key: encodeGroupMetadataKey(groupId),
  value: encodeGroupMetadataValue({
    protocolType: PROTOCOL_TYPE,
    generationId,
    protocolName: PROTOCOL_NAME,
    leaderId: memberId,
    currentStateTimestampMs: 0,
    members: [
      {
        memberId,
        groupInstanceId: '',
        clientId: 'client',
        clientHost: '/127.0.0.1',
        rebalanceTimeoutMs: 60_000,
        sessionTimeoutMs: 30_000,
        protocols: PROTOCOLS,
        assignment: Buffer.from('assignment'),
      },
    ],
  }),
});

/**
 * The coordinator over a partition's writer (the way the server elects it): the state a shard serves is
 * what the partition's records add up to, replayed at the load, and what it writes are records, applied
 * only once the writer says they are committed. The writer is a fake whose load and appends the test
 * releases.
 */
describe('a coordinator elected over a partition writer', () => {
  const time = new ManualTime();
  let router: GroupCoordinatorRouter;
  let replayed: CoordinatorLoadResult[];
  let corrupt: [number, number][];

  beforeEach(() => {
    replayed = [];
    corrupt = [];
    const listener: GroupCoordinatorListener = {
      onPartitionReplayed: (_partition, _epoch, result) => replayed.push(result),
      onCorruptRecord: (partition, offset) => corrupt.push([partition, offset]),
    };
    router = new GroupCoordinatorRouter(TEST_GROUP_CONFIG, time, { numPartitions: 1, listener });
  });

  afterEach(() => router.shutdown());

  function fetchOffset(groupId: string): Promise<number> {
    return router
      .offsetFetch(
        { groupId, topics: [{ name: 'topic', partitionIndexes: [0] }], requireStable: false },
        CONTEXT,
      )
      .then((response) => response.topics[0]!.partitions[0]!.committedOffset);
  }

  test('brings back the groups and offsets its records hold: the latest record per key, tombstones deleting', async () => {
    const writer = new FakePartitionWriter(0, 3, [
      offsetRecord('g', 5),
      groupRecord('g', 'member-1', 2),
      offsetRecord('g', 7),
      offsetRecord('gone', 1),
      { key: encodeOffsetCommitKey('gone', 'topic', 0), value: null },
      groupRecord('h', 'member-2', 4),
      groupRecord('h', 'member-3', 5),
    ]);
    await router.onElection(0, 3, writer);
    expect(await fetchOffset('g')).toBe(7);
    expect(await fetchOffset('gone')).toBe(-1);
    const described = await router.describeGroups({ groups: ['g', 'h', 'gone'] }, CONTEXT);
    expect(described.groups.map((g) => [g.groupId, g.errorCode, g.groupState, g.generationId])).toEqual([
      ['g', ErrorCode.NONE, 'Stable', 2],
      ['h', ErrorCode.NONE, 'Stable', 5],
      ['gone', ErrorCode.GROUP_ID_NOT_FOUND, 'Dead', -1],
    ]);
    expect(described.groups[1]!.members.map((m) => m.memberId)).toEqual(['member-3']);
    expect(replayed).toEqual([
      expect.objectContaining({ records: 7, endOffset: 7, groups: 2, offsets: 1, corruptRecords: 0 }),
    ]);
  });

  test('skips a record it cannot decode, reports it with its offset, and loads the rest', async () => {
    const writer = new FakePartitionWriter(0, 0, [
      offsetRecord('g', 5),
      { key: Buffer.from([9, 0, 0]), value: Buffer.from('?') },
      offsetRecord('g', 6),
    ]);
    await router.onElection(0, 0, writer);
    expect(await fetchOffset('g')).toBe(6);
    expect(corrupt).toEqual([[0, 1]]);
    expect(replayed[0]).toEqual(expect.objectContaining({ corruptRecords: 1, offsets: 1 }));
  });

  test('writes an OffsetCommit as a record and acknowledges it only once the writer has committed it', async () => {
    const writer = new FakePartitionWriter();
    await router.onElection(0, 0, writer);
    const commit = new Tracked(router.offsetCommit(offsetCommitRequest('g', 42), CONTEXT));
    // Written, not committed: the record is in the partition (the handler ran as the call was made), the
    // offset is not served yet, and the commit is not answered.
    const record = writer.records.at(-1)!;
    expect(decodeKey(record.key!)).toEqual({
      type: OFFSET_COMMIT_KEY_TYPE,
      groupId: 'g',
      topic: 'topic',
      partition: 0,
    });
    expect(decodeOffsetCommitValue(record.value!).committedOffset).toBe(42);
    expect(await fetchOffset('g')).toBe(-1);
    expect(commit.isSettled).toBe(false);
    writer.releaseAppends();
    expect((await commit.promise).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(await fetchOffset('g')).toBe(42);
  });

  test('a commit the writer fails is answered with the code Kafka converts the failure to, and not applied', async () => {
    const writer = new FakePartitionWriter();
    await router.onElection(0, 0, writer);
    const commit = router.offsetCommit(offsetCommitRequest('g', 42), CONTEXT);
    writer.failAppend(new CohortError(ErrorCode.NOT_ENOUGH_REPLICAS, 'the ISR shrank'));
    expect((await commit).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(await fetchOffset('g')).toBe(-1);
  });

  test('takes the partition count from the election, and whenLoaded waits for every led partition to load', async () => {
    const counted = new GroupCoordinatorRouter(TEST_GROUP_CONFIG, time, {});
    try {
      const first = new FakePartitionWriter(0, 0);
      const second = new FakePartitionWriter(1, 0);
      first.isLoadImmediate = false;
      void counted.onElection(0, 0, first, 2);
      const secondLoaded = counted.onElection(1, 0, second, 2);
      expect(counted.numPartitions).toBe(2);
      const loaded = new Tracked(counted.whenLoaded());
      // The second partition has loaded; the first, held, keeps whenLoaded waiting.
      await secondLoaded;
      expect([first.isLoaded, second.isLoaded]).toEqual([false, true]);
      expect(loaded.isSettled).toBe(false);
      first.releaseLoad();
      await loaded.promise;
      expect([first.isLoaded, second.isLoaded]).toEqual([true, true]);
    } finally {
      counted.shutdown();
    }
  });

  test('committed offsets are read across groups only once the partition is loaded, and not after it is resigned', async () => {
    const writer = new FakePartitionWriter(0, 1, [offsetRecord('g', 5)]);
    writer.isLoadImmediate = false;
    const loaded = router.onElection(0, 1, writer);
    // Replayed (the election reads the partition as it is made) but not yet covered by the high
    // watermark: nothing of it is read.
    expect([[...router.committedOffsets.groupIds()], router.committedOffsets.list('g')]).toEqual([[], []]);
    expect(router.committedOffsets.committedPartitions('g')).toBe(0);
    writer.releaseLoad();
    await loaded;
    expect([...router.committedOffsets.groupIds()]).toEqual(['g']);
    expect(router.committedOffsets.list('g')).toEqual([
      { topic: 'topic', partition: 0, offset: committed(5) },
    ]);
    expect(router.committedOffsets.committedPartitions('g')).toBe(1);
    writer.resign();
    router.onResignation(0, 1);
    expect([[...router.committedOffsets.groupIds()], router.committedOffsets.list('g')]).toEqual([[], []]);
  });
});
