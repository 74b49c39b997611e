import {
  ETCD_MAX_REQUEST_BYTES,
  ETCD_MAX_TXN_OPS,
  MetadataStoreError,
  NO_LEASE,
  type Compare,
  type MetadataStore,
  type TxnOp,
  type TxnRequest,
} from '../../src/cluster/metadata-store';
import { startEtcd, type EtcdProcess } from '../support/etcd';
import {
  etcdHarness,
  inMemoryHarness,
  WatchRecorder,
  type StoreHarness,
} from '../support/metadata-store-harness';
import { makeTlsFixtures, type TlsFixtures } from '../support/tls-fixtures';

/**
 * One contract, two implementations: every behaviour the cluster layer relies on is checked against a
 * real etcd and against the in-memory fake its unit tests use, so the fake cannot drift from etcd. The
 * real one twice: plain, and locked down as docs/operations.md says (TLS only, client certificates,
 * authentication on, cohort's user allowed one prefix), where every call carries a token.
 */

/** The keys every test of this file uses start with it: the locked-down etcd's user may use no others. */
const KEY_PREFIX = '/contract-';

let etcd: EtcdProcess;
let lockedDown: EtcdProcess;
let tls: TlsFixtures;
beforeAll(async () => {
  // The first start on a fresh machine may install etcd-server.
  etcd = await startEtcd();
  tls = makeTlsFixtures();
  lockedDown = await startEtcd({ tls: { fixtures: tls }, auth: { prefix: KEY_PREFIX } });
}, 300_000);
afterAll(async () => {
  await Promise.all([etcd?.stop(), lockedDown?.stop()]);
  tls?.cleanup();
});

let testNumber = 0;

describe.each([
  ['in-memory etcd', () => inMemoryHarness()],
  ['etcd', () => etcdHarness(etcd)],
  ['etcd with TLS, client certificates and authentication', () => etcdHarness(lockedDown)],
])('MetadataStore contract: %s', (_name, makeHarness: () => StoreHarness) => {
  let harness: StoreHarness;
  let store: MetadataStore;
  /** A key prefix of this test's own: the real etcd is shared by the tests of this file. */
  let p: string;

  beforeEach(() => {
    harness = makeHarness();
    store = harness.store;
    p = `${KEY_PREFIX}${process.pid}-${++testNumber}/`;
  });
  afterEach(() => harness.close());

  it('keeps create and mod revisions and a version per key, and a re-created key starts over', async () => {
    const first = await store.put(`${p}a`, 'one');
    let { kv } = await store.get(`${p}a`);
    expect(kv).toEqual({
      key: `${p}a`,
      value: 'one',
      createRevision: first.revision,
      modRevision: first.revision,
      version: 1,
      lease: NO_LEASE,
    });
    const second = await store.put(`${p}a`, 'two');
    expect(second.revision).toBe(first.revision + 1);
    ({ kv } = await store.get(`${p}a`));
    expect(kv).toMatchObject({
      value: 'two',
      createRevision: first.revision,
      modRevision: second.revision,
      version: 2,
    });

    const deleted = await store.delete(`${p}a`);
    expect(deleted).toEqual({ revision: second.revision + 1, deleted: 1 });
    expect((await store.get(`${p}a`)).kv).toBeUndefined();
    // Deleting nothing changes nothing, not even the revision.
    expect(await store.delete(`${p}a`)).toEqual({ revision: deleted.revision, deleted: 0 });

    const third = await store.put(`${p}a`, 'three');
    ({ kv } = await store.get(`${p}a`));
    expect(kv).toMatchObject({ createRevision: third.revision, modRevision: third.revision, version: 1 });
  });

  it('ranges over a prefix in key order, and not over keys that merely share its first bytes', async () => {
    await store.put(`${p}dir/b`, '2');
    await store.put(`${p}dir/a`, '1');
    await store.put(`${p}dirx`, 'x');
    const { kvs, revision } = await store.range(`${p}dir/`);
    expect(kvs.map((kv) => [kv.key, kv.value])).toEqual([
      [`${p}dir/a`, '1'],
      [`${p}dir/b`, '2'],
    ]);
    expect(revision).toBe((await store.get(`${p}dirx`)).revision);
  });

  it('creates a key only if absent (createRevision = 0), and a losing txn reads the winner in its failure branch', async () => {
    const key = `${p}controller`;
    const create = (value: string) =>
      store.txn({
        compare: [{ key, target: 'createRevision', result: 'equal', operand: 0 }],
        success: [{ type: 'put', key, value }],
        failure: [{ type: 'get', key }],
      });
    const won = await create('node-1');
    expect(won).toMatchObject({ succeeded: true, results: [{ type: 'put' }] });
    const lost = await create('node-2');
    expect(lost.succeeded).toBe(false);
    expect(lost.revision).toBe(won.revision);
    expect(lost.results).toEqual([
      {
        type: 'get',
        kvs: [
          {
            key,
            value: 'node-1',
            createRevision: won.revision,
            modRevision: won.revision,
            version: 1,
            lease: NO_LEASE,
          },
        ],
      },
    ]);
  });

  it('applies a write conditioned on a mod revision only while the key is unchanged', async () => {
    const key = `${p}partition`;
    const { revision } = await store.put(key, 'epoch-0');
    const fenced = (value: string, modRevision: number) =>
      store.txn({
        compare: [{ key, target: 'modRevision', result: 'equal', operand: modRevision }],
        success: [{ type: 'put', key, value }],
      });
    const update = await fenced('epoch-1', revision);
    expect(update.succeeded).toBe(true);
    const stale = await fenced('epoch-1-stale', revision);
    expect(stale).toEqual({ succeeded: false, revision: update.revision, results: [] });
    expect((await store.get(key)).kv?.value).toBe('epoch-1');
  });

  it('compares values and versions, and a value compare on a missing key is false', async () => {
    const key = `${p}v`;
    await store.put(key, 'b');
    const check = (compare: Parameters<MetadataStore['txn']>[0]['compare'][number]) =>
      store.txn({ compare: [compare], success: [] }).then((r) => r.succeeded);
    expect(await check({ key, target: 'value', result: 'equal', operand: 'b' })).toBe(true);
    expect(await check({ key, target: 'value', result: 'greater', operand: 'a' })).toBe(true);
    expect(await check({ key, target: 'value', result: 'less', operand: 'a' })).toBe(false);
    expect(await check({ key, target: 'version', result: 'equal', operand: 1 })).toBe(true);
    expect(await check({ key, target: 'version', result: 'greater', operand: 1 })).toBe(false);
    expect(await check({ key: `${p}missing`, target: 'value', result: 'notEqual', operand: 'x' })).toBe(
      false,
    );
    expect(await check({ key: `${p}missing`, target: 'version', result: 'equal', operand: 0 })).toBe(true);
  });

  it('compares over a prefix: it holds only if it holds for every key under it, and as for a missing key when none is', async () => {
    const check = (compare: Compare) =>
      store.txn({ compare: [compare], success: [] }).then((r) => r.succeeded);
    const under = (
      target: 'createRevision' | 'value',
      result: Compare['result'],
      operand: number | string,
    ): Compare => ({ key: `${p}t/`, prefix: true, target, result, operand }) as Compare;
    const noneUnder = under('createRevision', 'equal', 0);
    expect(await check(noneUnder)).toBe(true);
    expect(await check(under('value', 'notEqual', 'x'))).toBe(false);
    await store.put(`${p}tx`, 'a key that only shares the first bytes');
    expect(await check(noneUnder)).toBe(true);
    const first = await store.put(`${p}t/a`, '1');
    expect(await check(noneUnder)).toBe(false);
    await store.put(`${p}t/b`, '2');
    expect(await check(under('createRevision', 'greater', 0))).toBe(true);
    expect(await check(under('createRevision', 'equal', first.revision))).toBe(false);
    expect(await check(under('value', 'less', '3'))).toBe(true);
    expect(await check(under('value', 'equal', '1'))).toBe(false);
  });

  it('binds keys to a lease; revoking it deletes them in one revision and a renewal then answers 0', async () => {
    const lease = await store.grantLease(5);
    expect(lease.ttlSeconds).toBeGreaterThanOrEqual(5);
    await store.put(`${p}nodes/1`, '127.0.0.1:1', { lease: lease.id });
    await store.put(`${p}nodes/2`, '127.0.0.1:2', { lease: lease.id });
    expect((await store.get(`${p}nodes/1`)).kv?.lease).toBe(lease.id);
    expect(await store.keepAliveOnce(lease.id)).toEqual({ ttlSeconds: lease.ttlSeconds });
    const ttl = await store.leaseTimeToLive(lease.id);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(lease.ttlSeconds);

    const watch = new WatchRecorder();
    const before = (await store.get(`${p}nodes/1`)).revision;
    store.watch(`${p}nodes/`, { prefix: true, startRevision: before + 1 }, watch);
    await store.revokeLease(lease.id);
    expect((await store.range(`${p}nodes/`)).kvs).toEqual([]);
    await watch.until(() => watch.events.length === 2);
    expect(watch.events.map((e) => [e.type, e.kv.key, e.kv.modRevision])).toEqual([
      ['delete', `${p}nodes/1`, before + 1],
      ['delete', `${p}nodes/2`, before + 1],
    ]);
    expect(await store.keepAliveOnce(lease.id)).toEqual({ ttlSeconds: 0 });
    expect(await store.leaseTimeToLive(lease.id)).toBe(-1);
    await expect(store.revokeLease(lease.id)).resolves.toBeUndefined();
  });

  it('refuses a put on a lease that does not exist, definitely (nothing applied)', async () => {
    const lease = await store.grantLease(5);
    await store.revokeLease(lease.id);
    const before = (await store.get(`${p}x`)).revision;
    const error = await store.put(`${p}x`, 'v', { lease: lease.id }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MetadataStoreError);
    expect(error).toMatchObject({ kind: 'leaseNotFound', isOutcomeUnknown: false });
    const inTxn = await store
      .txn({ compare: [], success: [{ type: 'put', key: `${p}x`, value: 'v', lease: lease.id }] })
      .catch((e: unknown) => e);
    expect(inTxn).toMatchObject({ kind: 'leaseNotFound', isOutcomeUnknown: false });
    expect(await store.get(`${p}x`)).toEqual({ kv: undefined, revision: before });
  });

  it('refuses, definitely, a txn of more than 128 compares, success ops or failure ops, and takes 128 of each', async () => {
    const absent = (i: number): Compare => ({
      key: `${p}c/${i}`,
      target: 'createRevision',
      result: 'equal',
      operand: 0,
    });
    const put = (i: number): TxnOp => ({ type: 'put', key: `${p}s/${i}`, value: 'v' });
    const get = (i: number): TxnOp => ({ type: 'get', key: `${p}f/${i}` });
    const many = <T>(count: number, make: (i: number) => T): T[] =>
      Array.from({ length: count }, (_, i) => make(i));
    const tooMany: TxnRequest[] = [
      { compare: many(ETCD_MAX_TXN_OPS + 1, absent), success: [put(0)] },
      { compare: [absent(0)], success: many(ETCD_MAX_TXN_OPS + 1, put) },
      { compare: [absent(0)], success: [put(0)], failure: many(ETCD_MAX_TXN_OPS + 1, get) },
    ];
    for (const request of tooMany) {
      const error = await store.txn(request).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MetadataStoreError);
      expect(error).toMatchObject({
        kind: 'invalidRequest',
        isOutcomeUnknown: false,
        message: expect.stringMatching(/too many operations in txn request/) as unknown,
      });
    }
    expect((await store.range(p)).kvs).toEqual([]);
    const full = await store.txn({
      compare: many(ETCD_MAX_TXN_OPS, absent),
      success: many(ETCD_MAX_TXN_OPS, put),
      failure: many(ETCD_MAX_TXN_OPS, get),
    });
    expect(full.succeeded).toBe(true);
    expect((await store.range(`${p}s/`)).kvs).toHaveLength(ETCD_MAX_TXN_OPS);
  });

  it('refuses, definitely, a request above 1.5 MiB, and takes one a little under', async () => {
    const error = await store.put(`${p}big`, 'x'.repeat(ETCD_MAX_REQUEST_BYTES)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MetadataStoreError);
    expect(error).toMatchObject({
      kind: 'invalidRequest',
      isOutcomeUnknown: false,
      message: expect.stringMatching(/request is too large/) as unknown,
    });
    expect((await store.get(`${p}big`)).kv).toBeUndefined();
    const underBytes = ETCD_MAX_REQUEST_BYTES - 1024;
    await store.txn({
      compare: [{ key: `${p}big`, target: 'createRevision', result: 'equal', operand: 0 }],
      success: [{ type: 'put', key: `${p}big`, value: 'x'.repeat(underBytes) }],
    });
    expect((await store.get(`${p}big`)).kv?.value).toHaveLength(underBytes);
  });

  it('expires a lease nobody renews and deletes its keys, which a watch sees', async () => {
    const lease = await store.grantLease(1);
    await store.put(`${p}nodes/1`, 'addr', { lease: lease.id });
    const other = harness.connect();
    const watch = new WatchRecorder();
    await other.watch(`${p}nodes/`, { prefix: true }, watch).created;
    await harness.letLeaseExpire(lease.id, lease.ttlSeconds);
    await watch.until(() => watch.events.length === 1);
    expect(watch.events[0]).toMatchObject({ type: 'delete', kv: { key: `${p}nodes/1` } });
    expect((await other.get(`${p}nodes/1`)).kv).toBeUndefined();
  });

  it('watches a prefix from a past revision: the history first, then live changes, in order', async () => {
    const start = await store.put(`${p}t/a`, '1');
    await store.put(`${p}other`, 'ignored');
    await store.put(`${p}t/b`, '2');
    await store.delete(`${p}t/a`);
    const watch = new WatchRecorder();
    const handle = store.watch(`${p}t/`, { prefix: true, startRevision: start.revision }, watch);
    await handle.created;
    await watch.until(() => watch.events.length === 3);
    const live = await store.put(`${p}t/c`, '3');
    await watch.until(() => watch.events.length === 4);
    expect(watch.events.map((e) => [e.type, e.kv.key, e.kv.value])).toEqual([
      ['put', `${p}t/a`, '1'],
      ['put', `${p}t/b`, '2'],
      ['delete', `${p}t/a`, ''],
      ['put', `${p}t/c`, '3'],
    ]);
    expect(watch.events[3].kv).toMatchObject({
      createRevision: live.revision,
      modRevision: live.revision,
      version: 1,
    });
    const revisions = watch.events.map((e) => e.kv.modRevision);
    expect([...revisions].sort((a, b) => a - b)).toEqual(revisions);

    handle.cancel();
    await store.put(`${p}t/d`, '4');
    await store.get(`${p}t/d`);
    expect(watch.events).toHaveLength(4);
    expect(watch.cancelled).toBeUndefined();
  });

  it('cancels a watch that starts below the compaction revision, giving that revision', async () => {
    const old = await store.put(`${p}c`, '1');
    const latest = await store.put(`${p}c`, '2');
    await store.compact(latest.revision);
    const watch = new WatchRecorder();
    store.watch(`${p}c`, { startRevision: old.revision }, watch);
    await watch.until(() => watch.cancelled !== undefined);
    expect(watch.cancelled).toEqual({ compactRevision: latest.revision });
    expect(watch.events).toEqual([]);
  });
});
