/**
 * What a write handler of a coordinator shard returns, as Kafka's CoordinatorResult: the records that
 * describe the change it made, and the response to give once they are committed.
 *
 * The handler validates the request against the shard's state as written (committed or not, as Kafka's
 * timeline structures at their latest epoch give it), changes that in-memory state synchronously, and
 * returns. The shard's runtime (`GroupShardState.scheduleWriteOperation`) appends `records` and answers
 * `response` once the append is committed; when the append fails, the change is reverted and the client
 * gets the failure's code instead. A result without records is answered at once: nothing was changed.
 *
 * Example: an OffsetCommit of topic-0 and topic-1, where topic-1's metadata is too large, returns one
 * offset commit record (topic-0) and the response [topic-0: NONE, topic-1: OFFSET_METADATA_TOO_LARGE];
 * should the append fail with NOT_ENOUGH_REPLICAS, the answer is [COORDINATOR_NOT_AVAILABLE,
 * OFFSET_METADATA_TOO_LARGE] and topic-0 is no longer counted as written.
 */
export interface CoordinatorResult<Response, Record> {
  readonly records: readonly Record[];
  readonly response: Response;
}
