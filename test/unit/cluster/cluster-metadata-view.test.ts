import { ClusterMetadataView, parseAdvertisedAddress } from '../../../src/cluster/cluster-metadata-view';
import { controllerKey } from '../../../src/cluster/controller-election';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import type { ClusterMetadataUpdate } from '../../../src/log/partition-roles';
import { nodeKey } from '../../../src/cluster/node-session';
import { encodePartitionState, partitionKey, topicKey } from '../../../src/cluster/partition-state';
import { SystemTimer } from '../../../src/timer';
import { ManualTime } from '../../../src/time';
import { settle } from '../../support/metadata-store-harness';

describe('ClusterMetadataView', () => {
  const clusterId = 'c1';
  let time: ManualTime;
  let timer: SystemTimer;
  let etcd: InMemoryEtcd;
  let admin: InMemoryMetadataStore;
  let store: InMemoryMetadataStore;
  let view: ClusterMetadataView;
  let updates: ClusterMetadataUpdate[];
  let errors: unknown[];

  beforeEach(() => {
    time = new ManualTime();
    timer = new SystemTimer({ time });
    etcd = new InMemoryEtcd({ time });
    admin = etcd.connect();
    store = etcd.connect();
    updates = [];
    errors = [];
    view = new ClusterMetadataView({
      store,
      timer,
      clusterId,
      retryBackoffMs: 500,
      maxRetryBackoffMs: 2_000,
      onError: (error) => errors.push(error),
    });
    view.on('update', (update) => updates.push(update));
  });
  afterEach(() => {
    view.close();
    store.close();
    admin.close();
    timer.shutdown();
    etcd.shutdown();
  });

  async function seed(): Promise<void> {
    await admin.put(nodeKey(clusterId, 1), '127.0.0.1:7071');
    await admin.put(nodeKey(clusterId, 2), '[::1]:7072');
    await admin.put(controllerKey(clusterId), JSON.stringify({ nodeId: 2 }));
    await admin.put(
      topicKey(clusterId, 't'),
      JSON.stringify({
        partitions: [
          [1, 2],
          [2, 1],
        ],
      }),
    );
    await admin.put(
      partitionKey(clusterId, 't', 0),
      encodePartitionState({ leader: 1, leaderEpoch: 3, isr: [1, 2], controllerEpoch: 4 }),
    );
  }

  it('reads everything in one revision and emits a complete update', async () => {
    await seed();
    await admin.put(
      partitionKey(clusterId, 't', 1),
      encodePartitionState({ leader: 2, leaderEpoch: 0, isr: [2, 1], controllerEpoch: 4 }),
    );
    const stateRevision = etcd.revision;
    view.start();
    await settle();
    expect(updates).toEqual([
      {
        liveNodes: [
          { nodeId: 1, host: '127.0.0.1', port: 7071 },
          { nodeId: 2, host: '::1', port: 7072 },
        ],
        controllerId: 2,
        partitions: [
          {
            topic: 't',
            partitionIndex: 0,
            replicas: [1, 2],
            leader: 1,
            leaderEpoch: 3,
            isr: [1, 2],
            partitionEpoch: stateRevision - 1,
          },
          {
            topic: 't',
            partitionIndex: 1,
            replicas: [2, 1],
            leader: 2,
            leaderEpoch: 0,
            isr: [2, 1],
            partitionEpoch: stateRevision,
          },
        ],
      },
    ]);
    expect(view.revision).toBe(stateRevision);
  });

  it('leaves a topic out until every partition of its assignment has a state', async () => {
    // The assignment is written first and the states after (a topic created on a node that is not the
    // controller): a view in between must not show a topic of one partition that has two.
    await seed();
    view.start();
    await settle();
    expect(updates.at(-1)!.partitions).toEqual([]);
    await admin.put(
      partitionKey(clusterId, 't', 1),
      encodePartitionState({ leader: 2, leaderEpoch: 0, isr: [2, 1], controllerEpoch: 4 }),
    );
    await settle();
    expect(updates.at(-1)!.partitions.map((p) => [p.topic, p.partitionIndex])).toEqual([
      ['t', 0],
      ['t', 1],
    ]);
  });

  it('emits one update for a batch of changes, not one per change', async () => {
    await seed();
    view.start();
    await settle();
    updates.length = 0;
    const state = (leader: number): string =>
      encodePartitionState({ leader, leaderEpoch: 4, isr: [leader], controllerEpoch: 4 });
    await admin.txn({
      compare: [],
      success: [
        { type: 'put', key: partitionKey(clusterId, 't', 0), value: state(2) },
        { type: 'put', key: partitionKey(clusterId, 't', 1), value: state(1) },
        { type: 'delete', key: controllerKey(clusterId) },
      ],
    });
    await settle();
    expect(updates).toHaveLength(1);
    expect(updates[0].controllerId).toBe(-1);
    expect(updates[0].partitions.map((p) => [p.partitionIndex, p.leader])).toEqual([
      [0, 2],
      [1, 1],
    ]);
  });

  it('keeps the objects of partitions a batch did not change', async () => {
    await seed();
    await admin.put(
      partitionKey(clusterId, 't', 1),
      encodePartitionState({ leader: 2, leaderEpoch: 0, isr: [2, 1], controllerEpoch: 4 }),
    );
    view.start();
    await settle();
    const [first, second] = view.current!.partitions;
    await admin.put(
      partitionKey(clusterId, 't', 1),
      encodePartitionState({ leader: 2, leaderEpoch: 0, isr: [2], controllerEpoch: 4 }),
    );
    await settle();
    expect(view.current!.partitions[0]).toBe(first);
    expect(view.current!.partitions[1]).not.toBe(second);
    expect(view.current!.partitions[1].isr).toEqual([2]);
  });

  it('reads everything again when its watch falls behind a compaction', async () => {
    await seed();
    view.start();
    await settle();
    store.partition();
    await admin.delete(nodeKey(clusterId, 1));
    await admin.put(nodeKey(clusterId, 3), '127.0.0.1:7073');
    await admin.compact(etcd.revision);
    store.heal();
    await settle(40);
    expect(updates.at(-1)?.liveNodes.map((n) => n.nodeId)).toEqual([2, 3]);
  });

  it('keeps its last update while etcd is unreachable and retries with a doubling backoff', async () => {
    await seed();
    view.start();
    await settle();
    const last = view.current;
    store.failRequests();
    await settle();
    const failures = (): number => errors.length;
    const afterCancel = failures();
    expect(afterCancel).toBeGreaterThanOrEqual(2); // the stream, then the first read
    time.advance(499);
    await settle();
    expect(failures()).toBe(afterCancel);
    time.advance(1);
    await settle();
    expect(failures()).toBe(afterCancel + 1); // after 500 ms
    time.advance(999);
    await settle();
    expect(failures()).toBe(afterCancel + 1);
    time.advance(1);
    await settle();
    expect(failures()).toBe(afterCancel + 2); // then 1,000 ms
    expect(view.current).toBe(last);
    expect(updates).toHaveLength(1);
    await admin.put(nodeKey(clusterId, 3), '127.0.0.1:7073');
    store.restoreRequests();
    time.advance(2_000);
    await settle();
    expect(updates.at(-1)?.liveNodes.map((n) => n.nodeId)).toEqual([1, 2, 3]);
  });

  it('parses advertised addresses', () => {
    expect(parseAdvertisedAddress('node-1.example:9092')).toEqual({ host: 'node-1.example', port: 9092 });
    expect(parseAdvertisedAddress('[fe80::1]:1')).toEqual({ host: 'fe80::1', port: 1 });
    expect(parseAdvertisedAddress('host')).toBeUndefined();
    expect(parseAdvertisedAddress('host:0')).toBeUndefined();
    expect(parseAdvertisedAddress(':80')).toBeUndefined();
  });
});
