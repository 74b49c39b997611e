import { Metadata, status } from '@grpc/grpc-js';
import type { ClientDuplexStream, StatusObject } from '@grpc/grpc-js';
import { CohortError, ErrorCode } from '../../src/errors';
import type {
  HeartbeatRequest,
  HeartbeatStreamResponse,
  JoinGroupRequest,
  JoinGroupResponse,
} from '../../src/group/group-protocol';
import { FakeGroupCoordinator } from '../support/fake-group-coordinator';
import type { GroupCoordinatorClient, TestClockClient } from '../support/grpc-clients';
import type { TestServer } from '../support/start-test-server';
import { startTestServer } from '../support/start-test-server';

/**
 * cohort.v1.GroupCoordinator/HeartbeatStream over real gRPC, under --manual-clock: answers in order with
 * their sequence numbers, pushes (sequence 0) when a member's generation ends, ids fixed by the first
 * request, and a closed stream that changes nothing.
 */

const SESSION_TIMEOUT_MS = 10_000;
const REBALANCE_TIMEOUT_MS = 30_000;
const INITIAL_DELAY_MS = 3_000;
const PROTOCOLS = [{ name: 'range', metadata: Buffer.from('subscription') }];

let t: TestServer;
let clock: TestClockClient;
let groupCounter = 0;
let groupId: string;
const streams: ClientDuplexStream<unknown, unknown>[] = [];

type Stream = ClientDuplexStream<Partial<HeartbeatRequest>, HeartbeatStreamResponse>;

/** A client-side HeartbeatStream whose messages and final status a test reads one at a time. */
class Probe {
  private readonly received: HeartbeatStreamResponse[] = [];
  private wake: (() => void) | undefined;
  readonly ended: Promise<StatusObject>;

  constructor(readonly stream: Stream) {
    streams.push(stream as ClientDuplexStream<unknown, unknown>);
    stream.on('data', (message: HeartbeatStreamResponse) => {
      this.received.push(message);
      this.wake?.();
    });
    stream.on('error', () => {}); // the status below says it all
    this.ended = new Promise((resolve) => stream.on('status', resolve));
  }

  /** The next message from the server, in arrival order. */
  async next(): Promise<HeartbeatStreamResponse> {
    while (this.received.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    return this.received.shift() as HeartbeatStreamResponse;
  }

  /** Messages that arrived and were not read yet. */
  get unread(): readonly HeartbeatStreamResponse[] {
    return this.received;
  }

  /** Sends a heartbeat and returns the answer to it (the next message, which must not be a push). */
  async heartbeat(request: Partial<HeartbeatRequest>): Promise<HeartbeatStreamResponse> {
    this.stream.write(request);
    return this.next();
  }
}

interface Member {
  readonly client: GroupCoordinatorClient;
  memberId: string;
  readonly groupInstanceId: string;
  generationId: number;
}

function joinRequest(member: Member): Partial<JoinGroupRequest> {
  return {
    groupId,
    memberId: member.memberId,
    groupInstanceId: member.groupInstanceId,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    rebalanceTimeoutMs: REBALANCE_TIMEOUT_MS,
    protocolType: 'consumer',
    protocols: PROTOCOLS,
    clientId: 'stream-test',
  };
}

/** A member with its id: a dynamic one gets it from MEMBER_ID_REQUIRED (KIP-394), a static one on joining. */
async function newMember(groupInstanceId = ''): Promise<Member> {
  const member: Member = { client: t.groupCoordinator(), memberId: '', groupInstanceId, generationId: -1 };
  if (groupInstanceId === '') {
    const first = await member.client.joinGroup(joinRequest(member));
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    member.memberId = first.memberId;
  }
  return member;
}

async function advance(ms: number): Promise<void> {
  await clock.advance({ ms });
}

async function describe1(): Promise<{ groupState: string; members: { memberId: string }[] }> {
  const client = t.groupCoordinator();
  const described = (await client.describeGroups({ groups: [groupId] })).groups[0];
  client.close();
  return described;
}

/** Waits, one DescribeGroups round trip at a time, until the group is in `state` with `members` members. */
async function groupReaches(state: string, members: number): Promise<void> {
  for (;;) {
    const described = await describe1();
    if (described.groupState === state && described.members.length === members) return;
  }
}

/**
 * `members` join (first ones, or rejoin after a rebalance started) and sync; the group is Stable after.
 * `parked` are members whose JoinGroup is already under way: they sync too.
 */
async function joinAndSync(
  members: Member[],
  parked: { member: Member; join: Promise<JoinGroupResponse> }[] = [],
): Promise<void> {
  const all = [...members, ...parked.map((p) => p.member)];
  const joins = [...members.map((m) => m.client.joinGroup(joinRequest(m))), ...parked.map((p) => p.join)];
  let isJoined = false;
  const joined = Promise.all(joins).finally(() => (isJoined = true));
  // A first generation waits out the initial delay (extended while members arrive); a later one completes
  // as soon as everyone has rejoined. The clock moves only once every join has arrived.
  while (!isJoined) {
    const described = await describe1();
    if (described.groupState === 'PreparingRebalance' && described.members.length === all.length) {
      await advance(INITIAL_DELAY_MS);
    }
  }
  const responses: JoinGroupResponse[] = await joined;
  all.forEach((m, i) => {
    expect(responses[i].errorCode).toBe(ErrorCode.NONE);
    m.memberId = responses[i].memberId;
    m.generationId = responses[i].generationId;
  });
  const synced = await Promise.all(
    all.map((m, i) =>
      m.client.syncGroup({
        groupId,
        generationId: m.generationId,
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        assignments:
          responses[i].leaderId === m.memberId
            ? responses[i].members.map((each) => ({ memberId: each.memberId, assignment: Buffer.from('a') }))
            : [],
      }),
    ),
  );
  for (const response of synced) expect(response.errorCode).toBe(ErrorCode.NONE);
  await groupReaches('Stable', all.length);
}

function heartbeatOf(member: Member): Partial<HeartbeatRequest> {
  return {
    groupId,
    memberId: member.memberId,
    groupInstanceId: member.groupInstanceId,
    generationId: member.generationId,
  };
}

function openStream(member: Member): Probe {
  return new Probe(member.client.heartbeatStream());
}

const PUSH = (errorCode: ErrorCode): HeartbeatStreamResponse => ({ errorCode, sequence: 0 });

describe('HeartbeatStream', () => {
  beforeEach(async () => {
    t = await startTestServer({ manualClock: true, groupInitialRebalanceDelayMs: INITIAL_DELAY_MS });
    clock = t.testClock();
    groupId = `stream-group-${++groupCounter}`;
  });

  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.cancel();
    await t.close();
  });

  it('answers each heartbeat in order, numbered from 1, with the unary Heartbeat code', async () => {
    const a = await newMember();
    await joinAndSync([a]);
    const probe = openStream(a);
    const requests = [
      heartbeatOf(a),
      heartbeatOf(a),
      { ...heartbeatOf(a), generationId: a.generationId + 1 }, // the generation may change on a stream
      heartbeatOf(a),
    ];
    for (const request of requests) probe.stream.write(request);
    const answers = [await probe.next(), await probe.next(), await probe.next(), await probe.next()];
    expect(answers).toEqual([
      { errorCode: ErrorCode.NONE, sequence: 1 },
      { errorCode: ErrorCode.NONE, sequence: 2 },
      { errorCode: ErrorCode.ILLEGAL_GENERATION, sequence: 3 },
      { errorCode: ErrorCode.NONE, sequence: 4 },
    ]);
    // The same requests, unary, get the same codes.
    const unary = [];
    for (const request of requests) unary.push((await a.client.heartbeat(request)).errorCode);
    expect(unary).toEqual(answers.map((answer) => answer.errorCode));

    // A half-close gets its answers, then OK.
    probe.stream.write(heartbeatOf(a));
    probe.stream.end();
    expect(await probe.next()).toEqual({ errorCode: ErrorCode.NONE, sequence: 5 });
    expect((await probe.ended).code).toBe(status.OK);
  });

  it('pushes REBALANCE_IN_PROGRESS once to a Stable member when another joins, and stays open across generations', async () => {
    const a = await newMember();
    await joinAndSync([a]);
    const probe = openStream(a);
    expect(await probe.heartbeat(heartbeatOf(a))).toEqual({ errorCode: ErrorCode.NONE, sequence: 1 });

    const b = await newMember();
    const bJoin = b.client.joinGroup(joinRequest(b));
    expect(await probe.next()).toEqual(PUSH(ErrorCode.REBALANCE_IN_PROGRESS));
    // One push per change: the next message answers the next heartbeat.
    expect(await probe.heartbeat(heartbeatOf(a))).toEqual({
      errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
      sequence: 2,
    });

    // a rejoins; b's parked join completes with it.
    await joinAndSync([a], [{ member: b, join: bJoin }]);
    expect(a.generationId).toBe(2);
    expect(await probe.heartbeat(heartbeatOf(a))).toEqual({ errorCode: ErrorCode.NONE, sequence: 3 });

    // b leaves: a's new generation is over too, and a hears it once.
    await b.client.leaveGroup({
      groupId,
      members: [{ memberId: b.memberId, groupInstanceId: '', reason: '' }],
    });
    expect(await probe.next()).toEqual(PUSH(ErrorCode.REBALANCE_IN_PROGRESS));
    expect(await probe.heartbeat(heartbeatOf(a))).toEqual({
      errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
      sequence: 4,
    });
  });

  it('pushes UNKNOWN_MEMBER_ID when the member leaves, and when its session expires', async () => {
    const a = await newMember();
    const b = await newMember();
    await joinAndSync([a, b]);
    const probeA = openStream(a);
    const probeB = openStream(b);
    expect((await probeA.heartbeat(heartbeatOf(a))).errorCode).toBe(ErrorCode.NONE);
    expect((await probeB.heartbeat(heartbeatOf(b))).errorCode).toBe(ErrorCode.NONE);

    await a.client.leaveGroup({
      groupId,
      members: [{ memberId: a.memberId, groupInstanceId: '', reason: '' }],
    });
    expect(await probeA.next()).toEqual(PUSH(ErrorCode.UNKNOWN_MEMBER_ID));
    expect(await probeB.next()).toEqual(PUSH(ErrorCode.REBALANCE_IN_PROGRESS));
    // The stream stays open; its member is gone.
    expect(await probeA.heartbeat(heartbeatOf(a))).toEqual({
      errorCode: ErrorCode.UNKNOWN_MEMBER_ID,
      sequence: 2,
    });

    // b never rejoins: the rebalance removes it... but its session ends first.
    await advance(SESSION_TIMEOUT_MS);
    expect(await probeB.next()).toEqual(PUSH(ErrorCode.UNKNOWN_MEMBER_ID));
    await groupReaches('Empty', 0);
    expect(probeA.unread).toEqual([]);
    expect(probeB.unread).toEqual([]);
  });

  it('pushes FENCED_INSTANCE_ID when a static member is replaced, and lets a static member reconnect', async () => {
    const s = await newMember('instance-1');
    await joinAndSync([s]);
    const first = openStream(s);
    expect(await first.heartbeat(heartbeatOf(s))).toEqual({ errorCode: ErrorCode.NONE, sequence: 1 });

    // The stream goes away: nothing changes, the session decides. A new stream keeps the member's place.
    first.stream.cancel();
    expect((await first.ended).code).toBe(status.CANCELLED);
    await advance(SESSION_TIMEOUT_MS - 1);
    const second = openStream(s);
    expect(await second.heartbeat(heartbeatOf(s))).toEqual({ errorCode: ErrorCode.NONE, sequence: 1 });
    await advance(SESSION_TIMEOUT_MS - 1);
    expect(await second.heartbeat(heartbeatOf(s))).toEqual({ errorCode: ErrorCode.NONE, sequence: 2 });
    const described = await describe1();
    expect(described.groupState).toBe('Stable');
    expect(described.members.map((m) => m.memberId)).toEqual([s.memberId]);

    // The instance restarts elsewhere (empty member id): the old id is fenced, and hears so at once.
    const restarted: Member = { ...s, client: t.groupCoordinator(), memberId: '' };
    const rejoined = await restarted.client.joinGroup(joinRequest(restarted));
    expect(rejoined.errorCode).toBe(ErrorCode.NONE);
    expect(await second.next()).toEqual(PUSH(ErrorCode.FENCED_INSTANCE_ID));
    expect(await second.heartbeat(heartbeatOf(s))).toEqual({
      errorCode: ErrorCode.FENCED_INSTANCE_ID,
      sequence: 3,
    });
    expect(first.unread).toEqual([]);
  });

  it('pushes to the stream that heartbeated last when a member has two open', async () => {
    const a = await newMember();
    await joinAndSync([a]);
    const older = openStream(a);
    const newer = openStream(a);
    expect((await older.heartbeat(heartbeatOf(a))).errorCode).toBe(ErrorCode.NONE);
    expect((await newer.heartbeat(heartbeatOf(a))).errorCode).toBe(ErrorCode.NONE);
    // The older one closing does not take the newer one's slot.
    older.stream.cancel();
    expect((await older.ended).code).toBe(status.CANCELLED);
    const b = await newMember();
    void b.client.joinGroup(joinRequest(b)).catch(() => {});
    expect(await newer.next()).toEqual(PUSH(ErrorCode.REBALANCE_IN_PROGRESS));
    expect(older.unread).toEqual([]);
  });

  it('ends the stream with INVALID_ARGUMENT when the ids change, after answering what came before', async () => {
    const a = await newMember();
    await joinAndSync([a]);
    for (const change of [
      { memberId: 'someone-else' },
      { groupId: 'other-group' },
      { groupInstanceId: 'i' },
    ]) {
      const probe = openStream(a);
      probe.stream.write(heartbeatOf(a));
      probe.stream.write({ ...heartbeatOf(a), ...change });
      probe.stream.write(heartbeatOf(a));
      expect(await probe.next()).toEqual({ errorCode: ErrorCode.NONE, sequence: 1 });
      const ended = await probe.ended;
      expect(ended.code).toBe(status.INVALID_ARGUMENT);
      expect(ended.metadata.get('cohort-error-code')).toEqual([String(ErrorCode.INVALID_REQUEST)]);
      expect(probe.unread).toEqual([]);
    }
    // Ending the stream changed nothing for the member.
    expect((await a.client.heartbeat(heartbeatOf(a))).errorCode).toBe(ErrorCode.NONE);
  });

  it('ends the stream with INVALID_ARGUMENT when a message does not decode', async () => {
    const a = await newMember();
    await joinAndSync([a]);
    const raw = a.client.raw.makeBidiStreamRequest(
      '/cohort.v1.GroupCoordinator/HeartbeatStream',
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      new Metadata(),
      {},
    );
    streams.push(raw as ClientDuplexStream<unknown, unknown>);
    const messages: Buffer[] = [];
    raw.on('data', (bytes: Buffer) => messages.push(bytes));
    raw.on('error', () => {});
    const ended = new Promise<StatusObject>((resolve) => raw.on('status', resolve));
    raw.write(Buffer.from([0x0a, 0x05, 0x61])); // group_id says 5 bytes, 1 follows
    expect((await ended).code).toBe(status.INVALID_ARGUMENT);
    expect(messages).toEqual([]);
  });

  it('survives a stream cancelled while a rebalance is pending', async () => {
    const a = await newMember();
    const b = await newMember();
    await joinAndSync([a, b]);
    const probeA = openStream(a);
    expect((await probeA.heartbeat(heartbeatOf(a))).errorCode).toBe(ErrorCode.NONE);

    const c = await newMember();
    const cJoin = c.client.joinGroup(joinRequest(c));
    expect(await probeA.next()).toEqual(PUSH(ErrorCode.REBALANCE_IN_PROGRESS));
    probeA.stream.cancel();
    expect((await probeA.ended).code).toBe(status.CANCELLED);

    // a never rejoins; b does; at the rebalance timeout a (dynamic) is dropped, with nobody to tell.
    const bJoin = b.client.joinGroup(joinRequest(b));
    await groupReaches('PreparingRebalance', 3);
    await advance(REBALANCE_TIMEOUT_MS);
    const [bJoined, cJoined] = await Promise.all([bJoin, cJoin]);
    expect(bJoined.errorCode).toBe(ErrorCode.NONE);
    expect(cJoined.errorCode).toBe(ErrorCode.NONE);
    expect(bJoined.generationId).toBe(cJoined.generationId);
    const described = await describe1();
    expect(described.members.map((m) => m.memberId).sort()).toEqual([b.memberId, c.memberId].sort());
    expect(t.logs.filter((line) => line.level >= 50)).toEqual([]);
  });

  it('pushes UNKNOWN_MEMBER_ID to a member that kept heartbeating but never rejoined, when the rebalance drops it', async () => {
    const a = await newMember();
    const b = await newMember();
    await joinAndSync([a, b]);
    const probeA = openStream(a);
    expect((await probeA.heartbeat(heartbeatOf(a))).errorCode).toBe(ErrorCode.NONE);

    const c = await newMember();
    const cJoin = c.client.joinGroup(joinRequest(c));
    expect(await probeA.next()).toEqual(PUSH(ErrorCode.REBALANCE_IN_PROGRESS));
    const bJoin = b.client.joinGroup(joinRequest(b));
    await groupReaches('PreparingRebalance', 3);
    // a ignores the push but stays alive: its heartbeats keep its session running through the rebalance.
    const step = SESSION_TIMEOUT_MS - 1_000;
    let elapsed = 0;
    let sequence = 1;
    while (elapsed + step < REBALANCE_TIMEOUT_MS) {
      await advance(step);
      elapsed += step;
      expect(await probeA.heartbeat(heartbeatOf(a))).toEqual({
        errorCode: ErrorCode.REBALANCE_IN_PROGRESS,
        sequence: ++sequence,
      });
    }
    // The rebalance times out: b and c form the next generation, a (dynamic, not rejoined) is dropped.
    await advance(REBALANCE_TIMEOUT_MS - elapsed);
    expect(await probeA.next()).toEqual(PUSH(ErrorCode.UNKNOWN_MEMBER_ID));
    const [bJoined, cJoined] = await Promise.all([bJoin, cJoin]);
    expect(bJoined.errorCode).toBe(ErrorCode.NONE);
    expect(cJoined.generationId).toBe(bJoined.generationId);
    expect(await probeA.heartbeat(heartbeatOf(a))).toEqual({
      errorCode: ErrorCode.UNKNOWN_MEMBER_ID,
      sequence: ++sequence,
    });
    expect(probeA.unread).toEqual([]);
  });

  it('mixes stream and unary members in one group', async () => {
    const streamed = await newMember();
    const unary = await newMember();
    await joinAndSync([streamed, unary]);
    const probe = openStream(streamed);
    expect((await probe.heartbeat(heartbeatOf(streamed))).errorCode).toBe(ErrorCode.NONE);
    expect((await unary.client.heartbeat(heartbeatOf(unary))).errorCode).toBe(ErrorCode.NONE);

    const newcomer = await newMember();
    const join = newcomer.client.joinGroup(joinRequest(newcomer));
    expect(await probe.next()).toEqual(PUSH(ErrorCode.REBALANCE_IN_PROGRESS));
    expect((await unary.client.heartbeat(heartbeatOf(unary))).errorCode).toBe(
      ErrorCode.REBALANCE_IN_PROGRESS,
    );
    await joinAndSync([streamed, unary], [{ member: newcomer, join }]);
    expect(streamed.generationId).toBe(2);
    expect(await probe.heartbeat(heartbeatOf(streamed))).toEqual({ errorCode: ErrorCode.NONE, sequence: 2 });
    expect((await unary.client.heartbeat(heartbeatOf(unary))).errorCode).toBe(ErrorCode.NONE);
  });

  it('counts each heartbeat on a stream in cohort_rpc_duration_seconds, by its code', async () => {
    await t.close();
    t = await startTestServer({
      manualClock: true,
      groupInitialRebalanceDelayMs: INITIAL_DELAY_MS,
      adminListen: '127.0.0.1:0',
    });
    clock = t.testClock();
    const a = await newMember();
    await joinAndSync([a]);
    const probe = openStream(a);
    expect((await probe.heartbeat(heartbeatOf(a))).errorCode).toBe(ErrorCode.NONE);
    expect((await probe.heartbeat(heartbeatOf(a))).errorCode).toBe(ErrorCode.NONE);
    expect((await probe.heartbeat({ ...heartbeatOf(a), generationId: 99 })).errorCode).toBe(
      ErrorCode.ILLEGAL_GENERATION,
    );
    const metrics = await (await fetch(`${t.adminUrl}/metrics`)).text();
    const count = (code: string) =>
      new RegExp(
        `^cohort_rpc_duration_seconds_count\\{[^}]*method="HeartbeatStream"[^}]*code="${code}"[^}]*\\} (\\d+)$`,
        'm',
      ).exec(metrics)?.[1];
    expect(count('NONE')).toBe('2');
    expect(count('ILLEGAL_GENERATION')).toBe('1');
  });

  it('ends every stream with OK when the server closes, without waiting out the grace period', async () => {
    await t.close();
    t = await startTestServer(
      { manualClock: true, groupInitialRebalanceDelayMs: INITIAL_DELAY_MS },
      { shutdownGraceMs: 120_000 },
    );
    clock = t.testClock();
    const a = await newMember();
    await joinAndSync([a]);
    const member = openStream(a);
    const stranger = new Probe(t.groupCoordinator().heartbeatStream());
    expect((await member.heartbeat(heartbeatOf(a))).errorCode).toBe(ErrorCode.NONE);
    expect(await stranger.heartbeat({ groupId, memberId: 'nobody' })).toEqual({
      errorCode: ErrorCode.UNKNOWN_MEMBER_ID,
      sequence: 1,
    });
    await t.server.close();
    expect((await member.ended).code).toBe(status.OK);
    expect((await stranger.ended).code).toBe(status.OK);
    expect(t.logs.filter((line) => line.level >= 40)).toEqual([]);
  }, 20_000);

  it('is not held to the streaming-call bounds: a process may run more members than they allow on one channel', async () => {
    await t.close();
    t = await startTestServer({
      manualClock: true,
      groupInitialRebalanceDelayMs: INITIAL_DELAY_MS,
      maxStreamingCallsPerConnection: 2,
      maxStreamingCalls: 2,
    });
    const probes = [1, 2, 3, 4].map(() => new Probe(t.groupCoordinator().heartbeatStream()));
    for (const [i, probe] of probes.entries()) {
      expect(await probe.heartbeat({ groupId, memberId: `nobody-${i}` })).toEqual({
        errorCode: ErrorCode.UNKNOWN_MEMBER_ID,
        sequence: 1,
      });
    }
    await t.server.close();
    for (const probe of probes) expect((await probe.ended).code).toBe(status.OK);
  }, 20_000);
});

describe('HeartbeatStream over a coordinator that refuses or fails', () => {
  let server: TestServer;
  let coordinator: FakeGroupCoordinator;

  beforeEach(async () => {
    coordinator = new FakeGroupCoordinator({
      heartbeat: (request) => {
        if (request.generationId === 2) return Promise.resolve({ errorCode: ErrorCode.ILLEGAL_GENERATION });
        if (request.generationId === 3) {
          return Promise.reject(new CohortError(ErrorCode.INVALID_REQUEST, 'group_id is too long'));
        }
        return Promise.reject(new Error('a bug in the coordinator'));
      },
    });
    server = await startTestServer({}, { coordinatorFactory: () => coordinator });
  });

  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.cancel();
    await server.close();
  });

  function open(): Probe {
    return new Probe(server.groupCoordinator().heartbeatStream());
  }

  it('ends the stream with the status of a refused heartbeat, and INTERNAL (logged) for a bug', async () => {
    const refused = open();
    refused.stream.write({ groupId: 'g', memberId: 'm', generationId: 2 });
    refused.stream.write({ groupId: 'g', memberId: 'm', generationId: 3 });
    expect(await refused.next()).toEqual({ errorCode: ErrorCode.ILLEGAL_GENERATION, sequence: 1 });
    const ended = await refused.ended;
    expect(ended.code).toBe(status.INVALID_ARGUMENT);
    expect(ended.details).toBe('group_id is too long');

    const failed = open();
    failed.stream.write({ groupId: 'g', memberId: 'm', generationId: 4 });
    const failure = await failed.ended;
    expect(failure.code).toBe(status.INTERNAL);
    expect(failure.details).not.toContain('bug');
    expect(server.logs.some((line) => line.level === 50 && JSON.stringify(line).includes('a bug'))).toBe(
      true,
    );
  });
});
