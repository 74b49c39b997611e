import { InMemoryEtcd } from '../../../src/cluster/in-memory-metadata-store';
import { ManualTime } from '../../../src/time';
import { settle, WatchRecorder } from '../../support/metadata-store-harness';

/** The fake's faults (the shared contract suite checks its etcd semantics against a real etcd). */
describe('InMemoryEtcd faults', () => {
  let time: ManualTime;
  let etcd: InMemoryEtcd;
  beforeEach(() => {
    time = new ManualTime();
    etcd = new InMemoryEtcd({ time });
  });
  afterEach(() => etcd.shutdown());

  it('holds a partitioned client’s requests unapplied and delivers them in order on heal', async () => {
    const a = etcd.connect();
    const b = etcd.connect();
    a.partition();
    const answers: string[] = [];
    void a.put('/k', '1').then(() => answers.push('put 1'));
    void a.put('/k', '2').then(() => answers.push('put 2'));
    await settle();
    expect(answers).toEqual([]);
    expect((await b.get('/k')).kv).toBeUndefined();
    a.heal();
    await settle();
    expect(answers).toEqual(['put 1', 'put 2']);
    expect((await b.get('/k')).kv).toMatchObject({ value: '2', version: 2 });
  });

  it('expires the lease of a partitioned client on the server’s clock, counted from the last renewal received', async () => {
    const a = etcd.connect();
    const lease = await a.grantLease(3);
    time.advance(2_000);
    await a.keepAliveOnce(lease.id);
    a.partition();
    void a.keepAliveOnce(lease.id);
    time.advance(2_999);
    expect(etcd.leaseIds()).toEqual([lease.id]);
    time.advance(1);
    expect(etcd.leaseIds()).toEqual([]);
    a.heal();
    await expect(a.keepAliveOnce(lease.id)).resolves.toEqual({ ttlSeconds: 0 });
  });

  it('withholds watch events from a partitioned client until heal', async () => {
    const a = etcd.connect();
    const b = etcd.connect();
    const watch = new WatchRecorder();
    await a.watch('/w/', { prefix: true }, watch).created;
    a.partition();
    await b.put('/w/1', 'x');
    await settle();
    expect(watch.events).toEqual([]);
    a.heal();
    await settle();
    expect(watch.events.map((e) => e.kv.key)).toEqual(['/w/1']);
  });

  it('cancels, with the compaction revision, the watch of a partitioned client whose missed events were compacted away', async () => {
    // etcd cancels a watcher that fell behind the compaction revision; it never skips the events silently.
    const a = etcd.connect();
    const b = etcd.connect();
    const watch = new WatchRecorder();
    await a.watch('/w/', { prefix: true }, watch).created;
    a.partition();
    await b.put('/w/1', 'x');
    const { revision } = await b.put('/w/2', 'y');
    await b.compact(revision);
    a.heal();
    await settle();
    expect(watch.events).toEqual([]);
    expect(watch.cancelled).toEqual({ compactRevision: revision });
  });

  it('loses the response of the next write, applied or not, as an outcome-unknown failure', async () => {
    const a = etcd.connect();
    a.loseNextResponse({ applied: true });
    await expect(a.put('/x', 'applied')).rejects.toMatchObject({
      kind: 'unavailable',
      isOutcomeUnknown: true,
    });
    expect((await a.get('/x')).kv?.value).toBe('applied');
    a.loseNextResponse({ applied: false });
    await expect(a.put('/x', 'lost')).rejects.toMatchObject({ isOutcomeUnknown: true });
    expect((await a.get('/x')).kv?.value).toBe('applied');
  });

  it('loses the response of a write in the middle of a run, the writes before it answered', async () => {
    const a = etcd.connect();
    a.loseNextResponse({ applied: false, afterWrites: 2 });
    const answers = await Promise.allSettled(['1', '2', '3', '4'].map((v) => a.put(`/run/${v}`, v)));
    expect(answers.map((answer) => answer.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect((await a.range('/run/')).kvs.map((kv) => kv.value)).toEqual(['1', '2', '4']);
  });

  it('partitions a client between two of its writes: those after are held until heal', async () => {
    const a = etcd.connect();
    const b = etcd.connect();
    a.partitionAfterWrites(1);
    const first = a.put('/cut/1', '1');
    void a.put('/cut/2', '2');
    await first;
    await settle();
    expect(a.isPartitioned).toBe(true);
    expect((await b.range('/cut/')).kvs.map((kv) => kv.value)).toEqual(['1']);
    a.heal();
    await settle();
    expect((await b.range('/cut/')).kvs.map((kv) => kv.value)).toEqual(['1', '2']);
  });

  it('raises a TTL below the minimum to it, as etcd does', async () => {
    const a = etcd.connect();
    expect((await a.grantLease(1)).ttlSeconds).toBe(2);
  });
});
