import { ClusterTransport } from '../../../src/client/cluster-transport';
import { CohortClient } from '../../../src/client/cohort-client';
import { ManualTime } from '../../../src/time';
import { FakeCluster } from './support/fake-cluster';

describe('CohortAdmin.describeCluster', () => {
  it('shows each __consumer_offsets partition with its leader, epoch, ISR and the groups it holds', async () => {
    const time = new ManualTime();
    // Java's hashCode of "a" is 97, "b" 98, "c" 99, "d" 100: partitions 1, 2, 0, 1 of three.
    const cluster = new FakeCluster(time)
      .addTopic('__consumer_offsets', [3, 1, 2])
      .coordinate('a', 1)
      .coordinate('b', 2)
      .coordinate('c', 3)
      .coordinate('d', 1);
    cluster.elect('__consumer_offsets', 2, 2); // epoch 1
    const transport = new ClusterTransport({ bootstrap: ['node-1:7070'], connect: cluster.connect, time });
    const client = new CohortClient({ clientId: 'admin', transport, time });
    const layout = await client.admin().describeCluster();
    expect(layout.nodes.map((n) => `${n.nodeId}=${n.host}:${n.port}`)).toEqual([
      '1=node-1:7070',
      '2=node-2:7070',
      '3=node-3:7070',
    ]);
    expect(layout.controllerId).toBeNull();
    expect(layout.groups).toBe(4);
    expect(
      layout.offsetsPartitions?.map((p) => [p.partition, p.leaderId, p.leaderEpoch, p.isr, p.groups]),
    ).toEqual([
      [0, 3, 0, [1, 2, 3], 1],
      [1, 1, 0, [1, 2, 3], 2],
      [2, 2, 1, [1, 2, 3], 1],
    ]);
    await client.close();
  });

  it('says there is no __consumer_offsets partition when the cluster has no such topic', async () => {
    const time = new ManualTime();
    const cluster = new FakeCluster(time, [0]).coordinate('a', 0);
    const transport = new ClusterTransport({ bootstrap: ['node-0:7070'], connect: cluster.connect, time });
    const client = new CohortClient({ clientId: 'admin', transport, time });
    const layout = await client.admin().describeCluster();
    expect(layout).toMatchObject({ offsetsPartitions: null, groups: 1, controllerId: null });
    await client.close();
  });
});
