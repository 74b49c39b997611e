import { CohortError, ErrorCode } from '../errors';

/**
 * The code an OffsetCommit (or DeleteGroups) client gets when the offset store failed, as Kafka converts
 * append errors for offset commits (`GroupMetadataManager.maybeConvertOffsetCommitError`): replication
 * trouble means "try the coordinator again", a lost leadership means "find the coordinator again", an
 * oversized batch is the commit's fault. Anything that is not a CohortError is an internal failure.
 * KAFKA_STORAGE_ERROR differs: Kafka answers NOT_COORDINATOR, since another broker takes the coordinator
 * over; cohort has one coordinator and its offline log stays offline until a restart, so a retriable
 * code would only make clients retry in vain.
 */
export function storeErrorCode(error: unknown): ErrorCode {
  if (!(error instanceof CohortError)) return ErrorCode.UNKNOWN_SERVER_ERROR;
  switch (error.code) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
      return ErrorCode.NOT_COORDINATOR;
    case ErrorCode.MESSAGE_TOO_LARGE:
    case ErrorCode.RECORD_LIST_TOO_LARGE:
    case ErrorCode.INVALID_FETCH_SIZE:
      return ErrorCode.INVALID_COMMIT_OFFSET_SIZE;
    case ErrorCode.KAFKA_STORAGE_ERROR:
    case ErrorCode.NONE:
      return ErrorCode.UNKNOWN_SERVER_ERROR;
    default:
      return error.code;
  }
}

/**
 * The code members get when a group's metadata record could not be stored, as Kafka converts append
 * errors in `GroupMetadataManager.storeGroup`: replication trouble → COORDINATOR_NOT_AVAILABLE, a lost
 * leadership → NOT_COORDINATOR, a timeout → REBALANCE_IN_PROGRESS (rejoin), a record too large is the
 * server's problem, not the group's → UNKNOWN_SERVER_ERROR.
 */
export function storeGroupErrorCode(error: unknown): ErrorCode {
  if (!(error instanceof CohortError)) return ErrorCode.UNKNOWN_SERVER_ERROR;
  switch (error.code) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
      return ErrorCode.NOT_COORDINATOR;
    case ErrorCode.REQUEST_TIMED_OUT:
      return ErrorCode.REBALANCE_IN_PROGRESS;
    case ErrorCode.MESSAGE_TOO_LARGE:
    case ErrorCode.RECORD_LIST_TOO_LARGE:
    case ErrorCode.INVALID_FETCH_SIZE:
    case ErrorCode.KAFKA_STORAGE_ERROR:
    case ErrorCode.NONE:
      return ErrorCode.UNKNOWN_SERVER_ERROR;
    default:
      return error.code;
  }
}
