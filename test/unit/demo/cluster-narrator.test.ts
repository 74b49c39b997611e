import { ClusterNarrator, type ClusterSample, type GroupSample } from '../../../src/demo/cluster-narrator';

/** A narrator that is never started (no client, no sockets): samples and totals are handed to it. */
function narrator(): { narrator: ClusterNarrator; told: string[] } {
  const told: string[] = [];
  return {
    narrator: new ClusterNarrator({
      bootstrap: ['127.0.0.1:7070'],
      topic: 'demo-orders',
      groupId: 'demo-group',
      sessionTimeoutMs: 20_000,
      say: (who, text) => told.push(`${who}: ${text}`),
    }),
    told,
  };
}

const node = (nodeId: number) => ({ nodeId, host: '127.0.0.1', port: 7060 + 10 * nodeId });
const stable = (coordinatorId: number, generationId = 1, memberIds = ['m1', 'm2', 'm3']): GroupSample => ({
  coordinatorId,
  state: 'Stable',
  generationId,
  memberIds,
});
const sample = (nodes: number[], leaders: [number, number][], group: GroupSample): ClusterSample => ({
  brokers: nodes.map(node),
  leaders: new Map(leaders),
  group,
});

describe('the cluster demo’s narrator', () => {
  it('names the coordinator once, then tells only what changes', () => {
    const { narrator: n, told } = narrator();
    n.observe(
      sample(
        [1, 2, 3],
        [
          [0, 1],
          [1, 2],
        ],
        stable(2),
      ),
    );
    n.observe(
      sample(
        [1, 2, 3],
        [
          [0, 1],
          [1, 2],
        ],
        stable(2),
      ),
    );
    expect(told).toEqual(['group: demo-group is coordinated by node 2']);
  });

  it('tells a coordinator killed: silent, its node gone, its partitions led elsewhere, the group moved and kept', () => {
    const { narrator: n, told } = narrator();
    n.observe(
      sample(
        [1, 2, 3],
        [
          [0, 1],
          [1, 2],
        ],
        stable(2),
      ),
    );
    n.observe(
      sample(
        [1, 2, 3],
        [
          [0, 1],
          [1, 2],
        ],
        { error: 'COORDINATOR_NOT_AVAILABLE' },
      ),
    );
    n.observe(
      sample(
        [1, 2, 3],
        [
          [0, 1],
          [1, 2],
        ],
        { error: 'COORDINATOR_NOT_AVAILABLE' },
      ),
    );
    n.observe(
      sample(
        [1, 3],
        [
          [0, 1],
          [1, 3],
        ],
        stable(3),
      ),
    );
    expect(told.slice(1)).toEqual([
      "group: demo-group's coordinator, node 2, does not answer (COORDINATOR_NOT_AVAILABLE): the members keep " +
        'their partitions for their 20s session, the time the cluster has to elect the next coordinator',
      'cluster: node 2 left the cluster (its session in etcd expired): live nodes 1 and 3',
      'cluster: new leaders: demo-orders-1 on node 3',
      'group: demo-group moved to node 3: Stable, generation 1 and the same 3 members as before',
    ]);
  });

  it('says so when the group comes back in a new generation or with fewer members', () => {
    const { narrator: n, told } = narrator();
    n.observe(sample([1, 2, 3], [], stable(2)));
    n.observe(sample([1, 3], [], stable(3, 2, ['m1', 'm2'])));
    expect(told.at(-1)).toBe(
      'group: demo-group moved to node 3: Stable, generation 2 (was 1), 2 members (were 3)',
    );
  });

  it('tells a node that comes back, and a coordinator that answers again without moving', () => {
    const { narrator: n, told } = narrator();
    n.observe(sample([1, 3], [], stable(3)));
    n.observe(sample([1, 3], [], { error: 'REQUEST_TIMED_OUT' }));
    n.observe(sample([1, 2, 3], [], stable(3)));
    expect(told.slice(2)).toEqual([
      'cluster: node 2 joined the cluster at 127.0.0.1:7080: live nodes 1, 2 and 3',
      "group: demo-group's coordinator, node 3, answers again",
    ]);
  });

  it('names the coordinator once the group is Stable, and tells a move against the last Stable generation', () => {
    const { narrator: n, told } = narrator();
    const forming = { ...stable(2), state: 'PreparingRebalance', generationId: 0 };
    n.observe(sample([1, 2, 3], [], forming));
    expect(told).toEqual([]);
    n.observe(sample([1, 2, 3], [], stable(2)));
    // A look in the middle of a rebalance, then the move: the members still hold the Stable generation.
    n.observe(sample([1, 2, 3], [], { ...stable(2), state: 'CompletingRebalance', generationId: 0 }));
    n.observe(sample([1, 2, 3], [], stable(3)));
    expect(told).toEqual([
      'group: demo-group is coordinated by node 2',
      expect.stringMatching(
        /^group: demo-group moved to node 3: Stable, generation \d+ and the same \d+ members as before$/,
      ),
    ]);
  });

  it('says nothing of a group it has not seen yet, nor of a look that failed', () => {
    const { narrator: n, told } = narrator();
    n.observe({ brokers: null, leaders: null, group: { error: 'GROUP_ID_NOT_FOUND' } });
    n.observe(sample([1, 2, 3], [[0, 1]], { error: 'GROUP_ID_NOT_FOUND' }));
    n.observe({ brokers: null, leaders: null, group: { error: 'COORDINATOR_NOT_AVAILABLE' } });
    n.observe(sample([1, 2, 3], [[0, -1]], stable(1)));
    expect(told).toEqual(['group: demo-group is coordinated by node 1']);
  });

  it('tells a producer stall once, after the stall time without an acknowledgement, and its end', () => {
    const { narrator: n, told } = narrator();
    n.produced(0, 0);
    n.produced(0, 3_500); // still finding the partitions' leaders: not a stall
    n.produced(40, 4_000);
    n.produced(40, 5_000);
    n.produced(40, 6_999);
    expect(told).toEqual([]);
    n.produced(40, 7_000);
    n.produced(40, 8_000);
    n.produced(90, 12_500);
    n.produced(110, 13_500);
    expect(told).toEqual([
      'producer: no record acknowledged for 3.0s: acks=-1 waits for every in-sync replica, and a dead one ' +
        'holds records up until the controller has moved its partitions',
      'producer: acknowledgements resumed after 8.5s: 90 records acknowledged',
    ]);
  });
});
