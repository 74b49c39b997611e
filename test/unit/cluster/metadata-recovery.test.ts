import { clusterIdentityKey, encodeClusterIdentity } from '../../../src/cluster/cluster-identity';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import {
  decodeRecoveryReport,
  encodeRecoveryReport,
  MetadataRecoveryConflictError,
  planMetadataRecovery,
  readRecoveryReports,
  RECOVERY_TXN_OPS,
  recoveryReportKey,
  writeMetadataRecovery,
  type RecoveryPlan,
  type RecoveryReport,
} from '../../../src/cluster/metadata-recovery';
import type { TxnRequest } from '../../../src/cluster/metadata-store';
import { readPartitionState, topicKey } from '../../../src/cluster/partition-state';
import { decodeReplicaAssignment } from '../../../src/cluster/replica-assignment';
import { ManualTime } from '../../../src/time';

const report = (
  nodeId: number,
  replicas: [string, number, number, number][],
  clusterUuid = 'u',
): RecoveryReport => ({
  nodeId,
  clusterUuid,
  replicas: replicas.map(([topic, partitionIndex, leaderEpoch, logEndOffset]) => ({
    topic,
    partitionIndex,
    leaderEpoch,
    logEndOffset,
  })),
});

function planOf(reports: RecoveryReport[], nodes: number[]): RecoveryPlan {
  const planned = planMetadataRecovery(reports, nodes);
  if ('problems' in planned) throw new Error(planned.problems.join('; '));
  return planned.plan;
}

describe('planMetadataRecovery', () => {
  it("leads each partition from the replica furthest ahead, one epoch above any replica's, alone in the ISR", () => {
    // The worked example of metadata-recovery.ts: node 3's longer log ends in an older epoch.
    const plan = planOf(
      [
        report(1, [
          ['orders', 0, 4, 120],
          ['orders', 1, 2, 50],
        ]),
        report(2, [
          ['orders', 0, 4, 118],
          ['orders', 1, 2, 50],
        ]),
        report(3, [
          ['orders', 0, 3, 130],
          ['orders', 1, 1, 70],
        ]),
      ],
      [1, 2, 3],
    );
    expect(plan.clusterUuid).toBe('u');
    expect(plan.topics.get('orders')).toEqual({
      partitions: [
        [1, 2, 3],
        [1, 2, 3],
      ],
    });
    expect(plan.states.get('orders/0')).toEqual({ leader: 1, leaderEpoch: 5, isr: [1], controllerEpoch: 0 });
    // Equal replicas: the lowest node id, for a plan every caller computes alike.
    expect(plan.states.get('orders/1')).toEqual({ leader: 1, leaderEpoch: 3, isr: [1], controllerEpoch: 0 });
  });

  it('puts the leader first and keeps every replica that holds the partition, on whichever nodes', () => {
    const plan = planOf(
      [
        report(1, [['t', 0, -1, 0]]),
        report(2, [
          ['t', 0, 0, 10],
          ['t', 1, 0, 3],
        ]),
        report(3, [['t', 1, 0, 3]]),
      ],
      [1, 2, 3],
    );
    expect(plan.topics.get('t')).toEqual({
      partitions: [
        [2, 1],
        [2, 3],
      ],
    });
    // A log with no batch at all (epoch -1) still gets epoch 0 at least.
    expect(plan.states.get('t/0')?.leaderEpoch).toBe(1);
  });

  it('refuses while a named node has not reported, or a node reported that was not named', () => {
    const reports = [report(1, [['t', 0, 0, 1]]), report(3, [['t', 0, 0, 1]])];
    expect(planMetadataRecovery(reports, [1, 2])).toEqual({
      problems: [
        'node 2 has not reported: start it (on its own data directory)',
        'node 3 reported but was not named: name it, or stop it and delete its report',
      ],
    });
    expect(planMetadataRecovery(reports, [])).toMatchObject({
      problems: expect.arrayContaining(['name every node of the cluster']),
    });
  });

  it('refuses reports of different clusters, and a topic with a partition no node holds', () => {
    expect(planMetadataRecovery([report(1, [], 'a'), report(2, [], 'b')], [1, 2])).toMatchObject({
      problems: [expect.stringMatching(/different clusters.*node 1: a.*node 2: b/)],
    });
    expect(
      planMetadataRecovery(
        [
          report(1, [
            ['t', 0, 0, 1],
            ['t', 2, 0, 1],
          ]),
        ],
        [1],
      ),
    ).toEqual({
      problems: ['topic t has partitions no node holds: 1'],
    });
  });

  it("keeps the topic's id, refuses replicas of two topics of one name, and gives a lost replica back", () => {
    const withId = (nodeId: number, p: number, topicId: string): RecoveryReport => ({
      nodeId,
      clusterUuid: 'u',
      replicas: [{ topic: 't', partitionIndex: p, leaderEpoch: 1, logEndOffset: 5, topicId }],
    });
    const plan = planOf(
      [
        {
          ...withId(1, 0, 'id-1'),
          replicas: [...withId(1, 0, 'id-1').replicas, ...withId(1, 1, 'id-1').replicas],
        },
        withId(2, 0, 'id-1'),
        report(3, []),
      ],
      [1, 2, 3],
    );
    // Partition 1 lost its second replica (a disk replaced): node 2, the lowest lacking one, gets it back.
    expect(plan.topics.get('t')).toEqual({
      topicId: 'id-1',
      partitions: [
        [1, 2],
        [1, 2],
      ],
    });
    expect(planMetadataRecovery([withId(1, 0, 'id-1'), withId(2, 0, 'id-2')], [1, 2])).toEqual({
      problems: [expect.stringMatching(/topic t's replicas belong to different topics.*id-1, id-2/)],
    });
  });

  it('keeps the partition count the nodes knew, and names the partitions no replica holds any more', () => {
    const counted = (nodeId: number, p: number): RecoveryReport => ({
      nodeId,
      clusterUuid: 'u',
      replicas: [
        {
          topic: '__consumer_offsets',
          partitionIndex: p,
          leaderEpoch: 0,
          logEndOffset: 1,
          partitionCount: 4,
        },
      ],
    });
    expect(planMetadataRecovery([counted(1, 0), counted(2, 1)], [1, 2])).toEqual({
      problems: ['topic __consumer_offsets has partitions no node holds: 2, 3'],
    });
  });

  it('reads back what a node reported, and names a report that does not decode', () => {
    const original = report(7, [['a-b', 3, 2, 99]]);
    expect(decodeRecoveryReport('k', encodeRecoveryReport(original))).toEqual(original);
    const withId: RecoveryReport = { ...original, replicas: [{ ...original.replicas[0]!, topicId: 'x' }] };
    expect(decodeRecoveryReport('k', encodeRecoveryReport(withId))).toEqual(withId);
    expect(decodeRecoveryReport('k', '{"nodeId":1,"clusterUuid":"u","replicas":[["t",0]]}')).toMatch(
      /^k has a replica/,
    );
    expect(decodeRecoveryReport('k', 'nope')).toBe('k is not JSON');
  });
});

describe('writeMetadataRecovery', () => {
  let etcd: InMemoryEtcd;
  let store: InMemoryMetadataStore;
  beforeEach(() => {
    etcd = new InMemoryEtcd({ time: new ManualTime() });
    store = etcd.connect();
  });
  afterEach(() => etcd.shutdown());

  it('writes every topic and state in bounded transactions, then the identity with the reports removed', async () => {
    const partitions = 150;
    const replicas: [string, number, number, number][] = [...Array(partitions).keys()].map((p) => [
      'big',
      p,
      3,
      p,
    ]);
    await store.put(recoveryReportKey('c', 1), encodeRecoveryReport(report(1, replicas)));
    const { reports } = await readRecoveryReports(store, 'c');
    const plan = planOf(reports, [1]);
    const sizes: number[] = [];
    const txn = store.txn.bind(store);
    store.txn = (request: TxnRequest) => {
      sizes.push(request.success.length);
      return txn(request);
    };
    await writeMetadataRecovery(store, 'c', plan);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(RECOVERY_TXN_OPS);
    expect(
      decodeReplicaAssignment('', (await store.get(topicKey('c', 'big'))).kv!.value).partitions,
    ).toHaveLength(partitions);
    expect((await readPartitionState(store, 'c', 'big', 149))?.state).toEqual({
      leader: 1,
      leaderEpoch: 4,
      isr: [1],
      controllerEpoch: 0,
    });
    expect((await store.get(clusterIdentityKey('c'))).kv?.value).toBe(encodeClusterIdentity('u'));
    expect((await store.range('/c/recovery/')).kvs).toEqual([]);
  });

  it('writes nothing more once the identity is back (restored, or another recovery finished)', async () => {
    const plan = planOf([report(1, [['t', 0, 0, 1]])], [1]);
    await store.put(clusterIdentityKey('c'), encodeClusterIdentity('u'));
    await expect(writeMetadataRecovery(store, 'c', plan)).rejects.toBeInstanceOf(
      MetadataRecoveryConflictError,
    );
    expect((await store.get(topicKey('c', 't'))).kv).toBeUndefined();
  });

  it('writes nothing once a report changed after it was read', async () => {
    await store.put(recoveryReportKey('c', 1), encodeRecoveryReport(report(1, [['t', 0, 0, 1]])));
    const { reports, readAs } = await readRecoveryReports(store, 'c');
    await store.put(recoveryReportKey('c', 1), encodeRecoveryReport(report(1, [['t', 0, 3, 9]])));
    await expect(writeMetadataRecovery(store, 'c', planOf(reports, [1]), readAs)).rejects.toBeInstanceOf(
      MetadataRecoveryConflictError,
    );
    expect((await store.get(clusterIdentityKey('c'))).kv).toBeUndefined();
  });

  it('takes a lost answer of its last write as done when the identity is there', async () => {
    const plan = planOf([report(1, [['t', 0, 0, 1]])], [1]);
    const txn = store.txn.bind(store);
    store.txn = (request: TxnRequest) => {
      if (request.success.some((op) => op.type === 'delete')) store.loseNextResponse({ applied: true });
      return txn(request);
    };
    await writeMetadataRecovery(store, 'c', plan);
    expect((await store.get(clusterIdentityKey('c'))).kv?.value).toBe(encodeClusterIdentity('u'));
  });
});
