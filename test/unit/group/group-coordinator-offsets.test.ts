import { CohortError, ErrorCode } from '../../../src/errors';
import {
  codesOf,
  type CoordinatorCall,
  CoordinatorTestContext,
  offsetCommitRecord,
} from '../../support/coordinator-test-context';
import { GROUP_ID, offsetCommitRequest } from '../../support/group-harness';
import type { OffsetCommitResponse } from '../../../src/group/group-protocol';

let ctx: CoordinatorTestContext;
afterEach(() => ctx.shutdown());

const TP = { topic: 'topic', partition: 0 };
/** A commit outside any generation: an Empty group holds the offsets. */
const OUTSIDE = { memberId: '', generationId: -1 };

describe('OffsetCommit and OffsetFetch', () => {
  beforeEach(async () => {
    ctx = await CoordinatorTestContext.create();
  });

  test('a commit with a generation to an unknown group gets ILLEGAL_GENERATION, writing nothing', async () => {
    const call = ctx.commitOffsets({ memberId: 'memberId', generationId: 1 }, [{ ...TP, offset: 0 }]);
    expect(call.records).toEqual([]);
    expect((await call.answer.promise).topics[0]!.partitions[0]!.errorCode).toBe(
      ErrorCode.ILLEGAL_GENERATION,
    );
    expect((await ctx.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('a commit with generation -1 and no member creates an Empty group holding the offsets', async () => {
    const codes = await ctx.commitOffsetsAndAnswer(OUTSIDE, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    expect(await ctx.describe()).toMatchObject({
      errorCode: ErrorCode.NONE,
      groupState: 'Empty',
      protocolType: '',
      generationId: 0,
    });
  });

  test('after the group empties, an outside commit (generation -1) is accepted and can be fetched', async () => {
    const join = await ctx.dynamicJoin();
    await ctx.leaveAndCommit([{ memberId: join.memberId }]);
    const codes = await ctx.commitOffsetsAndAnswer(OUTSIDE, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    const fetched = await ctx.fetch(GROUP_ID, [['topic', [0]]]);
    expect(fetched.topics[0]!.partitions[0]).toMatchObject({ committedOffset: 0, errorCode: ErrorCode.NONE });
  });

  test('a commit writes one offset commit record per accepted partition; a fetch returns what was committed', async () => {
    ctx.time.advance(1_234);
    const call = ctx.commitOffsets(OUTSIDE, [
      { ...TP, offset: 97, metadata: 'some metadata', leaderEpoch: 15 },
    ]);
    const value = {
      committedOffset: 97,
      committedLeaderEpoch: 15,
      metadata: 'some metadata',
      commitTimestampMs: ctx.time.nowMs(),
    };
    expect(call.records).toEqual([
      { key: { type: 1, groupId: GROUP_ID, topic: 'topic', partition: 0 }, value },
    ]);
    ctx.commit();
    await call.answer.promise;
    const fetched = await ctx.fetch(GROUP_ID, [['topic', [0]]]);
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
    const codes = await ctx.commitOffsetsAndAnswer({ ...OUTSIDE, groupId: '' }, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    expect(await ctx.fetchOffset('', 'topic', 0)).toBe(0);
    expect(await ctx.describe('')).toMatchObject({ errorCode: ErrorCode.NONE, groupState: 'Empty' });
    expect(await ctx.deleteGroups([''])).toEqual([{ groupId: '', errorCode: ErrorCode.NONE }]);
    expect(await ctx.fetchOffset('', 'topic', 0)).toBe(-1);
  });

  test('a partition without a committed offset is fetched as offset -1 with no error', async () => {
    const fetched = await ctx.fetch(GROUP_ID, [['topic', [0]]]);
    expect(fetched.errorCode).toBe(ErrorCode.NONE);
    expect(fetched.topics[0]!.partitions[0]).toEqual({
      partitionIndex: 0,
      committedOffset: -1,
      committedLeaderEpoch: -1,
      metadata: '',
      errorCode: ErrorCode.NONE,
    });
  });

  test('a fetch without topics returns every committed offset of the group', async () => {
    expect((await ctx.fetch(GROUP_ID)).topics).toEqual([]);
    await ctx.commitOffsetsAndAnswer(OUTSIDE, [
      { topic: 'topic', partition: 0, offset: 15 },
      { topic: 'topic', partition: 1, offset: 16 },
      { topic: 'other-topic', partition: 0, offset: 17 },
    ]);
    const fetched = await ctx.fetch(GROUP_ID);
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
    const memberId = await ctx.stableSingleMemberGroup();
    const codes = await ctx.commitOffsetsAndAnswer({ memberId, generationId: 1 }, [{ ...TP, offset: 5 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
  });

  test('a member commits during PreparingRebalance with the generation it has', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    await ctx.sendDynamicJoin();
    expect((await ctx.describe()).groupState).toBe('PreparingRebalance');
    const codes = await ctx.commitOffsetsAndAnswer({ memberId, generationId: 1 }, [{ ...TP, offset: 5 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
  });

  test('a commit during CompletingRebalance gets REBALANCE_IN_PROGRESS', async () => {
    const join = await ctx.dynamicJoin();
    const codes = await ctx.commitOffsetsAndAnswer(
      { memberId: join.memberId, generationId: join.generationId },
      [{ ...TP, offset: 0 }],
    );
    expect(codes.get('topic-0')).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
  });

  test('a commit during CompletingRebalance without a member id gets UNKNOWN_MEMBER_ID', async () => {
    const join = await ctx.dynamicJoin();
    const codes = await ctx.commitOffsetsAndAnswer({ memberId: '', generationId: join.generationId }, [
      { ...TP, offset: 0 },
    ]);
    expect(codes.get('topic-0')).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('a commit during CompletingRebalance with the wrong generation gets ILLEGAL_GENERATION', async () => {
    const join = await ctx.dynamicJoin();
    const codes = await ctx.commitOffsetsAndAnswer(
      { memberId: join.memberId, generationId: join.generationId + 1 },
      [{ ...TP, offset: 0 }],
    );
    expect(codes.get('topic-0')).toBe(ErrorCode.ILLEGAL_GENERATION);
  });

  test('an outside commit (generation -1, no member) to a group with members gets UNKNOWN_MEMBER_ID', async () => {
    await ctx.stableSingleMemberGroup();
    const codes = await ctx.commitOffsetsAndAnswer(OUTSIDE, [{ ...TP, offset: 0 }]);
    expect(codes.get('topic-0')).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  test('an outside commit (generation -1) to an Empty group is accepted whatever member and instance id it names', async () => {
    // Kafka's testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId: outside the group's
    // management the ids mean nothing and are not checked.
    const codes = await ctx.commitOffsetsAndAnswer(
      { memberId: 'someone', groupInstanceId: 'some-instance', generationId: -1 },
      [{ ...TP, offset: 7 }],
    );
    expect(codes.get('topic-0')).toBe(ErrorCode.NONE);
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(7);
  });

  test('in a Stable group, a commit with a stale generation gets ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID', async () => {
    const memberId = await ctx.stableSingleMemberGroup();
    const stale = ctx.commitOffsets({ memberId, generationId: 0 }, [{ ...TP, offset: 1 }]);
    expect(stale.records).toEqual([]);
    expect((await stale.answer.promise).topics[0]!.partitions[0]!.errorCode).toBe(
      ErrorCode.ILLEGAL_GENERATION,
    );
    const stranger = await ctx.commitOffsetsAndAnswer({ memberId: 'stranger', generationId: 1 }, [
      { ...TP, offset: 1 },
    ]);
    expect(stranger.get('topic-0')).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(-1);
    const accepted = await ctx.commitOffsetsAndAnswer({ memberId, generationId: 1 }, [{ ...TP, offset: 1 }]);
    expect(accepted.get('topic-0')).toBe(ErrorCode.NONE);
  });

  test('metadata longer than offset.metadata.max.bytes fails only its own partition, which gets no record', async () => {
    ctx.shutdown();
    ctx = await CoordinatorTestContext.create({ offsetMetadataMaxBytes: 4 });
    const call = ctx.commitOffsets(OUTSIDE, [
      { topic: 'topic', partition: 0, offset: 1, metadata: 'four' },
      { topic: 'topic', partition: 1, offset: 1, metadata: 'fives' },
      // Counted in UTF-8 bytes: two characters, six bytes.
      { topic: 'topic', partition: 2, offset: 1, metadata: '€€' },
    ]);
    expect(call.records.map((r) => r.key)).toEqual([
      { type: 1, groupId: GROUP_ID, topic: 'topic', partition: 0 },
    ]);
    ctx.commit();
    const answer = await call.answer.promise;
    expect(answer.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.NONE,
      ErrorCode.OFFSET_METADATA_TOO_LARGE,
      ErrorCode.OFFSET_METADATA_TOO_LARGE,
    ]);
    const fetched = await ctx.fetch(GROUP_ID, [['topic', [0, 1, 2]]]);
    expect(fetched.topics[0]!.partitions.map((p) => p.committedOffset)).toEqual([1, -1, -1]);
  });

  test('a commit to a deleted group is a commit to an unknown group', async () => {
    await ctx.commitOffsetsAndAnswer(OUTSIDE, [{ ...TP, offset: 3 }]);
    await ctx.deleteGroups([GROUP_ID]);
    const codes = await ctx.commitOffsetsAndAnswer({ memberId: 'm', generationId: 1 }, [
      { ...TP, offset: 0 },
    ]);
    expect(codes.get('topic-0')).toBe(ErrorCode.ILLEGAL_GENERATION);
  });
});

describe('an OffsetCommit between its append and its commit', () => {
  beforeEach(async () => {
    ctx = await CoordinatorTestContext.create();
  });

  function sendCommit(offset: number): CoordinatorCall<OffsetCommitResponse> {
    return ctx.offsetCommit(offsetCommitRequest(GROUP_ID, offset));
  }

  const answered = (errorCode: ErrorCode): OffsetCommitResponse => ({
    topics: [{ name: 'topic', partitions: [{ partitionIndex: 0, errorCode }] }],
  });

  test('is answered only once its records are committed; until then fetches see the committed offset', async () => {
    const commit = sendCommit(42);
    expect(commit.records).toHaveLength(1);
    expect(ctx.pendingAppends).toBe(1);
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(-1);
    expect(commit.answer.isSettled).toBe(false);
    ctx.commit();
    expect(await commit.answer.promise).toEqual(answered(ErrorCode.NONE));
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(42);
  });

  test('a later commit of the same partition is answered after the earlier one, and wins', async () => {
    const first = sendCommit(1);
    const second = sendCommit(2);
    ctx.commit(1);
    expect(await first.answer.promise).toEqual(answered(ErrorCode.NONE));
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(1);
    expect(second.answer.isSettled).toBe(false);
    ctx.commit(1);
    expect(await second.answer.promise).toEqual(answered(ErrorCode.NONE));
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(2);
  });

  test('a fetch requiring stable offsets gets UNSTABLE_OFFSET_COMMIT for a partition written and not committed', async () => {
    const commit = sendCommit(42);
    const unstable = await ctx.fetch(GROUP_ID, [['topic', [0, 1]]], true);
    expect(unstable.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.UNSTABLE_OFFSET_COMMIT,
      ErrorCode.NONE,
    ]);
    // Without require_stable: the committed offset, none yet.
    const unrequired = await ctx.fetch(GROUP_ID, [['topic', [0]]], false);
    expect(unrequired.topics[0]!.partitions[0]).toMatchObject({
      errorCode: ErrorCode.NONE,
      committedOffset: -1,
    });
    ctx.commit();
    await commit.answer.promise;
    const stable = await ctx.fetch(GROUP_ID, [['topic', [0]]], true);
    expect(stable.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, committedOffset: 42 });
  });

  test.each([
    [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE],
    [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR],
    [ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE],
    [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REQUEST_TIMED_OUT],
  ])(
    'an append failing with %i fails the commit with %i, as Kafka converts append errors, and reverts it',
    async (cause, expected) => {
      const commit = sendCommit(1);
      ctx.failAppend(new CohortError(cause));
      expect(await commit.answer.promise).toEqual(answered(expected));
      // Nothing of it stays: no offset, nothing written, so nothing unstable.
      expect((await ctx.fetch(GROUP_ID, [['topic', [0]]], true)).topics[0]!.partitions[0]).toMatchObject({
        errorCode: ErrorCode.NONE,
        committedOffset: -1,
      });
    },
  );

  test('an append failing with something that is not a CohortError fails the commit with UNKNOWN_SERVER_ERROR', async () => {
    const commit = sendCommit(1);
    ctx.failAppend(new Error('disk on fire'));
    expect(await commit.answer.promise).toEqual(answered(ErrorCode.UNKNOWN_SERVER_ERROR));
  });

  test('a failed append keeps the codes of the partitions the handler refused', async () => {
    ctx.shutdown();
    ctx = await CoordinatorTestContext.create({ offsetMetadataMaxBytes: 4 });
    const commit = ctx.commitOffsets(OUTSIDE, [
      { topic: 'topic', partition: 0, offset: 1 },
      { topic: 'topic', partition: 1, offset: 1, metadata: 'fives' },
    ]);
    ctx.failAppend(new CohortError(ErrorCode.NOT_ENOUGH_REPLICAS));
    const answer = await commit.answer.promise;
    expect(answer.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
      ErrorCode.OFFSET_METADATA_TOO_LARGE,
    ]);
  });

  test('a commit whose append fails leaves the earlier committed offset in place', async () => {
    await ctx.commitOffsetsAndAnswer(OUTSIDE, [{ ...TP, offset: 5 }]);
    const commit = sendCommit(6);
    ctx.failAppend(new CohortError(ErrorCode.NOT_ENOUGH_REPLICAS));
    await commit.answer.promise;
    expect((await ctx.fetch(GROUP_ID, [['topic', [0]]], true)).topics[0]!.partitions[0]).toMatchObject({
      errorCode: ErrorCode.NONE,
      committedOffset: 5,
    });
  });

  test('a resignation answers a commit not yet committed with NOT_COORDINATOR at once', async () => {
    const commit = sendCommit(1);
    ctx.writer.resign();
    ctx.router.onResignation(0, 0);
    expect(await commit.answer.promise).toEqual(answered(ErrorCode.NOT_COORDINATOR));
  });

  test('a group deleted while its commit was written comes back, holding that offset, once it is committed', async () => {
    await ctx.commitOffsetsAndAnswer(OUTSIDE, [{ ...TP, offset: 3 }]);
    const commit = ctx.commitOffsets(OUTSIDE, [{ topic: 'topic', partition: 1, offset: 4 }]);
    const deleted = ctx.call(() => ctx.router.deleteGroups({ groupsNames: [GROUP_ID] }, { clientHost: 'h' }));
    // The deletion's tombstones cover the committed offsets only: the commit written before them stays.
    expect(deleted.records.map((r) => [r.key, r.value])).toEqual([
      [{ type: 2, groupId: GROUP_ID }, null],
      [{ type: 1, groupId: GROUP_ID, topic: 'topic', partition: 0 }, null],
    ]);
    expect((await ctx.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    ctx.commit();
    expect(codesOf(await commit.answer.promise).get('topic-1')).toBe(ErrorCode.NONE);
    expect((await deleted.answer.promise).results).toEqual([
      { groupId: GROUP_ID, errorCode: ErrorCode.NONE },
    ]);
    expect(await ctx.describe()).toMatchObject({ errorCode: ErrorCode.NONE, groupState: 'Empty' });
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(-1);
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 1)).toBe(4);
  });

  test('groups with offsets in the partition exist as Empty groups once it is loaded', async () => {
    ctx.shutdown();
    ctx = await CoordinatorTestContext.create(
      {},
      {
        records: [
          offsetCommitRecord('restored', 't', 0, {
            committedOffset: 9,
            committedLeaderEpoch: -1,
            metadata: '',
            commitTimestampMs: 0,
          }),
        ],
      },
    );
    expect(await ctx.describe('restored')).toMatchObject({ errorCode: ErrorCode.NONE, groupState: 'Empty' });
    expect(await ctx.fetchOffset('restored', 't', 0)).toBe(9);
  });
});

describe('a DeleteGroups between its append and its commit', () => {
  beforeEach(async () => {
    ctx = await CoordinatorTestContext.create();
  });

  test('writes the tombstones of the group and of its offsets, and is answered once they are committed', async () => {
    await ctx.commitOffsetsAndAnswer(OUTSIDE, [{ ...TP, offset: 3 }]);
    const deleted = ctx.call(() => ctx.router.deleteGroups({ groupsNames: [GROUP_ID] }, { clientHost: 'h' }));
    expect(deleted.records.map((r) => [r.key, r.value])).toEqual([
      [{ type: 2, groupId: GROUP_ID }, null],
      [{ type: 1, groupId: GROUP_ID, topic: 'topic', partition: 0 }, null],
    ]);
    // The group is gone at once; its offset is read until the tombstones are committed.
    expect((await ctx.describe()).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(3);
    expect(deleted.answer.isSettled).toBe(false);
    ctx.commit();
    expect((await deleted.answer.promise).results).toEqual([
      { groupId: GROUP_ID, errorCode: ErrorCode.NONE },
    ]);
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(-1);
  });

  test('an append that fails answers its code and brings the group back, Empty, with its offsets', async () => {
    await ctx.commitOffsetsAndAnswer(OUTSIDE, [{ ...TP, offset: 3 }]);
    const deleted = ctx.call(() => ctx.router.deleteGroups({ groupsNames: [GROUP_ID] }, { clientHost: 'h' }));
    ctx.failAppend(new CohortError(ErrorCode.NOT_ENOUGH_REPLICAS));
    expect((await deleted.answer.promise).results).toEqual([
      { groupId: GROUP_ID, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE },
    ]);
    expect(await ctx.describe()).toMatchObject({ errorCode: ErrorCode.NONE, groupState: 'Empty' });
    expect(await ctx.fetchOffset(GROUP_ID, 'topic', 0)).toBe(3);
  });

  test('a resignation answers every group of a pending DeleteGroups NOT_COORDINATOR at once', async () => {
    await ctx.commitOffsetsAndAnswer({ ...OUTSIDE, groupId: 'a' }, [{ ...TP, offset: 1 }]);
    await ctx.commitOffsetsAndAnswer({ ...OUTSIDE, groupId: 'b' }, [{ ...TP, offset: 1 }]);
    const deleted = ctx.call(() => ctx.router.deleteGroups({ groupsNames: ['a', 'b'] }, { clientHost: 'h' }));
    expect(ctx.pendingAppends).toBe(2);
    ctx.writer.resign();
    ctx.router.onResignation(0, 0);
    expect((await deleted.answer.promise).results).toEqual([
      { groupId: 'a', errorCode: ErrorCode.NOT_COORDINATOR },
      { groupId: 'b', errorCode: ErrorCode.NOT_COORDINATOR },
    ]);
  });
});
