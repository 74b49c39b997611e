/**
 * The cluster secret of the replication tests' nodes (`COHORT_CLUSTER_SECRET`): cluster mode
 * refuses to start without one. Random, so the weak-secret warning stays out of the tests' logs.
 */
export const TEST_CLUSTER_SECRET = 'q7Hk2VtN9wXc4RzL0pB6mYs3JdF8aGe1TuQ5iKoW2nE';

/** The same, as the environment of a spawned cohort process. */
export const TEST_CLUSTER_SECRET_ENV: Readonly<Record<string, string>> = Object.freeze({
  COHORT_CLUSTER_SECRET: TEST_CLUSTER_SECRET,
});
