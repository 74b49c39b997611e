import type { LoadConfigResult } from '../../../src/config';
import { createConfig, helpText, InvalidConfigError, loadConfig } from '../../../src/config';

function errorsOf(result: LoadConfigResult): readonly string[] {
  if (!('errors' in result)) throw new Error(`expected errors, got ${JSON.stringify(result)}`);
  return result.errors;
}

/** Fixed-role replication needs a cluster secret; the tests of other rules give one. */
const SECRET = { COHORT_CLUSTER_SECRET: 'Zq3v9Xw0bT7nKd2LpR8sYf4HcJ6mAe1U' };

describe('the replication and log settings', () => {
  it('reads --followers as distinct node ids in the order given', () => {
    const loaded = loadConfig(['--followers', '3,1, 2'], SECRET);
    expect('config' in loaded && loaded.config.followers).toEqual([3, 1, 2]);
    expect(createConfig({ followers: [5], clusterSecret: SECRET.COHORT_CLUSTER_SECRET }).followers).toEqual([
      5,
    ]);
  });

  it('refuses follower lists that are not node ids, or name a node twice or the leader itself', () => {
    expect(errorsOf(loadConfig(['--followers', '1,x'], {}))).toEqual([
      "--followers must be node ids separated by commas, e.g. 1,2; got '1,x'",
    ]);
    expect(errorsOf(loadConfig(['--followers', '1,1'], SECRET))).toEqual([
      "--followers ('1,1') names a node twice; give each follower once",
    ]);
    expect(errorsOf(loadConfig(['--followers', '0,1'], SECRET))).toEqual([
      "--followers ('0,1') must not include this process's own --node-id (default 0)",
    ]);
    expect(() => createConfig({ followers: [-1] })).toThrow(InvalidConfigError);
  });

  it('refuses a --replica-of that is not the address of a leader to connect to', () => {
    expect(errorsOf(loadConfig(['--replica-of', 'nowhere'], {}))[0]).toContain(
      "--replica-of ('nowhere') must be the HOST:PORT of a running leader",
    );
    expect(errorsOf(loadConfig(['--replica-of', '127.0.0.1:0'], {}))[0]).toContain('port from 1 to 65535');
    const loaded = loadConfig(['--replica-of', '127.0.0.1:7070', '--node-id', '1'], SECRET);
    expect('config' in loaded && loaded.config.replicaOf).toBe('127.0.0.1:7070');
  });

  it('refuses followers on a process that is itself a follower', () => {
    expect(
      errorsOf(loadConfig(['--node-id', '1', '--replica-of', '127.0.0.1:7070', '--followers', '2'], SECRET)),
    ).toEqual([
      "--followers ('2') is for a leader, but --replica-of ('127.0.0.1:7070') makes this process a " +
        'follower; followers do not have followers of their own',
    ]);
  });

  it('refuses --followers or --replica-of without a cluster secret, saying how to give one', () => {
    const [leader] = errorsOf(loadConfig(['--followers', '1,2'], {}));
    expect(leader).toContain("--followers ('1,2') replicates, and replication needs a cluster secret");
    const [follower] = errorsOf(loadConfig(['--node-id', '1', '--replica-of', '127.0.0.1:7070'], {}));
    expect(follower).toContain("--replica-of ('127.0.0.1:7070') replicates");
    for (const remedy of ['--cluster-secret-file', 'COHORT_CLUSTER_SECRET', 'openssl rand']) {
      expect(leader).toContain(remedy);
    }
    expect(() => createConfig({ followers: [1] })).toThrow(InvalidConfigError);
    expect(createConfig({ followers: [1], clusterSecretFile: '/run/secrets/cluster' }).followers).toEqual([
      1,
    ]);
    // A process that replicates nothing needs no secret.
    expect('config' in loadConfig(['--node-id', '1'], {})).toBe(true);
  });

  it('takes -1 or a positive interval for --log-flush-interval-ms, never 0', () => {
    expect(errorsOf(loadConfig(['--log-flush-interval-ms', '0'], {}))).toEqual([
      '--log-flush-interval-ms (0) must be -1 (never by time) or at least 1',
    ]);
    expect(errorsOf(loadConfig([], { COHORT_LOG_FLUSH_INTERVAL_MS: '-2' }))).toEqual([
      'COHORT_LOG_FLUSH_INTERVAL_MS (-2) must be >= -1',
    ]);
  });

  it('keeps segments large enough for a batch and lag times positive', () => {
    expect(
      errorsOf(loadConfig(['--log-segment-bytes', '100', '--replica-lag-time-max-ms', '0'], {})),
    ).toEqual(['--replica-lag-time-max-ms (0) must be >= 1', '--log-segment-bytes (100) must be >= 1024']);
  });

  it('says "none" in --help for settings that are empty by default', () => {
    expect(helpText()).toContain('env COHORT_REPLICA_OF, default none');
    expect(helpText()).toContain('env COHORT_FOLLOWERS, default none');
  });
});
