import type { GroupMemberOptions, PartitionCounts } from './group-member-options';

/** Where a consumer starts in a partition its group has committed nothing for (Kafka's auto.offset.reset). */
export type AutoOffsetReset = 'earliest' | 'latest' | 'none';

/**
 * How to consume. Besides these, every `GroupMemberOptions` setting (session and rebalance timeouts,
 * heartbeats, the stall guard, static membership, assignors, `signal`) applies to the consumer's membership.
 * Durations in milliseconds; defaults are Kafka's consumer defaults unless said otherwise.
 */
export interface ConsumerOptions extends Omit<
  GroupMemberOptions,
  'clientId' | 'protocolType' | 'partitionsPerTopic'
> {
  /** The group to consume in. Its members share the topics' partitions. */
  readonly groupId: string;
  /** The topics to consume; at least one. */
  readonly topics: readonly string[];
  /**
   * Where to start in a partition the group has no committed offset for: `latest` (only new records, the
   * default), `earliest` (from the log start), or `none` (the consumer fails). Also applies when a
   * position falls outside the log (OFFSET_OUT_OF_RANGE).
   */
  readonly autoOffsetReset?: AutoOffsetReset;
  /**
   * Commit the offsets of processed records every `autoCommitIntervalMs`, and before giving partitions up
   * in a rebalance or on `close()`. Default true. With false, call `commit()` yourself (a `revoked`
   * listener is the place for the last commit of a partition).
   */
  readonly autoCommit?: boolean;
  /** Default 5,000. */
  readonly autoCommitIntervalMs?: number;
  /** How long a Fetch waits on the server for records (fetch.max.wait.ms). Default 500. */
  readonly maxWaitMs?: number;
  /** The bytes a Fetch waits for (fetch.min.bytes). Default 1. */
  readonly minBytes?: number;
  /** The most bytes one Fetch returns (the first record is returned even if larger). Default 2 MiB. */
  readonly maxBytes?: number;
  /** The most bytes one Fetch returns per partition (max.partition.fetch.bytes). Default 1 MiB. */
  readonly partitionMaxBytes?: number;
  /**
   * Partition counts for the assignor, when this consumer leads the group. Default: read from the server's
   * Metadata at each rebalance, for every topic, so members with other subscriptions are served too.
   */
  readonly partitionsPerTopic?: PartitionCounts;
}

/** The consumer-specific defaults (the membership's are `GROUP_MEMBER_DEFAULTS`). */
export const CONSUMER_DEFAULTS = Object.freeze({
  autoOffsetReset: 'latest' as AutoOffsetReset,
  autoCommit: true,
  autoCommitIntervalMs: 5_000,
  maxWaitMs: 500,
  minBytes: 1,
  maxBytes: 2 * 1024 * 1024,
  partitionMaxBytes: 1024 * 1024,
});

/** The consumer-specific settings, defaults filled in and checked. */
export interface ResolvedConsumerSettings {
  readonly autoOffsetReset: AutoOffsetReset;
  readonly autoCommit: boolean;
  readonly autoCommitIntervalMs: number;
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly partitionMaxBytes: number;
}

const INT32_MAX = 2_147_483_647;

/**
 * Fills in the consumer-specific defaults and checks them all at once; throws a RangeError listing every
 * problem. (The membership settings are checked by the group member.)
 */
export function resolveConsumerSettings(options: ConsumerOptions): ResolvedConsumerSettings {
  const problems: string[] = [];
  const d = CONSUMER_DEFAULTS;
  const whole = (name: string, value: number | undefined, fallback: number, min: number): number => {
    const v = value ?? fallback;
    if (!Number.isSafeInteger(v) || v < min || v > INT32_MAX) {
      problems.push(`${name} must be a whole number between ${min} and ${INT32_MAX}, got ${v}`);
    }
    return v;
  };
  if (!Array.isArray(options.topics) || options.topics.length === 0) {
    problems.push('topics must name at least one topic to consume');
  }
  const autoOffsetReset = options.autoOffsetReset ?? d.autoOffsetReset;
  if (!['earliest', 'latest', 'none'].includes(autoOffsetReset)) {
    problems.push(`autoOffsetReset must be earliest, latest or none, got ${String(autoOffsetReset)}`);
  }
  const autoCommit = options.autoCommit ?? d.autoCommit;
  if (typeof autoCommit !== 'boolean') problems.push('autoCommit must be true or false');
  const settings: ResolvedConsumerSettings = {
    autoOffsetReset,
    autoCommit,
    autoCommitIntervalMs: whole(
      'autoCommitIntervalMs',
      options.autoCommitIntervalMs,
      d.autoCommitIntervalMs,
      1,
    ),
    maxWaitMs: whole('maxWaitMs', options.maxWaitMs, d.maxWaitMs, 0),
    minBytes: whole('minBytes', options.minBytes, d.minBytes, 0),
    maxBytes: whole('maxBytes', options.maxBytes, d.maxBytes, 1),
    partitionMaxBytes: whole('partitionMaxBytes', options.partitionMaxBytes, d.partitionMaxBytes, 1),
  };
  if (problems.length > 0) throw new RangeError(`invalid consumer options:\n  - ${problems.join('\n  - ')}`);
  return Object.freeze(settings);
}
