/**
 * A setting cohort once read and reads no more. Passing it is an error that says what replaced it, never
 * ignored: a process started with a role it silently does not take would serve as something else.
 */
export interface RemovedSetting {
  /** The key it had in CohortConfig (what `createConfig` overrides used). */
  readonly key: string;
  readonly flag: string;
  readonly env: string;
  /** What to do instead, the end of a sentence. */
  readonly instead: string;
}

/** Why the fixed replication roles went, and where their replacement is described. */
const USE_CLUSTER_MODE =
  'replication has one path, driven by the controller of a cluster: run every node with ' +
  '--etcd-endpoints, its own --node-id and the shared cluster secret (docs/cluster.md, "Run a cluster")';

export const REMOVED_SETTINGS: readonly RemovedSetting[] = Object.freeze([
  Object.freeze({
    key: 'replicaOf',
    flag: '--replica-of',
    env: 'COHORT_REPLICA_OF',
    instead: `a follower of a fixed leader is gone; ${USE_CLUSTER_MODE}`,
  }),
  Object.freeze({
    key: 'followers',
    flag: '--followers',
    env: 'COHORT_FOLLOWERS',
    instead: `a leader with fixed followers is gone; ${USE_CLUSTER_MODE}`,
  }),
]);

/** The message for a removed setting, named as the user gave it (`--followers`, `COHORT_FOLLOWERS`, ...). */
export function removedSettingProblem(setting: RemovedSetting, name: string): string {
  return `${name} is no longer a setting: ${setting.instead}`;
}
