import {
  decidePartition,
  electPreferredLeader,
  imbalancedNodes,
} from '../../../src/cluster/controller-decisions';
import type { PartitionState } from '../../../src/cluster/partition-state';

const state = (leader: number, leaderEpoch: number, isr: number[], controllerEpoch = 3): PartitionState => ({
  leader,
  leaderEpoch,
  isr,
  controllerEpoch,
});
const alive =
  (...ids: number[]) =>
  (id: number): boolean =>
    ids.includes(id);
const clean = { controllerEpoch: 9, uncleanLeaderElection: false };

describe('decidePartition', () => {
  it('treats a node that restarted since the state as failed: a new election for its partitions, out of ISRs', () => {
    const restarted =
      (...ids: number[]) =>
      (id: number) =>
        ids.includes(id);
    // Leader restarted: the next steady ISR member leads; the restarted one leaves the ISR.
    expect(decidePartition([1, 2, 3], state(1, 4, [1, 2, 3]), alive(1, 2, 3), clean, restarted(1))).toEqual(
      state(2, 5, [2, 3], 9),
    );
    // The only live ISR member: it leads again, one epoch up.
    expect(decidePartition([1, 2, 3], state(1, 4, [1, 2]), alive(1, 3), clean, restarted(1))).toEqual(
      state(1, 5, [1], 9),
    );
    // A follower restarted: it leaves the ISR.
    expect(decidePartition([1, 2, 3], state(1, 4, [1, 2, 3]), alive(1, 2, 3), clean, restarted(3))).toEqual(
      state(1, 5, [1, 2], 9),
    );
    // Nobody restarted: nothing to do.
    expect(
      decidePartition([1, 2, 3], state(1, 4, [1, 2, 3]), alive(1, 2, 3), clean, restarted()),
    ).toBeUndefined();
  });

  it('leaves a partition alone whose leader and ISR are all alive', () => {
    expect(decidePartition([1, 2, 3], state(2, 4, [1, 2, 3]), alive(1, 2, 3), clean)).toBeUndefined();
  });

  it('elects the first live ISR member in assignment order when the leader is gone', () => {
    expect(decidePartition([1, 3, 2], state(1, 4, [2, 1, 3]), alive(2, 3), clean)).toEqual(
      state(3, 5, [2, 3], 9),
    );
  });

  it('takes a dead follower out of the ISR, bumping the epoch, the leader unchanged', () => {
    expect(decidePartition([1, 2, 3], state(1, 4, [1, 2, 3]), alive(1, 3), clean)).toEqual(
      state(1, 5, [1, 3], 9),
    );
  });

  it('goes offline once (leader -1, epoch bumped, ISR kept), then writes nothing while nobody can lead', () => {
    const offline = decidePartition([1, 2], state(1, 4, [1]), alive(2), clean);
    expect(offline).toEqual(state(-1, 5, [1], 9));
    expect(decidePartition([1, 2], offline!, alive(2), clean)).toBeUndefined();
    expect(decidePartition([1, 2], offline!, alive(1, 2), clean)).toEqual(state(1, 6, [1], 9));
  });

  it('with unclean election, an offline partition takes a live replica outside its ISR', () => {
    const unclean = { controllerEpoch: 9, uncleanLeaderElection: true };
    expect(decidePartition([1, 2], state(-1, 5, [1]), alive(2), unclean)).toEqual(state(2, 6, [2], 9));
  });
});

describe('electPreferredLeader', () => {
  it('moves leadership to the preferred replica when it is alive and in the ISR, keeping the ISR', () => {
    expect(electPreferredLeader([1, 2], state(2, 4, [2, 1]), alive(1, 2), 9)).toEqual(state(1, 5, [2, 1], 9));
  });

  it('does nothing when the preferred replica leads, is dead, or is out of sync', () => {
    expect(electPreferredLeader([1, 2], state(1, 4, [1, 2]), alive(1, 2), 9)).toBeUndefined();
    expect(electPreferredLeader([1, 2], state(2, 4, [2, 1]), alive(2), 9)).toBeUndefined();
    expect(electPreferredLeader([1, 2], state(2, 4, [2]), alive(1, 2), 9)).toBeUndefined();
  });
});

describe('imbalancedNodes', () => {
  it('names the nodes that lead less than (1 - ratio) of the partitions they are preferred for', () => {
    const partitions = [
      { replicas: [1, 2], state: state(2, 1, [1, 2]) },
      { replicas: [1, 2], state: state(1, 1, [1, 2]) },
      { replicas: [2, 1], state: state(2, 1, [1, 2]) },
    ];
    expect(imbalancedNodes(partitions, 0.1)).toEqual(new Set([1]));
    expect(imbalancedNodes(partitions, 0.5)).toEqual(new Set());
  });
});
