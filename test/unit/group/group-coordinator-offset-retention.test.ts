import { ErrorCode } from '../../../src/errors';
import type { GroupCoordinatorListener } from '../../../src/group/group-coordinator';
import type { GroupConfig } from '../../../src/group/group-config';
import type { GroupCoordinatorOptions } from '../../../src/group/group-coordinator';
import type { OffsetRetentionCheckSummary } from '../../../src/group/offset-retention-check';
import { GROUP_ID, GroupHarness, settle } from '../../support/group-harness';
import { MemoryGroupStore } from './memory-group-store';

/**
 * Offset retention (KIP-211, Kafka's cleanupGroupMetadata) under the manual clock: a one-minute retention
 * checked every second, so every expiry happens at a time the test names.
 */
const RETENTION_MS = 60_000;
const CHECK_INTERVAL_MS = 1_000;
const RETENTION: Partial<GroupConfig> = {
  offsetsRetentionMinutes: RETENTION_MS / 60_000,
  offsetsRetentionCheckIntervalMs: CHECK_INTERVAL_MS,
};

interface Expiry {
  readonly groupId: string;
  readonly partitions: number;
  readonly isGroupRemoved: boolean;
}

let h: GroupHarness;
let expiries: Expiry[];
let failures: string[];
let summaries: OffsetRetentionCheckSummary[];

function harness(config: Partial<GroupConfig> = {}, options: GroupCoordinatorOptions = {}): GroupHarness {
  const listener: GroupCoordinatorListener = {
    onOffsetsExpired: (groupId, partitions, isGroupRemoved) =>
      expiries.push({ groupId, partitions, isGroupRemoved }),
    onOffsetExpiryFailed: (groupId) => failures.push(groupId),
    onOffsetRetentionCheckCompleted: (summary) => summaries.push(summary),
  };
  return new GroupHarness({ ...RETENTION, ...config }, { ...options, listener });
}

beforeEach(() => {
  expiries = [];
  failures = [];
  summaries = [];
});

afterEach(() => h?.shutdown());

/** A harness on a MemoryGroupStore (offsets and group records, as the server's store holds both). */
function harnessWithStore(): MemoryGroupStore {
  const store = new MemoryGroupStore();
  h = harness({}, { offsetStore: store, metadataStore: store });
  return store;
}

/** Advances the clock to `atMs` after `fromMs` (both on the harness's monotonic clock) and lets stores settle. */
async function advanceTo(fromMs: number, atMs: number): Promise<void> {
  h.advance(fromMs + atMs - h.time.monotonicMs());
  await settle();
}

/** The committed offsets OffsetFetch returns for the group, as "topic-partition=offset", -1s left out. */
async function committed(groupId = GROUP_ID): Promise<string[]> {
  const response = await h.fetch(groupId);
  return response.topics.flatMap((t) =>
    t.partitions
      .filter((p) => p.committedOffset !== -1)
      .map((p) => `${t.name}-${p.partitionIndex}=${p.committedOffset}`),
  );
}

async function describedCode(groupId = GROUP_ID): Promise<ErrorCode> {
  return (await h.describe(groupId)).errorCode;
}

/** A Stable one-member group commits two offsets, then (10 s later) its member leaves: Empty from then. */
async function emptiedGroupWithOffsets(): Promise<number> {
  const memberId = await h.stableSingleMemberGroup();
  expect(
    await h.commit({ memberId, generationId: 1 }, [
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
    h.advance(400);
    expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
  }
  await h.leave([{ memberId }]);
  expect(await h.state()).toBe('Empty');
  return h.time.monotonicMs();
}

async function commitOutsideMembership(partition: number, offset: number, groupId = GROUP_ID): Promise<void> {
  const codes = await h.commit({ groupId, memberId: '', generationId: -1 }, [
    { topic: 't', partition, offset },
  ]);
  expect(codes.get(`t-${partition}`)).toBe(ErrorCode.NONE);
}

describe('offset retention (offsets.retention.minutes)', () => {
  test("an Empty group's offsets expire retention after it became Empty, and the group goes with them", async () => {
    h = harness();
    const emptiedAt = await emptiedGroupWithOffsets();

    await advanceTo(emptiedAt, RETENTION_MS - 1);
    expect(await committed()).toEqual(['t-0=10', 't-1=11']);
    expect(await h.state()).toBe('Empty');
    expect(expiries).toEqual([]);

    await advanceTo(emptiedAt, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(await committed()).toEqual([]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect((await h.coordinator.listGroups({ statesFilter: [] }, { clientHost: '' })).groups).toEqual([]);
    expect(expiries).toEqual([{ groupId: GROUP_ID, partitions: 2, isGroupRemoved: true }]);
    expect(h.transitions.at(-1)).toMatchObject({ groupId: GROUP_ID, to: 'Dead' });
  });

  test('a group with members keeps its offsets however old they are', async () => {
    h = harness();
    const memberId = await h.stableSingleMemberGroup();
    await h.commit({ memberId, generationId: 1 }, [{ topic: 't', partition: 0, offset: 5 }]);
    // Heartbeats well inside the 500 ms session, for three retention periods.
    for (let elapsed = 0; elapsed < 3 * RETENTION_MS; elapsed += 400) {
      h.advance(400);
      expect(await h.heartbeat(memberId, 1)).toBe(ErrorCode.NONE);
    }
    await settle();
    expect(await committed()).toEqual(['t-0=5']);
    expect(await h.state()).toBe('Stable');
    expect(expiries).toEqual([]);
  });

  test('offsets committed outside any membership expire each from its own commit', async () => {
    h = harness();
    const start = h.time.monotonicMs();
    await commitOutsideMembership(0, 100);
    await advanceTo(start, 30_000);
    await commitOutsideMembership(1, 200);
    await advanceTo(start, 50_000);
    await commitOutsideMembership(2, 300);
    await commitOutsideMembership(2, 301); // a later commit of the same partition restarts its retention

    await advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(await committed()).toEqual(['t-1=200', 't-2=301']);
    expect(await h.state()).toBe('Empty');
    expect(expiries).toEqual([{ groupId: GROUP_ID, partitions: 1, isGroupRemoved: false }]);

    await advanceTo(start, 30_000 + RETENTION_MS + CHECK_INTERVAL_MS);
    expect(await committed()).toEqual(['t-2=301']);
    await advanceTo(start, 50_000 + RETENTION_MS + CHECK_INTERVAL_MS);
    expect(await committed()).toEqual([]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(expiries.map((e) => [e.partitions, e.isGroupRemoved])).toEqual([
      [1, false],
      [1, false],
      [1, true],
    ]);
  });

  test('an Empty group without offsets goes at the next check, but not while a member id is pending', async () => {
    h = harness({ offsetsRetentionCheckIntervalMs: 100 });
    const start = h.time.monotonicMs();
    // MEMBER_ID_REQUIRED leaves the group Empty with a pending member id (KIP-394): someone is joining.
    const first = await h.join({ memberId: '' });
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    await advanceTo(start, 300);
    expect(await h.state()).toBe('Empty');
    // The pending id expires with the session timeout (500 ms); the next check removes the group.
    await advanceTo(start, 600);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(expiries).toEqual([{ groupId: GROUP_ID, partitions: 0, isGroupRemoved: true }]);

    // A group whose members all left without committing goes the same way.
    const memberId = await h.stableSingleMemberGroup({ groupId: 'other' });
    await h.leave([{ memberId }], 'other');
    const emptiedAt = h.time.monotonicMs();
    expect(await h.state('other')).toBe('Empty');
    await advanceTo(emptiedAt, 100);
    expect(await describedCode('other')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('an offset whose commit is still being stored is not expired, nor is its group removed', async () => {
    const store = harnessWithStore();
    const start = h.time.monotonicMs();
    await commitOutsideMembership(0, 1);
    await advanceTo(start, 30_000);
    store.isDeferred = true;
    const recommit = h.commit({ memberId: '', generationId: -1 }, [{ topic: 't', partition: 0, offset: 2 }]);

    await advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(store.offsetDeletions).toEqual([]);
    expect(store.deletions).toEqual([]);
    expect(await h.state()).toBe('Empty');

    store.release();
    expect((await recommit).get('t-0')).toBe(ErrorCode.NONE);
    store.isDeferred = false;
    // Its retention now runs from the second commit (at 30 s).
    await advanceTo(start, 30_000 + RETENTION_MS - CHECK_INTERVAL_MS);
    expect(await committed()).toEqual(['t-0=2']);
    await advanceTo(start, 30_000 + RETENTION_MS + CHECK_INTERVAL_MS);
    expect(await committed()).toEqual([]);
    expect(store.deletions).toEqual([GROUP_ID]);
    expect(store.storedGroup(GROUP_ID)).toBeUndefined();
  });

  test('a store that fails to remove an expired group keeps it, and the next check tries again', async () => {
    const store = harnessWithStore();
    const emptiedAt = await emptiedGroupWithOffsets();
    store.isDeferred = true;
    await advanceTo(emptiedAt, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(store.deletions).toEqual([GROUP_ID]);
    store.fail(new Error('disk full'));
    await settle();
    expect(failures).toEqual([GROUP_ID]);
    expect(expiries).toEqual([]);
    // The offsets are still there, and so is a group to hold them.
    expect(await committed()).toEqual(['t-0=10', 't-1=11']);
    expect(await h.state()).toBe('Empty');

    store.isDeferred = false;
    await advanceTo(emptiedAt, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    expect(store.deletions).toEqual([GROUP_ID, GROUP_ID]);
    expect(await committed()).toEqual([]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(expiries).toEqual([{ groupId: GROUP_ID, partitions: 2, isGroupRemoved: true }]);
  });

  test('after a restart an Empty group expires from when it emptied, not from the restart', async () => {
    const store = harnessWithStore();
    const emptiedAt = await emptiedGroupWithOffsets();
    const emptiedWallMs = h.time.nowMs();
    expect(store.storedGroup(GROUP_ID)?.currentStateTimestampMs).toBe(emptiedWallMs);
    await advanceTo(emptiedAt, 40_000);
    h.shutdown();

    // The next process starts 40 s after the group emptied, on the same wall clock.
    h = harness({}, { offsetStore: store, metadataStore: store });
    h.advance(emptiedWallMs + 40_000 - h.time.nowMs());
    const restartedAt = h.time.monotonicMs();
    expect(await h.state()).toBe('Empty');
    await advanceTo(restartedAt, RETENTION_MS - 40_000 - CHECK_INTERVAL_MS);
    expect(await committed()).toEqual(['t-0=10', 't-1=11']);
    await advanceTo(restartedAt, RETENTION_MS - 40_000 + CHECK_INTERVAL_MS);
    expect(await committed()).toEqual([]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(store.storedGroup(GROUP_ID)).toBeUndefined();
  });

  test('a check spreads its work over event-loop turns, and the next one starts an interval after it ends', async () => {
    // Two offsets a turn: one group of two offsets, or two groups of one (each group also counts one).
    h = harness({}, { retentionCheckOffsetsPerTurn: 2 });
    const start = h.time.monotonicMs();
    for (const groupId of ['a', 'b', 'c', 'd']) await commitOutsideMembership(0, 1, groupId);
    h.advance(RETENTION_MS + CHECK_INTERVAL_MS);
    // The check ran inside the advance: its first turn reached group a only.
    expect(await describedCode('a')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(await describedCode('b')).toBe(ErrorCode.NONE);
    // A second start while the pass runs is ignored: one pass at a time, its tally whole.
    h.coordinator.onOffsetRetentionCheck();
    await settle(6);
    for (const groupId of ['b', 'c', 'd'])
      expect(await describedCode(groupId)).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
    expect(expiries.map((e) => e.groupId)).toEqual(['a', 'b', 'c', 'd']);
    // Every earlier check found nothing due and listed nothing after the first; the last one did the work.
    expect(summaries.at(-1)).toEqual({
      groupsChecked: 4,
      offsetsListed: 4,
      offsetsExpired: 4,
      groupsExpired: 4,
      turns: 4, // one group a turn
      durationMs: 0,
    });
    expect(summaries.slice(1, -1).every((summary) => summary.offsetsListed === 0)).toBe(true);
    // Passes never overlap, and checks go on: a group committed now expires a retention later.
    await commitOutsideMembership(0, 2, 'e');
    await advanceTo(start, 2 * RETENTION_MS + 3 * CHECK_INTERVAL_MS);
    expect(await describedCode('e')).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  test('groups a failing store brought back wait for the next check instead of failing the pass forever', async () => {
    const store = new MemoryGroupStore();
    store.deleteGroup = () => Promise.reject(new Error('log offline'));
    // One group a turn, so the failures (and the groups' return) land while the pass is still running.
    h = harness({}, { offsetStore: store, metadataStore: store, retentionCheckOffsetsPerTurn: 1 });
    const start = h.time.monotonicMs();
    for (const groupId of ['a', 'b', 'c']) await commitOutsideMembership(0, 1, groupId);
    await advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    await settle(10);
    expect(failures.sort()).toEqual(['a', 'b', 'c']);
    expect(summaries.filter((summary) => summary.groupsExpired > 0)).toEqual([
      expect.objectContaining({ groupsChecked: 3, groupsExpired: 3 }),
    ]);
    for (const groupId of ['a', 'b', 'c']) expect(await h.state(groupId)).toBe('Empty');
    expect(await committed('a')).toEqual(['t-0=1']);
    // The next check tries once more for each.
    await advanceTo(start, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    await settle(10);
    expect(failures).toHaveLength(6);
  });

  test('a check that fails for one group goes on with the others, and the next check runs', async () => {
    const store = new MemoryGroupStore();
    let isBroken = true;
    const list = store.list.bind(store);
    store.list = (groupId) => {
      if (isBroken && groupId === 'broken') throw new Error('unreadable');
      return list(groupId);
    };
    h = harness({}, { offsetStore: store, metadataStore: store });
    const start = h.time.monotonicMs();
    await commitOutsideMembership(0, 1, 'broken');
    await commitOutsideMembership(0, 2, 'fine');
    await advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(failures).toContain('broken');
    expect(expiries).toEqual([{ groupId: 'fine', partitions: 1, isGroupRemoved: true }]);
    isBroken = false;
    await advanceTo(start, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    expect(expiries.map((e) => e.groupId)).toEqual(['fine', 'broken']);
  });

  test('offsets a store failed to remove stay readable, and the next check removes them', async () => {
    const store = harnessWithStore();
    const start = h.time.monotonicMs();
    await commitOutsideMembership(0, 1);
    await advanceTo(start, 30_000);
    await commitOutsideMembership(1, 2);
    store.isDeferred = true;
    await advanceTo(start, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(store.offsetDeletions).toEqual([`${GROUP_ID} t-0`]);
    store.fail(new Error('disk full'));
    await settle();
    expect(failures).toEqual([GROUP_ID]);
    expect(await committed()).toEqual(['t-0=1', 't-1=2']);
    store.isDeferred = false;
    await advanceTo(start, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    expect(await committed()).toEqual(['t-1=2']);
    expect(expiries).toEqual([{ groupId: GROUP_ID, partitions: 1, isGroupRemoved: false }]);
  });

  test('nothing expires while the coordinator is loading; the first check after the load does it', async () => {
    h = harness();
    const emptiedAt = await emptiedGroupWithOffsets();
    let finishLoad: () => void = () => undefined;
    const loaded = h.coordinator.load(new Promise<void>((resolve) => (finishLoad = resolve)));
    await advanceTo(emptiedAt, RETENTION_MS + CHECK_INTERVAL_MS);
    expect(expiries).toEqual([]);
    finishLoad();
    await loaded;
    await advanceTo(emptiedAt, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    expect(await committed()).toEqual([]);
    expect(expiries).toEqual([{ groupId: GROUP_ID, partitions: 2, isGroupRemoved: true }]);
  });

  test('an expired group a store failed to delete comes back as it was, and still counts from when it emptied', async () => {
    const store = harnessWithStore();
    const emptiedAt = await emptiedGroupWithOffsets();
    store.isDeferred = true;
    await advanceTo(emptiedAt, RETENTION_MS + CHECK_INTERVAL_MS);
    store.fail(new Error('disk full'));
    await settle();
    store.isDeferred = false;
    const described = await h.describe();
    expect([described.groupState, described.protocolType]).toEqual(['Empty', 'consumer']);
    // An admin resets an offset meanwhile (a commit outside membership, which an Empty group takes): it
    // belongs to a group that has been Empty for longer than the retention, so it goes with the rest.
    await commitOutsideMembership(2, 20);
    await advanceTo(emptiedAt, RETENTION_MS + 2 * CHECK_INTERVAL_MS);
    expect(await committed()).toEqual([]);
    expect(await describedCode()).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });
});
