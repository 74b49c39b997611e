import { ErrorCode } from '../../../src/errors';
import type { JoinGroupResponse } from '../../../src/group/group-protocol';
import { DEFAULT_GROUP_CONFIG } from '../../../src/group/group-config';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import { protocol, type Tracked } from '../../support/group-harness';

/**
 * groupMaxMetadataBytes: a group's members together may hold this many protocol metadata bytes. The join
 * that would cross it is refused with GROUP_MAX_SIZE_REACHED before the round starts, so the group's
 * record always stays storable and the group keeps becoming Stable.
 */
const BOUND_BYTES = 1_000;

let h: CoordinatorTestContext;
afterEach(() => h.shutdown());

/** Kafka's test settings, group.max.size lifted (the byte bound is what is tested), and the bound. */
function harness(): Promise<CoordinatorTestContext> {
  return CoordinatorTestContext.create({ groupMaxMetadataBytes: BOUND_BYTES, groupMaxSize: 100 });
}

const metadataOf = (bytes: number) => [protocol('range', Buffer.alloc(bytes, 1))];

/** `count` dynamic members of `bytes` each, joined in one rebalance and synced: Stable. */
async function stableGroup(count: number, bytes: number): Promise<{ ids: string[]; generationId: number }> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const first = await h.join({ protocols: metadataOf(bytes) });
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    ids.push(first.memberId);
  }
  const joins: Tracked<JoinGroupResponse>[] = ids.map((memberId) =>
    h.sendJoin({ memberId, protocols: metadataOf(bytes) }),
  );
  // Members added during the initial delay extend it once more (KIP-134).
  for (let i = 0; i < 2; i++) h.time.advance(h.config.groupInitialRebalanceDelayMs);
  const joined = await Promise.all(joins.map((join) => join.promise));
  const generationId = joined[0]!.generationId;
  for (const join of joined) expect(join.errorCode).toBe(ErrorCode.NONE);
  const leader = joined.find((j) => j.leaderId === j.memberId)!;
  await h.sync({ generationId, memberId: leader.memberId, assignments: [] });
  await Promise.all(
    ids.filter((id) => id !== leader.memberId).map((memberId) => h.sync({ generationId, memberId })),
  );
  expect(await h.state()).toBe('Stable');
  return { ids, generationId };
}

describe('GroupCoordinator: groupMaxMetadataBytes', () => {
  test('refuses the member whose join would take the group past the bound, before any rebalance', async () => {
    h = await harness();
    const { ids, generationId } = await stableGroup(3, 300);
    const transitionsBefore = h.transitions.length;

    // 900 + 200 > 1,000: refused at its first JoinGroup, before it gets a member id.
    const refused = await h.join({ protocols: metadataOf(200) });
    expect(refused).toMatchObject({ errorCode: ErrorCode.GROUP_MAX_SIZE_REACHED, memberId: '' });
    expect(await h.state()).toBe('Stable');
    expect(h.transitions.length).toBe(transitionsBefore);
    for (const memberId of ids) expect(await h.heartbeat(memberId, generationId)).toBe(ErrorCode.NONE);

    // What still fits is taken: 900 + 100 = 1,000.
    const fits = await h.join({ protocols: metadataOf(100) });
    expect(fits.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    h.sendJoin({ memberId: fits.memberId, protocols: metadataOf(100) });
    expect(await h.state()).toBe('PreparingRebalance');
  });

  test('refuses a pending member id whose join no longer fits, and a member rejoining larger', async () => {
    h = await harness();
    const { ids, generationId } = await stableGroup(2, 300);
    // Handed an id while it fitted (600 + 300), then a rejoin grows another member past the bound.
    const pending = await h.join({ protocols: metadataOf(300) });
    expect(pending.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    const grown = await h.join({ memberId: ids[0], protocols: metadataOf(800) });
    expect(grown).toMatchObject({ errorCode: ErrorCode.GROUP_MAX_SIZE_REACHED, memberId: ids[0] });
    // The member keeps its place and its old metadata: the group is still Stable at its generation.
    expect(await h.state()).toBe('Stable');
    expect(await h.heartbeat(ids[0]!, generationId)).toBe(ErrorCode.NONE);
    // Rejoining with the same size changes the total by nothing, and is answered as before.
    const same = await h.join({ memberId: ids[1], protocols: metadataOf(300) });
    expect(same.errorCode).toBe(ErrorCode.NONE);
    // 600 + 300 fits: the pending id is still good.
    const pendingJoin = h.sendJoin({ memberId: pending.memberId, protocols: metadataOf(300) });
    expect(await h.state()).toBe('PreparingRebalance');
    expect(pendingJoin.isSettled).toBe(false);
  });

  test('lets a static member that restarts take its own place back, counting its old metadata out', async () => {
    h = await harness();
    const first = await h.staticJoin('instance', { protocols: metadataOf(900) });
    expect(first.errorCode).toBe(ErrorCode.NONE);
    await h.sync({ generationId: first.generationId, memberId: first.memberId, assignments: [] });
    // The restarted instance (no member id) replaces itself: 900 out, 950 in, answered once stored.
    const restarted = await h.staticJoin('instance', { protocols: metadataOf(950) }, 0);
    expect(restarted.errorCode).toBe(ErrorCode.NONE);
    // Another instance does not fit beside it.
    const other = await h.join({ groupInstanceId: 'other', protocols: metadataOf(100) });
    expect(other.errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
  });

  test('a member over the bound alone cannot create a group, and leaves none behind', async () => {
    h = await harness();
    const refused = await h.join({ groupId: 'huge', protocols: metadataOf(BOUND_BYTES + 1) });
    expect(refused.errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect(h.router.numGroups).toBe(0);
  });

  test('frees the bytes of members that leave', async () => {
    h = await harness();
    const { ids } = await stableGroup(3, 300);
    expect((await h.join({ protocols: metadataOf(300) })).errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    await h.leave([{ memberId: ids[0] }]);
    expect((await h.join({ protocols: metadataOf(300) })).errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  });
});

describe('GroupCoordinator: groupMaxMetadataBytes at its default', () => {
  test('takes 32 members of 1 MiB subscriptions and refuses the 33rd', async () => {
    const { groupMaxMetadataBytes, memberMetadataMaxBytes } = DEFAULT_GROUP_CONFIG;
    h = await CoordinatorTestContext.create({ groupMaxMetadataBytes, groupMaxSize: 1_000 });
    expect(groupMaxMetadataBytes / memberMetadataMaxBytes).toBe(32);
    const ids: string[] = [];
    for (let i = 0; i < 32; i++)
      ids.push((await h.join({ protocols: metadataOf(memberMetadataMaxBytes) })).memberId);
    for (const memberId of ids) h.sendJoin({ memberId, protocols: metadataOf(memberMetadataMaxBytes) });
    expect((await h.describe()).members).toHaveLength(32);
    const refused = await h.join({ protocols: metadataOf(memberMetadataMaxBytes) });
    expect(refused.errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    expect((await h.describe()).members).toHaveLength(32);
  });
});
