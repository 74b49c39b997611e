import { ErrorCode } from '../../../src/errors';
import type { GroupConfig } from '../../../src/group/group-config';
import {
  CoordinatorTestContext,
  type CoordinatorTestContextOptions,
  type OffsetsExpired,
} from '../../support/coordinator-test-context';
import { CommittedOffsets } from '../../../src/group/committed-offsets';
import { FakePartitionWriter } from '../../support/fake-partition-writer';
import { CONTEXT, GROUP_ID, joinRequest } from '../../support/group-harness';

/**
 * Offset retention (KIP-211, Kafka's cleanupGroupMetadata) under the manual clock: a one-minute retention
 * checked every second, so every expiry happens at a time the test names. The checks run inside the clock's
 * advance; what they write (tombstones) is in the partition at once, and readers see it once the test
 * commits it.
 */
const RETENTION_MS = 60_000;
const CHECK_INTERVAL_MS = 1_000;
const RETENTION: Partial<GroupConfig> = {
  offsetsRetentionMinutes: RETENTION_MS / 60_000,
  offsetsRetentionCheckIntervalMs: CHECK_INTERVAL_MS,
};

let ctx: CoordinatorTestContext;

async function context(
  config: Partial<GroupConfig> = {},
  options: CoordinatorTestContextOptions & Parameters<typeof CoordinatorTestContext.create>[1] = {},
): Promise<CoordinatorTestContext> {
  ctx = await CoordinatorTestContext.create({ ...RETENTION, ...config }, options);
  return ctx;
}

afterEach(() => {
  ctx?.shutdown();
  jest.restoreAllMocks();
});

/** Advances the clock to `atMs` after `fromMs` (both on the context's monotonic clock). */
function advanceTo(fromMs: number, atMs: number): void {
  ctx.time.advance(fromMs + atMs - ctx.time.monotonicMs());
}

/** The committed offsets OffsetFetch returns for the group, as "topic-partition=offset", -1s left out. */
async function committed(groupId = GROUP_ID): Promise<string[]> {
  const response = await ctx.fetch(groupId);
  return response.topics.flatMap((t) =>
    t.partitions
      .filter((p) => p.committedOffset !== -1)
      .map((p) => `${t.name}-${p.partitionIndex}=${p.committedOffset}`),
  );
}

async function describedCode(groupId = GROUP_ID): Promise<ErrorCode> {
  return (await ctx.describe(groupId)).errorCode;
}

async function state(groupId = GROUP_ID): Promise<string> {
  return (await ctx.describe(groupId)).groupState;
}

/**
 * A Stable one-member group commits two offsets, then (10 s later) its member leaves: Empty from then, its
 * record committed. Returns when it emptied (monotonic clock).
 */
async function emptiedGroupWithOffsets(): Promise<number> {
  const memberId = await ctx.stableSingleMemberGroup();
  expect(
    await ctx.commitOffsetsAndAnswer({ memberId, generationId: 1 }, [
      { topic: 't', partition: 0, offset: 10 },
      { topic: 't', partition: 1, offset: 11 },
    ]),
  ).toEqual(
    new Map([
      ['t-0', ErrorCode.NONE],
      ['t-1', ErrorCode.NONE],
    ]),
  );
  // Ten seconds between the commits and the group emptying, so that the two clocks of retention differ.
  for (let elapsed = 0; elapsed < 10_000; elapsed += 400) {
    ctx.time.advance(400);
    expect(await heartbeat(memberId)).toBe(ErrorCode.NONE);
  }
  await ctx.leaveAndCommit([{ memberId }]);
  ctx.commit();
  expect(await state()).toBe('Empty');
  return ctx.time.monotonicMs();
}

async function heartbeat(memberId: string): Promise<ErrorCode> {
  const request = { groupId: GROUP_ID, memberId, generationId: 1, groupInstanceId: '' };
  return (await ctx.router.heartbeat(request, CONTEXT)).errorCode;
}

async function commitOutsideMembership(partition: number, offset: number, groupId = GROUP_ID): Promise<void> {
  const codes = await ctx.commitOffsetsAndAnswer({ groupId, memberId: '', generationId: -1 }, [
    { topic: 't', partition, offset },
  ]);
  expect(codes.get(`t-${partition}`)).toBe(ErrorCode.NONE);
}

const expiry = (groupId: string, partitions: number, isGroupRemoved: boolean): OffsetsExpired => ({
  groupId,
  partitions,
  isGroupRemoved,
});

describe('offset retention (offsets.retention.minutes)', () => {
  test("an Empty group's offsets expire retention after it became Empty, and the group goes with them", async () => {
    await context();
    const emptiedAt = await emptiedGroupWithOffsets();

    advanceTo(emptiedAt, RETENTION_MS - 1);
    expect(ctx.tombstones()).toEqual([]);
    expect(await committed()).toEqual(['t-0=10', 't-1=11']);
    expect(await state()).toBe('Empty');

    advanceTo(emptiedAt, RETENTION_MS + CHECK_INTERVAL_MS);
    // The group's tombstone and its offsets', in one batch; the group is gone at once.
    expect(ctx.tombstones()).toEqual([GROUP_ID, `${GROUP_ID} t-0`, `${GROUP_ID} t-1`]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(ctx.offsetsExpired).toEqual([]);
    await ctx.commitExpiries(1);
    expect(await committed()).toEqual([]);
    expect((await ctx.router.listGroups({ statesFilter: [] }, CONTEXT)).groups).toEqual([]);
    expect(ctx.offsetsExpired).toEqual([expiry(GROUP_ID, 2, true)]);
    expect(ctx.transitions.at(-1)).toMatchObject({ groupId: GROUP_ID, to: 'Dead' });
  });

  test('a group with members keeps its offsets however old they are', async () => {
    await context();
    const memberId = await ctx.stableSingleMemberGroup();
    await ctx.commitOffsetsAndAnswer({ memberId, generationId: 1 }, [
      { topic: 't', partition: 0, offset: 5 },
    ]);
    // Heartbeats well inside the 500 ms session, for three retention periods.
    for (let elapsed = 0; elapsed < 3 * RETENTION_MS; elapsed += 400) {
      ctx.time.advance(400);
      expect(await heartbeat(memberId)).toBe(ErrorCode.NONE);
    }
    expect(ctx.tombstones()).toEqual([]);
    expect(ctx.pendingAppends).toBe(0);
    expect(await committed()).toEqual(['t-0=5']);
    expect(await state()).toBe('Stable');
    expect(ctx.offsetsExpired).toEqual([]);
  });

  test('offsets committed outside any membership expire each from its own commit', async () => {
    await context();
    const start = ctx.time.monotonicMs();
    await commitOutsideMembership(0, 100);
    advanceTo(start, 30_000);
    await commitOutsideMembership(1, 200);
    advanceTo(start, 50_000);
    await commitOutsideMembership(2, 300);
    await commitOutsideMembership(2, 301); // a later commit of the same partition restarts its retention

    advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(ctx.tombstones()).toEqual([`${GROUP_ID} t-0`]);
    await ctx.commitExpiries(1);
    expect(await committed()).toEqual(['t-1=200', 't-2=301']);
    expect(await state()).toBe('Empty');
    expect(ctx.offsetsExpired).toEqual([expiry(GROUP_ID, 1, false)]);

    advanceTo(start, 30_000 + RETENTION_MS + CHECK_INTERVAL_MS);
    await ctx.commitExpiries(2);
    expect(await committed()).toEqual(['t-2=301']);
    advanceTo(start, 50_000 + RETENTION_MS + CHECK_INTERVAL_MS);
    await ctx.commitExpiries(3);
    expect(await committed()).toEqual([]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(ctx.offsetsExpired.map((e) => [e.partitions, e.isGroupRemoved])).toEqual([
      [1, false],
      [1, false],
      [1, true],
    ]);
  });

  test('an Empty group without offsets goes at the next check, but not while a member id is pending', async () => {
    await context({ offsetsRetentionCheckIntervalMs: 100 });
    const start = ctx.time.monotonicMs();
    // MEMBER_ID_REQUIRED leaves the group Empty with a pending member id (KIP-394): someone is joining.
    const first = await ctx.router.joinGroup(joinRequest(), CONTEXT);
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    advanceTo(start, 300);
    expect(await state()).toBe('Empty');
    expect(ctx.tombstones()).toEqual([]);
    // The pending id expires with the session timeout (500 ms); the next check removes the group.
    advanceTo(start, 600);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    await ctx.commitExpiries(1);
    expect(ctx.offsetsExpired).toEqual([expiry(GROUP_ID, 0, true)]);

    // A group whose members all left without committing goes the same way.
    const memberId = await ctx.stableSingleMemberGroup({ groupId: 'other' });
    await ctx.leaveAndCommit([{ memberId }], 'other');
    const emptiedAt = ctx.time.monotonicMs();
    expect(await state('other')).toBe('Empty');
    advanceTo(emptiedAt, 100);
    expect(await describedCode('other')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('an offset written again and not yet committed is not expired, nor is its group removed', async () => {
    await context();
    const start = ctx.time.monotonicMs();
    await commitOutsideMembership(0, 1);
    advanceTo(start, 30_000);
    const recommit = ctx.commitOffsets({ memberId: '', generationId: -1 }, [
      { topic: 't', partition: 0, offset: 2 },
    ]);

    advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(ctx.tombstones()).toEqual([]);
    expect(await state()).toBe('Empty');

    ctx.commit();
    expect((await recommit.answer.promise).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    // Its retention now runs from the second commit (at 30 s).
    advanceTo(start, 30_000 + RETENTION_MS - CHECK_INTERVAL_MS);
    expect(await committed()).toEqual(['t-0=2']);
    advanceTo(start, 30_000 + RETENTION_MS + CHECK_INTERVAL_MS);
    expect(ctx.tombstones()).toEqual([GROUP_ID, `${GROUP_ID} t-0`]);
    await ctx.commitExpiries(1);
    expect(await committed()).toEqual([]);
    expect(ctx.storedGroup(GROUP_ID)).toBeUndefined();
  });

  test('an expiry whose append fails keeps the group, and the next check tries again', async () => {
    await context();
    const emptiedAt = await emptiedGroupWithOffsets();
    advanceTo(emptiedAt, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(ctx.tombstones()).toEqual([GROUP_ID, `${GROUP_ID} t-0`, `${GROUP_ID} t-1`]);
    ctx.failAppend(new Error('disk full'));
    await ctx.untilExpiriesEnded(1);
    expect(ctx.offsetExpiryFailures).toEqual([GROUP_ID]);
    expect(ctx.offsetsExpired).toEqual([]);
    // The offsets are still there, and so is a group to hold them.
    expect(await committed()).toEqual(['t-0=10', 't-1=11']);
    expect(await state()).toBe('Empty');

    advanceTo(emptiedAt, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    expect(ctx.tombstones().filter((t) => t === GROUP_ID)).toEqual([GROUP_ID, GROUP_ID]);
    await ctx.commitExpiries(2);
    expect(await committed()).toEqual([]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(ctx.offsetsExpired).toEqual([expiry(GROUP_ID, 2, true)]);
  });

  test('after a restart an Empty group expires from when it emptied, not from the restart', async () => {
    await context();
    const emptiedAt = await emptiedGroupWithOffsets();
    const emptiedWallMs = ctx.time.nowMs();
    expect(ctx.storedGroup(GROUP_ID)?.currentStateTimestampMs).toBe(emptiedWallMs);
    advanceTo(emptiedAt, 40_000);
    const log = ctx.writer.records.map(({ key, value }) => ({ key: key!, value }));
    ctx.shutdown();

    // The next process starts 40 s after the group emptied, on the same wall clock, over the same log.
    await context({}, { records: log });
    ctx.time.advance(emptiedWallMs + 40_000 - ctx.time.nowMs());
    const restartedAt = ctx.time.monotonicMs();
    expect(await state()).toBe('Empty');
    advanceTo(restartedAt, RETENTION_MS - 40_000 - CHECK_INTERVAL_MS);
    expect(ctx.tombstones()).toEqual([]);
    expect(await committed()).toEqual(['t-0=10', 't-1=11']);
    advanceTo(restartedAt, RETENTION_MS - 40_000 + CHECK_INTERVAL_MS);
    await ctx.commitExpiries(1);
    expect(await committed()).toEqual([]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(ctx.storedGroup(GROUP_ID)).toBeUndefined();
  });

  test('a check spreads its work over event-loop turns, and the next one starts an interval after it ends', async () => {
    // Two offsets a turn: one group of two offsets, or two groups of one (each group also counts one).
    await context({}, { retentionCheckOffsetsPerTurn: 2 });
    const start = ctx.time.monotonicMs();
    for (const groupId of ['a', 'b', 'c', 'd']) await commitOutsideMembership(0, 1, groupId);
    ctx.time.advance(RETENTION_MS + CHECK_INTERVAL_MS);
    // The check ran inside the advance: its first turn reached group a only.
    expect(await describedCode('a')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(await describedCode('b')).toBe(ErrorCode.NONE);
    // A second start while the pass runs is ignored: one pass at a time, its tally whole.
    ctx.router.onOffsetRetentionCheck();
    await ctx.until(() => ctx.retentionChecks.at(-1)?.groupsExpired === 4);
    for (const groupId of ['b', 'c', 'd'])
      expect(await describedCode(groupId)).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    await ctx.commitExpiries(4);
    expect(ctx.offsetsExpired.map((e) => e.groupId)).toEqual(['a', 'b', 'c', 'd']);
    // Every earlier check found nothing due and listed nothing after the first; the last one did the work.
    expect(ctx.retentionChecks.at(-1)).toEqual({
      groupsChecked: 4,
      offsetsListed: 4,
      offsetsExpired: 4,
      groupsExpired: 4,
      turns: 4, // one group a turn
      durationMs: 0,
    });
    expect(ctx.retentionChecks.slice(1, -1).every((summary) => summary.offsetsListed === 0)).toBe(true);
    // Passes never overlap, and checks go on: a group committed now expires a retention later.
    await commitOutsideMembership(0, 2, 'e');
    advanceTo(start, 2 * RETENTION_MS + 3 * CHECK_INTERVAL_MS);
    expect(await describedCode('e')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('groups whose expiry failed wait for the next check instead of failing the pass forever', async () => {
    // One group a turn, so the failures (and the groups' return) land while the pass is still running.
    await context({}, { retentionCheckOffsetsPerTurn: 1 });
    const start = ctx.time.monotonicMs();
    for (const groupId of ['a', 'b', 'c']) await commitOutsideMembership(0, 1, groupId);
    ctx.writer.rejectAppendsWith = new Error('log offline');
    advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    await ctx.until(() => ctx.retentionChecks.some((summary) => summary.groupsExpired > 0));
    await ctx.untilExpiriesEnded(3);
    expect([...ctx.offsetExpiryFailures].sort()).toEqual(['a', 'b', 'c']);
    expect(ctx.retentionChecks.filter((summary) => summary.groupsExpired > 0)).toEqual([
      expect.objectContaining({ groupsChecked: 3, groupsExpired: 3 }),
    ]);
    for (const groupId of ['a', 'b', 'c']) expect(await state(groupId)).toBe('Empty');
    expect(await committed('a')).toEqual(['t-0=1']);
    // The next check tries once more for each.
    advanceTo(start, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    await ctx.untilExpiriesEnded(6);
    expect(ctx.offsetExpiryFailures).toHaveLength(6);
  });

  test('offsets whose expiry failed stay readable, and the next check removes them', async () => {
    await context();
    const start = ctx.time.monotonicMs();
    await commitOutsideMembership(0, 1);
    advanceTo(start, 30_000);
    await commitOutsideMembership(1, 2);
    advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(ctx.tombstones()).toEqual([`${GROUP_ID} t-0`]);
    ctx.failAppend(new Error('disk full'));
    await ctx.untilExpiriesEnded(1);
    expect(ctx.offsetExpiryFailures).toEqual([GROUP_ID]);
    expect(await committed()).toEqual(['t-0=1', 't-1=2']);
    advanceTo(start, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    await ctx.commitExpiries(2);
    expect(await committed()).toEqual(['t-1=2']);
    expect(ctx.offsetsExpired).toEqual([expiry(GROUP_ID, 1, false)]);
  });

  test('an expired group whose append failed comes back as it was, and still counts from when it emptied', async () => {
    await context();
    const emptiedAt = await emptiedGroupWithOffsets();
    advanceTo(emptiedAt, RETENTION_MS + CHECK_INTERVAL_MS);
    ctx.failAppend(new Error('disk full'));
    await ctx.untilExpiriesEnded(1);
    const described = await ctx.describe();
    expect([described.groupState, described.protocolType]).toEqual(['Empty', 'consumer']);
    // An admin resets an offset meanwhile (a commit outside membership, which an Empty group takes): it
    // belongs to a group that has been Empty for longer than the retention, so it goes with the rest.
    await commitOutsideMembership(2, 20);
    advanceTo(emptiedAt, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    await ctx.commitExpiries(2);
    expect(await committed()).toEqual([]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('a check that fails for one group goes on with the others, and the next check runs', async () => {
    let isBroken = true;
    const list = CommittedOffsets.prototype.list;
    jest.spyOn(CommittedOffsets.prototype, 'list').mockImplementation(function (
      this: CommittedOffsets,
      groupId,
    ) {
      if (isBroken && groupId === 'broken') throw new Error('unreadable');
      return list.call(this, groupId);
    });
    await context();
    const start = ctx.time.monotonicMs();
    await commitOutsideMembership(0, 1, 'broken');
    await commitOutsideMembership(0, 2, 'fine');
    advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    // The failed read is heard of inside the check; the other group's expiry ends once it is committed.
    expect(ctx.offsetExpiryFailures).toContain('broken');
    await ctx.commitExpiries(2);
    expect(ctx.offsetsExpired).toEqual([expiry('fine', 1, true)]);
    isBroken = false;
    advanceTo(start, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    await ctx.commitExpiries(3);
    expect(ctx.offsetsExpired.map((e) => e.groupId)).toEqual(['fine', 'broken']);
  });

  test('nothing expires while the coordinator is loading; the first check after the load does it', async () => {
    await context();
    const memberId = await ctx.stableSingleMemberGroup();
    await ctx.commitOffsetsAndAnswer({ memberId, generationId: 1 }, [
      { topic: 't', partition: 0, offset: 10 },
      { topic: 't', partition: 1, offset: 11 },
    ]);
    await ctx.leaveAndCommit([{ memberId }]);
    ctx.commit();
    expect(await state()).toBe('Empty');
    const emptiedAt = ctx.time.monotonicMs();
    // The partition is led again, at a newer epoch: the new shard loads what the log holds, held by hand.
    const successor = new FakePartitionWriter(0, 1, ctx.committedRecords());
    successor.isLoadImmediate = false;
    const loaded = ctx.router.onElection(0, 1, successor);
    ctx.time.advance(RETENTION_MS + CHECK_INTERVAL_MS);
    successor.releaseLoad();
    await loaded;
    // The check passed the loading shard over: it wrote nothing, nothing failed, the group is still there.
    expect(successor.records).toHaveLength(ctx.committedRecords().length);
    expect(ctx.offsetsExpired).toEqual([]);
    expect(ctx.offsetExpiryFailures).toEqual([]);
    expect(await state()).toBe('Empty');
    advanceTo(emptiedAt, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    successor.releaseAppends();
    await ctx.untilExpiriesEnded(1);
    expect((await ctx.fetch(GROUP_ID)).topics).toEqual([]);
    expect(ctx.offsetsExpired).toEqual([expiry(GROUP_ID, 2, true)]);
  });
});
