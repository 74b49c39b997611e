/** The coordinator's settings; names and defaults are Kafka's broker configs of the same meaning. */
export interface GroupConfig {
  /** group.min.session.timeout.ms */
  readonly groupMinSessionTimeoutMs: number;
  /** group.max.session.timeout.ms */
  readonly groupMaxSessionTimeoutMs: number;
  /** group.initial.rebalance.delay.ms (KIP-134) */
  readonly groupInitialRebalanceDelayMs: number;
  /** group.max.size (KIP-389); Kafka's default is Int.MaxValue, i.e. unlimited. */
  readonly groupMaxSize: number;
  /** offset.metadata.max.bytes */
  readonly offsetMetadataMaxBytes: number;
  /**
   * The most groups the coordinator holds; a request that would create one more gets GROUP_MAX_SIZE_REACHED.
   * Kafka has no such limit (default: unlimited). Groups a load brings back are never refused.
   */
  readonly maxGroups: number;
  /**
   * The most protocol metadata bytes (all protocols together) one JoinGroup may carry; a larger one gets
   * MESSAGE_TOO_LARGE and changes nothing. Kafka has no such limit.
   */
  readonly memberMetadataMaxBytes: number;
  /**
   * The most protocol metadata bytes all members of one group may hold together: a JoinGroup that would
   * take the group past it gets GROUP_MAX_SIZE_REACHED and changes nothing, so no rebalance starts whose
   * group record could not be stored (`__consumer_offsets` takes records up to 100 MiB). Kafka has no such
   * limit.
   */
  readonly groupMaxMetadataBytes: number;
  /**
   * The most partitions one group may hold committed offsets for; an OffsetCommit partition that would be
   * one more gets INVALID_COMMIT_OFFSET_SIZE. Kafka has no such limit.
   */
  readonly groupMaxCommittedPartitions: number;
  /**
   * offsets.retention.minutes: how long committed offsets outlive their use (KIP-211). An Empty group's
   * offsets expire this long after it became Empty; offsets committed outside any membership (a group that
   * never had members), this long after their own commit. A group with members keeps its offsets.
   */
  readonly offsetsRetentionMinutes: number;
  /** offsets.retention.check.interval.ms: how often expired offsets, and Empty groups without offsets, go. */
  readonly offsetsRetentionCheckIntervalMs: number;
}

export const DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS = 6_000;
export const DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS = 1_800_000;
export const DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS = 3_000;
export const DEFAULT_GROUP_MAX_SIZE = 2_147_483_647;
export const DEFAULT_OFFSET_METADATA_MAX_BYTES = 4_096;
export const DEFAULT_MAX_GROUPS = 2_147_483_647;
export const DEFAULT_MEMBER_METADATA_MAX_BYTES = 1_048_576;
export const DEFAULT_GROUP_MAX_METADATA_BYTES = 33_554_432;
export const DEFAULT_GROUP_MAX_COMMITTED_PARTITIONS = 100_000;
/** Seven days, Kafka's default since 2.0 (KIP-186). */
export const DEFAULT_OFFSETS_RETENTION_MINUTES = 10_080;
export const DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS = 600_000;

export const DEFAULT_GROUP_CONFIG: GroupConfig = Object.freeze({
  groupMinSessionTimeoutMs: DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS,
  groupMaxSessionTimeoutMs: DEFAULT_GROUP_MAX_SESSION_TIMEOUT_MS,
  groupInitialRebalanceDelayMs: DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS,
  groupMaxSize: DEFAULT_GROUP_MAX_SIZE,
  offsetMetadataMaxBytes: DEFAULT_OFFSET_METADATA_MAX_BYTES,
  maxGroups: DEFAULT_MAX_GROUPS,
  memberMetadataMaxBytes: DEFAULT_MEMBER_METADATA_MAX_BYTES,
  groupMaxMetadataBytes: DEFAULT_GROUP_MAX_METADATA_BYTES,
  groupMaxCommittedPartitions: DEFAULT_GROUP_MAX_COMMITTED_PARTITIONS,
  offsetsRetentionMinutes: DEFAULT_OFFSETS_RETENTION_MINUTES,
  offsetsRetentionCheckIntervalMs: DEFAULT_OFFSETS_RETENTION_CHECK_INTERVAL_MS,
});
