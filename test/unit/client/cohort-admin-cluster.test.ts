import { ClusterTransport } from '../../../src/client/cluster-transport';
import { CohortClient } from '../../../src/client/cohort-client';
import { NODE_ANSWER_TIMEOUT_MS } from '../../../src/client/cohort-admin';
import { CohortError, ErrorCode } from '../../../src/errors';
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
    expect(layout.unansweredNodes).toEqual([]);
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

  it('reports a killed node that Metadata still lists, asked once, and counts the groups of the others', async () => {
    const time = new ManualTime();
    const cluster = new FakeCluster(time)
      .addTopic('__consumer_offsets', [3, 1, 2])
      .coordinate('a', 1)
      .coordinate('b', 2)
      .coordinate('c', 3);
    // Killed: connections refused, but listed by the others until its session expires.
    const killed = cluster.node(1);
    killed.isDown = true;
    killed.isListedWhenDown = true;
    const transport = new ClusterTransport({
      bootstrap: ['node-1:7070', 'node-2:7070', 'node-3:7070'],
      connect: cluster.connect,
      time,
    });
    const client = new CohortClient({ clientId: 'admin', transport, time });
    const layout = await client.admin().describeCluster();
    expect(layout.nodes.map((n) => n.nodeId)).toEqual([1, 2, 3]);
    expect(layout.unansweredNodes).toEqual([{ nodeId: 1, address: 'node-1:7070' }]);
    expect(layout.groups).toBe(2);
    expect(killed.listGroupsCalls).toHaveLength(1);
    // Each node's ListGroups has a deadline of its own, well under a node session (10 s by default).
    for (const id of [1, 2, 3]) {
      for (const options of cluster.node(id).listGroupsCalls)
        expect(options.timeoutMs).toBeLessThanOrEqual(NODE_ANSWER_TIMEOUT_MS);
    }
    expect(NODE_ANSWER_TIMEOUT_MS).toBeLessThanOrEqual(2_000);
    await client.close();
  });

  it('reports a node whose ListGroups passed its deadline (a stopped node) as not answering', async () => {
    const time = new ManualTime();
    const cluster = new FakeCluster(time).coordinate('a', 1).coordinate('b', 2);
    const stopped = cluster.node(2);
    stopped.listGroups = (_request, options) => {
      stopped.listGroupsCalls.push(options);
      return Promise.reject(new CohortError(ErrorCode.REQUEST_TIMED_OUT, 'deadline exceeded'));
    };
    const transport = new ClusterTransport({ bootstrap: ['node-1:7070'], connect: cluster.connect, time });
    const client = new CohortClient({ clientId: 'admin', transport, time });
    const layout = await client.admin().describeCluster();
    expect(layout.unansweredNodes).toEqual([{ nodeId: 2, address: 'node-2:7070' }]);
    expect(layout.groups).toBe(1);
    expect(stopped.listGroupsCalls).toHaveLength(1);
    await client.close();
  });

  it('fails when no node answers at all', async () => {
    const time = new ManualTime();
    const cluster = new FakeCluster(time, [1]);
    const transport = new ClusterTransport({ bootstrap: ['node-1:7070'], connect: cluster.connect, time });
    const client = new CohortClient({ clientId: 'admin', transport, time });
    const node = cluster.node(1);
    node.listGroups = () => Promise.reject(new CohortError(ErrorCode.REQUEST_TIMED_OUT, 'deadline exceeded'));
    await expect(client.admin().describeCluster()).rejects.toMatchObject({
      code: ErrorCode.REQUEST_TIMED_OUT,
    });
    await client.close();
  });
});
