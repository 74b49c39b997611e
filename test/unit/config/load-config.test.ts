import type { CohortConfig, LoadConfigResult } from '../../../src/config';
import { CONFIG_SETTINGS, loadConfig } from '../../../src/config';

function configOf(result: LoadConfigResult): CohortConfig {
  if (!('config' in result)) throw new Error(`expected a config, got ${JSON.stringify(result)}`);
  return result.config;
}

function errorsOf(result: LoadConfigResult): readonly string[] {
  if (!('errors' in result)) throw new Error(`expected errors, got ${JSON.stringify(result)}`);
  return result.errors;
}

describe('loadConfig', () => {
  it('returns the defaults when given no flags and no environment', () => {
    const config = configOf(loadConfig([], {}));
    for (const spec of CONFIG_SETTINGS) expect(config[spec.key]).toBe(spec.defaultValue);
  });

  it('reads every setting from its flag', () => {
    const config = configOf(
      loadConfig(
        [
          '--listen',
          '0.0.0.0:9000',
          '--admin-listen',
          '0.0.0.0:9091',
          '--kafka-listen',
          '0.0.0.0:9093',
          '--kafka-advertised-address',
          'broker-1.internal:9093',
          '--kafka-auto-create-topics=false',
          '--kafka-connections-max-idle-ms',
          '30000',
          '--data-dir=/var/lib/cohort',
          '--manual-clock',
          '--log-level',
          'debug',
          '--shutdown-timeout-ms',
          '2500',
          '--token-file',
          '/etc/cohort/token',
          '--cluster-secret-file',
          '/etc/cohort/cluster-secret',
          '--tls-cert',
          '/etc/cohort/cert.pem',
          '--tls-key=/etc/cohort/key.pem',
          '--tls-client-ca',
          '/etc/cohort/ca.pem',
          '--insecure',
          '--max-message-bytes',
          '65536',
          '--max-calls-per-loop-turn',
          '0',
          '--max-streaming-calls-per-connection',
          '2',
          '--max-streaming-calls=20',
          '--watch-max-pending-groups',
          '7',
          '--watch-max-lag-ms=1500',
          '--heap-growing-percent',
          '0',
          '--max-groups',
          '100',
          '--offsets-retention-minutes=1440',
          '--offsets-retention-check-interval-ms',
          '1000',
          '--member-metadata-max-bytes',
          '2048',
          '--group-min-session-timeout-ms',
          '100',
          '--group-max-session-timeout-ms=200',
          '--group-initial-rebalance-delay-ms',
          '0',
          '--group-max-size',
          '3',
          '--offset-metadata-max-bytes',
          '10',
          '--cluster-id',
          'prod',
          '--node-id',
          '3',
          '--advertised-address',
          'node-3.internal:9000',
          '--node-session-timeout-ms',
          '4000',
          '--unclean-leader-election',
          '--etcd-endpoints',
          'https://10.0.0.1:2379,https://10.0.0.2:2379',
          '--etcd-tls-ca',
          '/etc/cohort/etcd-ca.pem',
          '--etcd-tls-cert',
          '/etc/cohort/etcd-client.pem',
          '--etcd-tls-key=/etc/cohort/etcd-client.key',
          '--etcd-username',
          'cohort',
          '--etcd-password-file',
          '/etc/cohort/etcd-password',
          '--min-insync-replicas=2',
          '--replica-lag-time-max-ms',
          '500',
          '--log-flush-interval-ms',
          '1000',
          '--log-flush-messages',
          '100',
          '--log-retention-ms',
          '-1',
          '--log-retention-bytes',
          '1048576',
          '--log-segment-bytes',
          '4096',
          '--truncate-corrupt-logs',
          '--group-max-metadata-bytes',
          '65536',
          '--group-max-committed-partitions',
          '500',
          '--max-open-files',
          '4096',
          '--offsets-topic-num-partitions',
          '7',
          '--offsets-topic-replication-factor',
          '2',
        ],
        {},
      ),
    );
    expect(config).toEqual({
      listen: '0.0.0.0:9000',
      adminListen: '0.0.0.0:9091',
      kafkaListen: '0.0.0.0:9093',
      kafkaAdvertisedAddress: 'broker-1.internal:9093',
      kafkaAutoCreateTopics: false,
      kafkaConnectionsMaxIdleMs: 30000,
      kafkaMaxRequestBytes: 104857600,
      dataDir: '/var/lib/cohort',
      manualClock: true,
      logLevel: 'debug',
      shutdownTimeoutMs: 2500,
      tokenFile: '/etc/cohort/token',
      token: '',
      clusterSecretFile: '/etc/cohort/cluster-secret',
      clusterSecret: '',
      tlsCert: '/etc/cohort/cert.pem',
      tlsKey: '/etc/cohort/key.pem',
      tlsClientCa: '/etc/cohort/ca.pem',
      insecure: true,
      maxMessageBytes: 65536,
      maxCallsPerLoopTurn: 0,
      maxStreamingCallsPerConnection: 2,
      maxStreamingCalls: 20,
      watchMaxPendingGroups: 7,
      watchMaxLagMs: 1500,
      heapGrowingPercent: 0,
      maxGroups: 100,
      groupMinSessionTimeoutMs: 100,
      groupMaxSessionTimeoutMs: 200,
      groupInitialRebalanceDelayMs: 0,
      groupMaxSize: 3,
      offsetMetadataMaxBytes: 10,
      memberMetadataMaxBytes: 2048,
      groupMaxMetadataBytes: 65536,
      groupMaxCommittedPartitions: 500,
      offsetsRetentionMinutes: 1440,
      offsetsRetentionCheckIntervalMs: 1000,
      etcdEndpoints: ['https://10.0.0.1:2379', 'https://10.0.0.2:2379'],
      etcdTlsCa: '/etc/cohort/etcd-ca.pem',
      etcdTlsCert: '/etc/cohort/etcd-client.pem',
      etcdTlsKey: '/etc/cohort/etcd-client.key',
      etcdUsername: 'cohort',
      etcdPasswordFile: '/etc/cohort/etcd-password',
      etcdPassword: '',
      clusterId: 'prod',
      nodeId: 3,
      advertisedAddress: 'node-3.internal:9000',
      nodeSessionTimeoutMs: 4000,
      uncleanLeaderElection: true,
      offsetsTopicNumPartitions: 7,
      offsetsTopicReplicationFactor: 2,
      minInsyncReplicas: 2,
      replicaLagTimeMaxMs: 500,
      logFlushIntervalMs: 1000,
      logFlushMessages: 100,
      logRetentionMs: -1,
      logRetentionBytes: 1048576,
      logSegmentBytes: 4096,
      truncateCorruptLogs: true,
      maxOpenFiles: 4096,
    });
  });

  it('reads every setting from its COHORT_ environment twin', () => {
    const config = configOf(
      loadConfig([], {
        COHORT_LISTEN: '[::1]:0',
        COHORT_ADMIN_LISTEN: 'off',
        COHORT_KAFKA_LISTEN: 'off',
        COHORT_KAFKA_ADVERTISED_ADDRESS: '127.0.0.1:19092',
        COHORT_KAFKA_AUTO_CREATE_TOPICS: 'no',
        COHORT_KAFKA_CONNECTIONS_MAX_IDLE_MS: '45000',
        COHORT_DATA_DIR: '/tmp/x',
        COHORT_MANUAL_CLOCK: 'true',
        COHORT_LOG_LEVEL: 'warn',
        COHORT_SHUTDOWN_TIMEOUT_MS: '0',
        COHORT_TOKEN: 'a-token-of-24-characters',
        COHORT_CLUSTER_SECRET: 'a-cluster-secret-of-32-characters',
        COHORT_TLS_CERT: 'cert.pem',
        COHORT_TLS_KEY: 'key.pem',
        COHORT_TLS_CLIENT_CA: '',
        COHORT_INSECURE: 'no',
        COHORT_MAX_MESSAGE_BYTES: '1024',
        COHORT_MAX_CALLS_PER_LOOP_TURN: '64',
        COHORT_MAX_STREAMING_CALLS_PER_CONNECTION: '3',
        COHORT_MAX_STREAMING_CALLS: '30',
        COHORT_WATCH_MAX_PENDING_GROUPS: '8',
        COHORT_WATCH_MAX_LAG_MS: '2500',
        COHORT_HEAP_GROWING_PERCENT: '300',
        COHORT_MAX_GROUPS: '1',
        COHORT_MEMBER_METADATA_MAX_BYTES: '0',
        COHORT_GROUP_MIN_SESSION_TIMEOUT_MS: '1',
        COHORT_GROUP_MAX_SESSION_TIMEOUT_MS: '2',
        COHORT_GROUP_INITIAL_REBALANCE_DELAY_MS: '5',
        COHORT_GROUP_MAX_SIZE: '7',
        COHORT_OFFSET_METADATA_MAX_BYTES: '0',
        COHORT_CLUSTER_ID: 'c.2',
        COHORT_NODE_ID: '0',
        COHORT_ADVERTISED_ADDRESS: '[::1]:7000',
        COHORT_NODE_SESSION_TIMEOUT_MS: '2000',
        COHORT_UNCLEAN_LEADER_ELECTION: 'yes',
        COHORT_ETCD_ENDPOINTS: 'https://127.0.0.1:2379',
        COHORT_ETCD_TLS_CA: 'etcd-ca.pem',
        COHORT_ETCD_TLS_CERT: 'etcd-client.pem',
        COHORT_ETCD_TLS_KEY: 'etcd-client.key',
        COHORT_ETCD_USERNAME: 'cohort',
        COHORT_ETCD_PASSWORD_FILE: '',
        COHORT_ETCD_PASSWORD: 'an etcd password',
        COHORT_MIN_INSYNC_REPLICAS: '3',
        COHORT_REPLICA_LAG_TIME_MAX_MS: '100',
        COHORT_LOG_FLUSH_INTERVAL_MS: '-1',
        COHORT_LOG_FLUSH_MESSAGES: '1',
        COHORT_LOG_RETENTION_MS: '60000',
        COHORT_LOG_RETENTION_BYTES: '-1',
        COHORT_LOG_SEGMENT_BYTES: '1024',
        COHORT_TRUNCATE_CORRUPT_LOGS: 'true',
        COHORT_GROUP_MAX_METADATA_BYTES: '0',
        COHORT_GROUP_MAX_COMMITTED_PARTITIONS: '1',
        COHORT_MAX_OPEN_FILES: '0',
        COHORT_OFFSETS_TOPIC_NUM_PARTITIONS: '1',
        COHORT_OFFSETS_TOPIC_REPLICATION_FACTOR: '5',
      }),
    );
    expect(config).toEqual({
      listen: '[::1]:0',
      adminListen: 'off',
      kafkaListen: 'off',
      kafkaAdvertisedAddress: '127.0.0.1:19092',
      kafkaAutoCreateTopics: false,
      kafkaConnectionsMaxIdleMs: 45000,
      kafkaMaxRequestBytes: 104857600,
      dataDir: '/tmp/x',
      manualClock: true,
      logLevel: 'warn',
      shutdownTimeoutMs: 0,
      tokenFile: '',
      token: 'a-token-of-24-characters',
      clusterSecretFile: '',
      clusterSecret: 'a-cluster-secret-of-32-characters',
      tlsCert: 'cert.pem',
      tlsKey: 'key.pem',
      tlsClientCa: '',
      insecure: false,
      maxMessageBytes: 1024,
      maxCallsPerLoopTurn: 64,
      maxStreamingCallsPerConnection: 3,
      maxStreamingCalls: 30,
      watchMaxPendingGroups: 8,
      watchMaxLagMs: 2500,
      heapGrowingPercent: 300,
      maxGroups: 1,
      groupMinSessionTimeoutMs: 1,
      groupMaxSessionTimeoutMs: 2,
      groupInitialRebalanceDelayMs: 5,
      groupMaxSize: 7,
      offsetMetadataMaxBytes: 0,
      memberMetadataMaxBytes: 0,
      groupMaxMetadataBytes: 0,
      groupMaxCommittedPartitions: 1,
      offsetsRetentionMinutes: 10080,
      offsetsRetentionCheckIntervalMs: 600000,
      etcdEndpoints: ['https://127.0.0.1:2379'],
      etcdTlsCa: 'etcd-ca.pem',
      etcdTlsCert: 'etcd-client.pem',
      etcdTlsKey: 'etcd-client.key',
      etcdUsername: 'cohort',
      etcdPasswordFile: '',
      etcdPassword: 'an etcd password',
      clusterId: 'c.2',
      nodeId: 0,
      advertisedAddress: '[::1]:7000',
      nodeSessionTimeoutMs: 2000,
      uncleanLeaderElection: true,
      offsetsTopicNumPartitions: 1,
      offsetsTopicReplicationFactor: 5,
      minInsyncReplicas: 3,
      replicaLagTimeMaxMs: 100,
      logFlushIntervalMs: -1,
      logFlushMessages: 1,
      logRetentionMs: 60000,
      logRetentionBytes: -1,
      logSegmentBytes: 1024,
      truncateCorruptLogs: true,
      maxOpenFiles: 0,
    });
  });

  it('lets a flag win over the environment, and the environment win over the default', () => {
    const config = configOf(
      loadConfig(['--listen', '127.0.0.1:1'], { COHORT_LISTEN: '127.0.0.1:2', COHORT_GROUP_MAX_SIZE: '9' }),
    );
    expect(config.listen).toBe('127.0.0.1:1');
    expect(config.groupMaxSize).toBe(9);
  });

  it('treats an empty environment variable as unset', () => {
    expect(configOf(loadConfig([], { COHORT_LISTEN: '' })).listen).toBe('127.0.0.1:7070');
  });

  it('reads boolean flags with an explicit value and boolean words from the environment', () => {
    expect(configOf(loadConfig(['--manual-clock=false'], { COHORT_MANUAL_CLOCK: 'true' })).manualClock).toBe(
      false,
    );
    expect(configOf(loadConfig([], { COHORT_MANUAL_CLOCK: '1' })).manualClock).toBe(true);
    expect(configOf(loadConfig([], { COHORT_MANUAL_CLOCK: 'no' })).manualClock).toBe(false);
  });

  it('reads --manual-clock=running and COHORT_MANUAL_CLOCK=running as the running clock', () => {
    expect(configOf(loadConfig(['--manual-clock=running'], {})).manualClock).toBe('running');
    expect(configOf(loadConfig(['--manual-clock=RUNNING'], {})).manualClock).toBe('running');
    expect(configOf(loadConfig([], { COHORT_MANUAL_CLOCK: 'running' })).manualClock).toBe('running');
    expect(configOf(loadConfig(['--manual-clock'], { COHORT_MANUAL_CLOCK: 'running' })).manualClock).toBe(
      true,
    );
    expect(configOf(loadConfig(['--manual-clock=true'], {})).manualClock).toBe(true);
    expect(configOf(loadConfig([], {})).manualClock).toBe(false);
  });

  it('refuses any other --manual-clock value, naming the three it takes', () => {
    const reason = 'must be true (a clock that stands still), running (one that follows wall time) or false';
    expect(errorsOf(loadConfig(['--manual-clock=run'], {})).join('\n')).toContain(
      `--manual-clock ${reason}, got 'run'`,
    );
    expect(errorsOf(loadConfig([], { COHORT_MANUAL_CLOCK: 'frozen' })).join('\n')).toContain(
      `COHORT_MANUAL_CLOCK ${reason}, got 'frozen'`,
    );
  });

  it('freezes the configuration it returns', () => {
    const config = configOf(loadConfig([], {}));
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names both settings and their values when the minimum session timeout exceeds the maximum', () => {
    const errors = errorsOf(
      loadConfig(['--group-min-session-timeout-ms', '7000', '--group-max-session-timeout-ms', '6000'], {}),
    );
    expect(errors).toEqual([
      '--group-min-session-timeout-ms (7000) must be <= --group-max-session-timeout-ms (6000)',
    ]);
  });

  it('names the environment variable and marks defaults when a relation between settings is broken', () => {
    const errors = errorsOf(loadConfig([], { COHORT_GROUP_MIN_SESSION_TIMEOUT_MS: '1800001' }));
    expect(errors).toEqual([
      'COHORT_GROUP_MIN_SESSION_TIMEOUT_MS (1800001) must be <= --group-max-session-timeout-ms (default 1800000)',
    ]);
  });

  it('lists every problem at once instead of stopping at the first', () => {
    const errors = errorsOf(
      loadConfig(
        ['--listen', 'nowhere', '--group-max-size', '0', '--log-level', 'loud', '--bogus', 'x', 'stray'],
        { COHORT_MANUAL_CLOCK: 'maybe', COHORT_GROUP_INITIAL_REBALANCE_DELAY_MS: '-1' },
      ),
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.stringContaining("--listen ('nowhere') must be HOST:PORT"),
        '--group-max-size (0) must be >= 1',
        "--log-level ('loud') must be one of fatal, error, warn, info, debug, trace, silent",
        'unknown flag --bogus',
        expect.stringContaining("unexpected argument 'stray'"),
        "COHORT_MANUAL_CLOCK must be true (a clock that stands still), running (one that follows wall time) or false, got 'maybe'",
        'COHORT_GROUP_INITIAL_REBALANCE_DELAY_MS (-1) must be >= 0',
      ]),
    );
    expect(errors).toHaveLength(7);
  });

  it('rejects text that is not a whole number, including forms Number() would accept', () => {
    for (const text of ['', '1e3', '0x10', '6_000', '1.5', 'ten']) {
      const errors = errorsOf(loadConfig([`--group-max-size=${text}`], {}));
      expect(errors).toEqual([`--group-max-size must be a whole number, got '${text}'`]);
    }
  });

  it('rejects integers beyond the int32 range Kafka uses', () => {
    expect(errorsOf(loadConfig(['--group-max-size', '2147483648'], {}))).toEqual([
      '--group-max-size (2147483648) must be <= 2147483647',
    ]);
  });

  it("bounds the heap growing percent by V8's own largest factor", () => {
    expect(errorsOf(loadConfig(['--heap-growing-percent', '301'], {}))).toEqual([
      '--heap-growing-percent (301) must be <= 300',
    ]);
    expect(errorsOf(loadConfig([], { COHORT_HEAP_GROWING_PERCENT: '-1' }))).toHaveLength(1);
  });

  it('suggests the closest flag for a misspelt one', () => {
    expect(errorsOf(loadConfig(['--lisen', '127.0.0.1:1'], {}))).toEqual([
      'unknown flag --lisen; did you mean --listen?',
    ]);
  });

  it('says a flag needs a value when none follows it', () => {
    expect(errorsOf(loadConfig(['--listen'], {}))).toEqual([
      '--listen needs a value, e.g. --listen 127.0.0.1:7070',
    ]);
    expect(errorsOf(loadConfig(['--data-dir', '--manual-clock'], {}))).toEqual([
      '--data-dir needs a value, e.g. --data-dir ./data',
    ]);
  });

  it('reads a negative number as the value of the flag before it', () => {
    expect(errorsOf(loadConfig(['--group-max-size', '-5'], {}))).toEqual([
      '--group-max-size (-5) must be >= 1',
    ]);
  });

  it('refuses a flag given twice rather than guessing which one was meant', () => {
    expect(errorsOf(loadConfig(['--listen', 'localhost:1', '--listen=localhost:2'], {}))).toEqual([
      "--listen is given twice ('localhost:1' and 'localhost:2'); give it once",
    ]);
  });

  it('warns about unknown COHORT_ variables without failing', () => {
    const result = loadConfig([], { COHORT_LISTN: 'x', PATH: '/bin' });
    expect('config' in result && result.warnings).toEqual([
      'ignoring unknown environment variable COHORT_LISTN; did you mean COHORT_LISTEN?',
    ]);
  });

  it('returns the help text for --help or -h, even next to invalid flags', () => {
    for (const argv of [['--help'], ['-h'], ['--bogus', '--help']]) {
      const result = loadConfig(argv, {});
      expect('help' in result && result.help).toContain('--group-max-session-timeout-ms MS');
    }
  });

  it('ignores the -- separator npm puts before forwarded arguments', () => {
    expect(configOf(loadConfig(['--', '--listen', '127.0.0.1:0'], {})).listen).toBe('127.0.0.1:0');
  });

  it('accepts the listen forms a user may write and rejects broken ones', () => {
    for (const listen of [
      'localhost:7070',
      '0.0.0.0:0',
      '[::]:7070',
      '[::1]:65535',
      'cohort-1.internal:80',
      'unix:cohort.sock',
      'unix:/run/cohort/cohort.sock',
      'unix:///run/cohort/cohort.sock',
    ]) {
      expect(configOf(loadConfig(['--listen', listen, '--insecure'], {})).listen).toBe(listen);
    }
    for (const listen of [
      '7070',
      ':7070',
      '127.0.0.1:',
      '127.0.0.1:65536',
      '::1:7070',
      'a b:1',
      '127.0.0.1:-1',
      'unix:',
      'unix://',
    ]) {
      expect(errorsOf(loadConfig([`--listen=${listen}`], {}))).toHaveLength(1);
    }
  });
});
