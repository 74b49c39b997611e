import { connect as connectHttp2, constants } from 'node:http2';
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import { Client, credentials, Metadata, status } from '@grpc/grpc-js';
import type { ClientReadableStream, StatusObject } from '@grpc/grpc-js';
import { ErrorCode } from '../../src/errors';
import type { GroupEvent, JoinGroupRequest, JoinGroupResponse } from '../../src/group/group-protocol';
import type { GroupCoordinatorClient, TestClockClient } from '../support/grpc-clients';
import { grpcMessage } from '../support/raw-http2';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';

/**
 * cohort.v1.GroupCoordinator/WatchGroups over real gRPC, under --manual-clock: a snapshot of each watched
 * group, then one event per change (join, leave, expiry, rebalance, deletion); groups that do not exist
 * yet; a watcher that does not read, which the server neither waits for nor buffers without bound; and a
 * drain that ends every watch with OK.
 */

const SESSION_TIMEOUT_MS = 10_000;
const REBALANCE_TIMEOUT_MS = 30_000;
const INITIAL_DELAY_MS = 3_000;
const PROTOCOLS = [{ name: 'range', metadata: Buffer.from('subscription') }];

let t: TestServer;
let clock: TestClockClient;
let groupCounter = 0;
let groupId: string;
const watches: ClientReadableStream<unknown>[] = [];

/** A client-side WatchGroups whose events and final status a test reads one at a time. */
class Watch {
  private readonly received: GroupEvent[] = [];
  private wake: (() => void) | undefined;
  readonly ended: Promise<StatusObject>;

  constructor(readonly stream: ClientReadableStream<GroupEvent>) {
    watches.push(stream as ClientReadableStream<unknown>);
    stream.on('data', (event: GroupEvent) => {
      this.received.push(event);
      this.wake?.();
    });
    stream.on('error', () => {}); // the status below says it all
    this.ended = new Promise((resolve) => stream.on('status', resolve));
  }

  async next(): Promise<GroupEvent> {
    while (this.received.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    return this.received.shift() as GroupEvent;
  }

  /** The next event, as the fields a test compares. */
  async nextSummary(): Promise<Summary> {
    return summaryOf(await this.next());
  }
}

interface Summary {
  readonly groupId: string;
  readonly reason: string;
  readonly state: string;
  readonly generationId: number;
  readonly members: number;
  readonly isSnapshot: boolean;
}

function summaryOf(event: GroupEvent): Summary {
  return {
    groupId: event.group.groupId,
    reason: event.reason,
    state: event.group.groupState,
    generationId: event.group.generationId,
    members: event.group.members.length,
    isSnapshot: event.isSnapshot,
  };
}

function watch(groupIds: string[] = []): Watch {
  return new Watch(t.groupCoordinator().watchGroups({ groupIds }));
}

interface Member {
  readonly client: GroupCoordinatorClient;
  memberId: string;
  generationId: number;
}

function joinRequest(member: Member, id = groupId): Partial<JoinGroupRequest> {
  return {
    groupId: id,
    memberId: member.memberId,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    rebalanceTimeoutMs: REBALANCE_TIMEOUT_MS,
    protocolType: 'consumer',
    protocols: PROTOCOLS,
    clientId: 'watch-test',
  };
}

/** A dynamic member with its id (KIP-394): its first JoinGroup creates the group if it has to. */
async function newMember(): Promise<Member> {
  const member: Member = { client: t.groupCoordinator(), memberId: '', generationId: -1 };
  const first = await member.client.joinGroup(joinRequest(member));
  expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  member.memberId = first.memberId;
  return member;
}

async function sync(member: Member, joined: JoinGroupResponse): Promise<void> {
  member.generationId = joined.generationId;
  const synced = await member.client.syncGroup({
    groupId,
    generationId: joined.generationId,
    memberId: member.memberId,
    assignments:
      joined.leaderId === member.memberId
        ? joined.members.map((each) => ({ memberId: each.memberId, assignment: Buffer.from('p0') }))
        : [],
  });
  expect(synced.errorCode).toBe(ErrorCode.NONE);
}

function event(reason: string, state: string, generationId: number, members: number): Summary {
  return { groupId, reason, state, generationId, members, isSnapshot: false };
}

describe('WatchGroups', () => {
  beforeEach(async () => {
    t = await startTestServer({ manualClock: true, groupInitialRebalanceDelayMs: INITIAL_DELAY_MS });
    clock = t.testClock();
    groupId = `watched-group-${++groupCounter}`;
  });

  afterEach(async () => {
    for (const stream of watches.splice(0)) stream.cancel();
    await t.close();
  });

  it('describes a group that does not exist yet as DescribeGroups does, then each change as it happens', async () => {
    const w = watch([groupId]);
    const snapshot = await w.next();
    const described = (await t.groupCoordinator().describeGroups({ groups: [groupId] })).groups[0];
    expect(snapshot.group).toEqual(described);
    expect(snapshot).toMatchObject({ reason: 'snapshot', isSnapshot: true });
    expect(snapshot.group).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, groupState: 'Dead' });
    expect(Number(snapshot.timestampMs)).toBe((await clock.now({})).nowMs);

    const a = await newMember();
    expect(await w.nextSummary()).toEqual(event('group-created', 'Empty', 0, 0));
    const joining = a.client.joinGroup(joinRequest(a));
    expect(await w.nextSummary()).toEqual(event('member-joined', 'PreparingRebalance', 0, 1));
    await clock.advance({ ms: INITIAL_DELAY_MS });
    expect(await w.nextSummary()).toEqual(event('join-completed', 'CompletingRebalance', 1, 1));
    await sync(a, await joining);
    const stable = await w.next();
    expect(summaryOf(stable)).toEqual(event('rebalance-completed', 'Stable', 1, 1));
    // Assignments included, as DescribeGroups gives them.
    expect(stable.group.members[0]).toMatchObject({
      memberId: a.memberId,
      memberAssignment: Buffer.from('p0'),
      memberMetadata: Buffer.from('subscription'),
    });
    expect(stable.group.protocolData).toBe('range');

    // A heartbeat changes nothing a watcher sees.
    expect((await a.client.heartbeat({ groupId, memberId: a.memberId, generationId: 1 })).errorCode).toBe(
      ErrorCode.NONE,
    );
    const left = await a.client.leaveGroup({
      groupId,
      members: [{ memberId: a.memberId, groupInstanceId: '', reason: '' }],
    });
    expect(left.members[0].errorCode).toBe(ErrorCode.NONE);
    expect(await w.nextSummary()).toEqual(event('member-left', 'PreparingRebalance', 1, 0));
    expect(await w.nextSummary()).toEqual(event('group-emptied', 'Empty', 2, 0));

    const deleted = await t.groupCoordinator().deleteGroups({ groupsNames: [groupId] });
    expect(deleted.results[0].errorCode).toBe(ErrorCode.NONE);
    const last = await w.next();
    expect(summaryOf(last)).toEqual(event('group-deleted', 'Dead', -1, 0));
    expect(last.group.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  });

  it('tells of a rebalance a second member starts and of a session that expires', async () => {
    const a = await newMember();
    const aJoin = a.client.joinGroup(joinRequest(a));
    await clock.advance({ ms: INITIAL_DELAY_MS });
    await sync(a, await aJoin);

    const w = watch([groupId]);
    expect(await w.nextSummary()).toEqual({ ...event('snapshot', 'Stable', 1, 1), isSnapshot: true });
    const b = await newMember(); // a pending member id: nothing a description shows
    const bJoin = b.client.joinGroup(joinRequest(b));
    expect(await w.nextSummary()).toEqual(event('member-joined', 'PreparingRebalance', 1, 2));
    const aRejoin = a.client.joinGroup(joinRequest(a));
    expect(await w.nextSummary()).toEqual(event('join-completed', 'CompletingRebalance', 2, 2));
    const [aJoined, bJoined] = await Promise.all([aRejoin, bJoin]);
    const leader = aJoined.leaderId === a.memberId ? a : b;
    await sync(leader, leader === a ? aJoined : bJoined);
    expect(await w.nextSummary()).toEqual(event('rebalance-completed', 'Stable', 2, 2));
    await sync(leader === a ? b : a, leader === a ? bJoined : aJoined);

    // Only b heartbeats from now on: a's session runs out.
    await clock.advance({ ms: SESSION_TIMEOUT_MS / 2 });
    expect((await b.client.heartbeat({ groupId, memberId: b.memberId, generationId: 2 })).errorCode).toBe(
      ErrorCode.NONE,
    );
    await clock.advance({ ms: SESSION_TIMEOUT_MS / 2 + 1 });
    const expired = await w.next();
    expect(summaryOf(expired)).toEqual(event('session-expired', 'PreparingRebalance', 2, 1));
    expect(expired.group.members.map((m) => m.memberId)).toEqual([b.memberId]);
  });

  it('watches every group when given no ids: a snapshot of each, and a new group first seen as a snapshot', async () => {
    const other = `${groupId}-other`;
    const admin = t.groupCoordinator();
    const commit = (id: string) =>
      admin.offsetCommit({
        groupId: id,
        generationId: -1,
        topics: [
          {
            name: 'orders',
            partitions: [
              { partitionIndex: 0, committedOffset: 5, committedLeaderEpoch: -1, committedMetadata: '' },
            ],
          },
        ],
      });
    await commit(groupId);
    const w = watch();
    expect(await w.nextSummary()).toEqual({ ...event('snapshot', 'Empty', 0, 0), isSnapshot: true });
    await commit(other);
    expect(await w.nextSummary()).toEqual({
      ...event('group-created', 'Empty', 0, 0),
      groupId: other,
      isSnapshot: true,
    });
    await admin.deleteGroups({ groupsNames: [other] });
    expect(await w.nextSummary()).toEqual({ ...event('group-deleted', 'Dead', -1, 0), groupId: other });
    // Deleted, its id is new again.
    await commit(other);
    expect(await w.nextSummary()).toEqual({
      ...event('group-created', 'Empty', 0, 0),
      groupId: other,
      isSnapshot: true,
    });
  });

  it('ends every watch with OK when the server closes, without waiting out the grace period', async () => {
    await t.close();
    t = await startTestServer({ manualClock: true }, { shutdownGraceMs: 120_000 });
    const named = watch([groupId]);
    const all = watch();
    expect((await named.next()).isSnapshot).toBe(true);
    await t.server.close();
    expect((await named.ended).code).toBe(status.OK);
    expect((await all.ended).code).toBe(status.OK);
    expect(t.server.groupWatches.size).toBe(0);
    expect(t.logs.filter((line) => line.level >= 40)).toEqual([]);
  }, 20_000);

  it('ends a request that does not decode with INVALID_ARGUMENT, before any snapshot', async () => {
    const raw = new Client(t.target, credentials.createInsecure());
    // group_ids = ["alpha"] cut inside the string (protobufjs would read ["al"]).
    const call = raw.makeServerStreamRequest(
      '/cohort.v1.GroupCoordinator/WatchGroups',
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from([0x0a, 0x05, 0x61, 0x6c]),
      new Metadata(),
      {},
    );
    let messages = 0;
    call.on('data', () => messages++);
    call.on('error', () => undefined);
    const ended = await new Promise<StatusObject>((resolve) => call.on('status', resolve));
    raw.close();
    expect(ended.code).toBe(status.INVALID_ARGUMENT);
    expect(messages).toBe(0);
  });

  it('needs the bearer token, as every GroupCoordinator method does', async () => {
    await t.close();
    const token = 'watch-token-of-32-characters-xyz';
    t = await startTestServer({ token });
    const refused = watch([groupId]);
    expect((await refused.ended).code).toBe(status.UNAUTHENTICATED);
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    const allowed = new Watch(t.groupCoordinator().watchGroups({ groupIds: [groupId] }, { metadata }));
    expect((await allowed.next()).isSnapshot).toBe(true);
  });

  it('is held to the streaming-call bounds', async () => {
    await t.close();
    t = await startTestServer({ maxStreamingCallsPerConnection: 1 });
    const client = t.groupCoordinator();
    const first = new Watch(client.watchGroups({ groupIds: [groupId] }));
    expect((await first.next()).isSnapshot).toBe(true);
    const second = new Watch(client.watchGroups({ groupIds: [groupId] }));
    expect((await second.ended).code).toBe(status.RESOURCE_EXHAUSTED);
  });
});

/**
 * A WatchGroups call whose client reads nothing: it advertises a small HTTP/2 window and never grows it
 * until `read()`, so the server's writes back up as behind any slow reader.
 */
class StalledWatch {
  private readonly session: ClientHttp2Session;
  private readonly stream: ClientHttp2Stream;
  readonly trailers: Promise<Record<string, unknown>>;

  constructor(target: string, groupIds: string[]) {
    this.session = connectHttp2(`http://${target}`, { settings: { initialWindowSize: 1024 } });
    this.session.on('error', () => undefined);
    this.stream = this.session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: '/cohort.v1.GroupCoordinator/WatchGroups',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    this.stream.on('error', () => undefined);
    this.trailers = new Promise((resolve) => this.stream.once('trailers', resolve));
    const body = Buffer.concat(
      groupIds.map((id) => {
        const bytes = Buffer.from(id);
        return Buffer.concat([Buffer.from([0x0a, bytes.length]), bytes]);
      }),
    );
    this.stream.end(grpcMessage(body));
    this.stream.pause();
  }

  /** Starts reading: everything the server held back arrives, then its trailers. */
  read(): void {
    this.stream.on('data', () => undefined);
    this.stream.resume();
  }

  close(): void {
    this.session.destroy();
  }
}

describe('WatchGroups with a watcher that does not read', () => {
  let stalled: StalledWatch | undefined;

  afterEach(async () => {
    stalled?.close();
    await t.close();
  });

  it('keeps at most one waiting event per group and ends the watcher past watchMaxPendingGroups', async () => {
    const maxPendingGroups = 4;
    t = await startTestServer({ watchMaxPendingGroups: maxPendingGroups });
    const prefix = `stalled-${++groupCounter}`;
    stalled = new StalledWatch(t.target, []);
    const admin = t.groupCoordinator();
    while (t.server.groupWatches.size === 0) await new Promise((resolve) => setImmediate(resolve));
    // Every change is another group (created by a commit): nothing coalesces, the queue fills.
    let observedMax = 0;
    for (let i = 0; i < 200 && t.server.groupWatches.size > 0; i++) {
      const committed = await admin.offsetCommit({
        groupId: `${prefix}-${i}`,
        generationId: -1,
        topics: [
          {
            name: 'orders',
            partitions: [
              { partitionIndex: 0, committedOffset: i, committedLeaderEpoch: -1, committedMetadata: '' },
            ],
          },
        ],
      });
      expect(committed.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
      observedMax = Math.max(observedMax, t.server.groupWatches.pendingEvents);
    }
    // Ended and forgotten by the server before the 200 changes were through; it never held more.
    expect(t.server.groupWatches.size).toBe(0);
    expect(t.server.groupWatches.pendingEvents).toBe(0);
    expect(observedMax).toBeLessThanOrEqual(maxPendingGroups);
    stalled.read();
    const trailers = await stalled.trailers;
    expect(trailers['grpc-status']).toBe(String(status.RESOURCE_EXHAUSTED));
    expect(decodeURIComponent(String(trailers['grpc-message']))).toContain('watchMaxPendingGroups');
  });

  it('ends a watcher whose events waited longer than watchMaxLagMs at the next change', async () => {
    const maxLagMs = 5_000;
    t = await startTestServer({ manualClock: true, watchMaxLagMs: maxLagMs });
    const prefix = `lagging-${++groupCounter}`;
    stalled = new StalledWatch(t.target, []);
    const admin = t.groupCoordinator();
    while (t.server.groupWatches.size === 0) await new Promise((resolve) => setImmediate(resolve));
    const commit = (groupId: string) =>
      admin.offsetCommit({
        groupId,
        generationId: -1,
        topics: [
          {
            name: 'orders',
            partitions: [
              { partitionIndex: 0, committedOffset: 1, committedLeaderEpoch: -1, committedMetadata: '' },
            ],
          },
        ],
      });
    // Changes until events wait (the write buffer is full), on a clock that does not move.
    for (let i = 0; t.server.groupWatches.pendingEvents === 0; i++) await commit(`${prefix}-${i}`);
    await t.testClock().advance({ ms: maxLagMs });
    await commit(`${prefix}-at-the-bound`);
    expect(t.server.groupWatches.size).toBe(1); // not past it yet
    await t.testClock().advance({ ms: 1 });
    await commit(`${prefix}-past-the-bound`);
    expect(t.server.groupWatches.size).toBe(0);
    stalled.read();
    const trailers = await stalled.trailers;
    expect(trailers['grpc-status']).toBe(String(status.RESOURCE_EXHAUSTED));
    expect(decodeURIComponent(String(trailers['grpc-message']))).toContain('watchMaxLagMs');
  });

  it('coalesces the events of one group into its latest state while the watcher does not read', async () => {
    t = await startTestServer({ watchMaxPendingGroups: 1 });
    const id = `coalesced-${++groupCounter}`;
    stalled = new StalledWatch(t.target, [id]);
    const admin = t.groupCoordinator();
    while (t.server.groupWatches.size === 0) await new Promise((resolve) => setImmediate(resolve));
    // One group created and deleted over and over: one event waits at most, the watch stays open.
    for (let i = 0; i < 300; i++) {
      await admin.offsetCommit({
        groupId: id,
        generationId: -1,
        topics: [
          {
            name: 'orders',
            partitions: [
              { partitionIndex: 0, committedOffset: i, committedLeaderEpoch: -1, committedMetadata: '' },
            ],
          },
        ],
      });
      await admin.deleteGroups({ groupsNames: [id] });
      expect(t.server.groupWatches.pendingEvents).toBeLessThanOrEqual(1);
    }
    expect(t.server.groupWatches.size).toBe(1);
    expect(t.server.groupWatches.pendingEvents).toBe(1);
  });
});
