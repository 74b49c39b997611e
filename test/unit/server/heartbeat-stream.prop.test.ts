import fc from 'fast-check';
import { ErrorCode } from '../../../src/errors';
import type { GroupCoordinatorRouter } from '../../../src/group/group-coordinator-router';
import type {
  GroupCoordinatorService,
  HeartbeatStreamResponse,
  JoinGroupResponse,
  SyncGroupResponse,
} from '../../../src/group/group-protocol';
import {
  heartbeatStreamHandler,
  HeartbeatStreams,
  type HeartbeatStreamCall,
} from '../../../src/server/heartbeat-stream';
import { captureLogger } from '../../support/capture-logger';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import { FakeDuplexCall } from '../../support/fake-duplex-call';
import { GROUP_ID, Tracked } from '../../support/group-harness';

/**
 * A model test of HeartbeatStream's pushes: the real coordinator under the manual clock, and the server's
 * own stream adapter (heartbeatStreamHandler, the code createServer serves) over in-memory calls. Two
 * dynamic and two static members join, sync, heartbeat on their streams, leave, restart (a static member
 * rejoining with an empty member id fences its old id), reconnect their stream, or fall silent, while the
 * clock moves in random steps, so sessions expire, rebalances start and joins and syncs time out.
 *
 * The oracle is built from the coordinator's public surface only: a rebalance is due to every member in the
 * group when it starts (onPrepareRebalance, with the membership DescribeGroups gives at that moment); a
 * removal is a member id that DescribeGroups stopped listing (fenced when its instance restarted in that
 * step). Either is due to the stream that is the member's watcher in the model: the last stream whose
 * heartbeat for it got past the member checks (answered NONE, REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION),
 * until that stream is cancelled or the member is removed. Checked on every stream:
 *
 * - the pushes (sequence 0) it carries are exactly the changes due to it, in order: none missed, none twice,
 *   none that were not due;
 * - each is written in the step the change happened, and a rebalance's before any answer written after the
 *   rebalance started: before the member's next response on its stream;
 * - its answers carry 1, 2, 3, ... in request order.
 *
 * The coordinator runs on the coordinator test context, whose partition keeps up: what a step's call wrote
 * (a leader's SyncGroup, a replaced static member's JoinGroup, a leave) is committed before the clock moves,
 * and what the clock wrote right after. A heartbeat is sent before the clock moves and reaches the
 * coordinator after it; each step ends once every stream has answered every heartbeat it carries. Answers
 * of the coordinator are read as they have come by then, never awaited.
 */

type Action = 'join' | 'sync' | 'heartbeat' | 'leave' | 'restart' | 'reconnect' | 'idle';

interface Step {
  readonly who: number;
  readonly action: Action;
  readonly advanceMs: number;
}

const MEMBERS = 4;
/** Far more promise callbacks than a heartbeat's answer takes (a few): past them, it is not coming. */
const MAX_ANSWER_TURNS = 10_000;
/** Members 2 and 3 are static. */
const instanceOf = (who: number): string => (who >= 2 ? `instance-${who}` : '');

/** A written message, or a change the model says is due, stamped with a global tick. */
type Entry =
  | { readonly kind: 'write'; readonly message: HeartbeatStreamResponse; readonly tick: number }
  | { readonly kind: 'due'; readonly code: ErrorCode; readonly tick: number; readonly step: number };

class Stream {
  readonly call: FakeDuplexCall;
  readonly entries: Entry[] = [];
  /** Heartbeats sent on it. */
  sent = 0;
  isCancelled = false;
  /** Answers written on it (sequence > 0). */
  private answers = 0;
  /** Ended with an error status: it answers nothing more. */
  private hasFailed = false;

  constructor(
    readonly memberId: string,
    private readonly tick: () => number,
    streams: HeartbeatStreams,
    coordinator: GroupCoordinatorService,
  ) {
    this.call = new FakeDuplexCall((message) => {
      this.entries.push({ kind: 'write', message, tick: this.tick() });
      if (message.sequence !== 0) this.answers++;
    });
    this.call.on('error', () => (this.hasFailed = true));
    heartbeatStreamHandler(
      '/cohort.v1.GroupCoordinator/HeartbeatStream',
      coordinator,
      streams,
      captureLogger().logger,
    )(this.call as unknown as HeartbeatStreamCall);
  }

  /**
   * Waits until every heartbeat sent on the stream has its answer written, or the stream has ended (it
   * answers nothing then). The stream handles its heartbeats one after another, each answered a few
   * promise callbacks after it was sent, so the wait is a bounded number of promise callbacks: an answer
   * still missing after them was dropped, and the step fails naming the stream instead of hanging until
   * Jest's timeout.
   */
  async expectAnswered(): Promise<void> {
    for (let turn = 0; turn < MAX_ANSWER_TURNS && !this.isAnswered; turn++) await Promise.resolve();
    if (!this.isAnswered) {
      throw new Error(
        `the stream of ${this.memberId || 'a new member'} answered ${this.answers} of its ${this.sent} ` +
          `heartbeats within ${MAX_ANSWER_TURNS} promise callbacks`,
      );
    }
  }

  private get isAnswered(): boolean {
    return this.isCancelled || this.hasFailed || this.answers >= this.sent;
  }
}

interface Member {
  memberId: string;
  generationId: number;
  join: Tracked<JoinGroupResponse> | undefined;
  sync: Tracked<SyncGroupResponse> | undefined;
  joined: JoinGroupResponse | undefined;
  stream: Stream | undefined;
}

interface Outcome {
  /** Pushes that were due, over all streams. */
  readonly due: number;
  readonly rebalancesDue: number;
  readonly removalsDue: number;
}

async function run(steps: readonly Step[]): Promise<Outcome> {
  let clock = 0;
  const tick = (): number => ++clock;
  let stepIndex = 0;
  const streams: Stream[] = [];
  const registry = new HeartbeatStreams();
  /** The model's watcher of each member id. */
  const watcher = new Map<string, Stream>();
  const stepEnds: number[] = [];
  let rebalancesDue = 0;
  let removalsDue = 0;

  const membership = async (): Promise<Set<string>> => {
    const described = (await ctx.router.describeGroups({ groups: [GROUP_ID] }, { clientHost: 'model' }))
      .groups[0];
    return new Set(described.members.map((m) => m.memberId));
  };
  const due = (memberId: string, code: ErrorCode, atTick: number): void => {
    const stream = watcher.get(memberId);
    if (stream === undefined) return;
    stream.entries.push({ kind: 'due', code, tick: atTick, step: stepIndex });
    if (code === ErrorCode.REBALANCE_IN_PROGRESS) rebalancesDue++;
    else removalsDue++;
  };

  /** Rebalances in the order they started, with their membership (resolved after the step). */
  const rebalanceSnapshots: {
    described: ReturnType<GroupCoordinatorRouter['describeGroups']>;
    tick: number;
  }[] = [];
  const ctx: CoordinatorTestContext = await CoordinatorTestContext.create(
    {},
    {
      // Every answer in the task that gives it: the model never lets the event loop turn.
      replySliceSize: Number.MAX_SAFE_INTEGER,
      listener: {
        onPrepareRebalance: (groupId) => {
          // Called as the rebalance starts, before any member is told: DescribeGroups builds its answer
          // now, so it lists who is in the group at this moment.
          const described = ctx.router.describeGroups({ groups: [groupId] }, { clientHost: 'model' });
          rebalanceSnapshots.push({ described, tick: tick() });
        },
      },
    },
  );
  /** The partition commits what has been written; then `call`'s answer must have come (it throws if not). */
  const answered = async <T>(call: Tracked<T>): Promise<T> => {
    await ctx.commitAppends();
    return call.result;
  };

  const members: Member[] = Array.from({ length: MEMBERS }, () => ({
    memberId: '',
    generationId: -1,
    join: undefined,
    sync: undefined,
    joined: undefined,
    stream: undefined,
  }));
  const newStream = (m: Member): void => {
    m.stream = new Stream(m.memberId, tick, registry, ctx.router);
    streams.push(m.stream);
  };
  const forget = (m: Member): void => {
    m.memberId = '';
    m.generationId = -1;
    m.joined = undefined;
    m.stream = undefined;
  };
  let known = new Set<string>();

  for (const step of steps) {
    const m = members[step.who];
    const instance = instanceOf(step.who);
    let fencedId: string | undefined;
    switch (step.action) {
      case 'join':
        if (m.join !== undefined) break;
        if (m.memberId === '' && instance === '') {
          const first = await answered(ctx.sendJoin({}));
          if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED) break;
          m.memberId = first.memberId;
          newStream(m);
        }
        m.join = ctx.sendJoin({ memberId: m.memberId, groupInstanceId: instance });
        break;
      case 'restart':
        // A static instance comes back with no member id: the coordinator fences the old one. It takes the
        // old one's place, so group.max.size never refuses it (MEMBERS is the test group's maximum).
        if (instance === '' || m.join !== undefined) break;
        fencedId = m.memberId;
        forget(m);
        m.join = ctx.sendJoin({ memberId: '', groupInstanceId: instance });
        break;
      case 'sync':
        if (m.joined === undefined || m.sync !== undefined) break;
        m.sync = ctx.sendSync({
          generationId: m.joined.generationId,
          memberId: m.memberId,
          groupInstanceId: instance,
          assignments: m.joined.members.map((each) => [each.memberId, Buffer.from('a')]),
        }).answer;
        m.joined = undefined;
        break;
      case 'heartbeat': {
        // In flight while the clock moves: a change may arrive before the heartbeat reaches the coordinator.
        const stream = m.stream;
        if (stream === undefined) break;
        stream.sent++;
        stream.call.emit('data', {
          groupId: GROUP_ID,
          memberId: m.memberId,
          generationId: m.generationId,
          groupInstanceId: instance,
        });
        break;
      }
      case 'reconnect': {
        const old = m.stream;
        if (old === undefined) break;
        old.call.cancel();
        old.isCancelled = true;
        if (watcher.get(m.memberId) === old) watcher.delete(m.memberId);
        newStream(m);
        break;
      }
      case 'leave':
        if (m.memberId === '') break;
        await answered(new Tracked(ctx.leave([{ memberId: m.memberId, groupInstanceId: instance }])));
        forget(m);
        break;
      case 'idle':
        break;
    }
    // What the step's call wrote is committed, and its write ended, before the clock moves. A heartbeat
    // writes nothing, and nothing else is pending then: it stays in flight.
    if (ctx.pendingAppends > 0) await ctx.commitAppends();
    ctx.time.advance(step.advanceMs);
    await ctx.commitAppends();
    for (const stream of streams) await stream.expectAnswered();

    // Rebalances that started in this step: due to every watched member in the group at that moment.
    for (const snapshot of rebalanceSnapshots.splice(0)) {
      for (const each of (await snapshot.described).groups[0].members) {
        due(each.memberId, ErrorCode.REBALANCE_IN_PROGRESS, snapshot.tick);
      }
    }
    // Heartbeats answered in this step: a stream that got past the member checks now watches its member.
    for (const each of members) {
      const stream = each.stream;
      if (stream === undefined || stream.isCancelled) continue;
      for (const entry of stream.entries) {
        if (entry.kind !== 'write' || entry.message.sequence === 0 || entry.tick < (stepEnds.at(-1) ?? 0))
          continue;
        const code = entry.message.errorCode;
        if (
          code === ErrorCode.NONE ||
          code === ErrorCode.REBALANCE_IN_PROGRESS ||
          code === ErrorCode.ILLEGAL_GENERATION
        ) {
          if (stream.memberId === each.memberId) watcher.set(each.memberId, stream);
        }
      }
    }
    // Member ids no longer listed were removed in this step: due once, to their watcher.
    const now = await membership();
    for (const memberId of known) {
      if (now.has(memberId)) continue;
      const code = memberId === fencedId ? ErrorCode.FENCED_INSTANCE_ID : ErrorCode.UNKNOWN_MEMBER_ID;
      due(memberId, code, tick());
      watcher.delete(memberId);
    }
    known = now;

    for (const each of members) {
      if (each.join?.isSettled === true) {
        const response = each.join.result;
        each.join = undefined;
        if (response.errorCode === ErrorCode.NONE) {
          if (each.memberId !== response.memberId) {
            each.memberId = response.memberId;
            newStream(each);
          }
          each.generationId = response.generationId;
          each.joined = response;
        } else if (response.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) forget(each);
      }
      if (each.sync?.isSettled === true) each.sync = undefined;
    }
    stepEnds.push(tick());
    stepIndex++;
  }
  // Every answer was written in its step, and what the shutdown does to the streams it does at once.
  ctx.shutdown();
  registry.endAll();

  let total = 0;
  for (const stream of streams) total += checkStream(stream, stepEnds);
  return { due: total, rebalancesDue, removalsDue };
}

/**
 * One stream's history against the model; returns how many pushes were due to it. The watcher update
 * above reads answers of the step just run, so a rebalance that started before such an answer in the same
 * step was already due to the previous watcher state: the model never credits a stream with a change it
 * could not have heard.
 */
function checkStream(stream: Stream, stepEnds: readonly number[]): number {
  const pushes = stream.entries.filter(
    (e): e is Extract<Entry, { kind: 'write' }> => e.kind === 'write' && e.message.sequence === 0,
  );
  const dues = stream.entries.filter((e): e is Extract<Entry, { kind: 'due' }> => e.kind === 'due');
  const answers = stream.entries.filter(
    (e): e is Extract<Entry, { kind: 'write' }> => e.kind === 'write' && e.message.sequence !== 0,
  );
  // Exactly the changes due, in order.
  expect(pushes.map((p) => ErrorCode[p.message.errorCode])).toEqual(dues.map((d) => ErrorCode[d.code]));
  dues.forEach((d, i) => {
    const push = pushes[i];
    // Written in the step the change happened (a push is never held back for a later one).
    expect(push.tick).toBeLessThan(stepEnds[d.step]);
    if (d.code === ErrorCode.REBALANCE_IN_PROGRESS) {
      // The rebalance reached the stream before any answer written after it started.
      expect(answers.filter((a) => a.tick > d.tick && a.tick < push.tick)).toEqual([]);
    }
  });
  // Answers in request order, numbered from 1.
  expect(answers.map((a) => a.message.sequence)).toEqual(answers.map((_, i) => i + 1));
  expect(answers.length).toBeLessThanOrEqual(stream.sent);
  return dues.length;
}

const step: fc.Arbitrary<Step> = fc.record({
  who: fc.nat(MEMBERS - 1),
  action: fc.constantFrom<Action>(
    'join',
    'join',
    'sync',
    'sync',
    'heartbeat',
    'heartbeat',
    'heartbeat',
    'heartbeat',
    'leave',
    'restart',
    'reconnect',
    'idle',
  ),
  // Mostly short steps (groups form and stay Stable), now and then one past a session timeout.
  advanceMs: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 60 }) },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 700 }) },
  ),
});

test('every generation change reaches every stream member exactly once, before its next response (property)', async () => {
  const seen = { due: 0, rebalancesDue: 0, removalsDue: 0 };
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 20, maxLength: 120 }), async (steps) => {
      const outcome = await run(steps);
      seen.due += outcome.due;
      seen.rebalancesDue += outcome.rebalancesDue;
      seen.removalsDue += outcome.removalsDue;
    }),
    { numRuns: 300 },
  );
  // The schedules exercised the property: many rebalances and removals reached watched stream members.
  expect(seen.rebalancesDue).toBeGreaterThan(100);
  expect(seen.removalsDue).toBeGreaterThan(50);
});
