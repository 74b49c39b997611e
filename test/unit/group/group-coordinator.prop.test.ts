import fc from 'fast-check';
import { ErrorCode } from '../../../src/errors';
import type { JoinGroupResponse, SyncGroupResponse } from '../../../src/group/group-protocol';
import { cancelOn } from '../../support/cancel-on';
import { type CoordinatorCall, CoordinatorTestContext } from '../../support/coordinator-test-context';
import { GROUP_ID, joinRequest, protocol, syncRequest, type Tracked } from '../../support/group-harness';

/**
 * A model test: several members drive one group with random JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
 * OffsetCommit and DeleteGroups calls (some abandoned by their caller) while the clock moves in random
 * steps. One member, `steady`, follows the protocol like a good client: it heartbeats every step (more often
 * than its session timeout), rejoins when told to, though it may take a while to do so (as a consumer
 * revoking partitions does, within its rebalance timeout), and syncs as soon as it has joined. The
 * coordinator runs on the coordinator test context, whose partition keeps up: whatever a call or the clock
 * wrote is committed before anyone acts again, and its write has ended by then. No answer is awaited: the
 * model reads each answer once it is due, so a call left unanswered fails the property with a
 * counterexample instead of stalling it. Checked throughout:
 *
 * - every transition is one Kafka allows (the table below is written independently of the code), and
 *   the group described after each step fits its state (Empty has no members, CompletingRebalance and
 *   Stable have some, Stable has a chosen protocol, no member or instance id is listed twice), and in
 *   Stable every member's metadata is that of the chosen protocol (members offer different protocol
 *   lists, so the vote has a choice);
 * - `group.max.size` is drawn per run (2, 3, or more than can ever join): once a rebalance completes, no
 *   more dynamic members than that are left. As in Kafka, PreparingRebalance admits members while fewer
 *   than the cap have rejoined, so the group may briefly list more, and a member that rejoins after the
 *   cap is reached is refused with GROUP_MAX_SIZE_REACHED and removed, `steady` included;
 * - a call that wrote records (a leader's SyncGroup, a replaced static member's JoinGroup, an OffsetCommit,
 *   a DeleteGroups) has its answer by the end of the step in which they were committed; no call is left
 *   unanswered past a deadline the timeouts imply, and none at all after a long quiet spell;
 * - once joined, `steady` is never told it is unknown or fenced and never leaves the group, unless a cap
 *   smaller than the four would-be members refused its rejoin (then it starts over, as a client does).
 */

const LEGAL = new Set([
  'PreparingRebalance->Empty',
  'Stable->PreparingRebalance',
  'CompletingRebalance->PreparingRebalance',
  'Empty->PreparingRebalance',
  'PreparingRebalance->CompletingRebalance',
  'CompletingRebalance->Stable',
  'Stable->Dead',
  'PreparingRebalance->Dead',
  'CompletingRebalance->Dead',
  'Empty->Dead',
  'Dead->Dead',
]);

const INITIAL_DELAY_MS = 50;
const MAX_STEP_MS = 150;
const STEADY_SESSION_MS = 200;
const STEADY_REBALANCE_MS = 1000;
/** The steady member may take this long to rejoin once told to (a consumer revoking partitions). */
const MAX_REJOIN_DELAY_MS = 500;
// Every wait is bounded by a rebalance timeout or two, the initial delay, and the lag of a clock that
// moves in steps (a timeout scheduled from inside a callback counts from the advanced time).
const ANSWER_DEADLINE_MS = 4 * (STEADY_REBALANCE_MS + INITIAL_DELAY_MS + MAX_STEP_MS);

type ChaosAction =
  | { kind: 'join'; fresh: boolean; variant: number; abandon: boolean }
  | { kind: 'joinTwice' }
  | { kind: 'sync' }
  | { kind: 'syncTwice' }
  | { kind: 'heartbeat' }
  | { kind: 'leave' }
  | { kind: 'commit' }
  | { kind: 'delete' }
  | { kind: 'idle' };

interface Step {
  who: number;
  action: ChaosAction;
  advanceMs: number;
}

/**
 * What a chaos member offers, by `variant`: every list includes "range", which `steady` offers alone, so
 * no JoinGroup is refused as inconsistent. Most prefer "roundrobin", but a protocol is chosen only if every
 * member of the generation offers it: with `steady` in the generation, "range" must win. Each protocol's
 * metadata names it, so DescribeGroups shows which protocol a member's metadata belongs to.
 */
const PROTOCOL_LISTS: readonly (readonly string[])[] = [
  ['range'],
  ['roundrobin', 'range'],
  ['roundrobin', 'sticky', 'range'],
];

function protocolsOf(names: readonly string[], owner: string): ReturnType<typeof protocol>[] {
  return names.map((name) => protocol(name, Buffer.from(`${name}:${owner}`)));
}

/** group.max.size for a run: a small cap that the four would-be members overflow, or one they cannot. */
const MAX_SIZES = [2, 3, 1000] as const;
const WOULD_BE_MEMBERS = 4;

const actionArb: fc.Arbitrary<ChaosAction> = fc.oneof(
  fc.record({
    kind: fc.constant('join' as const),
    fresh: fc.boolean(),
    variant: fc.integer({ min: 0, max: 2 }),
    abandon: fc.boolean(),
  }),
  fc.constant({ kind: 'joinTwice' as const }),
  fc.constant({ kind: 'sync' as const }),
  fc.constant({ kind: 'syncTwice' as const }),
  fc.constant({ kind: 'heartbeat' as const }),
  fc.constant({ kind: 'leave' as const }),
  fc.constant({ kind: 'commit' as const }),
  fc.constant({ kind: 'delete' as const }),
  fc.constant({ kind: 'idle' as const }),
);

const stepArb: fc.Arbitrary<Step> = fc.record({
  who: fc.integer({ min: 0, max: 2 }),
  action: actionArb,
  advanceMs: fc.integer({ min: 0, max: MAX_STEP_MS }),
});

interface SentCall {
  label: string;
  sentAtMs: number;
  call: CoordinatorCall<unknown>;
  /** When the records it wrote were committed (none written, or not yet: undefined). */
  committedAtMs?: number;
}

class Model {
  readonly calls: SentCall[] = [];
  readonly violations: string[] = [];

  private constructor(
    readonly ctx: CoordinatorTestContext,
    readonly maxSize: number,
  ) {}

  static async create(maxSize: number): Promise<Model> {
    const ctx = await CoordinatorTestContext.create(
      { groupInitialRebalanceDelayMs: INITIAL_DELAY_MS, groupMaxSize: maxSize },
      // Every answer in the task that gives it: the model never lets the event loop turn, so answers held
      // for a later turn (the slicing of large rebalances, group-coordinator-lifecycle.test.ts) never come.
      { replySliceSize: Number.MAX_SAFE_INTEGER },
    );
    return new Model(ctx, maxSize);
  }

  get nowMs(): number {
    return this.ctx.time.monotonicMs();
  }

  /** Sends a call (it runs at once) and keeps it, with what it wrote, for the checks. */
  track<T>(label: string, send: () => Promise<T>): Tracked<T> {
    const call = this.ctx.call(send);
    this.calls.push({ label, sentAtMs: this.nowMs, call: call as CoordinatorCall<unknown> });
    return call.answer;
  }

  /**
   * The partition commits whatever has been written; resolves once those writes have ended, awaiting no
   * answer. A call that wrote records is answered once they are committed (or earlier, when the group
   * moved on first): from now on its answer is due, and checkAnswered reads it.
   */
  async commitWrites(): Promise<void> {
    for (const sent of this.calls) {
      if (sent.call.records.length > 0 && sent.committedAtMs === undefined) sent.committedAtMs = this.nowMs;
    }
    await this.ctx.commitAppends();
  }

  checkTransitions(): void {
    for (const t of this.ctx.transitions) {
      if (!LEGAL.has(`${t.from}->${t.to}`)) this.violations.push(`illegal transition ${t.from}->${t.to}`);
    }
  }

  /** What a state says about the group (DescribeGroups, as an operator sees it). */
  async checkShape(): Promise<void> {
    const group = await this.ctx.describe();
    if (group.errorCode !== ErrorCode.NONE) return; // never created, or deleted
    const { groupState: state, members } = group;
    if (state === 'Empty' && members.length > 0) {
      this.violations.push(`Empty group with ${members.length} members at ${this.nowMs}`);
    }
    if ((state === 'CompletingRebalance' || state === 'Stable') && members.length === 0) {
      this.violations.push(`${state} group without members at ${this.nowMs}`);
    }
    if (state === 'Stable' && group.protocolData === '') {
      this.violations.push(`Stable group without a chosen protocol at ${this.nowMs}`);
    }
    if (new Set(members.map((m) => m.memberId)).size !== members.length) {
      this.violations.push(`a member listed twice at ${this.nowMs}`);
    }
    const instances = members.map((m) => m.groupInstanceId).filter((id) => id !== '');
    if (new Set(instances).size !== instances.length) {
      this.violations.push(`two members with one group instance id at ${this.nowMs}`);
    }
    // Dynamic members only: a static member that did not rejoin stays through the join (its session
    // decides, as in Kafka), so it can sit beside a full set of rejoined members.
    const dynamic = members.filter((m) => m.groupInstanceId === '').length;
    if ((state === 'CompletingRebalance' || state === 'Stable') && dynamic > this.maxSize) {
      this.violations.push(`${dynamic} dynamic members over group.max.size ${this.maxSize} at ${this.nowMs}`);
    }
    // DescribeGroups shows member metadata in Stable only (as Kafka): that of the chosen protocol.
    if (state === 'Stable') {
      for (const member of members) {
        const offered = member.memberMetadata.toString().split(':')[0];
        if (offered !== group.protocolData) {
          this.violations.push(
            `${member.memberId} described with ${offered} metadata in a ${group.protocolData} group at ${this.nowMs}`,
          );
        }
      }
    }
  }

  /**
   * Run at the end of a step: every call whose records were committed has its answer. Most come as their
   * write ends; a DeleteGroups' a few promise jobs later (the router gathers the answers of its groups'
   * writes), which the step's later commits leave room for.
   */
  checkAnswered(): void {
    for (const { label, sentAtMs, call, committedAtMs } of this.calls) {
      if (committedAtMs !== undefined && !call.answer.isSettled) {
        this.violations.push(
          `${label} sent at ${sentAtMs} unanswered at ${this.nowMs}, its records committed at ${committedAtMs}`,
        );
      }
    }
  }

  checkDeadlines(): void {
    for (const { label, sentAtMs, call } of this.calls) {
      const { answer } = call;
      if (!answer.isSettled && this.nowMs - sentAtMs > ANSWER_DEADLINE_MS) {
        this.violations.push(`${label} sent at ${sentAtMs} still unanswered at ${this.nowMs}`);
      }
      if (answer.isSettled && answer.error !== undefined)
        this.violations.push(`${label} rejected: ${String(answer.error)}`);
    }
  }
}

/** A member that does whatever the generator says, including things a real client would not. */
class ChaosMember {
  memberId = '';
  generationId = -1;
  isLeader = false;
  abortLater: AbortController | undefined;

  constructor(
    private readonly model: Model,
    private readonly name: string,
    private readonly groupInstanceId: string,
  ) {}

  act(action: ChaosAction): void {
    const { router } = this.model.ctx;
    if (this.abortLater !== undefined) {
      this.abortLater.abort();
      this.abortLater = undefined;
    }
    switch (action.kind) {
      case 'join':
        this.join(action.fresh, action.variant, action.abandon);
        break;
      case 'joinTwice':
        // A client retrying while its first JoinGroup is still parked.
        this.join(false, 0, false);
        this.join(false, 0, false);
        break;
      case 'sync':
        this.sync();
        break;
      case 'syncTwice':
        this.sync();
        this.sync();
        break;
      case 'heartbeat':
        this.model.track(`${this.name} Heartbeat`, () =>
          router.heartbeat(
            {
              groupId: GROUP_ID,
              memberId: this.memberId,
              generationId: this.generationId,
              groupInstanceId: this.groupInstanceId,
            },
            { clientHost: this.name },
          ),
        );
        break;
      case 'leave':
        this.model.track(`${this.name} LeaveGroup`, () =>
          router.leaveGroup(
            {
              groupId: GROUP_ID,
              members: [{ memberId: this.memberId, groupInstanceId: this.groupInstanceId, reason: '' }],
            },
            { clientHost: this.name },
          ),
        );
        break;
      case 'commit':
        this.model.track(`${this.name} OffsetCommit`, () =>
          router.offsetCommit(
            {
              groupId: GROUP_ID,
              generationId: this.generationId,
              memberId: this.memberId,
              groupInstanceId: this.groupInstanceId,
              topics: [
                {
                  name: 't',
                  partitions: [
                    {
                      partitionIndex: 0,
                      committedOffset: 1,
                      committedLeaderEpoch: -1,
                      committedMetadata: '',
                    },
                  ],
                },
              ],
            },
            { clientHost: this.name },
          ),
        );
        break;
      case 'delete':
        this.model.track(`${this.name} DeleteGroups`, () =>
          router.deleteGroups({ groupsNames: [GROUP_ID] }, { clientHost: this.name }),
        );
        break;
      case 'idle':
        break;
    }
  }

  private join(fresh: boolean, variant: number, abandon: boolean): void {
    const { router } = this.model.ctx;
    const controller = abandon ? new AbortController() : undefined;
    if (controller !== undefined) this.abortLater = controller;
    const call = this.model.track(`${this.name} JoinGroup`, () =>
      router.joinGroup(
        joinRequest({
          memberId: fresh ? '' : this.memberId,
          groupInstanceId: this.groupInstanceId,
          protocols: protocolsOf(PROTOCOL_LISTS[variant], this.name),
          sessionTimeoutMs: 200,
          rebalanceTimeoutMs: 100 + 100 * variant,
        }),
        { clientHost: this.name, ...(controller === undefined ? {} : cancelOn(controller.signal)) },
      ),
    );
    void call.promise.then((r: JoinGroupResponse) => {
      if (r.errorCode === ErrorCode.MEMBER_ID_REQUIRED || r.errorCode === ErrorCode.NONE)
        this.memberId = r.memberId;
      if (r.errorCode === ErrorCode.NONE) {
        this.generationId = r.generationId;
        this.isLeader = r.leaderId === r.memberId;
      }
    });
  }

  private sync(): void {
    const { router } = this.model.ctx;
    this.model.track(`${this.name} SyncGroup`, () =>
      router.syncGroup(
        syncRequest({
          generationId: this.generationId,
          memberId: this.memberId,
          groupInstanceId: this.groupInstanceId,
        }),
        { clientHost: this.name },
      ),
    );
  }
}

class SteadyMember {
  memberId = '';
  generationId = -1;
  hasJoined = false;
  needsJoin = true;
  /** When told to rejoin, it does so only at this time. */
  private rejoinAtMs = 0;
  join: Tracked<JoinGroupResponse> | undefined;
  sync: Tracked<SyncGroupResponse> | undefined;
  private readonly pendingHeartbeats: Tracked<{ errorCode: ErrorCode }>[] = [];

  constructor(
    private readonly model: Model,
    private readonly rejoinDelayMs: number,
  ) {}

  private mustRejoin(): void {
    if (!this.needsJoin) this.rejoinAtMs = this.model.nowMs + this.rejoinDelayMs;
    this.needsJoin = true;
  }

  private outcome(label: string, errorCode: ErrorCode): void {
    if (errorCode === ErrorCode.GROUP_MAX_SIZE_REACHED) {
      // Only a cap the would-be members can overflow refuses anyone; the refused member was removed.
      if (this.model.maxSize >= WOULD_BE_MEMBERS)
        this.model.violations.push(
          `steady member refused as over group.max.size on ${label} at ${this.model.nowMs}`,
        );
      this.memberId = '';
      this.hasJoined = false;
      this.needsJoin = true;
      return;
    }
    if (errorCode === ErrorCode.UNKNOWN_MEMBER_ID || errorCode === ErrorCode.FENCED_INSTANCE_ID) {
      if (this.hasJoined)
        this.model.violations.push(
          `steady member got ${ErrorCode[errorCode]} on ${label} at ${this.model.nowMs}`,
        );
      this.memberId = '';
      this.needsJoin = true;
    } else if (errorCode === ErrorCode.REBALANCE_IN_PROGRESS || errorCode === ErrorCode.ILLEGAL_GENERATION) {
      this.mustRejoin();
    }
  }

  /** Reacts to what has been answered, then sends what the protocol asks for. Returns true if it sent. */
  act(): boolean {
    const { router } = this.model.ctx;
    for (const hb of this.pendingHeartbeats.splice(0)) {
      if (hb.isSettled) this.outcome('Heartbeat', hb.result.errorCode);
      else this.pendingHeartbeats.push(hb);
    }
    if (this.join !== undefined) {
      if (!this.join.isSettled) return false;
      const r = this.join.result;
      this.join = undefined;
      if (r.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
        this.memberId = r.memberId;
      } else if (r.errorCode === ErrorCode.NONE) {
        this.hasJoined = true;
        this.needsJoin = false;
        this.generationId = r.generationId;
        this.sync = this.model.track('steady SyncGroup', () =>
          router.syncGroup(
            syncRequest({
              generationId: r.generationId,
              memberId: r.memberId,
              assignments: r.members.map((m) => [m.memberId, Buffer.from('a')] as [string, Buffer]),
            }),
            { clientHost: 'steady' },
          ),
        );
        return true;
      } else {
        this.outcome('JoinGroup', r.errorCode);
      }
    }
    if (this.sync !== undefined) {
      if (!this.sync.isSettled) return false;
      const r = this.sync.result;
      this.sync = undefined;
      this.outcome('SyncGroup', r.errorCode);
    }
    // A member with an id handed out by MEMBER_ID_REQUIRED comes straight back; a member of the group may
    // first finish what it was doing.
    if (this.needsJoin && (!this.hasJoined || this.model.nowMs >= this.rejoinAtMs)) {
      this.join = this.model.track('steady JoinGroup', () =>
        router.joinGroup(
          joinRequest({
            memberId: this.memberId,
            sessionTimeoutMs: STEADY_SESSION_MS,
            rebalanceTimeoutMs: STEADY_REBALANCE_MS,
            protocols: protocolsOf(['range'], 'steady'),
          }),
          { clientHost: 'steady' },
        ),
      );
      return true;
    }
    return false;
  }

  heartbeat(): void {
    if (!this.hasJoined) return;
    const { router } = this.model.ctx;
    this.pendingHeartbeats.push(
      this.model.track('steady Heartbeat', () =>
        router.heartbeat(
          {
            groupId: GROUP_ID,
            memberId: this.memberId,
            generationId: this.generationId,
            groupInstanceId: '',
          },
          { clientHost: 'steady' },
        ),
      ),
    );
  }
}

/**
 * The steady member reacts to its answers until it has nothing more to send (six rounds at most). Before
 * each round the partition commits what has been written and those writes end, answering their calls;
 * answers given as the calls ran, or as the clock moved, have come by then too.
 */
async function runSteadyUntilIdle(model: Model, steady: SteadyMember): Promise<void> {
  for (let i = 0; i < 6; i++) {
    await model.commitWrites();
    if (!steady.act()) break;
  }
  await model.commitWrites();
}

describe('the group coordinator under random traffic', () => {
  test('only legal transitions, every call answered in time, and a well-behaved member always stays', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { minLength: 5, maxLength: 60 }),
        fc.integer({ min: 0, max: MAX_REJOIN_DELAY_MS }),
        fc.constantFrom(...MAX_SIZES),
        async (steps, rejoinDelayMs, maxSize) => {
          const model = await Model.create(maxSize);
          try {
            const steady = new SteadyMember(model, rejoinDelayMs);
            const chaos = [
              new ChaosMember(model, 'dynamic', ''),
              new ChaosMember(model, 'static', 'static-instance'),
              new ChaosMember(model, 'other', ''),
            ];
            await runSteadyUntilIdle(model, steady);
            for (const step of steps) {
              chaos[step.who].act(step.action);
              await runSteadyUntilIdle(model, steady);
              steady.heartbeat();
              await runSteadyUntilIdle(model, steady); // a real client reads the answer before time moves on
              model.ctx.time.advance(step.advanceMs);
              await runSteadyUntilIdle(model, steady);
              model.checkTransitions();
              model.checkAnswered();
              model.checkDeadlines();
              await model.checkShape();
              if (steady.hasJoined && !(await model.ctx.memberIds()).includes(steady.memberId)) {
                model.violations.push(`steady member ${steady.memberId} not in the group at ${model.nowMs}`);
              }
              if (model.violations.length > 0) break;
            }
            // A long quiet spell: every timer fires, and nothing may still be waiting afterwards.
            for (let i = 0; i < 40 && model.violations.length === 0; i++) {
              steady.heartbeat();
              await runSteadyUntilIdle(model, steady);
              model.ctx.time.advance(MAX_STEP_MS);
              await runSteadyUntilIdle(model, steady);
              model.checkAnswered();
              model.checkDeadlines();
              if (steady.hasJoined && !(await model.ctx.memberIds()).includes(steady.memberId)) {
                model.violations.push(`steady member ${steady.memberId} not in the group at ${model.nowMs}`);
              }
            }
            // The chaos members are long gone by now, so the steady member has the group to itself.
            if (model.violations.length === 0) expect(await model.ctx.state()).toBe('Stable');
            model.ctx.time.advance(10 * 60 * 1000);
            await model.commitWrites();
            model.checkTransitions();
            for (const { label, call } of model.calls) {
              if (!call.answer.isSettled) model.violations.push(`${label} never answered`);
            }
            expect(model.violations).toEqual([]);
          } finally {
            model.ctx.shutdown();
          }
          // After shutdown, nothing at all is left waiting: the shutdown answered every parked call itself.
          expect((await model.ctx.describe()).errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
          expect(model.calls.filter((c) => !c.call.answer.isSettled).map((c) => c.label)).toEqual([]);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
