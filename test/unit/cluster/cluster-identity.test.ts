import {
  clusterIdentityKey,
  encodeClusterIdentity,
  establishClusterIdentity,
} from '../../../src/cluster/cluster-identity';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import { MetadataStoreError } from '../../../src/cluster/metadata-store';
import { ManualTime } from '../../../src/time';

describe('establishClusterIdentity', () => {
  let etcd: InMemoryEtcd;
  let store: InMemoryMetadataStore;
  const key = clusterIdentityKey('c1');
  let next = 0;
  const newUuid = (): string => `uuid-${++next}`;

  beforeEach(() => {
    etcd = new InMemoryEtcd({ time: new ManualTime() });
    store = etcd.connect();
  });
  afterEach(() => etcd.shutdown());

  it('creates the identity on an empty etcd for a directory that has none', async () => {
    const outcome = await establishClusterIdentity(store, 'c1', undefined, newUuid);
    expect(outcome).toEqual({ outcome: 'confirmed', clusterUuid: `uuid-${next}`, isCreated: true });
    expect(etcd.read({ key })[0]?.value).toBe(encodeClusterIdentity(`uuid-${next}`));
  });

  it("adopts etcd's identity for a directory that has none, and confirms a directory that has it", async () => {
    await store.put(key, encodeClusterIdentity('theirs'));
    expect(await establishClusterIdentity(store, 'c1', undefined, newUuid)).toEqual({
      outcome: 'confirmed',
      clusterUuid: 'theirs',
      isCreated: false,
    });
    expect(await establishClusterIdentity(store, 'c1', 'theirs', newUuid)).toMatchObject({
      outcome: 'confirmed',
    });
  });

  it('never creates an identity over a directory that names one: etcd lost the metadata', async () => {
    expect(await establishClusterIdentity(store, 'c1', 'ours', newUuid)).toEqual({
      outcome: 'missing',
      localUuid: 'ours',
    });
    expect(etcd.read({ key })).toEqual([]);
  });

  it('does not create an identity for a new node while other nodes wait for a recovery', async () => {
    await store.put('/c1/recovery/2', '{}');
    expect(await establishClusterIdentity(store, 'c1', undefined, newUuid)).toEqual({
      outcome: 'recovering',
    });
    expect(etcd.read({ key })).toEqual([]);
  });

  it("reports another cluster's identity, or one that does not read, as foreign", async () => {
    await store.put(key, encodeClusterIdentity('theirs'));
    expect(await establishClusterIdentity(store, 'c1', 'ours', newUuid)).toEqual({
      outcome: 'foreign',
      etcdUuid: 'theirs',
      localUuid: 'ours',
    });
    await store.put(key, 'garbage');
    expect(await establishClusterIdentity(store, 'c1', undefined, newUuid)).toMatchObject({
      outcome: 'foreign',
    });
  });

  it('gives two nodes starting together on an empty etcd the same identity', async () => {
    const other = etcd.connect();
    const [a, b] = await Promise.all([
      establishClusterIdentity(store, 'c1', undefined, newUuid),
      establishClusterIdentity(other, 'c1', undefined, newUuid),
    ]);
    expect(a.outcome).toBe('confirmed');
    expect(b).toMatchObject({
      outcome: 'confirmed',
      clusterUuid: (a as { clusterUuid: string }).clusterUuid,
    });
    expect([a, b].filter((o) => o.outcome === 'confirmed' && o.isCreated)).toHaveLength(1);
  });

  it('resolves a creation whose answer was lost by reading again, applied or not', async () => {
    store.loseNextResponse({ applied: true });
    const applied = await establishClusterIdentity(store, 'c1', undefined, newUuid);
    expect(applied).toEqual({ outcome: 'confirmed', clusterUuid: `uuid-${next}`, isCreated: true });

    const fresh = new InMemoryEtcd({ time: new ManualTime() });
    const client = fresh.connect();
    client.loseNextResponse({ applied: false });
    const notApplied = await establishClusterIdentity(client, 'c1', undefined, newUuid);
    expect(notApplied).toMatchObject({ outcome: 'confirmed', isCreated: true });
    expect(fresh.read({ key })[0]?.value).toBe(
      encodeClusterIdentity((notApplied as { clusterUuid: string }).clusterUuid),
    );
    fresh.shutdown();
  });

  it('rejects with the store error when etcd cannot be reached', async () => {
    store.failRequests();
    await expect(establishClusterIdentity(store, 'c1', undefined, newUuid)).rejects.toBeInstanceOf(
      MetadataStoreError,
    );
  });
});
