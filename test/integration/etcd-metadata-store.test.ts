import { EtcdMetadataStore, etcdTarget } from '../../src/cluster/etcd-metadata-store';
import { startEtcd, type EtcdProcess } from '../support/etcd';

/** What the etcd client adds to the shared contract: how failures are classified, and no retries. */

let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
}, 300_000);
afterAll(() => etcd?.stop());

describe('EtcdMetadataStore against a frozen etcd', () => {
  let store: EtcdMetadataStore;
  afterEach(() => {
    etcd.resume();
    store?.close();
  });

  it('fails a write it could not confirm as outcome-unknown, and a failed read as a definite failure', async () => {
    store = new EtcdMetadataStore({ endpoints: etcd.endpoints, requestTimeoutMs: 300 });
    await store.put('/frozen/warm-up', 'connected');
    await etcd.pause();
    // If etcd answered (it must not: it is stopped), jest prints the response it resolved with.
    await expect(
      store.txn({
        compare: [{ key: '/frozen/x', target: 'createRevision', result: 'equal', operand: 0 }],
        success: [{ type: 'put', key: '/frozen/x', value: 'v' }],
      }),
    ).rejects.toMatchObject({ name: 'MetadataStoreError', kind: 'unavailable', isOutcomeUnknown: true });
    const read = await store.get('/frozen/x').catch((e: unknown) => e);
    expect(read).toMatchObject({ kind: 'unavailable', isOutcomeUnknown: false });
    // A read-only transaction changes nothing, so its failure is definite too.
    const readTxn = await store
      .txn({ compare: [], success: [{ type: 'get', key: '/frozen/x' }] })
      .catch((e: unknown) => e);
    expect(readTxn).toMatchObject({ kind: 'unavailable', isOutcomeUnknown: false });
    etcd.resume();
    // Whatever happened to the write, the client did not send it again: one put at most.
    const { kv } = await store.get('/frozen/x');
    expect(kv === undefined || kv.version === 1).toBe(true);
  });

  it('rejects every renewal in flight when the client closes', async () => {
    store = new EtcdMetadataStore({ endpoints: etcd.endpoints });
    const lease = await store.grantLease(5);
    await etcd.pause();
    const renewal = store.keepAliveOnce(lease.id);
    store.close();
    await expect(renewal).rejects.toMatchObject({ kind: 'closed' });
  });
});

describe('etcdTarget', () => {
  it.each([
    [['http://127.0.0.1:2379'], '127.0.0.1:2379'],
    [['http://etcd-0.internal:2379'], 'etcd-0.internal:2379'],
    [['http://10.0.0.1:2379', 'http://10.0.0.2:2379'], 'ipv4:10.0.0.1:2379,10.0.0.2:2379'],
    [['https://127.0.0.1:2379'], '127.0.0.1:2379'],
    [['https://10.0.0.1:2379', 'https://10.0.0.2:2379'], 'ipv4:10.0.0.1:2379,10.0.0.2:2379'],
  ])('turns %j into the channel target %s', (endpoints, target) => {
    expect(etcdTarget(endpoints)).toBe(target);
  });

  it.each([
    [[], /at least one/],
    [['127.0.0.1:2379'], /expected http:\/\/host:port|only http/],
    [['grpc://127.0.0.1:2379'], /expected http:\/\/host:port or https:\/\/host:port/],
    [['https://10.0.0.1:2379', 'http://10.0.0.2:2379'], /mix http:\/\/ and https:\/\//],
    [['http://127.0.0.1'], /expected http:\/\/host:port/],
    [['http://a:1', 'http://b:2'], /IPv4/],
  ])('refuses %j', (endpoints, message) => {
    expect(() => etcdTarget(endpoints)).toThrow(message);
  });
});
