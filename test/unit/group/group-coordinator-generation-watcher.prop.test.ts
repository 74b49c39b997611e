import fc from 'fast-check';
import { ErrorCode } from '../../../src/errors';
import type {
  GenerationWatcher,
  JoinGroupResponse,
  RequestContext,
  SyncGroupResponse,
} from '../../../src/group/group-protocol';
import { CLIENT_HOST, GROUP_ID, GroupHarness, settle, Tracked } from '../../support/group-harness';

/**
 * A model test of the coordinator's generation watchers (what HeartbeatStream is built on): four dynamic
 * members, each heartbeating through a context that carries its watcher (a new one for each member id, as a
 * client opens a new stream), join, sync, heartbeat, leave or fall silent at random while the manual clock
 * moves in random steps, so sessions expire, rebalances start and joins time out. Each push is tagged with
 * the generation the group was in when it came (from the coordinator's listener, not from the code under
 * test). Checked, for every member id and generation:
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
  join: Tracked<JoinGroupResponse> | undefined;
  sync: Tracked<SyncGroupResponse> | undefined;
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
  const h = new GroupHarness();
  const currentGenerationId = () => h.transitions.at(-1)?.generationId ?? 0;
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

  for (const step of steps) {
    const m = members[step.who];
    switch (step.action) {
      case 'join':
        if (m.join !== undefined) break;
        if (m.memberId === '') {
          const first = await h.join({});
          if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED) break;
          m.memberId = first.memberId;
          m.stream = new Stream(m.memberId, currentGenerationId);
          streams.push(m.stream);
        }
        m.join = h.sendJoin({ memberId: m.memberId });
        break;
      case 'sync':
        if (m.joined === undefined || m.sync !== undefined) break;
        m.sync = h.sendSync({
          generationId: m.joined.generationId,
          memberId: m.memberId,
          assignments: m.joined.members.map((each) => [each.memberId, Buffer.from('a')]),
        });
        m.joined = undefined;
        break;
      case 'heartbeat': {
        if (m.stream === undefined || m.generationId < 0) break;
        const request = {
          groupId: GROUP_ID,
          memberId: m.memberId,
          generationId: m.generationId,
          groupInstanceId: '',
        };
        const { errorCode } = await h.coordinator.heartbeat(request, m.stream.context);
        if (errorCode === ErrorCode.NONE || errorCode === ErrorCode.REBALANCE_IN_PROGRESS)
          m.stream.isWatched = true;
        m.stream.events.push({ kind: 'answer', code: errorCode, generationId: m.generationId });
        if (errorCode === ErrorCode.UNKNOWN_MEMBER_ID) reset(m);
        break;
      }
      case 'leave':
        if (m.memberId === '') break;
        await h.leave([{ memberId: m.memberId }]);
        reset(m);
        break;
      case 'idle':
        break;
    }
    h.advance(step.advanceMs);
    await settle();
    for (const each of members) {
      if (each.join?.isSettled === true) {
        const response = each.join.result;
        each.join = undefined;
        if (response.errorCode === ErrorCode.NONE && response.memberId === each.memberId) {
          each.generationId = response.generationId;
          each.joined = response;
        } else if (response.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) reset(each);
      }
      if (each.sync?.isSettled === true) each.sync = undefined;
    }
  }
  h.coordinator.shutdown();
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
