/**
 * A record as the log stores it: Kafka's record fields, with offsets and timestamps as safe integers.
 *
 * Keys and values are `null` when absent (Kafka's null). A record whose value is null or empty is a
 * tombstone: in a compacted log it deletes its key (see `log-cleaner.ts`).
 */
export interface RecordHeader {
  readonly key: string;
  readonly value: Buffer;
}

export interface LogRecord {
  readonly offset: number;
  readonly timestampMs: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly RecordHeader[];
  /**
   * The epoch of the leader that assigned the offset (its batch's partitionLeaderEpoch); -1 for records
   * written before cohort stored leader epochs (Kafka's NO_PARTITION_LEADER_EPOCH).
   */
  readonly leaderEpoch: number;
}

/** What a producer hands the leader: no offset yet; a missing timestamp becomes the append time. */
export interface SimpleRecord {
  readonly timestampMs?: number;
  readonly key?: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers?: readonly { readonly key: string; readonly value: Uint8Array }[];
}

/** Shared so that records without headers allocate nothing for them. */
export const NO_HEADERS: readonly RecordHeader[] = Object.freeze([]);

/** A tombstone deletes its key when a compacted log is cleaned. The wire has no null bytes, so empty counts. */
export function isTombstone(record: { readonly value: Uint8Array | null }): boolean {
  return record.value === null || record.value.length === 0;
}
