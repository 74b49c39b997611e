import fc from 'fast-check';
import { ErrorCode } from '../../../src/errors';
import type {
  JoinGroupResponse,
  OffsetCommitResponse,
  OffsetFetchResponse,
  RequestContext,
  SyncGroupResponse,
} from '../../../src/group/group-protocol';
import { GROUP_ID, GroupHarness, protocol, settle, Tracked } from '../../support/group-harness';
import { MemoryGroupStore } from './memory-group-store';

/**
 * Restarts after random traffic. Three members (one static) join, sync, heartbeat, commit and leave in a
 * random order while the clock moves and the store makes writes durable whenever the generator says, so
 * group records and commits race rebalances, expiries and deletions. Then the coordinator stops and a new
 * one loads the same store. Checked:
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

class Member {
  memberId = '';
  generationId = -1;
  isLeader = false;
  hasSynced = false;
  needsJoin = true;
  join: Tracked<JoinGroupResponse> | undefined;
  private syncCall: Tracked<SyncGroupResponse> | undefined;

  constructor(
    private readonly h: GroupHarness,
    private readonly index: number,
    readonly groupInstanceId: string,
    private readonly everyone: () => readonly Member[],
    private readonly calls: Tracked<unknown>[],
  ) {}

  /** The next step of a client that follows the protocol. */
  progress(): void {
    if (this.join !== undefined && !this.join.isSettled) this.heartbeat();
    else if (this.needsJoin) this.sendJoin(this.memberId === '' && this.groupInstanceId === '');
    else if (!this.hasSynced && (this.syncCall === undefined || this.syncCall.isSettled)) this.sync();
    else this.heartbeat();
  }

  sendJoin(fresh: boolean): void {
    const call = new Tracked(
      this.h.coordinator.joinGroup(
        this.h.joinRequest({
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
    this.calls.push(call);
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
    const call = this.h.sendSync({
      generationId: this.generationId,
      memberId: this.memberId,
      groupInstanceId: this.groupInstanceId,
      assignments,
    });
    this.syncCall = call;
    this.calls.push(call);
    void call.promise.then((response) => {
      if (response.errorCode === ErrorCode.NONE) this.hasSynced = true;
      else this.onError(response.errorCode);
    });
  }

  heartbeat(): void {
    const call = new Tracked(this.h.heartbeat(this.memberId, this.generationId, this.groupInstanceId));
    this.calls.push(call);
    void call.promise.then((errorCode) => this.onError(errorCode));
  }

  leave(): void {
    this.calls.push(
      new Tracked(this.h.leave([{ memberId: this.memberId, groupInstanceId: this.groupInstanceId }])),
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
  const store = new MemoryGroupStore();
  store.isDeferred = true;
  const config = { groupInitialRebalanceDelayMs: INITIAL_DELAY_MS, groupMaxSize: 1000 };
  const h = new GroupHarness(config, { offsetStore: store, metadataStore: store });
  const calls: Tracked<unknown>[] = [];
  const members: Member[] = [];
  for (const [index, instanceId] of ['', '', 'static-2'].entries()) {
    members.push(new Member(h, index, instanceId, () => members, calls));
  }
  let nextOffset = 1;
  /** partition → offset of the last acknowledged commit (each commit uses a new, higher offset). */
  const acknowledged = new Map<number, number>();
  const committed = new Map<number, number>();
  let fetchedBefore: OffsetFetchResponse | undefined;
  try {
    for (const { who, action } of steps) {
      const member = members[who];
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
          const commit = h.coordinator.offsetCommit(
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
          );
          committed.set(partition, Math.max(committed.get(partition) ?? 0, offset));
          void commit.then((response: OffsetCommitResponse) => {
            if (response.topics[0].partitions[0].errorCode === ErrorCode.NONE) {
              acknowledged.set(partition, Math.max(acknowledged.get(partition) ?? 0, offset));
            }
          });
          calls.push(new Tracked(commit));
          break;
        }
        case 'delete':
          calls.push(new Tracked(h.coordinator.deleteGroups({ groupsNames: [GROUP_ID] }, CONTEXT)));
          break;
        case 'release':
          store.release(Math.min(action.count, store.pending.length));
          break;
        case 'advance':
          h.advance(action.ms);
          break;
      }
      await settle(1);
    }
    // Everything written so far becomes durable, including what those writes lead to.
    while (store.pending.length > 0) {
      store.release();
      await settle();
    }
    await settle();
    fetchedBefore = await h.fetch(GROUP_ID, [['t', [0, 1, 2]]], false);
  } finally {
    h.shutdown();
  }
  await settle();
  for (const call of calls) expect(call.error).toBeUndefined();

  const record = store.storedGroup(GROUP_ID);
  const restarted = new GroupHarness(config, { offsetStore: store, metadataStore: store });
  try {
    const described = await restarted.describe();
    if (record === undefined) {
      expect(described.groupState).toMatch(/^(Dead|Empty)$/);
    } else if (record.members.length === 0) {
      expect(described.groupState).toBe('Empty');
      expect(h.transitions).toContainEqual(
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
      expect(h.transitions).toContainEqual(
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
    if (!h.transitions.some((t) => t.to === 'Dead')) {
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
