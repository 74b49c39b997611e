import { controllerKey } from '../../src/cluster/controller-election';
import { EtcdMetadataStore } from '../../src/cluster/etcd-metadata-store';
import {
  electLeader,
  readPartitionState,
  writePartitionState,
  type PartitionState,
} from '../../src/cluster/partition-state';
import { startEtcd, type EtcdProcess } from '../support/etcd';

/** The conditional partition-state writes against a real etcd: the same compares the fake is tested with. */
let etcd: EtcdProcess;
let store: EtcdMetadataStore;
beforeAll(async () => {
  etcd = await startEtcd();
  store = new EtcdMetadataStore({ endpoints: etcd.endpoints });
}, 300_000);
afterAll(async () => {
  store?.close();
  await etcd?.stop();
});

it('writes a leader election only from the revision it was decided from, and only at the current controller epoch', async () => {
  const clusterId = `partition-${process.pid}`;
  const epoch = (await store.put(controllerKey(clusterId), '{"nodeId":1}')).revision;
  const write = (expectedModRevision: number, state: PartitionState, controllerEpoch = epoch) =>
    writePartitionState(store, {
      clusterId,
      topic: 't',
      partition: 0,
      expectedModRevision,
      state,
      controllerEpoch,
    });

  const first: PartitionState = { leader: 1, leaderEpoch: 0, isr: [1, 2], controllerEpoch: epoch };
  const created = await write(0, first);
  expect(created.outcome).toBe('updated');
  const read = (await readPartitionState(store, clusterId, 't', 0))!;
  expect(read.state).toEqual(first);

  const elected = electLeader([1, 2], read.state, (id) => id === 2, { controllerEpoch: epoch });
  expect(await write(read.modRevision, elected)).toMatchObject({
    outcome: 'updated',
    stored: { state: elected },
  });
  expect(await write(read.modRevision, { ...elected, leaderEpoch: 9 })).toMatchObject({
    outcome: 'stale',
    current: { state: elected },
  });

  await store.delete(controllerKey(clusterId));
  const newEpoch = (await store.put(controllerKey(clusterId), '{"nodeId":2}')).revision;
  const current = (await readPartitionState(store, clusterId, 't', 0))!;
  expect(await write(current.modRevision, { ...elected, leaderEpoch: 2 })).toEqual({
    outcome: 'notController',
    currentEpoch: newEpoch,
  });
  expect((await readPartitionState(store, clusterId, 't', 0))!.state).toEqual(elected);
});
