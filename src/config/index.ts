export type { CohortConfig, ConfigKey, LogLevel, ManualClockMode } from './cohort-config';
export { LOG_LEVELS, MANUAL_CLOCK_RUNNING } from './cohort-config';
export {
  ADMIN_LISTEN_OFF,
  KAFKA_LISTEN_OFF,
  DEFAULT_KAFKA_LISTEN,
  DEFAULT_KAFKA_MAX_REQUEST_BYTES,
  DEFAULT_ADMIN_LISTEN,
  DEFAULT_INSECURE,
  DEFAULT_MAX_GROUPS,
  DEFAULT_MAX_CALLS_PER_LOOP_TURN,
  DEFAULT_MAX_STREAMING_CALLS,
  DEFAULT_MAX_STREAMING_CALLS_PER_CONNECTION,
  DEFAULT_WATCH_MAX_LAG_MS,
  DEFAULT_WATCH_MAX_PENDING_GROUPS,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_MEMBER_METADATA_MAX_BYTES,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  MIN_MAX_MESSAGE_BYTES,
  MIN_TOKEN_LENGTH,
  DEFAULT_DATA_DIR,
  DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS,
  DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS,
  DEFAULT_GROUP_MAX_SIZE,
  DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS,
  DEFAULT_LISTEN,
  DEFAULT_LOG_LEVEL,
  DEFAULT_MANUAL_CLOCK,
  DEFAULT_OFFSET_METADATA_MAX_BYTES,
  DEFAULT_NODE_ID,
  DEFAULT_MIN_INSYNC_REPLICAS,
  DEFAULT_REPLICA_LAG_TIME_MAX_MS,
  DEFAULT_LOG_FLUSH_INTERVAL_MS,
  DEFAULT_LOG_FLUSH_MESSAGES,
  DEFAULT_LOG_RETENTION_MS,
  DEFAULT_LOG_RETENTION_BYTES,
  DEFAULT_LOG_SEGMENT_BYTES,
  DEFAULT_TRUNCATE_CORRUPT_LOGS,
  MIN_LOG_SEGMENT_BYTES,
  INT32_MAX,
} from './defaults';
export type { SettingKind, SettingSpec } from './config-schema';
export { CONFIG_SCHEMA, CONFIG_SETTINGS, envOf, flagOf } from './config-schema';
export type { ListenAddress } from './listen-address';
export { isLoopbackListen, parseListenAddress, parseUnixSocket, UNIX_SOCKET_PREFIX } from './listen-address';
export type { LoadConfigResult } from './load-config';
export { loadConfig } from './load-config';
export { createConfig } from './create-config';
export { InvalidConfigError } from './invalid-config-error';
export { helpText } from './help-text';
