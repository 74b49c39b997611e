import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ErrorCode } from '../../../src/errors';
import { NO_LEADER_ID, Partition, UNKNOWN_OFFSET } from '../../../src/log';
import type { PartitionLeadership } from '../../../src/log';
import type { IsrProposal, PartitionState } from '../../../src/log/partition';
import { PartitionLog } from '../../../src/log/storage';
import { ManualTime } from '../../../src/time';

const LAG_MS = 10_000;
const BACKOFF_MS = 1_000;

/** Partition roles and ISR proposals (cluster mode), after Kafka's Partition.makeLeader / makeFollower. */
describe('Partition roles and epochs', () => {
  let dir: string;
  let time: ManualTime;
  let log: PartitionLog;
  let proposals: IsrProposal[];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cohort-partition-roles-'));
    time = new ManualTime();
    log = PartitionLog.open(path.join(dir, 't-0'), { time, config: { flushMessages: 1_000_000 } });
    proposals = [];
  });

  afterEach(async () => {
    await log.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A replica of node 0 with no role yet, as ReplicaManager opens one in cluster mode. */
  function replica(options: { minInsyncReplicas?: number; isActive?: () => boolean } = {}): Partition {
    return new Partition({
      topic: 't',
      partitionIndex: 0,
      log,
      localNodeId: 0,
      leaderId: NO_LEADER_ID,
      replicas: [0, 1, 2],
      minInsyncReplicas: options.minInsyncReplicas ?? 1,
      replicaLagTimeMaxMs: LAG_MS,
      nowMs: time.monotonicMs(),
      leaderEpoch: -1,
      proposeIsr: (_partition, proposal) => proposals.push(proposal),
      isLeadershipActive: options.isActive,
    });
  }

  function state(overrides: Partial<PartitionState> = {}): PartitionLeadership {
    return {
      topic: 't',
      partitionIndex: 0,
      leader: 0,
      leaderEpoch: 1,
      isr: [0, 1, 2],
      replicas: [0, 1, 2],
      partitionEpoch: 10,
      ...overrides,
    };
  }

  function append(partition: Partition, count: number): void {
    partition.appendRecordsToLeader(
      Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`v${i}`) })),
      1,
    );
  }

  it('becomes leader at a new epoch with every follower afresh, and ignores an older state', () => {
    const partition = replica();
    expect(partition.makeLeader(state(), time.monotonicMs())).toBe(true);
    expect(partition).toMatchObject({ isLeader: true, leaderEpoch: 1, partitionEpoch: 10 });
    append(partition, 3);
    partition.updateFollowerFetchState(1, 3, time.monotonicMs());
    expect(partition.followerState(1)?.logEndOffset).toBe(3);
    // An ISR change in the same epoch keeps what the leader knows of its followers.
    expect(partition.makeLeader(state({ partitionEpoch: 11, isr: [0, 1] }), time.monotonicMs())).toBe(true);
    expect(partition.isr).toEqual([0, 1]);
    expect(partition.followerState(1)?.logEndOffset).toBe(3);
    // Older states change nothing: a lower leader epoch, or the same epoch at a lower partition epoch.
    expect(partition.makeLeader(state({ leaderEpoch: 0, partitionEpoch: 50 }), time.monotonicMs())).toBe(
      false,
    );
    expect(partition.makeLeader(state({ partitionEpoch: 9 }), time.monotonicMs())).toBe(false);
    expect(partition.makeFollower(state({ leader: 1, leaderEpoch: 0, partitionEpoch: 99 }))).toBe(false);
    expect(partition).toMatchObject({ isLeader: true, leaderEpoch: 1, partitionEpoch: 11, isr: [0, 1] });
    // The same state again is no change.
    expect(partition.makeLeader(state({ partitionEpoch: 11, isr: [0, 1] }), time.monotonicMs())).toBe(false);
    // A new epoch starts the followers afresh.
    expect(partition.makeLeader(state({ leaderEpoch: 2, partitionEpoch: 12 }), time.monotonicMs())).toBe(
      true,
    );
    expect(partition.followerState(1)?.logEndOffset).toBe(UNKNOWN_OFFSET);
  });

  it('becomes a follower of a new leader or epoch, refusing to lead and forgetting its followers', () => {
    const partition = replica();
    partition.makeLeader(state(), time.monotonicMs());
    expect(partition.makeFollower(state({ leader: 1, leaderEpoch: 2, partitionEpoch: 11 }))).toBe(true);
    expect(partition).toMatchObject({ isLeader: false, leaderId: 1, leaderEpoch: 2 });
    expect(partition.isFollowerReplica(1)).toBe(false);
    expect(partition.followerState(2)).toBeUndefined();
    expect(() => append(partition, 1)).toThrow(
      expect.objectContaining({ code: ErrorCode.NOT_LEADER_OR_FOLLOWER }),
    );
    // An ISR change under the same leader is not a new leadership: the fetcher need not truncate again.
    expect(partition.makeFollower(state({ leader: 1, leaderEpoch: 2, partitionEpoch: 12, isr: [1] }))).toBe(
      false,
    );
    expect(partition.isr).toEqual([1]);
    expect(partition.makeFollower(state({ leader: 2, leaderEpoch: 3, partitionEpoch: 13 }))).toBe(true);
  });

  it('fences an older current_leader_epoch and does not know a newer one', () => {
    const partition = replica();
    partition.makeLeader(state({ leaderEpoch: 5 }), time.monotonicMs());
    expect(partition.checkCurrentLeaderEpoch(undefined)).toBe(ErrorCode.NONE);
    expect(partition.checkCurrentLeaderEpoch(-1)).toBe(ErrorCode.NONE);
    expect(partition.checkCurrentLeaderEpoch(5)).toBe(ErrorCode.NONE);
    expect(partition.checkCurrentLeaderEpoch(4)).toBe(ErrorCode.FENCED_LEADER_EPOCH);
    expect(partition.checkCurrentLeaderEpoch(6)).toBe(ErrorCode.UNKNOWN_LEADER_EPOCH);
    // 0 is an epoch like the others, not "absent".
    expect(partition.checkCurrentLeaderEpoch(0)).toBe(ErrorCode.FENCED_LEADER_EPOCH);
  });

  it('does not let a follower join the ISR before it reaches where the leader epoch began', () => {
    const partition = replica();
    partition.makeLeader(state({ isr: [0] }), time.monotonicMs());
    append(partition, 4);
    // A new leader at LEO 4 whose HW (as a follower) was 0: a fetch at 2 is past the HW, not the epoch start.
    partition.makeLeader(state({ leaderEpoch: 2, isr: [0], partitionEpoch: 11 }), time.monotonicMs());
    partition.updateFollowerFetchState(1, 2, time.monotonicMs());
    expect(proposals).toEqual([]);
    partition.updateFollowerFetchState(1, 4, time.monotonicMs());
    expect(proposals).toEqual([{ kind: 'expand', isr: [0, 1], leaderEpoch: 2, partitionEpoch: 11 }]);
  });

  it('keeps the HW where it is while the committed ISR is below the minimum (KAFKA-15583)', () => {
    const partition = replica({ minInsyncReplicas: 2 });
    partition.makeLeader(state({ isr: [0] }), time.monotonicMs());
    append(partition, 2);
    expect(partition.maybeIncrementLeaderHW()).toBe(false);
    expect(partition.highWatermark).toBe(0);
    expect(partition.read(0, 1_000, false, true).records).toEqual([]);
    // Follower 1 fetches everything: its expansion is proposed, the HW waits for the commit.
    partition.updateFollowerFetchState(1, 2, time.monotonicMs());
    expect(partition.highWatermark).toBe(0);
    const [expand] = proposals;
    const committed = state({ isr: [0, 1], partitionEpoch: 11 });
    expect(
      partition.completeIsrProposal(expand!, { kind: 'committed', state: committed }, 0, BACKOFF_MS),
    ).toBe(true);
    expect(partition.maybeIncrementLeaderHW()).toBe(true);
    expect(partition.highWatermark).toBe(2);
  });

  it('keeps a single replica with a minimum of 1 advancing its HW on append alone', () => {
    const single = new Partition({
      topic: 't',
      partitionIndex: 0,
      log,
      localNodeId: 0,
      leaderId: 0,
      replicas: [0],
      minInsyncReplicas: 1,
      replicaLagTimeMaxMs: LAG_MS,
      nowMs: time.monotonicMs(),
    });
    append(single, 2);
    expect(single.maybeIncrementLeaderHW()).toBe(true);
    expect(single.highWatermark).toBe(2);
    expect(single.checkEnoughReplicasReachOffset(2)).toEqual({ hasEnough: true, errorCode: ErrorCode.NONE });
  });

  it('computes the HW with the larger ISR while a shrink is pending, and the smaller once committed', () => {
    const partition = replica();
    partition.makeLeader(state(), time.monotonicMs());
    append(partition, 5);
    partition.updateFollowerFetchState(1, 5, time.monotonicMs());
    partition.updateFollowerFetchState(2, 1, time.monotonicMs());
    expect(partition.highWatermark).toBe(1);
    time.advance(LAG_MS + 1);
    partition.updateFollowerFetchState(1, 5, time.monotonicMs());
    // Follower 2 is out of sync: the shrink is proposed, nothing changes before it is committed.
    expect(partition.maybeShrinkIsr(time.monotonicMs())).toEqual([]);
    expect(proposals).toEqual([{ kind: 'shrink', isr: [0, 1], leaderEpoch: 1, partitionEpoch: 10 }]);
    expect(partition.pendingIsrChange).toBe(proposals[0]);
    expect(partition.isr).toEqual([0, 1, 2]);
    expect(partition.maybeIncrementLeaderHW()).toBe(false);
    expect(partition.highWatermark).toBe(1);
    // At most one in flight.
    partition.maybeShrinkIsr(time.monotonicMs());
    expect(proposals).toHaveLength(1);
    const committed = state({ isr: [0, 1], partitionEpoch: 11 });
    expect(
      partition.completeIsrProposal(proposals[0]!, { kind: 'committed', state: committed }, 0, BACKOFF_MS),
    ).toBe(true);
    expect(partition).toMatchObject({ isr: [0, 1], partitionEpoch: 11, pendingIsrChange: null });
    expect(partition.maybeIncrementLeaderHW()).toBe(true);
    expect(partition.highWatermark).toBe(5);
  });

  it('counts an expansion for acks=-1 only once committed, though the HW waits for the new follower', () => {
    const partition = replica({ minInsyncReplicas: 2 });
    partition.makeLeader(state({ isr: [0, 1] }), time.monotonicMs());
    append(partition, 3);
    partition.updateFollowerFetchState(1, 3, time.monotonicMs());
    expect(partition.highWatermark).toBe(3);
    append(partition, 1);
    partition.updateFollowerFetchState(2, 3, time.monotonicMs());
    expect(proposals.map((p) => p.isr)).toEqual([[0, 1, 2]]);
    expect(partition.isr).toEqual([0, 1]);
    expect(partition.maximalIsr).toEqual([0, 1, 2]);
    partition.updateFollowerFetchState(1, 4, time.monotonicMs());
    // Follower 2 (proposed) is at 3: the HW waits for it, as Kafka's maximal ISR does.
    expect(partition.highWatermark).toBe(3);
  });

  it('after a stale answer keeps the committed ISR and proposes nothing until a newer state arrives', () => {
    const partition = replica();
    partition.makeLeader(state(), time.monotonicMs());
    append(partition, 1);
    partition.updateFollowerFetchState(1, 1, time.monotonicMs());
    time.advance(LAG_MS + 1);
    partition.updateFollowerFetchState(1, 1, time.monotonicMs());
    partition.maybeShrinkIsr(time.monotonicMs());
    expect(partition.completeIsrProposal(proposals[0]!, { kind: 'stale', state: null }, 0, BACKOFF_MS)).toBe(
      false,
    );
    expect(partition.isr).toEqual([0, 1, 2]);
    time.advance(LAG_MS);
    partition.maybeShrinkIsr(time.monotonicMs());
    expect(proposals).toHaveLength(1);
    // The current state (another ISR change won) arrives: proposals resume from it.
    partition.makeLeader(state({ partitionEpoch: 12 }), time.monotonicMs());
    time.advance(LAG_MS + 1);
    partition.maybeShrinkIsr(time.monotonicMs());
    expect(proposals.slice(1)).toEqual([{ kind: 'shrink', isr: [0, 1], leaderEpoch: 1, partitionEpoch: 12 }]);
  });

  it('after a failed answer keeps the committed ISR and proposes again after the backoff', () => {
    const partition = replica();
    partition.makeLeader(state(), time.monotonicMs());
    time.advance(LAG_MS + 1);
    append(partition, 1);
    partition.maybeShrinkIsr(time.monotonicMs());
    expect(proposals).toHaveLength(1);
    const failed = { kind: 'failed' as const, error: new Error('etcd did not answer') };
    expect(partition.completeIsrProposal(proposals[0]!, failed, time.monotonicMs(), BACKOFF_MS)).toBe(false);
    expect(partition.isr).toEqual([0, 1, 2]);
    time.advance(BACKOFF_MS - 1);
    partition.maybeShrinkIsr(time.monotonicMs());
    expect(proposals).toHaveLength(1);
    time.advance(1);
    partition.maybeShrinkIsr(time.monotonicMs());
    expect(proposals).toHaveLength(2);
    // An answer to a proposal that is no longer pending (a newer state arrived) is ignored.
    partition.makeLeader(state({ partitionEpoch: 11 }), time.monotonicMs());
    const late = { kind: 'committed' as const, state: state({ isr: [0], partitionEpoch: 12 }) };
    expect(partition.completeIsrProposal(proposals[1]!, late, time.monotonicMs(), BACKOFF_MS)).toBe(false);
    expect(partition.isr).toEqual([0, 1, 2]);
  });

  it('advances no HW and confirms no acks=-1 while leadership is not active', () => {
    let isActive = true;
    const partition = replica({ isActive: () => isActive });
    partition.makeLeader(state({ isr: [0] }), time.monotonicMs());
    append(partition, 1);
    isActive = false;
    expect(partition.maybeIncrementLeaderHW()).toBe(false);
    expect(partition.highWatermark).toBe(0);
    expect(partition.checkEnoughReplicasReachOffset(1)).toEqual({
      hasEnough: false,
      errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    });
    isActive = true;
    expect(partition.maybeIncrementLeaderHW()).toBe(true);
  });
});
