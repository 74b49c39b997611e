import fc from 'fast-check';
import { ErrorCode } from '../../../src/errors';
import type {
  JoinGroupResponse,
  OffsetCommitResponse,
  OffsetFetchResponse,
  RequestContext,
  SyncGroupResponse,
} from '../../../src/group/group-protocol';
import { CoordinatorTestContext } from '../../support/coordinator-test-context';
import { GROUP_ID, joinRequest, protocol, syncRequest, type Tracked } from '../../support/group-harness';

/**
 * Restarts after random traffic. Three members (one static) join, sync, heartbeat, commit and leave in a
 * random order while the clock moves and the partition commits appends whenever the generator says, so
 * group records and commits race rebalances, expiries and deletions. Then the coordinator stops and a new
 * one loads the same partition. Both run on the coordinator test context. No answer is awaited: a write
 * whose records a step committed must have its answer by the end of the next step, and every call must
 * have one once the coordinator has stopped, so a call left unanswered fails the property with a
 * counterexample instead of stalling it. Checked:
 *
 * - whatever the coordinator wrote can be loaded (a restart never fails on its own records);
 * - the group comes back exactly as its last durable record says: Stable with that record's generation,
 *   protocol, members and assignments, or Empty; and that generation really existed before the restart;
 * - every member of the record is accepted with its id and the record's generation;
 * - every acknowledged commit is there, and no offset that was never committed.
 */

const INITIAL_DELAY_MS = 50;
const CONTEXT: RequestContext = { clientHost: 'h' };

type Action =
  | { kind: 'progress' }
  | { kind: 'join'; fresh: boolean }
  | { kind: 'sync' }
  | { kind: 'heartbeat' }
  | { kind: 'leave' }
  | { kind: 'commit' }
  | { kind: 'delete' }
  | { kind: 'release'; count: number }
  | { kind: 'advance'; ms: number };

// `progress` is what a well-behaved client does next, so that groups do form (two JoinGroups, the initial
// delay, the leader's SyncGroup, a durable record) often enough; the other actions break them up in every
// way a client, the clock or the store can.
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ kind: 'progress' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('join' as const), fresh: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'sync' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'heartbeat' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'leave' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'commit' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'delete' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('release' as const), count: fc.integer({ min: 1, max: 3 }) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 120 }) }),
  },
);

/**
 * A call sent through the context, `what` it is. `writtenUpTo`: for a call answered once its records
 * commit (a leader's SyncGroup, an OffsetCommit, a DeleteGroups), the end of the records it appended; 0 for
 * any other. `committedAtStep`: the step whose release committed all of them.
 */
interface SentCall {
  readonly what: string;
  readonly answer: Tracked<unknown>;
  readonly writtenUpTo: number;
  committedAtStep?: number;
}

/**
 * Sends a call (it runs at once) and keeps it for the checks; `isWrite`: its answer comes once its records
 * commit (or earlier), so a release that commits them makes it due. Not a JoinGroup's: a static member
 * replaced in a Stable group is answered when its record commits only if the group is still Stable then,
 * and otherwise when the next rebalance completes; it stays pending until then, like any parked JoinGroup.
 */
type Send = <T>(what: string, call: () => Promise<T>, isWrite?: boolean) => Tracked<T>;

class Member {
  memberId = '';
  generationId = -1;
  isLeader = false;
  hasSynced = false;
  needsJoin = true;
  join: Tracked<JoinGroupResponse> | undefined;
  private syncCall: Tracked<SyncGroupResponse> | undefined;

  constructor(
    private readonly ctx: CoordinatorTestContext,
    private readonly index: number,
    readonly groupInstanceId: string,
    private readonly everyone: () => readonly Member[],
    private readonly send: Send,
  ) {}

  /** The next step of a client that follows the protocol. */
  progress(): void {
    if (this.join !== undefined && !this.join.isSettled) this.heartbeat();
    else if (this.needsJoin) this.sendJoin(this.memberId === '' && this.groupInstanceId === '');
    else if (!this.hasSynced && (this.syncCall === undefined || this.syncCall.isSettled)) this.sync();
    else this.heartbeat();
  }

  sendJoin(fresh: boolean): void {
    const call = this.send(`JoinGroup of member ${this.index}`, () =>
      this.ctx.router.joinGroup(
        joinRequest({
          // A static member always rejoins with its id (an empty one would replace itself).
          memberId: fresh && this.groupInstanceId === '' ? '' : this.memberId,
          groupInstanceId: this.groupInstanceId,
          protocols: [protocol('range', Buffer.from([this.index]))],
          sessionTimeoutMs: 600,
          rebalanceTimeoutMs: 300,
        }),
        CONTEXT,
      ),
    );
    this.join = call;
    void call.promise.then((response) => {
      if (response.errorCode === ErrorCode.MEMBER_ID_REQUIRED) this.memberId = response.memberId;
      if (response.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) this.memberId = '';
      if (response.errorCode === ErrorCode.NONE) {
        this.memberId = response.memberId;
        this.generationId = response.generationId;
        this.isLeader = response.leaderId === response.memberId;
        this.needsJoin = false;
        this.hasSynced = false;
      }
    });
  }

  sync(): void {
    const assignments: Array<[string, Buffer]> = this.isLeader
      ? this.everyone().map((m, i) => [m.memberId, Buffer.from(`assignment-${i}-${this.generationId}`)])
      : [];
    const call = this.send(
      `SyncGroup of member ${this.index}`,
      () =>
        this.ctx.router.syncGroup(
          syncRequest({
            generationId: this.generationId,
            memberId: this.memberId,
            groupInstanceId: this.groupInstanceId,
            assignments,
          }),
          CONTEXT,
        ),
      true,
    );
    this.syncCall = call;
    void call.promise.then((response) => {
      if (response.errorCode === ErrorCode.NONE) this.hasSynced = true;
      else this.onError(response.errorCode);
    });
  }

  heartbeat(): void {
    const request = {
      groupId: GROUP_ID,
      memberId: this.memberId,
      generationId: this.generationId,
      groupInstanceId: this.groupInstanceId,
    };
    const call = this.send(`Heartbeat of member ${this.index}`, () =>
      this.ctx.router.heartbeat(request, CONTEXT),
    );
    void call.promise.then(({ errorCode }) => this.onError(errorCode));
  }

  leave(): void {
    this.send(`LeaveGroup of member ${this.index}`, () =>
      this.ctx.leave([{ memberId: this.memberId, groupInstanceId: this.groupInstanceId }]),
    );
    this.needsJoin = true;
  }

  private onError(errorCode: ErrorCode): void {
    if (errorCode === ErrorCode.NONE) return;
    this.needsJoin = true;
    if (errorCode === ErrorCode.UNKNOWN_MEMBER_ID && this.groupInstanceId === '') this.memberId = '';
  }
}

async function run(steps: Array<{ who: number; action: Action }>): Promise<void> {
  const config = { groupInitialRebalanceDelayMs: INITIAL_DELAY_MS, groupMaxSize: 1000 };
  // Every answer in the task that gives it: the test never lets the event loop turn, so answers held for
  // a later turn (the slicing of large rebalances, group-coordinator-lifecycle.test.ts) would never come.
  const ctx = await CoordinatorTestContext.create(config, { replySliceSize: Number.MAX_SAFE_INTEGER });
  const calls: SentCall[] = [];
  let stepIndex = 0;
  /** Records of the partition committed so far. */
  let committedRecords = 0;
  const send: Send = (what, call, isWrite = false) => {
    const sent = ctx.call(call);
    calls.push({
      what: `${what} at step ${stepIndex}`,
      answer: sent.answer as Tracked<unknown>,
      writtenUpTo: isWrite && sent.records.length > 0 ? ctx.writer.records.length : 0,
    });
    return sent.answer;
  };
  /**
   * Ends a step: the partition commits its oldest `count` appends (maybe none) and those writes end, and
   * the answers given as the step ran have come by then too. A write whose records are all committed is
   * due: its answer comes as its write ends, a DeleteGroups' a few promise jobs later (the router gathers
   * the answers of its groups' writes), so each is checked once the next step's commit is over, and must
   * be there.
   */
  const endStep = async (count: number): Promise<void> => {
    for (const append of ctx.writer.pending.slice(0, count)) committedRecords += append.records.length;
    await ctx.commitAppends(count);
    const unanswered = calls.filter(
      (c) => c.committedAtStep !== undefined && c.committedAtStep < stepIndex && !c.answer.isSettled,
    );
    if (unanswered.length > 0) {
      throw new Error(
        `no answer once its records were committed: ${unanswered.map((c) => c.what).join('; ')}`,
      );
    }
    for (const c of calls) {
      if (c.writtenUpTo > 0 && c.writtenUpTo <= committedRecords) c.committedAtStep ??= stepIndex;
    }
    stepIndex++;
  };
  const members: Member[] = [];
  for (const [index, instanceId] of ['', '', 'static-2'].entries()) {
    members.push(new Member(ctx, index, instanceId, () => members, send));
  }
  let nextOffset = 1;
  /** partition → offset of the last acknowledged commit (each commit uses a new, higher offset). */
  const acknowledged = new Map<number, number>();
  const committed = new Map<number, number>();
  let fetchedBefore: OffsetFetchResponse | undefined;
  try {
    for (const { who, action } of steps) {
      const member = members[who];
      let released = 0;
      switch (action.kind) {
        case 'progress':
          member.progress();
          break;
        case 'join':
          member.sendJoin(action.fresh);
          break;
        case 'sync':
          member.sync();
          break;
        case 'heartbeat':
          member.heartbeat();
          break;
        case 'leave':
          member.leave();
          break;
        case 'commit': {
          const offset = nextOffset++;
          const partition = who;
          const commit = send(
            `OffsetCommit of member ${who}`,
            () =>
              ctx.router.offsetCommit(
                {
                  groupId: GROUP_ID,
                  generationId: member.generationId,
                  memberId: member.memberId,
                  groupInstanceId: member.groupInstanceId,
                  topics: [
                    {
                      name: 't',
                      partitions: [
                        {
                          partitionIndex: partition,
                          committedOffset: offset,
                          committedLeaderEpoch: -1,
                          committedMetadata: '',
                        },
                      ],
                    },
                  ],
                },
                CONTEXT,
              ),
            true,
          );
          committed.set(partition, Math.max(committed.get(partition) ?? 0, offset));
          void commit.promise.then((response: OffsetCommitResponse) => {
            if (response.topics[0].partitions[0].errorCode === ErrorCode.NONE) {
              acknowledged.set(partition, Math.max(acknowledged.get(partition) ?? 0, offset));
            }
          });
          break;
        }
        case 'delete':
          send(
            `DeleteGroups of member ${who}`,
            () => ctx.router.deleteGroups({ groupsNames: [GROUP_ID] }, CONTEXT),
            true,
          );
          break;
        case 'release':
          released = Math.min(action.count, ctx.pendingAppends);
          break;
        case 'advance':
          ctx.time.advance(action.ms);
          break;
      }
      await endStep(released);
    }
    // Everything written so far becomes durable, including what those writes lead to.
    while (ctx.pendingAppends > 0) await endStep(ctx.pendingAppends);
    fetchedBefore = await ctx.fetch(GROUP_ID, [['t', [0, 1, 2]]], false);
  } finally {
    ctx.shutdown();
  }
  // The shutdown answered every call still parked (a JoinGroup waiting for a rebalance): once the answers
  // given so far have come, none is left without one, and none failed.
  await ctx.commitAppends();
  expect(calls.filter(({ answer }) => !answer.isSettled).map(({ what }) => what)).toEqual([]);
  for (const { answer } of calls) expect(answer.error).toBeUndefined();

  const record = ctx.storedGroup(GROUP_ID);
  // A new coordinator loads the same partition: every record in it, as the first one appended them.
  const records = ctx.writer.records.map(({ key, value }) => ({ key: key as Buffer, value }));
  const restarted = await CoordinatorTestContext.create(config, { records });
  try {
    const described = await restarted.describe();
    if (record === undefined) {
      expect(described.groupState).toMatch(/^(Dead|Empty)$/);
    } else if (record.members.length === 0) {
      expect(described.groupState).toBe('Empty');
      expect(ctx.transitions).toContainEqual(
        expect.objectContaining({ to: 'Empty', generationId: record.generationId }),
      );
    } else {
      expect(described.groupState).toBe('Stable');
      expect(described.protocolData).toBe(record.protocolName);
      expect(described.members.map((m) => m.memberId)).toEqual(record.members.map((m) => m.memberId));
      expect(described.members.map((m) => m.memberAssignment)).toEqual(
        record.members.map((m) => m.assignment),
      );
      // Only a generation that completed its join is stored, with its leader's assignment. It need not
      // have become Stable: a member may join while the record is being written, and the group moves on
      // while the record still becomes durable (as in Kafka); its members then rejoin after the restart.
      expect(ctx.transitions).toContainEqual(
        expect.objectContaining({ to: 'CompletingRebalance', generationId: record.generationId }),
      );
      // The assignments are the ones the leader gave this generation (or none, for a member it left out).
      for (const { assignment } of record.members) {
        expect(assignment.toString()).toMatch(new RegExp(`^(assignment-\\d-${record.generationId})?$`));
      }
      for (const { memberId, groupInstanceId } of record.members) {
        expect(await restarted.heartbeat(memberId, record.generationId, groupInstanceId)).toBe(
          ErrorCode.NONE,
        );
      }
    }
    // Offsets: exactly what the coordinator served before the restart, nothing invented, and every
    // acknowledged commit unless a deletion came after it.
    const fetched = await restarted.fetch(GROUP_ID, [['t', [0, 1, 2]]], false);
    expect(fetched).toEqual(fetchedBefore);
    for (const { partitionIndex, committedOffset } of fetched.topics[0].partitions) {
      expect(committedOffset).toBeLessThanOrEqual(committed.get(partitionIndex) ?? -1);
    }
    if (!ctx.transitions.some((t) => t.to === 'Dead')) {
      for (const [partitionIndex, offset] of acknowledged) {
        const found = fetched.topics[0].partitions.find((p) => p.partitionIndex === partitionIndex)!;
        expect(found.committedOffset).toBeGreaterThanOrEqual(offset);
      }
    }
  } finally {
    restarted.shutdown();
  }
}

describe('restarting the coordinator on its store', () => {
  test('brings the group back as its last durable record says, with every acknowledged commit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ who: fc.integer({ min: 0, max: 2 }), action: actionArb }), {
          minLength: 10,
          maxLength: 120,
          size: 'max',
        }),
        run,
      ),
      { numRuns: 150 },
    );
  });
});
