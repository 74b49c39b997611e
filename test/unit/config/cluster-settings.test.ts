import type { LoadConfigResult } from '../../../src/config';
import { createConfig, loadConfig } from '../../../src/config';
import { TEST_CLUSTER_SECRET, TEST_CLUSTER_SECRET_ENV as SECRET } from '../../support/cluster-secret';

function errorsOf(result: LoadConfigResult): readonly string[] {
  if (!('errors' in result)) throw new Error(`expected errors, got ${JSON.stringify(result)}`);
  return result.errors;
}

function configOf(
  result: LoadConfigResult,
): NonNullable<Extract<LoadConfigResult, { config: unknown }>['config']> {
  if (!('config' in result) || result.config === undefined) {
    throw new Error(`expected a config, got ${JSON.stringify(result)}`);
  }
  return result.config;
}

const ETCD = ['--etcd-endpoints', 'http://127.0.0.1:2379'];

describe('the cluster settings', () => {
  it('defaults to one node on its own: no etcd endpoints, cluster id cohort, 10 s sessions, clean elections only', () => {
    const config = createConfig({});
    expect(config.etcdEndpoints).toEqual([]);
    expect(config.clusterId).toBe('cohort');
    expect(config.advertisedAddress).toBe('');
    expect(config.nodeSessionTimeoutMs).toBe(10_000);
    expect(config.uncleanLeaderElection).toBe(false);
  });

  it("defaults the offsets topic to Kafka's 50 partitions of 3 replicas, and refuses counts it cannot create", () => {
    const config = createConfig({});
    expect([config.offsetsTopicNumPartitions, config.offsetsTopicReplicationFactor]).toEqual([50, 3]);
    expect(
      configOf(
        loadConfig([...ETCD, '--node-id', '1', '--offsets-topic-num-partitions', '3'], {
          ...SECRET,
          COHORT_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
        }),
      ),
    ).toMatchObject({ offsetsTopicNumPartitions: 3, offsetsTopicReplicationFactor: 1 });
    const errors = errorsOf(
      loadConfig(['--offsets-topic-num-partitions', '10001', '--offsets-topic-replication-factor', '0'], {}),
    );
    expect(errors).toEqual([
      '--offsets-topic-num-partitions (10001) must be <= 10000',
      '--offsets-topic-replication-factor (0) must be >= 1',
    ]);
  });

  it('reads the endpoints as comma-separated URLs from the flag or COHORT_ETCD_ENDPOINTS', () => {
    const fromEnv = configOf(
      loadConfig(['--node-id', '1'], {
        ...SECRET,
        COHORT_ETCD_ENDPOINTS: 'http://10.0.0.1:2379, http://10.0.0.2:2379',
      }),
    );
    expect(fromEnv.etcdEndpoints).toEqual(['http://10.0.0.1:2379', 'http://10.0.0.2:2379']);
    const fromFlags = configOf(
      loadConfig(
        [
          ...ETCD,
          '--node-id',
          '3',
          '--cluster-id',
          'prod-1',
          '--advertised-address',
          'node-3.internal:7070',
          '--node-session-timeout-ms',
          '6000',
          '--unclean-leader-election',
        ],
        SECRET,
      ),
    );
    expect(fromFlags).toMatchObject({
      etcdEndpoints: ['http://127.0.0.1:2379'],
      nodeId: 3,
      clusterId: 'prod-1',
      advertisedAddress: 'node-3.internal:7070',
      nodeSessionTimeoutMs: 6000,
      uncleanLeaderElection: true,
    });
  });

  it('refuses endpoints the etcd client cannot dial, naming the flag', () => {
    expect(errorsOf(loadConfig(['--etcd-endpoints', 'grpc://e:2379', '--node-id', '1'], SECRET))).toEqual([
      "--etcd-endpoints ('grpc://e:2379'): etcd endpoint 'grpc://e:2379': expected http://host:port or " +
        'https://host:port, e.g. --etcd-endpoints http://127.0.0.1:2379',
    ]);
    expect(
      errorsOf(
        loadConfig(['--node-id', '1'], { ...SECRET, COHORT_ETCD_ENDPOINTS: 'http://a:1,http://b:2' }),
      )[0],
    ).toMatch(/^COHORT_ETCD_ENDPOINTS \('http:\/\/a:1,http:\/\/b:2'\).*IPv4/);
  });

  it('requires an explicit --node-id in cluster mode', () => {
    expect(errorsOf(loadConfig(ETCD, SECRET))).toEqual([
      "--node-id is required with --etcd-endpoints ('http://127.0.0.1:2379'): give every node of the " +
        'cluster its own id, e.g. --node-id 1',
    ]);
    // Given explicitly, 0 is as good an id as any.
    expect(configOf(loadConfig([...ETCD, '--node-id', '0'], SECRET)).nodeId).toBe(0);
    expect(
      createConfig({
        etcdEndpoints: ['http://127.0.0.1:2379'],
        nodeId: 0,
        clusterSecret: TEST_CLUSTER_SECRET,
      }).nodeId,
    ).toBe(0);
  });

  it('asks for --advertised-address when the listen address binds every interface', () => {
    expect(
      errorsOf(loadConfig([...ETCD, '--node-id', '1', '--listen', '0.0.0.0:7070', '--insecure'], SECRET)),
    ).toEqual([
      "--advertised-address is required with --etcd-endpoints ('http://127.0.0.1:2379') when --listen " +
        "('0.0.0.0:7070') names no host other nodes can connect to: give --advertised-address HOST:PORT, " +
        'e.g. --advertised-address node-1.internal:7070',
    ]);
    expect(
      configOf(
        loadConfig(
          [
            ...ETCD,
            '--node-id',
            '1',
            '--listen',
            '[::]:7070',
            '--insecure',
            '--advertised-address',
            'n1:7070',
          ],
          SECRET,
        ),
      ).advertisedAddress,
    ).toBe('n1:7070');
    // Without a cluster nobody needs it.
    expect(configOf(loadConfig(['--listen', '0.0.0.0:7070', '--insecure'], {})).advertisedAddress).toBe('');
  });

  it('refuses an advertised address others could not connect to', () => {
    for (const address of ['0.0.0.0:7070', 'n1:0', 'n1']) {
      expect(
        errorsOf(loadConfig([...ETCD, '--node-id', '1', '--advertised-address', address], SECRET))[0],
      ).toContain(
        `--advertised-address ('${address}') must be the HOST:PORT other nodes and clients connect to`,
      );
    }
  });

  it('keeps the node session timeout at or above etcd minimum TTL of 2 s', () => {
    expect(errorsOf(loadConfig(['--node-session-timeout-ms', '1999'], SECRET))).toEqual([
      '--node-session-timeout-ms (1999) must be >= 2000',
    ]);
  });

  it('refuses cluster names that are not one path segment', () => {
    expect(errorsOf(loadConfig(['--cluster-id', 'a/b'], SECRET))[0]).toContain(
      "--cluster-id ('a/b') must be 1 to 64 letters, digits",
    );
  });

  it('requires the cluster secret in cluster mode: its nodes replicate to each other', () => {
    expect(errorsOf(loadConfig([...ETCD, '--node-id', '1'], {}))).toEqual([
      "--etcd-endpoints ('http://127.0.0.1:2379') makes this process a cluster node, and replication needs " +
        'a cluster secret so that only a node can fetch as a follower: give every node the same ' +
        '--cluster-secret-file or COHORT_CLUSTER_SECRET (e.g. `openssl rand -base64 32`), distinct from the ' +
        'bearer token',
    ]);
  });
});
