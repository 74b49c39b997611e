import fc from 'fast-check';
import { ErrorCode } from '../../../src/errors';
import type { GroupChange } from '../../../src/group/group-events';
import type { JoinGroupResponse, SyncGroupResponse } from '../../../src/group/group-protocol';
import { isLegalTransition, type GroupState } from '../../../src/group/group-state';
import { type CoordinatorCall, CoordinatorTestContext } from '../../support/coordinator-test-context';
import { CONTEXT, GROUP_ID, withoutLastHeartbeats, type Tracked } from '../../support/group-harness';

/**
 * A model test of the coordinator's group events (what WatchGroups is built on): dynamic and static
 * members join, sync, heartbeat, leave or fall silent at random, the group is deleted and re-created by
 * offset commits, while the manual clock moves in random steps (sessions expire, joins and syncs time out).
 * One watch names the group, one watches every group. The coordinator runs on the coordinator test
 * context; its partition commits what each step wrote before the clock moves, and members handle their
 * answers as they come. No answer is awaited: one given as its call ran is read at once, and one that a
 * commit makes due is checked at the end of the step, so a call left unanswered fails the property with a
 * counterexample instead of stalling it. Checked after every step:
 *
 * - completeness: the last event the named watch got describes the group exactly as DescribeGroups does
 *   now (so no observable change went untold); the same for the watch of every group, once it has seen
 *   the group;
 * - order: each event's state follows the previous one's by a legal transition (or stays), or, after the
 *   group went Dead, a new group begins (Empty, or PreparingRebalance for a static member's first join);
 * - the first event of each watch is a snapshot, and no other event of the named watch is.
 */

type Action = 'join' | 'sync' | 'heartbeat' | 'leave' | 'delete' | 'commit' | 'idle';

interface Step {
  readonly who: number;
  readonly action: Action;
  readonly advanceMs: number;
}

interface Member {
  readonly groupInstanceId: string;
  memberId: string;
  generationId: number;
  join: CoordinatorCall<JoinGroupResponse> | undefined;
  sync: CoordinatorCall<SyncGroupResponse> | undefined;
  joined: JoinGroupResponse | undefined;
}

/** Members 0-2 are dynamic, 3 is static. */
const MEMBERS = 4;

function checkOrder(changes: readonly GroupChange[]): void {
  for (let i = 1; i < changes.length; i++) {
    const previous = changes[i - 1].group.groupState as GroupState;
    const next = changes[i].group.groupState as GroupState;
    if (previous === 'Dead') expect(['Dead', 'Empty', 'PreparingRebalance']).toContain(next);
    else if (previous !== next) expect(isLegalTransition(previous, next)).toBe(true);
  }
}

async function run(steps: readonly Step[]): Promise<number> {
  // Every answer in the task that gives it: the model never lets the event loop turn, so answers held for
  // a later turn (the slicing of large rebalances, group-coordinator-lifecycle.test.ts) would never come.
  const ctx = await CoordinatorTestContext.create({}, { replySliceSize: Number.MAX_SAFE_INTEGER });
  const named: GroupChange[] = [];
  const all: GroupChange[] = [];
  ctx.router.watchGroups([GROUP_ID], (change) => named.push(change));
  ctx.router.watchGroups([], (change) => {
    if (change.group.groupId === GROUP_ID) all.push(change);
  });
  const members: Member[] = [];
  for (let i = 0; i < MEMBERS; i++) {
    members.push({
      groupInstanceId: i === MEMBERS - 1 ? 'static-member' : '',
      memberId: '',
      generationId: -1,
      join: undefined,
      sync: undefined,
      joined: undefined,
    });
  }
  const reset = (m: Member) => {
    m.memberId = '';
    m.generationId = -1;
    m.joined = undefined;
  };
  /** The JoinGroups and SyncGroups sent: those that wrote records are answered once the partition commits. */
  const sent: { what: string; call: CoordinatorCall<unknown> }[] = [];
  /** Calls whose answer is due by the end of the step: checked there. */
  const due: { what: string; answer: Tracked<unknown> }[] = [];
  const onJoinAnswer = (m: Member, response: JoinGroupResponse) => {
    m.join = undefined;
    if (response.errorCode === ErrorCode.NONE) {
      m.memberId = response.memberId;
      m.generationId = response.generationId;
      m.joined = response;
    } else if (response.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) reset(m);
  };
  let checks = 0;
  for (const [index, step] of steps.entries()) {
    const m = members[step.who];
    const what = (call: string) => `${call} of member ${step.who} at step ${index}`;
    switch (step.action) {
      case 'join': {
        if (m.join !== undefined) break;
        if (m.memberId === '' && m.groupInstanceId === '') {
          const first = await ctx.answerGiven(ctx.sendJoin({}).promise, what('JoinGroup without member id'));
          if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED) break;
          m.memberId = first.memberId;
        }
        // A static member rejoins without its id, as a restarted instance does.
        const join = ctx.sendJoinCall({
          memberId: m.groupInstanceId === '' ? m.memberId : '',
          groupInstanceId: m.groupInstanceId,
        });
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
          groupInstanceId: m.groupInstanceId,
          assignments: m.joined.members.map((each) => [each.memberId, Buffer.from(each.memberId)]),
        });
        m.sync = sync;
        m.joined = undefined;
        sent.push({ what: what('SyncGroup'), call: sync });
        void sync.answer.promise.then(() => (m.sync = undefined));
        break;
      }
      case 'heartbeat': {
        if (m.generationId < 0) break;
        const request = {
          groupId: GROUP_ID,
          memberId: m.memberId,
          generationId: m.generationId,
          groupInstanceId: m.groupInstanceId,
        };
        const { errorCode } = await ctx.answerGiven(
          ctx.router.heartbeat(request, CONTEXT),
          what('Heartbeat'),
        );
        if (errorCode === ErrorCode.UNKNOWN_MEMBER_ID) reset(m);
        break;
      }
      case 'leave':
        if (m.memberId === '') break;
        // A leave that empties the group is answered once its record commits (with whatever is pending).
        await ctx.leaveAndCommit([{ memberId: m.memberId, groupInstanceId: m.groupInstanceId }]);
        reset(m);
        break;
      case 'delete': {
        // Its tombstones (and whatever else is pending) commit at once; its answer is due from then on.
        const deletion = ctx.call(() => ctx.router.deleteGroups({ groupsNames: [GROUP_ID] }, CONTEXT));
        await ctx.commitAppends();
        due.push({ what: what('DeleteGroups'), answer: deletion.answer });
        break;
      }
      case 'commit': {
        // Likewise: its offset (and whatever else is pending) commits at once.
        const commit = ctx.commitOffsets({ memberId: '', generationId: -1 }, [
          { topic: 'orders', partition: 0, offset: 1 },
        ]);
        await ctx.commitAppends();
        due.push({ what: what('OffsetCommit'), answer: commit.answer });
        break;
      }
      case 'idle':
        break;
    }
    // The partition commits what the step wrote (a leader's assignment, a replaced static member's new id)
    // before the clock moves; what the clock writes (an emptied group's record) commits with the next step.
    // A call that wrote records has its answer once they are committed and its write has ended; a
    // DeleteGroups' comes a few promise jobs later (the router gathers its groups' answers), which the
    // commit below leaves room for, as the DeleteGroups' own commit came first.
    for (const { what: sentWhat, call } of sent) {
      if (call.records.length > 0 && !call.answer.isSettled)
        due.push({ what: sentWhat, answer: call.answer });
    }
    await ctx.commitAppends();
    const unanswered = due.splice(0).filter(({ answer }) => !answer.isSettled);
    if (unanswered.length > 0) {
      throw new Error(
        `no answer once its records were committed: ${unanswered.map((c) => c.what).join('; ')}`,
      );
    }
    ctx.time.advance(step.advanceMs);
    // DescribeGroups answers from the group as it is when called: both views are of this moment.
    const description = ctx.describe();
    const last = named.at(-1);
    const lastOfAll = all.at(-1);
    // Heartbeats are not changes: a watch's last event has each member's last heartbeat as of that event.
    const described = withoutLastHeartbeats(await description);
    expect(last === undefined ? undefined : withoutLastHeartbeats(last.group)).toEqual(described);
    if (lastOfAll !== undefined && (described as { errorCode: ErrorCode }).errorCode === ErrorCode.NONE)
      expect(withoutLastHeartbeats(lastOfAll.group)).toEqual(described);
    if ((described as { errorCode: ErrorCode }).errorCode === ErrorCode.NONE) checks++;
  }
  ctx.shutdown();
  checkOrder(named);
  checkOrder(all);
  expect(named[0].isSnapshot).toBe(true);
  expect(named.slice(1).filter((change) => change.isSnapshot)).toEqual([]);
  if (all.length > 0) expect(all[0].isSnapshot).toBe(true);
  return checks;
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
    'leave',
    'delete',
    'commit',
    'idle',
  ),
  advanceMs: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 60 }) },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 700 }) },
  ),
});

test('a watch always ends up with the group as DescribeGroups describes it, by legal steps (property)', async () => {
  let checks = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 20, maxLength: 100 }), async (steps) => {
      checks += await run(steps);
    }),
    { numRuns: 200 },
  );
  // The schedules exercised the property: the group existed at most checks.
  expect(checks).toBeGreaterThan(2000);
});
