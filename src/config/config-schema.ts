import type { CohortConfig, ConfigKey } from './cohort-config';
import { LOG_LEVELS } from './cohort-config';
import {
  DEFAULT_DATA_DIR,
  DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS,
  DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS,
  DEFAULT_GROUP_MAX_SIZE,
  DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS,
  DEFAULT_LISTEN,
  DEFAULT_LOG_LEVEL,
  DEFAULT_MANUAL_CLOCK,
  DEFAULT_OFFSET_METADATA_MAX_BYTES,
  INT32_MAX,
} from './defaults';

/** How a setting's text (flag or env value) is read. */
export type SettingKind = 'address' | 'path' | 'boolean' | 'integer' | 'logLevel';

export interface SettingSpec<K extends ConfigKey = ConfigKey> {
  readonly key: K;
  /** `--kebab-case` of the key. */
  readonly flag: string;
  /** `COHORT_SNAKE_CASE` of the key. */
  readonly env: string;
  readonly kind: SettingKind;
  /** Placeholder for the value in `--help`, e.g. `HOST:PORT`, `MS`. */
  readonly valueName: string;
  readonly defaultValue: CohortConfig[K];
  /** Inclusive bounds, for integers. */
  readonly min?: number;
  readonly max?: number;
  /** The Kafka broker config of the same meaning, when there is one. */
  readonly kafkaName?: string;
  readonly description: string;
}

/** `groupMaxSize` → `--group-max-size`. */
export function flagOf(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** `groupMaxSize` → `COHORT_GROUP_MAX_SIZE`. */
export function envOf(key: string): string {
  return `COHORT_${key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

function setting<K extends ConfigKey>(
  key: K,
  spec: Omit<SettingSpec<K>, 'key' | 'flag' | 'env'>,
): SettingSpec<K> {
  return Object.freeze({ key, flag: flagOf(key), env: envOf(key), ...spec });
}

/**
 * The one schema: every key, how it is read, its default and its bounds. A mapped type over
 * `CohortConfig` makes a key without a row a compile error. `--help`, `docs/configuration.md` (checked by a
 * test) and validation are all driven by it.
 */
export const CONFIG_SCHEMA: { readonly [K in ConfigKey]: SettingSpec<K> } = Object.freeze({
  listen: setting('listen', {
    kind: 'address',
    valueName: 'HOST:PORT',
    defaultValue: DEFAULT_LISTEN,
    description: 'Address the gRPC server binds. Port 0 picks a free port (the log line shows which).',
  }),
  dataDir: setting('dataDir', {
    kind: 'path',
    valueName: 'PATH',
    defaultValue: DEFAULT_DATA_DIR,
    description: 'Directory for durable state. Reserved for the log; nothing is written there yet.',
  }),
  manualClock: setting('manualClock', {
    kind: 'boolean',
    valueName: 'BOOL',
    defaultValue: DEFAULT_MANUAL_CLOCK,
    description:
      'Time moves only through the TestClock service (registered only in this mode), so tests drive ' +
      'rebalances and expiries without sleeping. Never use it in production.',
  }),
  logLevel: setting('logLevel', {
    kind: 'logLevel',
    valueName: 'LEVEL',
    defaultValue: DEFAULT_LOG_LEVEL,
    description: `Least severe level logged: ${LOG_LEVELS.join(', ')}.`,
  }),
  groupMinSessionTimeoutMs: setting('groupMinSessionTimeoutMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS,
    min: 0,
    max: INT32_MAX,
    kafkaName: 'group.min.session.timeout.ms',
    description: 'Smallest session timeout a member may ask for (else INVALID_SESSION_TIMEOUT).',
  }),
  groupMaxSessionTimeoutMs: setting('groupMaxSessionTimeoutMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS,
    min: 0,
    max: INT32_MAX,
    kafkaName: 'group.max.session.timeout.ms',
    description: 'Largest session timeout a member may ask for (else INVALID_SESSION_TIMEOUT).',
  }),
  groupInitialRebalanceDelayMs: setting('groupInitialRebalanceDelayMs', {
    kind: 'integer',
    valueName: 'MS',
    defaultValue: DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS,
    min: 0,
    max: INT32_MAX,
    kafkaName: 'group.initial.rebalance.delay.ms',
    description:
      'How long an Empty group waits for more members before its first rebalance completes; each new ' +
      'member extends the wait, up to the rebalance timeout (KIP-134).',
  }),
  groupMaxSize: setting('groupMaxSize', {
    kind: 'integer',
    valueName: 'N',
    defaultValue: DEFAULT_GROUP_MAX_SIZE,
    min: 1,
    max: INT32_MAX,
    kafkaName: 'group.max.size',
    description: `Most members one group may hold (else GROUP_MAX_SIZE_REACHED). ${INT32_MAX} = unlimited.`,
  }),
  offsetMetadataMaxBytes: setting('offsetMetadataMaxBytes', {
    kind: 'integer',
    valueName: 'BYTES',
    defaultValue: DEFAULT_OFFSET_METADATA_MAX_BYTES,
    min: 0,
    max: INT32_MAX,
    kafkaName: 'offset.metadata.max.bytes',
    description: 'Longest metadata string an offset commit may carry (else OFFSET_METADATA_TOO_LARGE).',
  }),
});

/** The schema's rows in declaration order (the order of `--help` and the docs). */
export const CONFIG_SETTINGS: readonly SettingSpec[] = Object.freeze(Object.values(CONFIG_SCHEMA));
