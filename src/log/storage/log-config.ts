import { CohortError, ErrorCode } from '../../errors';
import { RECORD_BATCH_HEADER_BYTES } from './record-batch';

/**
 * The settings of one partition's log, with Kafka's topic-config names in camelCase and units in the
 * names. `createLogConfig` validates once and freezes; the server maps `--log-*` flags onto it.
 */
export interface LogConfig {
  /** Roll to a new segment before one would exceed this size (Kafka segment.bytes). */
  readonly segmentBytes: number;
  /** Roll a non-empty segment this long after it was created or opened (Kafka segment.ms). */
  readonly segmentMs: number;
  /** Bytes of log between two offset index entries (Kafka index.interval.bytes). */
  readonly indexIntervalBytes: number;
  /** The largest batch an append accepts (Kafka max.message.bytes). */
  readonly maxMessageBytes: number;
  /** Delete a segment once its newest record is older than this; -1 keeps forever (Kafka retention.ms). */
  readonly retentionMs: number;
  /** Delete oldest segments while the log exceeds this; -1 means no limit (Kafka retention.bytes). */
  readonly retentionBytes: number;
  /**
   * fsync once this many messages are unflushed (Kafka flush.messages). cohort's default, 1, fsyncs every
   * append before it may be acknowledged; concurrent appends share one fsync (group commit).
   */
  readonly flushMessages: number;
  /** fsync when unflushed data is this old, checked by `maybeFlush` (Kafka flush.ms). */
  readonly flushIntervalMs: number;
  /** `delete`: retention removes old segments. `compact`: the cleaner keeps the last record per key. */
  readonly cleanupPolicy: 'delete' | 'compact';
}

export const DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024;
export const DEFAULT_SEGMENT_MS = 7 * 24 * 60 * 60 * 1000;
export const DEFAULT_INDEX_INTERVAL_BYTES = 4096;
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 + 12;
export const DEFAULT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
export const DEFAULT_RETENTION_BYTES = -1;
export const DEFAULT_FLUSH_MESSAGES = 1;
/** Kafka's default is Long.MAX_VALUE: never by time. */
export const DEFAULT_FLUSH_INTERVAL_MS = Number.MAX_SAFE_INTEGER;
export const DEFAULT_CLEANUP_POLICY = 'delete';

/** Positions in a segment are 32-bit, as in Kafka. */
const MAX_SEGMENT_BYTES = 0x7fffffff;

export const DEFAULT_LOG_CONFIG: LogConfig = Object.freeze({
  segmentBytes: DEFAULT_SEGMENT_BYTES,
  segmentMs: DEFAULT_SEGMENT_MS,
  indexIntervalBytes: DEFAULT_INDEX_INTERVAL_BYTES,
  maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
  retentionMs: DEFAULT_RETENTION_MS,
  retentionBytes: DEFAULT_RETENTION_BYTES,
  flushMessages: DEFAULT_FLUSH_MESSAGES,
  flushIntervalMs: DEFAULT_FLUSH_INTERVAL_MS,
  cleanupPolicy: DEFAULT_CLEANUP_POLICY,
});

/** Applies overrides to the defaults, checks every value, and freezes the result. */
export function createLogConfig(overrides: Partial<LogConfig> = {}): LogConfig {
  const config: LogConfig = { ...DEFAULT_LOG_CONFIG, ...overrides };
  const problems: string[] = [];
  const integer = (key: keyof LogConfig, min: number, max = Number.MAX_SAFE_INTEGER, hint = ''): void => {
    const value = config[key];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
      problems.push(`${key} must be an integer in [${min}, ${max}]${hint}, got ${String(value)}`);
    }
  };
  integer('segmentBytes', RECORD_BATCH_HEADER_BYTES, MAX_SEGMENT_BYTES);
  integer('segmentMs', 1);
  integer('indexIntervalBytes', 0, MAX_SEGMENT_BYTES);
  integer('maxMessageBytes', RECORD_BATCH_HEADER_BYTES, MAX_SEGMENT_BYTES);
  integer('retentionMs', -1, Number.MAX_SAFE_INTEGER, ' (-1 keeps forever)');
  integer('retentionBytes', -1, Number.MAX_SAFE_INTEGER, ' (-1 means no limit)');
  integer('flushMessages', 1, Number.MAX_SAFE_INTEGER, ' (1 fsyncs every append)');
  integer('flushIntervalMs', 0);
  if (config.cleanupPolicy !== 'delete' && config.cleanupPolicy !== 'compact') {
    problems.push(`cleanupPolicy must be 'delete' or 'compact', got ${String(config.cleanupPolicy)}`);
  }
  if (problems.length > 0) throw new CohortError(ErrorCode.INVALID_CONFIG, problems.join('; '));
  return Object.freeze(config);
}
