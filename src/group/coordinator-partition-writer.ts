/**
 * What the group layer needs of one `__consumer_offsets` partition that this node leads, and all it knows
 * of it (Kafka's PartitionWriter with the loader beside it): a place where its records are appended as
 * leader at one leader epoch and read back, in order, when the partition is loaded. The records are the
 * group layer's (`records/`); the writer stores them as opaque keys and values and never decodes them. The
 * log layer implements it (`ConsumerOffsetsWriter`); a coordinator without a log has an
 * InMemoryPartitionWriter; a test writes its own.
 *
 * One writer serves one election: when this node stops leading the partition at `leaderEpoch`, the writer
 * is resigned and nothing written through it completes any more.
 */
export interface CoordinatorPartitionWriter {
  /** "__consumer_offsets-<index>", for messages. */
  readonly key: string;
  /** The leader epoch every append is made at. */
  readonly leaderEpoch: number;
  /** True once `load` has finished and until the writer is resigned: appends are accepted. */
  readonly isLoaded: boolean;
  /** True once this node no longer leads the partition at `leaderEpoch`. */
  readonly isResigned: boolean;
  /**
   * True for a partition whose appends are committed as they are made (InMemoryPartitionWriter): its
   * `append` never rejects, and the shard ends each write before the handler that made it goes on. Absent
   * for a log, whose appends commit later.
   */
  readonly commitsOnAppend?: boolean;
  /**
   * Reads the partition from its start to the log end offset it has now, handing each record to `replay`
   * in offset order (in bounded steps, yielding to the event loop between them), then waits until the high
   * watermark covers what was read, so that nothing a failover could still take back is served. Call once;
   * appends are refused (COORDINATOR_LOAD_IN_PROGRESS) until it resolves. Rejects with
   * NOT_LEADER_OR_FOLLOWER if the writer is resigned meanwhile.
   */
  load(replay: (record: CoordinatorLogRecord) => void): Promise<CoordinatorLoadSummary>;
  /**
   * Appends `records` as one batch (a crash keeps all or none of them) and resolves once it is committed
   * (the high watermark passed it with the in-sync replicas at min.insync.replicas, and the leader's fsync
   * covers it) and every earlier append has resolved or failed: appends complete in the order they were
   * made. Rejects with a CohortError carrying the log's code: COORDINATOR_LOAD_IN_PROGRESS before the load
   * ended, NOT_LEADER_OR_FOLLOWER once the writer is resigned (also for an append that commits after
   * that), NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT after the commit timeout, or a storage
   * error.
   */
  append(records: readonly CoordinatorRecordToWrite[]): Promise<void>;
}

/** A record to append: key and value as the group layer encoded them; a null value is a tombstone. */
export interface CoordinatorRecordToWrite {
  readonly key: Buffer;
  readonly value: Buffer | null;
  /** Wall-clock time the record describes (a commit's, a group's last change); default the append time. */
  readonly timestampMs?: number;
}

/** A record read back by a load, with its offset in the partition. */
export interface CoordinatorLogRecord {
  readonly offset: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}

/** What a load read. */
export interface CoordinatorLoadSummary {
  readonly records: number;
  readonly bytes: number;
  /** Offsets [startOffset, endOffset) were read. */
  readonly startOffset: number;
  readonly endOffset: number;
  /** Regions of the log skipped because they held no valid batch, and their bytes. */
  readonly corruptBatches: number;
  readonly corruptBytes: number;
}

/** What a shard's load read (the writer's summary) and brought back (the shard's replay of it). */
export interface CoordinatorLoadResult extends CoordinatorLoadSummary {
  /** Groups whose latest metadata record is not a tombstone. */
  readonly groups: number;
  /** Committed offsets, over every group. */
  readonly offsets: number;
  /** Records skipped because their key or value could not be decoded. */
  readonly corruptRecords: number;
}
