import { status } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import { ErrorCode } from '../../src/errors';
import type { JoinGroupRequest, JoinGroupResponse } from '../../src/group/group-protocol';
import type { GroupCoordinatorClient, TestClockClient } from '../support/grpc-clients';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';

/**
 * The group protocol over real gRPC: a cohort server on 127.0.0.1 port 0 with --manual-clock, driven by
 * grpc-js clients, one channel per member. Time moves only through TestClock.Advance, which fires every
 * timer that becomes due before it answers, so sessions and rebalances end exactly when the test says.
 */

const SESSION_TIMEOUT_MS = 10_000;
const REBALANCE_TIMEOUT_MS = 30_000;
const INITIAL_DELAY_MS = 3_000;
const PROTOCOLS = [{ name: 'range', metadata: Buffer.from('subscription') }];

let t: TestServer;
let clock: TestClockClient;
let groupCounter = 0;
let groupId: string;

beforeEach(async () => {
  t = await startTestServer({ manualClock: true, groupInitialRebalanceDelayMs: INITIAL_DELAY_MS });
  clock = t.testClock();
  groupId = `integration-group-${++groupCounter}`;
});

afterEach(async () => {
  await t.close();
});

function joinRequest(overrides: Partial<JoinGroupRequest>): Partial<JoinGroupRequest> {
  return {
    groupId,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    rebalanceTimeoutMs: REBALANCE_TIMEOUT_MS,
    protocolType: 'consumer',
    protocols: PROTOCOLS,
    clientId: 'integration',
    ...overrides,
  };
}

/** A dynamic member's first JoinGroup: MEMBER_ID_REQUIRED and its member id (KIP-394). */
async function memberIdFor(client: GroupCoordinatorClient): Promise<string> {
  const first = await client.joinGroup(joinRequest({}));
  expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  return first.memberId;
}

/** Waits, one DescribeGroups round trip at a time, until the group is in `state` with `members` members. */
async function groupReaches(client: GroupCoordinatorClient, state: string, members: number): Promise<void> {
  for (;;) {
    const described = (await client.describeGroups({ groups: [groupId] })).groups[0];
    if (described.groupState === state && described.members.length === members) return;
  }
}

async function advance(ms: number): Promise<void> {
  await clock.advance({ ms });
}

describe('the group coordinator over gRPC', () => {
  it('forms a group of three, the leader assigns, and when one member stops heartbeating the other two rebalance', async () => {
    const clients = [t.groupCoordinator(), t.groupCoordinator(), t.groupCoordinator()];
    const ids = await Promise.all(clients.map(memberIdFor));
    const joins = clients.map((client, i) => client.joinGroup(joinRequest({ memberId: ids[i] })));
    await groupReaches(clients[0], 'PreparingRebalance', 3);
    await advance(INITIAL_DELAY_MS); // members arrived during the initial delay: it is extended once
    await advance(INITIAL_DELAY_MS);
    const joined = await Promise.all(joins);
    for (const response of joined) {
      expect(response).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1, protocolName: 'range' });
    }
    const leaderIndex = joined.findIndex((r) => r.leaderId === r.memberId);
    expect(leaderIndex).toBeGreaterThanOrEqual(0);
    expect(joined[leaderIndex].members.map((m) => m.memberId).sort()).toEqual([...ids].sort());
    expect(joined.filter((r) => r.members.length === 0)).toHaveLength(2);

    // The leader assigns a partition to each member; followers get theirs from SyncGroup.
    const assignmentOf = (memberId: string) => Buffer.from(`partitions-of-${memberId}`);
    const syncs = clients.map((client, i) =>
      client.syncGroup({
        groupId,
        generationId: 1,
        memberId: ids[i],
        assignments:
          i === leaderIndex ? ids.map((memberId) => ({ memberId, assignment: assignmentOf(memberId) })) : [],
      }),
    );
    const synced = await Promise.all(syncs);
    synced.forEach((response, i) => {
      expect(response.errorCode).toBe(ErrorCode.NONE);
      expect(Buffer.from(response.assignment)).toEqual(assignmentOf(ids[i]));
    });
    await groupReaches(clients[0], 'Stable', 3);

    // The third member goes silent; the other two keep heartbeating.
    const silent = 2;
    const heartbeat = (i: number, generationId: number) =>
      clients[i].heartbeat({ groupId, memberId: ids[i], generationId });
    let seen: ErrorCode[] = [];
    for (let elapsedMs = 0; elapsedMs <= SESSION_TIMEOUT_MS;) {
      await advance(3_000);
      elapsedMs += 3_000;
      seen = await Promise.all([0, 1].map(async (i) => (await heartbeat(i, 1)).errorCode));
      // Before the silent member's session ends, nothing changes for the others.
      if (elapsedMs < SESSION_TIMEOUT_MS) expect(seen).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
    }
    expect(seen).toEqual([ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS]);
    expect((await heartbeat(silent, 1)).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID);

    // Both rejoin; the join completes as soon as both are in, without waiting for the rebalance timeout.
    const rejoined = await Promise.all(
      [0, 1].map((i) => clients[i].joinGroup(joinRequest({ memberId: ids[i] }))),
    );
    for (const response of rejoined)
      expect(response).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2 });
    const newLeader = rejoined.find((r) => r.leaderId === r.memberId) as JoinGroupResponse;
    expect(newLeader.members.map((m) => m.memberId).sort()).toEqual([ids[0], ids[1]].sort());
    await Promise.all(
      [0, 1].map((i) =>
        clients[i].syncGroup({
          groupId,
          generationId: 2,
          memberId: ids[i],
          assignments:
            ids[i] === newLeader.memberId
              ? [0, 1].map((j) => ({ memberId: ids[j], assignment: assignmentOf(ids[j]) }))
              : [],
        }),
      ),
    );
    await groupReaches(clients[0], 'Stable', 2);
  });

  it('lets a static member restart without a rebalance', async () => {
    const leader = t.groupCoordinator();
    const follower = t.groupCoordinator();
    const leaderJoin = leader.joinGroup(joinRequest({ groupInstanceId: 'instance-a' }));
    const followerJoin = follower.joinGroup(joinRequest({ groupInstanceId: 'instance-b' }));
    await groupReaches(leader, 'PreparingRebalance', 2);
    await advance(INITIAL_DELAY_MS);
    await advance(INITIAL_DELAY_MS);
    const [l, f] = await Promise.all([leaderJoin, followerJoin]);
    const leaderResponse = l.leaderId === l.memberId ? l : f;
    const followerResponse = leaderResponse === l ? f : l;
    const followerClient = leaderResponse === l ? follower : leader;
    const leaderClient = leaderResponse === l ? leader : follower;
    const followerInstance = followerResponse === f ? 'instance-b' : 'instance-a';
    const assignment = Buffer.from('the follower partitions');
    await Promise.all([
      leaderClient.syncGroup({
        groupId,
        generationId: 1,
        memberId: leaderResponse.memberId,
        assignments: [{ memberId: followerResponse.memberId, assignment }],
      }),
      followerClient.syncGroup({ groupId, generationId: 1, memberId: followerResponse.memberId }),
    ]);
    await groupReaches(leaderClient, 'Stable', 2);

    // The follower's process restarts: a new channel, no member id, the same group instance id.
    followerClient.close();
    const restarted = t.groupCoordinator();
    const rejoin = await restarted.joinGroup(joinRequest({ groupInstanceId: followerInstance }));
    expect(rejoin).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: 1,
      leaderId: leaderResponse.memberId,
      skipAssignment: false,
    });
    expect(rejoin.memberId).not.toBe(followerResponse.memberId);
    const sync = await restarted.syncGroup({ groupId, generationId: 1, memberId: rejoin.memberId });
    expect(sync.errorCode).toBe(ErrorCode.NONE);
    expect(Buffer.from(sync.assignment)).toEqual(assignment);

    // No rebalance: the leader's generation is still good, and the old incarnation is fenced.
    expect(
      (await leaderClient.heartbeat({ groupId, memberId: leaderResponse.memberId, generationId: 1 }))
        .errorCode,
    ).toBe(ErrorCode.NONE);
    const stale = await restarted.heartbeat({
      groupId,
      memberId: followerResponse.memberId,
      generationId: 1,
      groupInstanceId: followerInstance,
    });
    expect(stale.errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID);
    const described = (await restarted.describeGroups({ groups: [groupId] })).groups[0];
    expect(described.groupState).toBe('Stable');
    expect(described.members.map((m) => m.memberId).sort()).toEqual(
      [leaderResponse.memberId, rejoin.memberId].sort(),
    );
  });

  it('survives a parked JoinGroup cancelled by its client, and the member can come back for the generation', async () => {
    const first = t.groupCoordinator();
    const firstId = await memberIdFor(first);
    const firstJoin = first.joinGroup(joinRequest({ memberId: firstId }));
    await advance(INITIAL_DELAY_MS);
    expect((await firstJoin).generationId).toBe(1);
    await first.syncGroup({ groupId, generationId: 1, memberId: firstId, assignments: [] });

    const second = t.groupCoordinator();
    const secondId = await memberIdFor(second);
    const controller = new AbortController();
    const parked = second.joinGroup(joinRequest({ memberId: secondId }), { signal: controller.signal });
    await groupReaches(first, 'PreparingRebalance', 2);
    controller.abort();
    const error = await parked.then(
      () => {
        throw new Error('the cancelled JoinGroup should not succeed');
      },
      (e: ServiceError) => e,
    );
    expect(error.code).toBe(status.CANCELLED);

    // The group goes on: the first member rejoins and the generation forms with both, as Kafka keeps a
    // member whose parked JoinGroup went away.
    expect((await first.heartbeat({ groupId, memberId: firstId, generationId: 1 })).errorCode).toBe(
      ErrorCode.REBALANCE_IN_PROGRESS,
    );
    const rejoin = await first.joinGroup(joinRequest({ memberId: firstId }));
    expect(rejoin).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 2, leaderId: firstId });
    expect(rejoin.members).toHaveLength(2);

    // The cancelled client retries and is given the generation it missed.
    const retry = await second.joinGroup(joinRequest({ memberId: secondId }));
    expect(retry).toMatchObject({
      errorCode: ErrorCode.NONE,
      generationId: 2,
      leaderId: firstId,
      memberId: secondId,
    });
    const [leaderSync, followerSync] = await Promise.all([
      first.syncGroup({
        groupId,
        generationId: 2,
        memberId: firstId,
        assignments: [{ memberId: secondId, assignment: Buffer.from('p1') }],
      }),
      second.syncGroup({ groupId, generationId: 2, memberId: secondId }),
    ]);
    expect(leaderSync.errorCode).toBe(ErrorCode.NONE);
    expect(Buffer.from(followerSync.assignment)).toEqual(Buffer.from('p1'));
    await groupReaches(first, 'Stable', 2);
    expect(t.logs.filter((line) => line.level >= 50)).toEqual([]);
  });
});

describe('FindCoordinator on a single node', () => {
  it('names this node, at the address clients reach it, for every group', async () => {
    const client = t.groupCoordinator();
    const { coordinators } = await client.findCoordinator({ keyType: 0, keys: [groupId, 'another', ''] });
    expect(coordinators).toEqual(
      [groupId, 'another', ''].map((key) => ({
        key,
        nodeId: expect.any(Number),
        host: '127.0.0.1',
        port: t.port,
        errorCode: ErrorCode.NONE,
        errorMessage: '',
      })),
    );
  });
});
