import fc from 'fast-check';
import { controllerKey } from '../../../src/cluster/controller-election';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import {
  decodePartitionState,
  electLeader,
  encodePartitionState,
  expandIsr,
  initialPartitionState,
  NO_LEADER,
  partitionKey,
  readPartitionState,
  shrinkIsr,
  writePartitionState,
  type PartitionState,
} from '../../../src/cluster/partition-state';
import { ManualTime } from '../../../src/time';

const alive =
  (...ids: number[]) =>
  (id: number): boolean =>
    ids.includes(id);

describe('partition state codec', () => {
  it('round-trips {leader, leaderEpoch, isr, controllerEpoch} as JSON in a fixed key order', () => {
    const state: PartitionState = { leader: 2, leaderEpoch: 5, isr: [2, 3], controllerEpoch: 17 };
    const value = encodePartitionState(state);
    expect(value).toBe('{"leader":2,"leaderEpoch":5,"isr":[2,3],"controllerEpoch":17}');
    expect(decodePartitionState('/k', value)).toEqual(state);
  });

  it.each([
    ['not JSON', '{', /not JSON/],
    ['an array', '[]', /not an object/],
    ['a leader outside the ISR', '{"leader":1,"leaderEpoch":0,"isr":[2],"controllerEpoch":1}', /not in isr/],
    ['a repeated ISR member', '{"leader":1,"leaderEpoch":0,"isr":[1,1],"controllerEpoch":1}', /distinct/],
    ['a negative epoch', '{"leader":1,"leaderEpoch":-1,"isr":[1],"controllerEpoch":1}', /leaderEpoch/],
    ['a fractional leader', '{"leader":1.5,"leaderEpoch":0,"isr":[1],"controllerEpoch":1}', /leader must be/],
    ['a missing controller epoch', '{"leader":1,"leaderEpoch":0,"isr":[1]}', /controllerEpoch/],
  ])('refuses %s', (_what, value, message) => {
    expect(() => decodePartitionState('/c/partitions/t/0', value)).toThrow(message);
  });

  it('accepts no leader with the last ISR kept', () => {
    const value = '{"leader":-1,"leaderEpoch":6,"isr":[2],"controllerEpoch":1}';
    expect(decodePartitionState('/k', value)).toEqual({
      leader: NO_LEADER,
      leaderEpoch: 6,
      isr: [2],
      controllerEpoch: 1,
    });
  });
});

describe('partition keys', () => {
  it('name one topic and partition under the cluster id, and refuse names that could not be topics', () => {
    expect(partitionKey('c1', 'orders.v2', 3)).toBe('/c1/partitions/orders.v2/3');
    expect(() => partitionKey('c1', 'a/b', 0)).toThrow(/may contain only/);
    expect(() => partitionKey('c1', 't', -1)).toThrow(/non-negative/);
  });
});

describe('leader election and ISR changes', () => {
  it('follows the worked example: clean elections in replica order, no leader when nobody in sync lives', () => {
    const replicas = [1, 2, 3];
    let state: PartitionState = { leader: 1, leaderEpoch: 4, isr: [1, 2, 3], controllerEpoch: 1 };
    state = electLeader(replicas, state, alive(2, 3), { controllerEpoch: 2 });
    expect(state).toEqual({ leader: 2, leaderEpoch: 5, isr: [2, 3], controllerEpoch: 2 });
    const shrunk = shrinkIsr(state, 2, 5, [3]);
    expect(shrunk).toEqual({
      outcome: 'changed',
      state: { leader: 2, leaderEpoch: 5, isr: [2], controllerEpoch: 2 },
    });
    state = (shrunk as { state: PartitionState }).state;
    state = electLeader(replicas, state, alive(3), { controllerEpoch: 2 });
    expect(state).toEqual({ leader: NO_LEADER, leaderEpoch: 6, isr: [2], controllerEpoch: 2 });
    state = electLeader(replicas, state, alive(2, 3), { controllerEpoch: 2 });
    expect(state).toEqual({ leader: 2, leaderEpoch: 7, isr: [2], controllerEpoch: 2 });
  });

  it('prefers the assignment order, not the ISR order', () => {
    const state: PartitionState = { leader: 1, leaderEpoch: 0, isr: [1, 2, 3], controllerEpoch: 1 };
    expect(electLeader([3, 1, 2], state, alive(1, 2, 3), { controllerEpoch: 1 }).leader).toBe(3);
  });

  it('elects outside the ISR only with unclean election enabled, with an ISR of the new leader alone', () => {
    const state: PartitionState = { leader: 1, leaderEpoch: 3, isr: [1], controllerEpoch: 1 };
    expect(electLeader([1, 2, 3], state, alive(3, 2), { controllerEpoch: 1 })).toMatchObject({
      leader: NO_LEADER,
    });
    expect(
      electLeader([1, 2, 3], state, alive(3, 2), { controllerEpoch: 1, uncleanLeaderElection: true }),
    ).toEqual({
      leader: 2,
      leaderEpoch: 4,
      isr: [2],
      controllerEpoch: 1,
    });
  });

  it('starts a partition with the first live replica leading at epoch 0', () => {
    expect(initialPartitionState([3, 1, 2], alive(1, 2), 9)).toEqual({
      leader: 1,
      leaderEpoch: 0,
      isr: [1, 2],
      controllerEpoch: 9,
    });
    expect(initialPartitionState([3], alive(), 9)).toEqual({
      leader: NO_LEADER,
      leaderEpoch: 0,
      isr: [],
      controllerEpoch: 9,
    });
  });

  it('lets only the leader at its epoch change the ISR; it never leaves it, and only replicas join', () => {
    const state: PartitionState = { leader: 2, leaderEpoch: 5, isr: [2], controllerEpoch: 1 };
    expect(shrinkIsr(state, 2, 4, [3])).toEqual({ outcome: 'notLeader' });
    expect(shrinkIsr(state, 3, 5, [2])).toEqual({ outcome: 'notLeader' });
    expect(shrinkIsr(state, 2, 5, [2])).toMatchObject({ outcome: 'invalid' });
    expect(shrinkIsr(state, 2, 5, [3])).toEqual({ outcome: 'unchanged' });
    expect(expandIsr(state, [1, 2, 3], 2, 5, 4)).toMatchObject({ outcome: 'invalid' });
    expect(expandIsr(state, [1, 2, 3], 2, 4, 3)).toEqual({ outcome: 'notLeader' });
    const grown = expandIsr(state, [1, 2, 3], 2, 5, 3);
    expect(grown).toEqual({ outcome: 'changed', state: { ...state, isr: [2, 3] } });
    expect(expandIsr({ ...state, isr: [2, 3] }, [1, 2, 3], 2, 5, 1)).toEqual({
      outcome: 'changed',
      state: { ...state, isr: [1, 2, 3] },
    });
    expect(expandIsr({ ...state, isr: [2, 3] }, [1, 2, 3], 2, 5, 3)).toEqual({ outcome: 'unchanged' });
  });

  it('always bumps the epoch and keeps a leader in its ISR, with the clean ISR a subset of the old (property)', () => {
    const nodeIds = fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 5 });
    fc.assert(
      fc.property(
        nodeIds,
        fc.func(fc.boolean()),
        fc.boolean(),
        fc.nat(100),
        (replicas, liveness, unclean, epoch) => {
          const isr = replicas.filter((_, i) => i % 2 === 0);
          const current: PartitionState = { leader: isr[0], leaderEpoch: epoch, isr, controllerEpoch: 1 };
          const next = electLeader(replicas, current, (id) => liveness(id), {
            controllerEpoch: 2,
            uncleanLeaderElection: unclean,
          });
          expect(next.leaderEpoch).toBe(epoch + 1);
          expect(() => encodePartitionState(next)).not.toThrow();
          if (next.leader !== NO_LEADER) {
            expect(liveness(next.leader)).toBe(true);
            if (isr.includes(next.leader))
              expect(next.isr.every((id) => isr.includes(id) && liveness(id))).toBe(true);
            else expect(unclean && next.isr.length === 1).toBe(true);
          } else {
            expect(next.isr).toEqual(isr);
          }
        },
      ),
    );
  });
});

describe('conditional partition-state writes (in-memory etcd)', () => {
  let etcd: InMemoryEtcd;
  let store: InMemoryMetadataStore;
  let controllerEpoch: number;
  const key = partitionKey('c1', 't', 0);
  const first: PartitionState = { leader: 1, leaderEpoch: 0, isr: [1, 2, 3], controllerEpoch: 0 };

  beforeEach(async () => {
    etcd = new InMemoryEtcd({ time: new ManualTime() });
    store = etcd.connect();
    controllerEpoch = (await store.put(controllerKey('c1'), '{"nodeId":1}')).revision;
  });
  afterEach(() => etcd.shutdown());

  const write = (
    expectedModRevision: number,
    state: PartitionState,
    epoch: number | undefined = controllerEpoch,
  ) =>
    writePartitionState(store, {
      clusterId: 'c1',
      topic: 't',
      partition: 0,
      expectedModRevision,
      state,
      controllerEpoch: epoch,
    });

  it('creates the state only if absent, then updates it only from the mod revision it was decided from', async () => {
    const created = await write(0, { ...first, controllerEpoch });
    expect(created).toMatchObject({ outcome: 'updated' });
    const { stored } = created as { stored: { modRevision: number } };
    expect(await readPartitionState(store, 'c1', 't', 0)).toEqual({
      state: { ...first, controllerEpoch },
      modRevision: stored.modRevision,
    });
    expect(await write(0, { ...first, controllerEpoch })).toMatchObject({
      outcome: 'stale',
      current: { modRevision: stored.modRevision },
    });

    const elected = electLeader([1, 2, 3], { ...first, controllerEpoch }, alive(2, 3), { controllerEpoch });
    const updated = await write(stored.modRevision, elected);
    expect(updated).toMatchObject({ outcome: 'updated', stored: { state: elected } });
    // A second decision from the same, now old, revision loses and gets the current state back.
    const again = await write(stored.modRevision, { ...elected, leader: 3 });
    expect(again).toEqual({ outcome: 'stale', current: (updated as { stored: unknown }).stored });
  });

  it('refuses a deposed controller’s election, whatever the mod revision', async () => {
    const created = (await write(0, { ...first, controllerEpoch })) as { stored: { modRevision: number } };
    await store.delete(controllerKey('c1'));
    const newEpoch = (await store.put(controllerKey('c1'), '{"nodeId":2}')).revision;
    const stale = await write(created.stored.modRevision, {
      leader: 2,
      leaderEpoch: 1,
      isr: [2],
      controllerEpoch,
    });
    expect(stale).toEqual({ outcome: 'notController', currentEpoch: newEpoch });
    expect((await readPartitionState(store, 'c1', 't', 0))?.state.leader).toBe(1);
  });

  it('refuses a deposed leader’s ISR change once a new leader was elected', async () => {
    const created = (await write(0, { ...first, controllerEpoch })) as {
      stored: { state: PartitionState; modRevision: number };
    };
    // The controller elects 2; the old leader, 1, still holds what it read.
    await write(
      created.stored.modRevision,
      electLeader([1, 2, 3], created.stored.state, alive(2, 3), { controllerEpoch }),
    );
    const shrink = shrinkIsr(created.stored.state, 1, 0, [3]);
    expect(shrink.outcome).toBe('changed');
    const result = await write(
      created.stored.modRevision,
      (shrink as { state: PartitionState }).state,
      undefined,
    );
    expect(result).toMatchObject({ outcome: 'stale', current: { state: { leader: 2, leaderEpoch: 1 } } });
  });

  it.each([
    [true, 'updated'],
    [false, 'stale'],
  ])('re-reads after a lost answer (applied: %s) and reports %s', async (applied, outcome) => {
    const created = (await write(0, { ...first, controllerEpoch })) as {
      stored: { state: PartitionState; modRevision: number };
    };
    const next = electLeader([1, 2, 3], created.stored.state, alive(2, 3), { controllerEpoch });
    store.loseNextResponse({ applied });
    const result = await write(created.stored.modRevision, next);
    expect(result.outcome).toBe(outcome);
    const leader = (await readPartitionState(store, 'c1', 't', 0))?.state.leader;
    expect(leader).toBe(applied ? 2 : 1);
  });

  it('rejects a malformed state before writing anything', async () => {
    await expect(write(0, { leader: 4, leaderEpoch: 0, isr: [1], controllerEpoch })).rejects.toThrow(
      /not in isr/,
    );
    expect((await store.get(key)).kv).toBeUndefined();
  });
});
