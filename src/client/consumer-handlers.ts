/** A record as a consumer receives it. */
export interface ConsumerRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  /** The producer's timestamp, or the time of the append when the producer gave none (ms since the epoch). */
  readonly timestampMs: number;
  /** Null when the record has no key (the wire cannot tell an empty key from none). */
  readonly key: Buffer | null;
  /** The value; empty for an empty or a null value (`valueIsNull` tells them apart). */
  readonly value: Buffer;
  /** True for a null value (Kafka's null: a tombstone on a compacted topic), false for any bytes. */
  readonly valueIsNull: boolean;
  readonly headers: readonly { readonly key: string; readonly value: Buffer }[];
}

/** What `eachMessage` gets: one record, in offset order within its partition. */
export interface EachMessagePayload {
  readonly topic: string;
  readonly partition: number;
  readonly message: ConsumerRecord;
  /**
   * Aborted when the partition is lost (another member may own it now) or the stall guard fires: stop
   * work on the record at once. Your handler's promise is still awaited.
   */
  readonly signal: AbortSignal;
}

/** Records of one partition, as one Fetch returned them. */
export interface ConsumerBatch {
  readonly topic: string;
  readonly partition: number;
  /** The partition's high watermark when the records were read: the lag is `highWatermark - offset - 1`. */
  readonly highWatermark: bigint;
  /** In offset order; never empty. */
  readonly messages: readonly ConsumerRecord[];
}

/** What `eachBatch` gets. */
export interface EachBatchPayload {
  readonly batch: ConsumerBatch;
  /**
   * Marks every record up to and including `offset` as processed, so a commit (automatic, a rebalance's or
   * `close()`'s) covers it even if the batch does not finish. When the handler resolves, the whole batch
   * counts as processed.
   */
  resolveOffset(offset: bigint): void;
  /** False once the consumer is closing, or the partition was revoked, lost or paused: stop early. */
  isRunning(): boolean;
  /** Aborted when the partition is lost or the stall guard fires (see `EachMessagePayload.signal`). */
  readonly signal: AbortSignal;
}

/**
 * What `consumer.run` calls: exactly one of `eachMessage` or `eachBatch`. Calls are sequential: the next
 * record (or batch) is handed over only after the previous handler's promise resolved. A handler that
 * throws (or rejects) stops the consumer: what was processed before is committed (with `autoCommit`), the
 * consumer leaves the group, and `run()` rejects with the error; the record that failed is consumed again
 * by whoever gets its partition next.
 */
export interface RunHandlers {
  readonly eachMessage?: (payload: EachMessagePayload) => Promise<void> | void;
  readonly eachBatch?: (payload: EachBatchPayload) => Promise<void> | void;
}
