import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  ClusterIdentityError,
  clusterIdentityKey,
  encodeClusterIdentity,
} from '../../../src/cluster/cluster-identity';
import { InMemoryEtcd, type InMemoryMetadataStore } from '../../../src/cluster/in-memory-metadata-store';
import { nodeKey } from '../../../src/cluster/node-session';
import { readPartitionState } from '../../../src/cluster/partition-state';
import { createConfig } from '../../../src/config';
import { ERROR_TABLE, ErrorCode } from '../../../src/errors';
import { ReplicaManager, type BrokerService } from '../../../src/log';
import type { DataDirIdentity } from '../../../src/log/storage';
import { ClusterWiring } from '../../../src/server/cluster-wiring';
import { ManualTime } from '../../../src/time';
import { captureLogger, type CapturedLogger } from '../../support/capture-logger';
import { TEST_CLUSTER_SECRET } from '../../support/cluster-secret';
import { settle } from '../../support/metadata-store-harness';
import { RecordingRoleTarget } from '../../support/recording-role-target';

describe('ClusterWiring', () => {
  let time: ManualTime;
  let etcd: InMemoryEtcd;
  let admin: InMemoryMetadataStore;
  let store: InMemoryMetadataStore;
  let log: CapturedLogger;
  let target: RecordingRoleTarget;
  let wiring: ClusterWiring;
  let readinessChanges: number;

  const config = createConfig({
    etcdEndpoints: ['http://127.0.0.1:2379'],
    clusterId: 'w1',
    nodeId: 4,
    nodeSessionTimeoutMs: 10_000,
    clusterSecret: TEST_CLUSTER_SECRET,
  });

  beforeEach(() => {
    time = new ManualTime();
    etcd = new InMemoryEtcd({ time });
    admin = etcd.connect();
    store = etcd.connect();
    log = captureLogger('info');
    target = new RecordingRoleTarget(() => time.monotonicMs());
    readinessChanges = 0;
    wiring = new ClusterWiring(config, {
      time,
      logger: log.logger,
      store,
      onReadinessChange: () => readinessChanges++,
    });
  });
  afterEach(async () => {
    store.heal();
    const closed = wiring.close();
    await settle();
    time.advance(5_000);
    await closed;
    admin.close();
    etcd.shutdown();
  });

  async function advance(ms: number, stepMs = 500): Promise<void> {
    for (let done = 0; done < ms; done += stepMs) {
      time.advance(Math.min(stepMs, ms - done));
      await settle(50);
    }
  }

  const messages = (): string[] => log.lines.map((line) => line.msg);

  it('is not ready until the session is registered and the first view applied, and logs both', async () => {
    expect(wiring.readinessProblem()).toBe('not yet registered in the cluster');
    expect(wiring.guard.isActive()).toBe(false);
    wiring.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(500);
    expect(wiring.readinessProblem()).toBeUndefined();
    expect(wiring.guard.isActive()).toBe(true);
    expect(readinessChanges).toBeGreaterThan(0);
    expect((await admin.get(nodeKey('w1', 4))).kv?.value).toBe('127.0.0.1:7074');
    expect(messages()).toEqual(
      expect.arrayContaining([
        'cluster session registered',
        'became the cluster controller',
        'cluster view applied',
      ]),
    );
    expect(log.lines.find((line) => line.msg === 'cluster session registered')).toMatchObject({
      clusterId: 'w1',
      nodeId: 4,
      advertisedAddress: '127.0.0.1:7074',
    });
  });

  it('logs a lost session at warn and is not ready until registered again', async () => {
    wiring.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(500);
    store.partition();
    await advance(10_000);
    expect(wiring.readinessProblem()).toMatch(/^not registered in the cluster/);
    const lost = log.lines.find((line) => line.msg.startsWith('cluster session lost'));
    expect(lost).toMatchObject({ level: 40, reason: 'deadline' });
    expect(messages()).toContain('resigned as the cluster controller');
    store.heal();
    await advance(5_000);
    expect(wiring.readinessProblem()).toBeUndefined();
  });

  it('says once, without a stack, that etcd does not answer, however long it stays away', async () => {
    store.failRequests();
    wiring.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(30_000);
    const warned = (): string[] =>
      log.lines.filter((line) => line.level === 40 && /etcd|metadata store/.test(line.msg)).map((l) => l.msg);
    expect(warned()).toEqual([
      expect.stringMatching(/^cluster: etcd did not answer for the cluster identity/),
    ]);
    expect(log.lines.filter((line) => line.level === 40).every((line) => line.err === undefined)).toBe(true);
    expect(wiring.readinessProblem()).toMatch(/^not yet registered in the cluster/);

    store.restoreRequests();
    await advance(5_000);
    expect(wiring.readinessProblem()).toBeUndefined();
    // A later outage is news again, and each kind of failure is said once.
    const before = log.lines.length;
    store.failRequests();
    await advance(30_000);
    const again = log.lines
      .slice(before)
      .filter((line) => line.level === 40 && /metadata store/.test(line.msg))
      .map((line) => String(line.error));
    expect(again.length).toBeGreaterThan(0);
    expect(new Set(again).size).toBe(again.length);
  });

  it('registers the advertised address when one is given', () => {
    const given = new ClusterWiring(
      createConfig({
        etcdEndpoints: ['http://127.0.0.1:2379'],
        nodeId: 1,
        advertisedAddress: 'n1.internal:7070',
        clusterSecret: TEST_CLUSTER_SECRET,
      }),
      { time, logger: log.logger, store: etcd.connect() },
    );
    expect(given.advertisedAddressOf({ host: '127.0.0.1', port: 40_000 })).toBe('n1.internal:7070');
    expect(wiring.advertisedAddressOf({ host: '127.0.0.1', port: 40_000 })).toBe('127.0.0.1:40000');
    void given.close();
  });

  it('answers CreateTopics from etcd, with Kafka error codes, and its defaults for -1', async () => {
    const before = await wiring.createTopics({
      topics: [{ name: 'early', numPartitions: 1, replicationFactor: 1 }],
    });
    expect(before.topics[0].errorCode).toBe(ErrorCode.REQUEST_TIMED_OUT);
    wiring.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(500);
    const response = await wiring.createTopics({
      topics: [
        { name: 'orders', numPartitions: 2, replicationFactor: 1 },
        { name: 'defaults', numPartitions: -1, replicationFactor: -1 },
        { name: 'wide', numPartitions: 1, replicationFactor: 2 },
        { name: '__consumer_offsets', numPartitions: 1, replicationFactor: 1 },
        { name: 'twice', numPartitions: 1, replicationFactor: 1 },
        { name: 'twice', numPartitions: 1, replicationFactor: 1 },
        { name: 'none', numPartitions: 0, replicationFactor: 1 },
        { name: 'huge', numPartitions: 10_001, replicationFactor: 1 },
        { name: 'bad name', numPartitions: 1, replicationFactor: 1 },
      ],
    });
    expect(response.topics.map((t) => [t.name, t.errorCode])).toEqual([
      ['orders', ErrorCode.NONE],
      ['defaults', ErrorCode.NONE],
      ['wide', ErrorCode.INVALID_REPLICATION_FACTOR],
      ['__consumer_offsets', ErrorCode.INVALID_TOPIC_EXCEPTION],
      ['twice', ErrorCode.INVALID_REQUEST],
      ['twice', ErrorCode.INVALID_REQUEST],
      ['none', ErrorCode.INVALID_PARTITIONS],
      ['huge', ErrorCode.INVALID_PARTITIONS],
      ['bad name', ErrorCode.INVALID_TOPIC_EXCEPTION],
    ]);
    expect((await readPartitionState(admin, 'w1', 'orders', 1))?.state.leader).toBe(4);
    expect((await readPartitionState(admin, 'w1', 'defaults', 0))?.state.leader).toBe(4);
    expect(
      (await wiring.createTopics({ topics: [{ name: 'orders', numPartitions: 1, replicationFactor: 1 }] }))
        .topics[0].errorCode,
    ).toBe(ErrorCode.TOPIC_ALREADY_EXISTS);
  });

  it('creates __consumer_offsets on demand, once, only when enough nodes are live for its replicas', async () => {
    const offsets = new ClusterWiring(
      createConfig({ ...config, offsetsTopicNumPartitions: 3, offsetsTopicReplicationFactor: 2 }),
      { time, logger: log.logger, store: etcd.connect() },
    );
    await wiring.close();
    wiring = offsets;
    expect(await offsets.ensureOffsetsTopic()).toBe('unavailable');
    offsets.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(500);

    // One live node of the two replicas the topic needs: refused (the caller answers
    // COORDINATOR_NOT_AVAILABLE), nothing written, and one warning however often clients retry.
    expect(await offsets.ensureOffsetsTopic()).toBe('unavailable');
    expect(await offsets.ensureOffsetsTopic()).toBe('unavailable');
    expect(await readPartitionState(admin, 'w1', '__consumer_offsets', 0)).toBeUndefined();
    const waiting = log.lines.filter((line) => line.msg.startsWith('__consumer_offsets not created'));
    expect(waiting).toEqual([expect.objectContaining({ level: 40, liveNodes: 1, replicationFactor: 2 })]);
    expect(waiting[0]!.msg).toContain('--offsets-topic-replication-factor 2');
    expect(offsets.offsetsTopicWait()).toBe(
      '1 live node, fewer than --offsets-topic-replication-factor 2: groups have no coordinator until enough nodes are up',
    );

    await admin.put(nodeKey('w1', 5), '127.0.0.1:7075');
    await advance(500);
    const [first, second] = await Promise.all([offsets.ensureOffsetsTopic(), offsets.ensureOffsetsTopic()]);
    expect([first, second]).toEqual(['created', 'created']);
    expect(offsets.offsetsTopicWait()).toBeUndefined();
    for (const partition of [0, 1, 2]) {
      expect(
        (await readPartitionState(admin, 'w1', '__consumer_offsets', partition))?.state.isr,
      ).toHaveLength(2);
    }
    expect(await readPartitionState(admin, 'w1', '__consumer_offsets', 3)).toBeUndefined();
    expect(log.lines.filter((line) => line.msg === '__consumer_offsets created')).toEqual([
      expect.objectContaining({ level: 30, numPartitions: 3, replicationFactor: 2 }),
    ]);
    await advance(500);
    const hosted = target.lastUpdate?.partitions.filter((p) => p.topic === '__consumer_offsets');
    expect(hosted?.map((p) => [p.partitionIndex, [...p.replicas].sort()])).toEqual([
      [0, [4, 5]],
      [1, [4, 5]],
      [2, [4, 5]],
    ]);
    expect(await offsets.ensureOffsetsTopic()).toBe('exists');
    // Still reserved for clients.
    const byClient = await offsets.createTopics({
      topics: [{ name: '__consumer_offsets', numPartitions: 1, replicationFactor: 1 }],
    });
    expect(byClient.topics[0]!.errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION);
  });

  it('creates a __consumer_offsets of 200 partitions, more than one etcd transaction holds, and hosts them all', async () => {
    const offsets = new ClusterWiring(
      createConfig({ ...config, offsetsTopicNumPartitions: 200, offsetsTopicReplicationFactor: 1 }),
      { time, logger: log.logger, store: etcd.connect() },
    );
    await wiring.close();
    wiring = offsets;
    offsets.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(500);
    expect(await offsets.ensureOffsetsTopic()).toBe('created');
    await advance(500);
    const hosted = target.lastUpdate?.partitions.filter((p) => p.topic === '__consumer_offsets') ?? [];
    expect(hosted.map((p) => p.partitionIndex)).toEqual([...Array(200).keys()]);
    expect(hosted.filter((p) => p.leader !== 4)).toEqual([]);
    expect(await offsets.ensureOffsetsTopic()).toBe('exists');
    expect(log.lines.filter((line) => line.level >= 40)).toEqual([]);
  });

  it('answers INVALID_REQUEST, which clients do not retry, when etcd refuses the write itself', async () => {
    // An etcd that takes requests of 16 KiB at most: the assignment of 10,000 partitions is larger.
    const small = new InMemoryEtcd({ time, maxRequestBytes: 16 * 1024 });
    const refusing = new ClusterWiring(config, { time, logger: log.logger, store: small.connect() });
    await wiring.close();
    wiring = refusing;
    refusing.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(500);
    const response = await refusing.createTopics({
      topics: [{ name: 'wide', numPartitions: 10_000, replicationFactor: 1 }],
    });
    expect(response.topics[0]).toEqual({
      name: 'wide',
      errorCode: ErrorCode.INVALID_REQUEST,
      errorMessage:
        'topic wide cannot be created: the cluster metadata store refused the request (see the server log)',
    });
    expect(ERROR_TABLE[ErrorCode.INVALID_REQUEST].retriable).toBe(false);
    expect(log.lines.find((line) => line.level === 40)?.error).toEqual(
      expect.stringContaining('request is too large'),
    );
    const fits = await refusing.createTopics({
      topics: [{ name: 'narrow', numPartitions: 3, replicationFactor: 1 }],
    });
    expect(fits.topics[0]!.errorCode).toBe(ErrorCode.NONE);
    await refusing.close();
    small.shutdown();
  });

  it('sends CreateTopics to the cluster and every other Broker call to the log', async () => {
    const calls: string[] = [];
    const log: BrokerService = {
      createTopics: () => Promise.reject(new Error('not the log')),
      metadata: () => (
        calls.push('metadata'),
        Promise.resolve({ brokers: [], topics: [], controllerId: -1 })
      ),
      produce: () => (calls.push('produce'), Promise.resolve({ topics: [] })),
      fetch: () => (calls.push('fetch'), Promise.resolve({ topics: [] }) as never),
      listOffsets: () => (calls.push('listOffsets'), Promise.resolve({ topics: [] })),
      offsetForLeaderEpoch: () => (
        calls.push('offsetForLeaderEpoch'),
        Promise.resolve({ topics: [] }) as never
      ),
    };
    const broker = wiring.brokerWithClusterTopics(log);
    wiring.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(500);
    expect(
      (await broker.createTopics({ topics: [{ name: 't', numPartitions: 1, replicationFactor: 1 }] }))
        .topics[0],
    ).toMatchObject({ errorCode: ErrorCode.NONE });
    await broker.metadata({ topics: [] });
    await broker.produce({ acks: 1, timeoutMs: 1, topics: [] });
    await broker.listOffsets({ topics: [] });
    await broker.offsetForLeaderEpoch({ topics: [] } as never);
    expect(calls).toEqual(['metadata', 'produce', 'listOffsets', 'offsetForLeaderEpoch']);
  });

  it('leaves Metadata retriable, with no brokers, while the node cannot register; then answers the cluster', async () => {
    // Another node has created the topic; this one starts while etcd cannot be reached.
    const other = new ClusterWiring(createConfig({ ...config, nodeId: 5 }), {
      time,
      logger: log.logger,
      store: etcd.connect(),
    });
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cohort-wiring-'));
    const manager = new ReplicaManager(
      { nodeId: 4, minInsyncReplicas: 1, replicaLagTimeMaxMs: 10_000, dataDir: root, logConfig: {} },
      { time, isrChangeProposer: wiring.isrChangeProposer, leadershipGuard: wiring.guard },
    );
    try {
      other.start(new RecordingRoleTarget(() => time.monotonicMs()), { host: '127.0.0.1', port: 7075 });
      await advance(500);
      const created = await other.createTopics({
        topics: [{ name: 'orders', numPartitions: 1, replicationFactor: 1 }],
      });
      expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
      manager.startup();
      manager.setLocalBroker({ nodeId: 4, host: '127.0.0.1', port: 7074 });
      const broker = wiring.brokerWithClusterTopics(manager);
      store.partition();
      wiring.start(manager, { host: '127.0.0.1', port: 7074 });
      await advance(2_000);
      expect(wiring.readinessProblem()).toBeDefined();
      expect(await broker.metadata({ topics: ['orders'] })).toEqual({
        brokers: [],
        controllerId: -1,
        topics: [
          {
            name: 'orders',
            errorCode: ErrorCode.LEADER_NOT_AVAILABLE,
            partitions: [],
            errorMessage: expect.stringMatching(/not yet a member of the cluster/),
          },
        ],
      });
      store.heal();
      await advance(5_000);
      expect(wiring.readinessProblem()).toBeUndefined();
      const metadata = await broker.metadata({ topics: ['orders'] });
      expect(metadata.brokers.map((node) => node.nodeId).sort()).toEqual([4, 5]);
      expect(metadata.topics[0]).toMatchObject({ name: 'orders', errorCode: ErrorCode.NONE });
      expect(metadata.topics[0]!.partitions[0]).toMatchObject({ leaderId: 5 });
    } finally {
      const closed = other.close();
      await settle();
      time.advance(5_000);
      await closed;
      await manager.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('logs this node leadership once per applied view, listing a few partitions, not one line each', async () => {
    wiring.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(500);
    await wiring.createTopics({ topics: [{ name: 'many', numPartitions: 50, replicationFactor: 1 }] });
    await advance(500);
    const lines = log.lines.filter((line) => line.msg === 'partition leadership changed');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      leading: 50,
      following: 0,
      becameLeader: 50,
      leaderOf: ['many-0@0', 'many-1@0', 'many-2@0', 'many-3@0', 'many-4@0'],
    });
    expect(target.lastUpdate?.partitions).toHaveLength(50);
  });

  it('tells onViewApplied after each view applied and the session lost, and names the controller', async () => {
    // How many calls the log layer had when each callback ran: every call, and each before it is told.
    const told: number[] = [];
    const unused = wiring;
    const own = etcd.connect();
    wiring = new ClusterWiring(config, {
      time,
      logger: log.logger,
      store: own,
      onViewApplied: () => told.push(target.calls.length),
    });
    await unused.close();
    expect(wiring.controllerId).toBeUndefined();
    wiring.start(target, { host: '127.0.0.1', port: 7074 });
    await advance(500);
    expect(wiring.controllerId).toBe(4);
    await wiring.createTopics({ topics: [{ name: 'orders', numPartitions: 1, replicationFactor: 1 }] });
    await advance(500);
    expect(target.partition('orders')?.leader).toBe(4);
    own.partition();
    await advance(11_000);
    expect(target.calls.map((c) => c.kind)).toContain('resign');
    own.heal();
    expect(told).toEqual(target.calls.map((_, i) => i + 1));
  });

  it('fails ISR proposals before it has started, without a request', async () => {
    const revision = etcd.revision;
    const result = await wiring.isrChangeProposer.proposeIsr('t', 0, 0, 1, [4]);
    expect(result.kind).toBe('failed');
    expect(etcd.revision).toBe(revision);
  });

  describe('the cluster identity', () => {
    const local: DataDirIdentity = { mode: 'cluster', clusterId: 'w1', clusterUuid: 'uuid-a', nodeId: 4 };
    let written: DataDirIdentity[];
    let fatal: Error[];

    function identifiedWiring(): ClusterWiring {
      written = [];
      fatal = [];
      return new ClusterWiring(config, {
        time,
        logger: log.logger,
        store,
        newClusterUuid: () => 'uuid-new',
        writeDataDirIdentity: (identity) => written.push(identity),
        onFatalError: (error) => fatal.push(error),
      });
    }

    beforeEach(async () => {
      // The default wiring was never started; closing it closes its store, so this one gets its own.
      await wiring.close();
      store = etcd.connect();
      wiring = identifiedWiring();
    });

    it('creates the identity for a new node on an empty etcd and writes it to the data directory', async () => {
      wiring.start(target, { host: '127.0.0.1', port: 7074 });
      await advance(500);
      expect(wiring.readinessProblem()).toBeUndefined();
      expect((await admin.get(clusterIdentityKey('w1'))).kv?.value).toBe(encodeClusterIdentity('uuid-new'));
      expect(written).toEqual([{ mode: 'cluster', clusterId: 'w1', clusterUuid: 'uuid-new', nodeId: 4 }]);
      expect(messages()).toContain('cluster identity created in etcd');
    });

    it("waits unready, logging one error, while etcd has lost the metadata of the directory's cluster", async () => {
      wiring.start(target, { host: '127.0.0.1', port: 7074 }, local);
      await advance(20_000);
      expect(wiring.readinessProblem()).toMatch(/etcd has lost cluster w1's metadata.*uuid-a/);
      expect(wiring.guard.isActive()).toBe(false);
      // Nothing registered, nothing created: only this node's report for a recovery.
      expect((await admin.range('/w1/')).kvs.map((kv) => kv.key)).toEqual(['/w1/recovery/4']);
      expect(log.lines.filter((line) => line.level === 50 && /etcd has lost/.test(line.msg))).toHaveLength(1);
      expect(written).toEqual([]);

      await admin.put(clusterIdentityKey('w1'), encodeClusterIdentity('uuid-a'));
      await advance(10_000);
      expect(wiring.readinessProblem()).toBeUndefined();
      expect((await admin.get(nodeKey('w1', 4))).kv).toBeDefined();
    });

    it("stops the node when etcd's cluster is another one than the directory's", async () => {
      await admin.put(clusterIdentityKey('w1'), encodeClusterIdentity('uuid-b'));
      wiring.start(target, { host: '127.0.0.1', port: 7074 }, local);
      await advance(2_000);
      expect(fatal).toHaveLength(1);
      expect(fatal[0]).toBeInstanceOf(ClusterIdentityError);
      expect(fatal[0]!.message).toMatch(/uuid-b.*uuid-a/);
      expect(wiring.readinessProblem()).toBe(fatal[0]!.message);
      expect((await admin.get(nodeKey('w1', 4))).kv).toBeUndefined();
    });

    it('notices etcd losing its data under a running node, and logs it at error once', async () => {
      await admin.put(clusterIdentityKey('w1'), encodeClusterIdentity('uuid-a'));
      wiring.start(target, { host: '127.0.0.1', port: 7074 }, local);
      await advance(10_000);
      expect(wiring.readinessProblem()).toBeUndefined();
      await admin.txn({ compare: [], success: [{ type: 'delete', key: '/w1/', prefix: true }] });
      for (const lease of etcd.leaseIds()) await admin.revokeLease(lease);
      await advance(20_000);
      expect(wiring.readinessProblem()).toMatch(/etcd has lost cluster w1's metadata/);
      expect(log.lines.filter((line) => line.level === 50 && /etcd has lost/.test(line.msg))).toHaveLength(1);
      expect(fatal).toEqual([]);
    });
  });
});
