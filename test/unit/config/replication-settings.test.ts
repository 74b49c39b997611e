import type { CohortConfig, LoadConfigResult } from '../../../src/config';
import { createConfig, helpText, InvalidConfigError, loadConfig } from '../../../src/config';

function errorsOf(result: LoadConfigResult): readonly string[] {
  if (!('errors' in result)) throw new Error(`expected errors, got ${JSON.stringify(result)}`);
  return result.errors;
}

/** Where a removed fixed-role setting sends its user: cluster mode, and the docs that run one. */
const TO_CLUSTER_MODE =
  'replication has one path, driven by the controller of a cluster: run every node with ' +
  '--etcd-endpoints, its own --node-id and the shared cluster secret (docs/cluster.md, "Run a cluster")';

describe('the replication and log settings', () => {
  it('refuses the removed --followers and --replica-of flags, saying what replaced them', () => {
    expect(errorsOf(loadConfig(['--node-id', '0', '--followers', '1,2'], {}))).toEqual([
      `--followers is no longer a setting: a leader with fixed followers is gone; ${TO_CLUSTER_MODE}`,
    ]);
    // Its value is not a stray argument of its own, in either spelling.
    expect(errorsOf(loadConfig(['--replica-of=leader:7070'], {}))).toEqual([
      `--replica-of is no longer a setting: a follower of a fixed leader is gone; ${TO_CLUSTER_MODE}`,
    ]);
    expect(errorsOf(loadConfig(['--replica-of', 'leader:7070', '--followers', '1'], {}))).toHaveLength(2);
  });

  it('refuses the removed COHORT_REPLICA_OF and COHORT_FOLLOWERS variables, but not empty ones', () => {
    expect(errorsOf(loadConfig([], { COHORT_REPLICA_OF: 'leader:7070', COHORT_FOLLOWERS: '1,2' }))).toEqual([
      `COHORT_REPLICA_OF is no longer a setting: a follower of a fixed leader is gone; ${TO_CLUSTER_MODE}`,
      `COHORT_FOLLOWERS is no longer a setting: a leader with fixed followers is gone; ${TO_CLUSTER_MODE}`,
    ]);
    // An orchestrator's VAR= is unset, as for every other variable.
    const loaded = loadConfig([], { COHORT_REPLICA_OF: '', COHORT_FOLLOWERS: '' });
    expect(loaded).toEqual({ config: expect.anything(), warnings: [] });
  });

  it('refuses the removed replicaOf and followers overrides of embedders', () => {
    const removed = { replicaOf: 'leader:7070', followers: [1] } as unknown as Partial<CohortConfig>;
    expect(() => createConfig(removed)).toThrow(InvalidConfigError);
    try {
      createConfig(removed);
    } catch (error) {
      expect((error as InvalidConfigError).problems).toEqual([
        `replicaOf is no longer a setting: a follower of a fixed leader is gone; ${TO_CLUSTER_MODE}`,
        `followers is no longer a setting: a leader with fixed followers is gone; ${TO_CLUSTER_MODE}`,
      ]);
    }
  });

  it('leaves the removed settings out of --help', () => {
    expect(helpText()).not.toMatch(/--replica-of|--followers|COHORT_REPLICA_OF|COHORT_FOLLOWERS/);
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
    expect(helpText()).toContain('env COHORT_ETCD_ENDPOINTS, default none');
    expect(helpText()).toContain('env COHORT_ADVERTISED_ADDRESS, default none');
  });
});
