import { ErrorCode } from '../../../src/errors';
import { isLegalTopicName } from '../../../src/group/check-request';
import { topicNameProblem } from '../../../src/log/topic-partition';
import { GROUP_ID, GroupHarness, settle, Tracked } from '../../support/group-harness';
import { MemoryGroupStore } from './memory-group-store';

let h: GroupHarness;
afterEach(() => h.shutdown());

/** An outside commit (generation -1, no member): an Empty group holds the offsets. */
const OUTSIDE = { memberId: '', generationId: -1 };

const offsets = (topic: string, partitions: number[]) =>
  partitions.map((partition) => ({ topic, partition, offset: 10 + partition }));

describe('OffsetCommit: what no topic can have', () => {
  beforeEach(() => {
    h = new GroupHarness();
  });

  test('refuses a negative partition with UNKNOWN_TOPIC_OR_PARTITION, as Kafka does, and stores the rest', async () => {
    const codes = await h.commit(OUTSIDE, [
      ...offsets('orders', [-1, 0]),
      { topic: 'orders', partition: -2_147_483_648, offset: 1 },
    ]);
    expect([...codes]).toEqual([
      ['orders--1', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      ['orders-0', ErrorCode.NONE],
      ['orders--2147483648', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
    ]);
    const fetched = await h.fetch(GROUP_ID);
    expect(fetched.topics).toEqual([
      { name: 'orders', partitions: [expect.objectContaining({ partitionIndex: 0, committedOffset: 10 })] },
    ]);
  });

  test('refuses a name no topic can have with INVALID_TOPIC_EXCEPTION', async () => {
    const tooLong = 'x'.repeat(250);
    const codes = await h.commit(OUTSIDE, [
      ...offsets('', [0]),
      ...offsets('a/b', [0]),
      ...offsets('..', [0]),
      ...offsets(tooLong, [0]),
      ...offsets('x'.repeat(249), [0]),
      ...offsets('ok.topic_1-a', [0]),
    ]);
    expect(codes.get('-0')).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
    expect(codes.get('a/b-0')).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
    expect(codes.get('..-0')).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
    expect(codes.get(`${tooLong}-0`)).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
    expect(codes.get(`${'x'.repeat(249)}-0`)).toBe(ErrorCode.NONE);
    expect(codes.get('ok.topic_1-a-0')).toBe(ErrorCode.NONE);
    expect((await h.fetch(GROUP_ID)).topics.map((t) => t.name).sort()).toEqual([
      'ok.topic_1-a',
      'x'.repeat(249),
    ]);
  });

  test('judges topic names exactly as the log does', () => {
    for (const name of [
      '',
      '.',
      '..',
      '...',
      'a',
      'a/b',
      'a b',
      'ü',
      'A.b_c-9',
      'x'.repeat(249),
      'x'.repeat(250),
    ]) {
      expect([name, isLegalTopicName(name)]).toEqual([name, topicNameProblem(name) === null]);
    }
  });
});

describe('OffsetCommit: groupMaxCommittedPartitions', () => {
  test('accepts partitions the group already has, and new ones only while they fit', async () => {
    const refused: [string, ErrorCode, number][] = [];
    h = new GroupHarness(
      { groupMaxCommittedPartitions: 5 },
      {
        listener: {
          onOffsetCommitRefused: (groupId, code, partitions) => refused.push([groupId, code, partitions]),
        },
      },
    );
    expect([...(await h.commit(OUTSIDE, offsets('a', [0, 1, 2, 3]))).values()]).toEqual(
      Array(4).fill(ErrorCode.NONE),
    );
    // Two known, then three new of which one fits.
    const codes = await h.commit(OUTSIDE, [...offsets('a', [0, 1]), ...offsets('b', [0, 1, 2])]);
    expect([...codes]).toEqual([
      ['a-0', ErrorCode.NONE],
      ['a-1', ErrorCode.NONE],
      ['b-0', ErrorCode.NONE],
      ['b-1', ErrorCode.INVALID_COMMIT_OFFSET_SIZE],
      ['b-2', ErrorCode.INVALID_COMMIT_OFFSET_SIZE],
    ]);
    expect(refused).toEqual([[GROUP_ID, ErrorCode.INVALID_COMMIT_OFFSET_SIZE, 2]]);
    const fetched = await h.fetch(GROUP_ID, [['b', [0, 1, 2]]]);
    expect(fetched.topics[0]!.partitions.map((p) => p.committedOffset)).toEqual([10, -1, -1]);
    // Full: every partition it has can be committed again; no new one.
    expect([...(await h.commit(OUTSIDE, offsets('a', [0, 1, 2, 3]))).values()]).toEqual(
      Array(4).fill(ErrorCode.NONE),
    );
    expect((await h.commit(OUTSIDE, offsets('c', [0]))).get('c-0')).toBe(
      ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    );
    // The limit is per group.
    expect((await h.commit({ ...OUTSIDE, groupId: 'other' }, offsets('c', [0]))).get('c-0')).toBe(
      ErrorCode.NONE,
    );
    // A group deleted with its offsets starts again from nothing.
    await h.coordinator.deleteGroups({ groupsNames: [GROUP_ID] }, { clientHost: 'h' });
    expect([...(await h.commit(OUTSIDE, offsets('c', [0, 1, 2, 3, 4, 5]))).values()]).toEqual([
      ...Array(5).fill(ErrorCode.NONE),
      ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ]);
  });

  test('counts the same new partition once, and commits still being stored as taken', async () => {
    const store = new MemoryGroupStore();
    h = new GroupHarness({ groupMaxCommittedPartitions: 3 }, { offsetStore: store, metadataStore: store });
    store.isDeferred = true;
    const first = new Tracked(
      h.coordinator.offsetCommit(
        {
          groupId: GROUP_ID,
          generationId: -1,
          memberId: '',
          groupInstanceId: '',
          topics: [
            {
              name: 'a',
              partitions: [0, 1, 0].map((partitionIndex) => ({
                partitionIndex,
                committedOffset: 1,
                committedLeaderEpoch: -1,
                committedMetadata: '',
              })),
            },
          ],
        },
        { clientHost: 'h' },
      ),
    );
    await settle();
    // a-0 and a-1 are being stored: one new partition is left.
    const second = new Tracked(
      h.coordinator.offsetCommit(
        {
          groupId: GROUP_ID,
          generationId: -1,
          memberId: '',
          groupInstanceId: '',
          topics: [
            {
              name: 'b',
              partitions: [0, 1].map((partitionIndex) => ({
                partitionIndex,
                committedOffset: 1,
                committedLeaderEpoch: -1,
                committedMetadata: '',
              })),
            },
          ],
        },
        { clientHost: 'h' },
      ),
    );
    await settle();
    store.release();
    await settle();
    expect(first.result.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.NONE,
      ErrorCode.NONE,
      ErrorCode.NONE,
    ]);
    expect(second.result.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.NONE,
      ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ]);
    expect(store.committedPartitions(GROUP_ID)).toBe(3);
  });

  test('a group whose offsets expire makes room again', async () => {
    h = new GroupHarness({ groupMaxCommittedPartitions: 2, offsetsRetentionMinutes: 1 });
    await h.commit(OUTSIDE, offsets('a', [0, 1]));
    expect((await h.commit(OUTSIDE, offsets('a', [2]))).get('a-2')).toBe(
      ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    );
    h.advance(60_000 + h.config.offsetsRetentionCheckIntervalMs);
    await settle();
    expect((await h.commit(OUTSIDE, offsets('a', [2]))).get('a-2')).toBe(ErrorCode.NONE);
  });
});
