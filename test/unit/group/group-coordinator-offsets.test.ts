import { CohortError, ErrorCode } from '../../../src/errors';
import { InMemoryOffsetStore } from '../../../src/group/in-memory-offset-store';
import type { OffsetStore, TopicPartition, TopicPartitionOffset } from '../../../src/group/offset-store';
import { GROUP_ID, GroupHarness, offsetCommitRequest, settle, Tracked } from '../../support/group-harness';

let h: GroupHarness;
afterEach(() => h.shutdown());

const TP = { topic: 'topic', partition: 0 };

describe('OffsetCommit and OffsetFetch', () => {
  beforeEach(() => {
    h = new GroupHarness();
  });

  test('a commit with a generation to an unknown group gets ILLEGAL_GENERATION', async () => {
    const codes = await h.commit({ memberId: 'memberId', generationId: 1 }, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect((await h.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('a commit with generation -1 and no member creates an Empty group holding the offsets', async () => {
    const codes = await h.commit({ memberId: '', generationId: -1 }, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    expect(await h.describe()).toMatchObject({
      errorCode: ErrorCode.NONE,
      groupState: 'Empty',
      protocolType: '',
      generationId: 0,
    });
  });

  test('after the group empties, an outside commit (generation -1) is accepted and can be fetched', async () => {
    const join = await h.dynamicJoin();
    await h.leave([{ memberId: join.memberId }]);
    const codes = await h.commit({ memberId: '', generationId: -1 }, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    const fetched = await h.fetch(GROUP_ID, [['topic', [0]]]);
    expect(fetched.topics[0].partitions[0]).toMatchObject({ committedOffset: 0, errorCode: ErrorCode.NONE });
  });

  test('a fetch returns the offset, leader epoch and metadata that were committed', async () => {
    await h.commit({ memberId: '', generationId: -1 }, [
      { ...TP, offset: 97, metadata: 'some metadata', leaderEpoch: 15 },
    ]);
    const fetched = await h.fetch(GROUP_ID, [['topic', [0]]]);
    expect(fetched).toEqual({
      errorCode: ErrorCode.NONE,
      topics: [
        {
          name: 'topic',
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: 97,
              committedLeaderEpoch: 15,
              metadata: 'some metadata',
              errorCode: ErrorCode.NONE,
            },
          ],
        },
      ],
    });
  });

  test('the empty group id may commit, fetch, describe and delete offsets (as Kafka allows)', async () => {
    const codes = await h.commit({ groupId: '', memberId: '', generationId: -1 }, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    expect((await h.fetch('', [['topic', [0]]])).topics[0].partitions[0].committedOffset).toBe(0);
    expect(await h.describe('')).toMatchObject({ errorCode: ErrorCode.NONE, groupState: 'Empty' });
    const deleted = await h.coordinator.deleteGroups({ groupsNames: [''] }, { clientHost: 'h' });
    expect(deleted.results).toEqual([{ groupId: '', errorCode: ErrorCode.NONE }]);
    expect((await h.fetch('', [['topic', [0]]])).topics[0].partitions[0].committedOffset).toBe(-1);
  });

  test('a partition without a committed offset is fetched as offset -1 with no error', async () => {
    const fetched = await h.fetch(GROUP_ID, [['topic', [0]]]);
    expect(fetched.errorCode).toBe(ErrorCode.NONE);
    expect(fetched.topics[0].partitions[0]).toEqual({
      partitionIndex: 0,
      committedOffset: -1,
      committedLeaderEpoch: -1,
      metadata: '',
      errorCode: ErrorCode.NONE,
    });
  });

  test('a fetch without topics returns every committed offset of the group', async () => {
    expect((await h.fetch(GROUP_ID)).topics).toEqual([]);
    await h.commit({ memberId: '', generationId: -1 }, [
      { topic: 'topic', partition: 0, offset: 15 },
      { topic: 'topic', partition: 1, offset: 16 },
      { topic: 'other-topic', partition: 0, offset: 17 },
    ]);
    const fetched = await h.fetch(GROUP_ID);
    const offsets = new Map<string, number>();
    for (const topic of fetched.topics) {
      for (const p of topic.partitions) {
        expect(p.errorCode).toBe(ErrorCode.NONE);
        offsets.set(`${topic.name}-${p.partitionIndex}`, p.committedOffset);
      }
    }
    expect(offsets).toEqual(
      new Map([
        ['topic-0', 15],
        ['topic-1', 16],
        ['other-topic-0', 17],
      ]),
    );
  });

  test('a member commits in Stable with its generation', async () => {
    const memberId = await h.stableSingleMemberGroup();
    const codes = await h.commit({ memberId, generationId: 1 }, [{ ...TP, offset: 5 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
  });

  test('a member commits during PreparingRebalance with the generation it has', async () => {
    const memberId = await h.stableSingleMemberGroup();
    await h.sendDynamicJoin();
    expect(await h.state()).toBe('PreparingRebalance');
    const codes = await h.commit({ memberId, generationId: 1 }, [{ ...TP, offset: 5 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
  });

  test('a commit during CompletingRebalance gets REBALANCE_IN_PROGRESS', async () => {
    const join = await h.dynamicJoin();
    const codes = await h.commit({ memberId: join.memberId, generationId: join.generationId }, [
      { ...TP, offset: 0 },
    ]);
    expect(codes.get('topic-0')).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a commit during CompletingRebalance without a member id gets UNKNOWN_MEMBER_ID', async () => {
    const join = await h.dynamicJoin();
    const codes = await h.commit({ memberId: '', generationId: join.generationId }, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a commit during CompletingRebalance with the wrong generation gets ILLEGAL_GENERATION', async () => {
    const join = await h.dynamicJoin();
    const codes = await h.commit({ memberId: join.memberId, generationId: join.generationId + 1 }, [
      { ...TP, offset: 0 },
    ]);
    expect(codes.get('topic-0')).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test('an outside commit (generation -1, no member) to a group with members gets UNKNOWN_MEMBER_ID', async () => {
    await h.stableSingleMemberGroup();
    const codes = await h.commit({ memberId: '', generationId: -1 }, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('an outside commit (generation -1) to an Empty group is accepted whatever member and instance id it names', async () => {
    // Kafka's testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId: outside the group's
    // management the ids mean nothing and are not checked.
    const codes = await h.commit(
      { memberId: 'someone', groupInstanceId: 'some-instance', generationId: -1 },
      [{ ...TP, offset: 7 }],
    );
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    const fetched = await h.fetch(GROUP_ID, [['topic', [0]]]);
    expect(fetched.topics[0].partitions[0].committedOffset).toBe(7);
  });

  test('in a Stable group, a commit with a stale generation gets ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID', async () => {
    const memberId = await h.stableSingleMemberGroup();
    const stale = await h.commit({ memberId, generationId: 0 }, [{ ...TP, offset: 1 }]);
    expect(stale.get('topic-0')).toBe(ErrorCode.ILLEGAL_GENERATION);
    const stranger = await h.commit({ memberId: 'stranger', generationId: 1 }, [{ ...TP, offset: 1 }]);
    expect(stranger.get('topic-0')).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    const fetched = await h.fetch(GROUP_ID, [['topic', [0]]]);
    expect(fetched.topics[0].partitions[0].committedOffset).toBe(-1);
    const accepted = await h.commit({ memberId, generationId: 1 }, [{ ...TP, offset: 1 }]);
    expect(accepted.get('topic-0')).toBe(ErrorCode.NONE);
  });

  test('metadata longer than offset.metadata.max.bytes fails only its own partition', async () => {
    h.shutdown();
    h = new GroupHarness({ offsetMetadataMaxBytes: 4 });
    const codes = await h.commit({ memberId: '', generationId: -1 }, [
      { topic: 'topic', partition: 0, offset: 1, metadata: 'four' },
      { topic: 'topic', partition: 1, offset: 1, metadata: 'fives' },
      // Counted in UTF-8 bytes: two characters, six bytes.
      { topic: 'topic', partition: 2, offset: 1, metadata: '€€' },
    ]);
    expect([...codes.values()]).toEqual([
      ErrorCode.NONE,
      ErrorCode.OFFSET_METADATA_TOO_LARGE,
      ErrorCode.OFFSET_METADATA_TOO_LARGE,
    ]);
    const fetched = await h.fetch(GROUP_ID, [['topic', [0, 1, 2]]]);
    expect(fetched.topics[0].partitions.map((p) => p.committedOffset)).toEqual([1, -1, -1]);
  });

  test('a commit to a deleted group is a commit to an unknown group', async () => {
    await h.commit({ memberId: '', generationId: -1 }, [{ ...TP, offset: 3 }]);
    await h.coordinator.deleteGroups({ groupsNames: [GROUP_ID] }, { clientHost: 'h' });
    const codes = await h.commit({ memberId: 'm', generationId: 1 }, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.ILLEGAL_GENERATION);
  });
});

/** A store whose writes complete when the test says so: a stand-in for a replicated log. */
class DeferredOffsetStore implements OffsetStore {
  readonly memory = new InMemoryOffsetStore();
  readonly writes: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];

  commit(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.writes.push({
        resolve: () => {
          void this.memory.commit(groupId, offsets);
          resolve();
        },
        reject,
      });
    });
  }
  get(groupId: string, topic: string, partition: number) {
    return this.memory.get(groupId, topic, partition);
  }
  list(groupId: string) {
    return this.memory.list(groupId);
  }
  hasOffsets(groupId: string) {
    return this.memory.hasOffsets(groupId);
  }
  committedPartitions(groupId: string) {
    return this.memory.committedPartitions(groupId);
  }
  deleteGroup(groupId: string): Promise<void> {
    return this.memory.deleteGroup(groupId);
  }
  deleteOffsets(groupId: string, partitions: readonly TopicPartition[]): Promise<void> {
    return this.memory.deleteOffsets(groupId, partitions);
  }
  groupIds() {
    return this.memory.groupIds();
  }
}

describe('an asynchronous, durable offset store', () => {
  let store: DeferredOffsetStore;
  beforeEach(() => {
    store = new DeferredOffsetStore();
    h = new GroupHarness({}, { offsetStore: store });
  });

  function sendCommit(offset: number): Tracked<unknown> {
    return new Tracked(
      h.coordinator.offsetCommit(offsetCommitRequest(GROUP_ID, offset), { clientHost: 'h' }),
    );
  }

  test('a commit is acknowledged only once the store says it is stored', async () => {
    const commit = sendCommit(42);
    await settle();
    expect(commit.isSettled).toBe(false);
    expect((await h.fetch(GROUP_ID, [['topic', [0]]], false)).topics[0].partitions[0].committedOffset).toBe(
      -1,
    );
    store.writes[0].resolve();
    await settle();
    expect(commit.result).toEqual({
      topics: [{ name: 'topic', partitions: [{ partitionIndex: 0, errorCode: ErrorCode.NONE }] }],
    });
    expect((await h.fetch(GROUP_ID, [['topic', [0]]], false)).topics[0].partitions[0].committedOffset).toBe(
      42,
    );
  });

  test('a fetch requiring stable offsets gets UNSTABLE_OFFSET_COMMIT while a commit is being stored', async () => {
    sendCommit(42);
    await settle();
    const unstable = await h.fetch(GROUP_ID, [['topic', [0, 1]]], true);
    expect(unstable.topics[0].partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.UNSTABLE_OFFSET_COMMIT,
      ErrorCode.NONE,
    ]);
    store.writes[0].resolve();
    await settle();
    const stable = await h.fetch(GROUP_ID, [['topic', [0]]], true);
    expect(stable.topics[0].partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, committedOffset: 42 });
  });

  test.each([
    [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE],
    [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR],
    [ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE],
    [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REQUEST_TIMED_OUT],
  ])(
    'a store failing with %i fails the commit with %i, as Kafka converts append errors',
    async (cause, expected) => {
      const commit = sendCommit(1);
      await settle();
      store.writes[0].reject(new CohortError(cause));
      await settle();
      expect(commit.result).toEqual({
        topics: [{ name: 'topic', partitions: [{ partitionIndex: 0, errorCode: expected }] }],
      });
      expect((await h.fetch(GROUP_ID, [['topic', [0]]], true)).topics[0].partitions[0]).toMatchObject({
        errorCode: ErrorCode.NONE,
        committedOffset: -1,
      });
    },
  );

  test('a store failing with something that is not a CohortError fails the commit with UNKNOWN_SERVER_ERROR', async () => {
    const commit = sendCommit(1);
    await settle();
    store.writes[0].reject(new Error('disk on fire'));
    await settle();
    expect(commit.result).toEqual({
      topics: [
        { name: 'topic', partitions: [{ partitionIndex: 0, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR }] },
      ],
    });
  });

  test('groups with offsets in the store exist as Empty groups when the coordinator starts', async () => {
    await store.memory.commit('restored', [
      {
        topic: 't',
        partition: 0,
        offset: { committedOffset: 9, committedLeaderEpoch: -1, metadata: '', commitTimestampMs: 0 },
      },
    ]);
    const restarted = new GroupHarness({}, { offsetStore: store });
    try {
      expect(await restarted.describe('restored')).toMatchObject({
        errorCode: ErrorCode.NONE,
        groupState: 'Empty',
      });
      expect((await restarted.fetch('restored', [['t', [0]]])).topics[0].partitions[0].committedOffset).toBe(
        9,
      );
    } finally {
      restarted.shutdown();
    }
  });
});
