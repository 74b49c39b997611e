import { CohortError, ErrorCode } from '../errors';

/**
 * What both of Kafka's conversions of a failed append agree on (`GroupMetadataManager`): replication
 * trouble means "try the coordinator again", a lost leadership means "find the coordinator again".
 * KAFKA_STORAGE_ERROR differs from Kafka, which answers NOT_COORDINATOR since another broker takes the
 * coordinator over; cohort has one coordinator and its offline log stays offline until a restart, so a
 * retriable code would only make clients retry in vain. Undefined for the codes the two conversions treat
 * differently.
 */
function sharedConversion(code: ErrorCode): ErrorCode | undefined {
  switch (code) {
    case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
      return ErrorCode.NOT_COORDINATOR;
    case ErrorCode.KAFKA_STORAGE_ERROR:
    case ErrorCode.NONE:
      return ErrorCode.UNKNOWN_SERVER_ERROR;
    default:
      return undefined;
  }
}

const isOversized = (code: ErrorCode): boolean =>
  code === ErrorCode.MESSAGE_TOO_LARGE ||
  code === ErrorCode.RECORD_LIST_TOO_LARGE ||
  code === ErrorCode.INVALID_FETCH_SIZE;

/**
 * The code an OffsetCommit (or DeleteGroups) client gets when its records' append failed, as Kafka converts
 * append errors for offset commits (`maybeConvertOffsetCommitError`): the shared conversion, and an
 * oversized batch is the commit's fault. Anything that is not a CohortError is an internal failure.
 */
export function storeErrorCode(error: unknown): ErrorCode {
  if (!(error instanceof CohortError)) return ErrorCode.UNKNOWN_SERVER_ERROR;
  if (isOversized(error.code)) return ErrorCode.INVALID_COMMIT_OFFSET_SIZE;
  return sharedConversion(error.code) ?? error.code;
}

/**
 * The code a request whose whole answer is a write's gets when the append failed (a LeaveGroup that
 * emptied its group), as Kafka's GroupCoordinatorService converts a failed write operation
 * (`handleOperationException`): the shared conversion, a timeout → COORDINATOR_NOT_AVAILABLE (try again),
 * and a record too large is the server's problem → UNKNOWN_SERVER_ERROR. NOT_ENOUGH_REPLICAS_AFTER_APPEND,
 * which Kafka 4's writes never meet (they append with acks=1 and wait for the HW), goes with
 * NOT_ENOUGH_REPLICAS, as the classic coordinator converted it.
 */
export function operationErrorCode(error: unknown): ErrorCode {
  if (!(error instanceof CohortError)) return ErrorCode.UNKNOWN_SERVER_ERROR;
  if (isOversized(error.code)) return ErrorCode.UNKNOWN_SERVER_ERROR;
  if (error.code === ErrorCode.REQUEST_TIMED_OUT) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
  return sharedConversion(error.code) ?? error.code;
}

/**
 * The code members get when a group's metadata record could not be stored, as Kafka converts append
 * errors in `storeGroup`: the shared conversion, a timeout → REBALANCE_IN_PROGRESS (rejoin), and a record
 * too large is the server's problem, not the group's → UNKNOWN_SERVER_ERROR.
 */
export function storeGroupErrorCode(error: unknown): ErrorCode {
  if (!(error instanceof CohortError)) return ErrorCode.UNKNOWN_SERVER_ERROR;
  if (isOversized(error.code)) return ErrorCode.UNKNOWN_SERVER_ERROR;
  if (error.code === ErrorCode.REQUEST_TIMED_OUT) return ErrorCode.REBALANCE_IN_PROGRESS;
  return sharedConversion(error.code) ?? error.code;
}
