/**
 * Every default of cohort's configuration, as named constants. This layer imports nothing from `src`, so
 * the group defaults are repeated here rather than imported from `src/group/group-config.ts`; a unit test
 * asserts the two sets are equal, so they cannot drift. The group defaults are Kafka's broker defaults.
 */

/** The largest Java `int`: Kafka's group settings are ints, and session timeouts travel as int32. */
export const INT32_MAX = 2_147_483_647;

export const DEFAULT_LISTEN = '127.0.0.1:7070';
export const DEFAULT_DATA_DIR = './data';
export const DEFAULT_MANUAL_CLOCK = false;
export const DEFAULT_LOG_LEVEL = 'info';

/** group.min.session.timeout.ms */
export const DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS = 6_000;
/** group.max.session.timeout.ms */
export const DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS = 1_800_000;
/** group.initial.rebalance.delay.ms (KIP-134) */
export const DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS = 3_000;
/** group.max.size (KIP-389): Kafka's Integer.MAX_VALUE, i.e. unlimited. */
export const DEFAULT_GROUP_MAX_SIZE = INT32_MAX;
/** offset.metadata.max.bytes */
export const DEFAULT_OFFSET_METADATA_MAX_BYTES = 4_096;
