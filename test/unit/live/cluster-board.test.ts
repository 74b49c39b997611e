import { ErrorCode } from '../../../src/errors';
import { NO_LEADER_ID, type MetadataResponse, type PartitionMetadata } from '../../../src/log';
import {
  CLUSTER_BOARD_CHECK_INTERVAL_MS,
  ClusterBoard,
  clusterViewOf,
  type ClusterView,
} from '../../../src/live/cluster-board';
import { ManualTime } from '../../../src/time';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function partition(
  partitionIndex: number,
  leaderId: number,
  replicaNodes: number[],
  isrNodes: number[],
  leaderEpoch = 0,
): PartitionMetadata {
  return { partitionIndex, leaderId, replicaNodes, isrNodes, leaderEpoch, errorCode: ErrorCode.NONE };
}

function metadata(topics: Record<string, PartitionMetadata[]>, liveNodes: number[]): MetadataResponse {
  return {
    controllerId: -1,
    brokers: liveNodes.map((nodeId) => ({ nodeId, host: '10.0.0.1', port: 9000 + nodeId })),
    topics: Object.entries(topics).map(([name, partitions]) => ({
      name,
      errorCode: ErrorCode.NONE,
      partitions,
      errorMessage: '',
    })),
  };
}

describe('clusterViewOf', () => {
  it('marks offline and under-replicated partitions, and nodes replicas name that are not live', () => {
    const view = clusterViewOf(
      metadata(
        {
          orders: [
            partition(1, NO_LEADER_ID, [1, 3], [3], 4),
            partition(0, 2, [1, 2, 3], [2, 3], 7),
            partition(2, 3, [2, 3], [3, 2], 1),
          ],
          __consumer_offsets: [partition(0, 2, [2, 3], [2, 3])],
          audit: [partition(0, 3, [3], [3])],
        },
        [3, 2],
      ),
      2,
      3,
    );
    expect(view.mode).toBe('cluster');
    expect(view.controllerId).toBe(3);
    // User topics by name, the server's own last.
    expect(view.topics.map((t) => t.name)).toEqual(['audit', 'orders', '__consumer_offsets']);
    expect(view.topics[1].partitions).toEqual([
      {
        partition: 0,
        leaderId: 2,
        leaderEpoch: 7,
        replicas: [1, 2, 3],
        isr: [2, 3],
        isOffline: false,
        isUnderReplicated: true,
      },
      {
        partition: 1,
        leaderId: NO_LEADER_ID,
        leaderEpoch: 4,
        replicas: [1, 3],
        isr: [3],
        isOffline: true,
        isUnderReplicated: true,
      },
      {
        partition: 2,
        leaderId: 3,
        leaderEpoch: 1,
        replicas: [2, 3],
        isr: [3, 2],
        isOffline: false,
        isUnderReplicated: false,
      },
    ]);
    expect([view.partitionCount, view.offlineCount, view.underReplicatedCount]).toEqual([5, 1, 2]);
    expect(view.nodes).toEqual([
      {
        nodeId: 2,
        host: '10.0.0.1',
        port: 9002,
        isLive: true,
        isLocal: true,
        isController: false,
        leaderCount: 2,
      },
      {
        nodeId: 3,
        host: '10.0.0.1',
        port: 9003,
        isLive: true,
        isLocal: false,
        isController: true,
        leaderCount: 2,
      },
      {
        nodeId: 1,
        host: null,
        port: null,
        isLive: false,
        isLocal: false,
        isController: false,
        leaderCount: 0,
      },
    ]);
  });

  it('in single-node mode names no controller and the node leads everything', () => {
    const view = clusterViewOf(metadata({ orders: [partition(0, 0, [0], [0])] }, [0]), 0, undefined);
    expect(view.mode).toBe('single-node');
    expect(view.controllerId).toBe(NO_LEADER_ID);
    expect(view.nodes).toEqual([
      {
        nodeId: 0,
        host: '10.0.0.1',
        port: 9000,
        isLive: true,
        isLocal: true,
        isController: false,
        leaderCount: 1,
      },
    ]);
  });
});

describe('ClusterBoard', () => {
  let time: ManualTime;
  let answer: MetadataResponse;
  let reads: number;
  let board: ClusterBoard;

  beforeEach(() => {
    time = new ManualTime();
    answer = metadata({ orders: [partition(0, 1, [1, 2], [1, 2])] }, [1, 2]);
    reads = 0;
    board = new ClusterBoard({
      localNodeId: 1,
      metadata: () => {
        reads++;
        return Promise.resolve(answer);
      },
      controllerId: () => 2,
      time,
    });
  });

  afterEach(() => board.close());

  function page(): { views: ClusterView[]; onCluster(view: ClusterView): void } {
    const views: ClusterView[] = [];
    return { views, onCluster: (view) => views.push(view) };
  }

  it('reads nothing before a page opens', async () => {
    board.changed();
    board.changed();
    await nextTurn();
    expect(reads).toBe(0);
  });

  it('reads once per turn however many changes come, and sends only views that changed', async () => {
    const a = page();
    board.open(a);
    await nextTurn();
    expect(reads).toBe(1);
    expect(a.views.map((v) => v.underReplicatedCount)).toEqual([0]);

    answer = metadata({ orders: [partition(0, 1, [1, 2], [1])] }, [1, 2]);
    for (let i = 0; i < 50; i++) board.changed();
    await nextTurn();
    expect(reads).toBe(2);
    expect(a.views.map((v) => v.underReplicatedCount)).toEqual([0, 1]);

    // A change event whose view is the same as the last sends nothing.
    board.changed();
    await nextTurn();
    expect(reads).toBe(3);
    expect(a.views).toHaveLength(2);
  });

  it('hands a page opened later the current view, shared with the other pages', async () => {
    const a = page();
    board.open(a);
    await nextTurn();
    const b = page();
    const leave = board.open(b)!;
    // Nothing changed since the last read: at once, without reading.
    expect(b.views).toEqual([a.views[0]]);
    expect(b.views[0]).toBe(a.views[0]);
    expect(reads).toBe(1);
    leave();
    answer = metadata({ orders: [partition(0, 2, [1, 2], [2], 1)] }, [2]);
    board.changed();
    await nextTurn();
    expect(a.views.map((v) => v.topics[0].partitions[0].leaderId)).toEqual([1, 2]);
    expect(b.views).toHaveLength(1);
  });

  it('reads again once a second while a page is open, to catch changes that have no event', async () => {
    const a = page();
    board.open(a);
    await nextTurn();
    answer = metadata(
      { orders: [partition(0, 1, [1, 2], [1, 2])], payments: [partition(0, 1, [1], [1])] },
      [1, 2],
    );
    time.advance(CLUSTER_BOARD_CHECK_INTERVAL_MS - 1);
    await nextTurn();
    expect(reads).toBe(1);
    time.advance(1);
    await nextTurn();
    expect(reads).toBe(2);
    expect(a.views.map((v) => v.partitionCount)).toEqual([1, 2]);
  });

  it('opens no page once closed', () => {
    board.close();
    expect(board.open(page())).toBeUndefined();
  });
});
