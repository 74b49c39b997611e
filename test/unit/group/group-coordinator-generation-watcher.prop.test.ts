import fc from 'fast-check';
import { ErrorCode } from '../../../src/errors';
import type {
  GenerationWatcher,
  JoinGroupResponse,
  RequestContext,
  SyncGroupResponse,
} from '../../../src/group/group-protocol';
import { type CoordinatorCall, CoordinatorTestContext } from '../../support/coordinator-test-context';
import { CLIENT_HOST, GROUP_ID } from '../../support/group-harness';

/**
 * A model test of the coordinator's generation watchers (what HeartbeatStream is built on): four dynamic
 * members, each heartbeating through a context that carries its watcher (a new one for each member id, as a
 * client opens a new stream), join, sync, heartbeat, leave or fall silent at random while the manual clock
 * moves in random steps, so sessions expire, rebalances start and joins time out. Each push is tagged with
 * the generation the group was in when it came (from the coordinator's listener, not from the code under
 * test). The coordinator runs on the coordinator test context: its partition commits what each step and
 * each move of the clock wrote, and members handle their answers as they come. No answer is awaited: one
 * given as its call ran is read at once, and one that a commit makes due is checked right after it, so a
 * call left unanswered fails the property with a counterexample instead of stalling it. Checked, for
 * every member id and generation:
 *
 * - a push comes only when that generation is really over: no heartbeat of it is answered NONE afterwards;
 * - a watched member whose heartbeat of a generation was answered NONE, and later answered anything else,
 *   was pushed to in between (the change reached it before its next response);
 * - at most one push per change: one REBALANCE_IN_PROGRESS per generation, one UNKNOWN_MEMBER_ID per
 *   member id, and nothing after UNKNOWN_MEMBER_ID.
 */

type Action = 'join' | 'sync' | 'heartbeat' | 'leave' | 'idle';

interface Step {
  readonly who: number;
  readonly action: Action;
  readonly advanceMs: number;
}

type Event =
  | { readonly kind: 'push'; readonly code: ErrorCode; readonly generationId: number }
  | { readonly kind: 'answer'; readonly code: ErrorCode; readonly generationId: number };

/** One member id's stream: the watcher in its context, and everything it saw, in order. */
class Stream implements GenerationWatcher {
  readonly events: Event[] = [];
  readonly context: RequestContext = { clientHost: CLIENT_HOST, generationWatcher: this };
  isWatched = false;

  constructor(
    readonly memberId: string,
    private readonly currentGenerationId: () => number,
  ) {}

  onGenerationOver(errorCode: ErrorCode): void {
    this.events.push({ kind: 'push', code: errorCode, generationId: this.currentGenerationId() });
  }
}

interface Member {
  memberId: string;
  generationId: number;
  join: CoordinatorCall<JoinGroupResponse> | undefined;
  sync: CoordinatorCall<SyncGroupResponse> | undefined;
  joined: JoinGroupResponse | undefined;
  stream: Stream | undefined;
}

const MEMBERS = 4;

/** Checks one stream's history; returns how many completeness checks it made (pushes that had to come). */
function checkStream(stream: Stream): number {
  let checked = 0;
  const pushedFor = new Set<number>();
  let isGone = false;
  let lastNone: number | undefined; // generation of the last NONE answer, if no push came since
  let pushedSinceNone = false;
  for (const event of stream.events) {
    if (event.kind === 'push') {
      expect(isGone).toBe(false);
      if (event.code === ErrorCode.UNKNOWN_MEMBER_ID) isGone = true;
      else {
        expect(event.code).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
        expect(pushedFor.has(event.generationId)).toBe(false);
      }
      pushedFor.add(event.generationId);
      pushedSinceNone = true;
      continue;
    }
    if (event.code === ErrorCode.NONE) {
      expect(isGone).toBe(false);
      expect(pushedFor.has(event.generationId)).toBe(false);
      lastNone = event.generationId;
      pushedSinceNone = false;
    } else if (lastNone === event.generationId && stream.isWatched) {
      expect(pushedSinceNone).toBe(true);
      checked++;
    }
  }
  return checked;
}

/** Runs `steps` and checks every stream; returns how many pushes had to come (and did). */
async function run(steps: readonly Step[]): Promise<number> {
  // Every answer in the task that gives it: the model never lets the event loop turn, so answers held for
  // a later turn (the slicing of large rebalances, group-coordinator-lifecycle.test.ts) would never come.
  const ctx = await CoordinatorTestContext.create({}, { replySliceSize: Number.MAX_SAFE_INTEGER });
  const currentGenerationId = () => ctx.transitions.at(-1)?.generationId ?? 0;
  const streams: Stream[] = [];
  const members: Member[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    members.push({
      memberId: '',
      generationId: -1,
      join: undefined,
      sync: undefined,
      joined: undefined,
      stream: undefined,
    });
  }
  const reset = (m: Member) => {
    m.memberId = '';
    m.generationId = -1;
    m.joined = undefined;
    m.stream = undefined;
  };
  /** The JoinGroups and SyncGroups sent: those that wrote records are answered once the partition commits. */
  const sent: { what: string; call: CoordinatorCall<unknown> }[] = [];
  /**
   * The partition commits every append made so far, and the writes end: a call whose records were among
   * them (a leader's SyncGroup) has its answer now, or the property fails.
   */
  const commitWrites = async (): Promise<void> => {
    const writes = sent.filter(({ call }) => call.records.length > 0 && !call.answer.isSettled);
    await ctx.commitAppends();
    const unanswered = writes.filter(({ call }) => !call.answer.isSettled);
    if (unanswered.length > 0) {
      throw new Error(
        `no answer once its records were committed: ${unanswered.map((w) => w.what).join('; ')}`,
      );
    }
  };
  const onJoinAnswer = (m: Member, response: JoinGroupResponse) => {
    m.join = undefined;
    if (response.errorCode === ErrorCode.NONE && response.memberId === m.memberId) {
      m.generationId = response.generationId;
      m.joined = response;
    } else if (response.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) reset(m);
  };

  for (const [index, step] of steps.entries()) {
    const m = members[step.who];
    const what = (call: string) => `${call} of member ${step.who} at step ${index}`;
    switch (step.action) {
      case 'join': {
        if (m.join !== undefined) break;
        if (m.memberId === '') {
          const first = await ctx.answerGiven(ctx.sendJoin({}).promise, what('JoinGroup without member id'));
          if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED) break;
          m.memberId = first.memberId;
          m.stream = new Stream(m.memberId, currentGenerationId);
          streams.push(m.stream);
        }
        const join = ctx.sendJoinCall({ memberId: m.memberId });
        m.join = join;
        sent.push({ what: what('JoinGroup'), call: join });
        void join.answer.promise.then((response) => onJoinAnswer(m, response));
        break;
      }
      case 'sync': {
        if (m.joined === undefined || m.sync !== undefined) break;
        const sync = ctx.sendSync({
          generationId: m.joined.generationId,
          memberId: m.memberId,
          assignments: m.joined.members.map((each) => [each.memberId, Buffer.from('a')]),
        });
        m.sync = sync;
        m.joined = undefined;
        sent.push({ what: what('SyncGroup'), call: sync });
        void sync.answer.promise.then(() => (m.sync = undefined));
        break;
      }
      case 'heartbeat': {
        if (m.stream === undefined || m.generationId < 0) break;
        const request = {
          groupId: GROUP_ID,
          memberId: m.memberId,
          generationId: m.generationId,
          groupInstanceId: '',
        };
        const { errorCode } = await ctx.answerGiven(
          ctx.router.heartbeat(request, m.stream.context),
          what('Heartbeat'),
        );
        if (errorCode === ErrorCode.NONE || errorCode === ErrorCode.REBALANCE_IN_PROGRESS)
          m.stream.isWatched = true;
        m.stream.events.push({ kind: 'answer', code: errorCode, generationId: m.generationId });
        if (errorCode === ErrorCode.UNKNOWN_MEMBER_ID) reset(m);
        break;
      }
      case 'leave':
        if (m.memberId === '') break;
        // A leave that empties the group is answered once its record commits (with whatever is pending).
        await ctx.leaveAndCommit([{ memberId: m.memberId }]);
        reset(m);
        break;
      case 'idle':
        break;
    }
    // The partition commits what the step wrote (a leader's assignment) before the clock moves, and what
    // the clock wrote (an emptied group's record) after.
    await commitWrites();
    ctx.time.advance(step.advanceMs);
    await commitWrites();
  }
  ctx.shutdown();
  let checked = 0;
  for (const stream of streams) checked += checkStream(stream);
  return checked;
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
    'leave',
    'idle',
  ),
  // Mostly short steps (groups form and stay Stable), now and then one past a session timeout.
  advanceMs: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 60 }) },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 700 }) },
  ),
});

test('every generation change reaches every watched member once, before its next response (property)', async () => {
  let checked = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 20, maxLength: 120 }), async (steps) => {
      checked += await run(steps);
    }),
    { numRuns: 300 },
  );
  // The schedules exercised the property: many generations ended under a watching member.
  expect(checked).toBeGreaterThan(50);
});
