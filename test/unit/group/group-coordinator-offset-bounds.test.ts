import { CohortError, ErrorCode } from '../../../src/errors';
import { isLegalTopicName } from '../../../src/group/check-request';
import { topicNameProblem } from '../../../src/log/topic-partition';
import { codesOf, CoordinatorTestContext } from '../../support/coordinator-test-context';
import { GROUP_ID } from '../../support/group-harness';

/** An outside commit (generation -1, no member): an Empty group holds the offsets. */
const OUTSIDE = { memberId: '', generationId: -1 };

const offsets = (topic: string, partitions: number[]) =>
  partitions.map((partition) => ({ topic, partition, offset: 10 + partition }));

let ctx: CoordinatorTestContext;
afterEach(() => ctx.shutdown());

describe('OffsetCommit: what no topic can have', () => {
  beforeEach(async () => {
    ctx = await CoordinatorTestContext.create();
  });

  test('refuses a negative partition with UNKNOWN_TOPIC_OR_PARTITION, as Kafka does, and stores the rest', async () => {
    const codes = await ctx.commitOffsetsAndAnswer(OUTSIDE, [
      ...offsets('orders', [-1, 0]),
      { topic: 'orders', partition: -2_147_483_648, offset: 1 },
    ]);
    expect([...codes]).toEqual([
      ['orders--1', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      ['orders-0', ErrorCode.NONE],
      ['orders--2147483648', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
    ]);
    const fetched = await ctx.fetch(GROUP_ID);
    expect(fetched.topics).toEqual([
      { name: 'orders', partitions: [expect.objectContaining({ partitionIndex: 0, committedOffset: 10 })] },
    ]);
  });

  test('refuses a name no topic can have with INVALID_TOPIC_EXCEPTION', async () => {
    const tooLong = 'x'.repeat(250);
    const codes = await ctx.commitOffsetsAndAnswer(OUTSIDE, [
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
    expect((await ctx.fetch(GROUP_ID)).topics.map((t) => t.name).sort()).toEqual([
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
    ctx = await CoordinatorTestContext.create(
      { groupMaxCommittedPartitions: 5 },
      {
        listener: {
          onOffsetCommitRefused: (groupId, code, partitions) => refused.push([groupId, code, partitions]),
        },
      },
    );
    expect([...(await ctx.commitOffsetsAndAnswer(OUTSIDE, offsets('a', [0, 1, 2, 3]))).values()]).toEqual(
      Array(4).fill(ErrorCode.NONE),
    );
    // Two known, then three new of which one fits: records for the four accepted only.
    const call = ctx.commitOffsets(OUTSIDE, [...offsets('a', [0, 1]), ...offsets('b', [0, 1, 2])]);
    expect(call.records.map((r) => r.key)).toEqual([
      { type: 1, groupId: GROUP_ID, topic: 'a', partition: 0 },
      { type: 1, groupId: GROUP_ID, topic: 'a', partition: 1 },
      { type: 1, groupId: GROUP_ID, topic: 'b', partition: 0 },
    ]);
    ctx.commit();
    expect([...codesOf(await call.answer.promise)]).toEqual([
      ['a-0', ErrorCode.NONE],
      ['a-1', ErrorCode.NONE],
      ['b-0', ErrorCode.NONE],
      ['b-1', ErrorCode.INVALID_COMMIT_OFFSET_SIZE],
      ['b-2', ErrorCode.INVALID_COMMIT_OFFSET_SIZE],
    ]);
    expect(refused).toEqual([[GROUP_ID, ErrorCode.INVALID_COMMIT_OFFSET_SIZE, 2]]);
    const fetched = await ctx.fetch(GROUP_ID, [['b', [0, 1, 2]]]);
    expect(fetched.topics[0]!.partitions.map((p) => p.committedOffset)).toEqual([10, -1, -1]);
    // Full: every partition it has can be committed again; no new one.
    expect([...(await ctx.commitOffsetsAndAnswer(OUTSIDE, offsets('a', [0, 1, 2, 3]))).values()]).toEqual(
      Array(4).fill(ErrorCode.NONE),
    );
    expect((await ctx.commitOffsetsAndAnswer(OUTSIDE, offsets('c', [0]))).get('c-0')).toBe(
      ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    );
    // The limit is per group.
    expect(
      (await ctx.commitOffsetsAndAnswer({ ...OUTSIDE, groupId: 'other' }, offsets('c', [0]))).get('c-0'),
    ).toBe(ErrorCode.NONE);
    // A group deleted with its offsets starts again from nothing.
    await ctx.deleteGroups([GROUP_ID]);
    expect([
      ...(await ctx.commitOffsetsAndAnswer(OUTSIDE, offsets('c', [0, 1, 2, 3, 4, 5]))).values(),
    ]).toEqual([...Array(5).fill(ErrorCode.NONE), ErrorCode.INVALID_COMMIT_OFFSET_SIZE]);
  });

  test('counts the same new partition once, and partitions written and not yet committed as taken', async () => {
    ctx = await CoordinatorTestContext.create({ groupMaxCommittedPartitions: 3 });
    const first = ctx.offsetCommit({
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
    });
    // a-0 and a-1 are written, not committed: one new partition is left.
    const second = ctx.commitOffsets(OUTSIDE, offsets('b', [0, 1]));
    expect(second.records.map((r) => r.key)).toEqual([
      { type: 1, groupId: GROUP_ID, topic: 'b', partition: 0 },
    ]);
    ctx.commit();
    expect((await first.answer.promise).topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.NONE,
      ErrorCode.NONE,
      ErrorCode.NONE,
    ]);
    expect((await second.answer.promise).topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.NONE,
      ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ]);
    expect(ctx.router.committedOffsets.committedPartitions(GROUP_ID)).toBe(3);
  });

  test('a partition whose write failed no longer counts as taken', async () => {
    ctx = await CoordinatorTestContext.create({ groupMaxCommittedPartitions: 1 });
    const failed = ctx.commitOffsets(OUTSIDE, offsets('a', [0]));
    ctx.failAppend(new CohortError(ErrorCode.NOT_ENOUGH_REPLICAS));
    expect(codesOf(await failed.answer.promise).get('a-0')).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect((await ctx.commitOffsetsAndAnswer(OUTSIDE, offsets('b', [0]))).get('b-0')).toBe(ErrorCode.NONE);
  });

  test('a group whose offsets expire makes room again', async () => {
    ctx = await CoordinatorTestContext.create({ groupMaxCommittedPartitions: 2, offsetsRetentionMinutes: 1 });
    await ctx.commitOffsetsAndAnswer(OUTSIDE, offsets('a', [0, 1]));
    expect((await ctx.commitOffsetsAndAnswer(OUTSIDE, offsets('a', [2]))).get('a-2')).toBe(
      ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    );
    ctx.time.advance(60_000 + ctx.config.offsetsRetentionCheckIntervalMs);
    await ctx.commitExpiries(1);
    expect((await ctx.commitOffsetsAndAnswer(OUTSIDE, offsets('a', [2]))).get('a-2')).toBe(ErrorCode.NONE);
  });
});
