import { ErrorCode } from './error-code';

/**
 * The trailer that carries the numeric ErrorCode of a call a cohort server ended with a non-OK status
 * (the server sets it, the SDK reads it; see statusForError and codeForStatus).
 */
export const ERROR_CODE_TRAILER = 'cohort-error-code';

/**
 * gRPC status codes (numbers from the gRPC spec), so this layer needs no gRPC import. The server maps a
 * thrown `CohortError` to `grpcStatus`; protocol outcomes in a response always travel with status OK.
 */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcStatus = (typeof GrpcStatus)[keyof typeof GrpcStatus];

export interface ErrorInfo {
  /** Kafka's name, e.g. `REBALANCE_IN_PROGRESS`. */
  readonly name: keyof typeof ErrorCode;
  /** Kafka's `RetriableException` flag: the same request may succeed if sent again unchanged. */
  readonly retriable: boolean;
  /** The gRPC status used when this code has to end a call instead of riding in a response. */
  readonly grpcStatus: GrpcStatus;
  /** Kafka's default message for the code. */
  readonly message: string;
}

const S = GrpcStatus;
const row = (
  name: keyof typeof ErrorCode,
  retriable: boolean,
  grpcStatus: GrpcStatus,
  message: string,
): ErrorInfo => Object.freeze({ name, retriable, grpcStatus, message });

/** One row per code; `Record<ErrorCode, …>` makes a code without a row a compile error. */
export const ERROR_TABLE: Readonly<Record<ErrorCode, ErrorInfo>> = Object.freeze({
  [ErrorCode.UNKNOWN_SERVER_ERROR]: row(
    'UNKNOWN_SERVER_ERROR',
    false,
    S.INTERNAL,
    'The server experienced an unexpected error when processing the request.',
  ),
  [ErrorCode.NONE]: row('NONE', false, S.OK, 'No error.'),
  [ErrorCode.OFFSET_OUT_OF_RANGE]: row(
    'OFFSET_OUT_OF_RANGE',
    false,
    S.OUT_OF_RANGE,
    'The requested offset is not within the range of offsets maintained by the server.',
  ),
  [ErrorCode.CORRUPT_MESSAGE]: row(
    'CORRUPT_MESSAGE',
    true,
    S.DATA_LOSS,
    'This message has failed its CRC checksum, exceeds the valid size, or is otherwise corrupt.',
  ),
  [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]: row(
    'UNKNOWN_TOPIC_OR_PARTITION',
    true,
    S.NOT_FOUND,
    'This server does not host this topic-partition.',
  ),
  [ErrorCode.INVALID_FETCH_SIZE]: row(
    'INVALID_FETCH_SIZE',
    false,
    S.INVALID_ARGUMENT,
    'The requested fetch size is invalid.',
  ),
  [ErrorCode.LEADER_NOT_AVAILABLE]: row(
    'LEADER_NOT_AVAILABLE',
    true,
    S.UNAVAILABLE,
    'There is no leader for this topic-partition as we are in the middle of a leadership election.',
  ),
  [ErrorCode.NOT_LEADER_OR_FOLLOWER]: row(
    'NOT_LEADER_OR_FOLLOWER',
    true,
    S.FAILED_PRECONDITION,
    'For requests intended only for the leader, this error indicates that the broker is not the current leader.',
  ),
  [ErrorCode.REQUEST_TIMED_OUT]: row(
    'REQUEST_TIMED_OUT',
    true,
    S.DEADLINE_EXCEEDED,
    'The request timed out.',
  ),
  [ErrorCode.MESSAGE_TOO_LARGE]: row(
    'MESSAGE_TOO_LARGE',
    false,
    S.INVALID_ARGUMENT,
    'The request included a message larger than the max message size the server will accept.',
  ),
  [ErrorCode.OFFSET_METADATA_TOO_LARGE]: row(
    'OFFSET_METADATA_TOO_LARGE',
    false,
    S.INVALID_ARGUMENT,
    'The metadata field of the offset request was too large.',
  ),
  [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]: row(
    'COORDINATOR_LOAD_IN_PROGRESS',
    true,
    S.UNAVAILABLE,
    "The coordinator is loading and hence can't process requests.",
  ),
  [ErrorCode.COORDINATOR_NOT_AVAILABLE]: row(
    'COORDINATOR_NOT_AVAILABLE',
    true,
    S.UNAVAILABLE,
    'The coordinator is not available.',
  ),
  [ErrorCode.NOT_COORDINATOR]: row(
    'NOT_COORDINATOR',
    true,
    S.FAILED_PRECONDITION,
    'This is not the correct coordinator.',
  ),
  [ErrorCode.INVALID_TOPIC_EXCEPTION]: row(
    'INVALID_TOPIC_EXCEPTION',
    false,
    S.INVALID_ARGUMENT,
    'The request attempted to perform an operation on an invalid topic.',
  ),
  [ErrorCode.RECORD_LIST_TOO_LARGE]: row(
    'RECORD_LIST_TOO_LARGE',
    false,
    S.INVALID_ARGUMENT,
    'The request included message batch larger than the configured segment size on the server.',
  ),
  [ErrorCode.NOT_ENOUGH_REPLICAS]: row(
    'NOT_ENOUGH_REPLICAS',
    true,
    S.UNAVAILABLE,
    'Messages are rejected since there are fewer in-sync replicas than required.',
  ),
  [ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND]: row(
    'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
    true,
    S.UNAVAILABLE,
    'Messages are written to the log, but to fewer in-sync replicas than required.',
  ),
  [ErrorCode.INVALID_REQUIRED_ACKS]: row(
    'INVALID_REQUIRED_ACKS',
    false,
    S.INVALID_ARGUMENT,
    'Produce request specified an invalid value for required acks.',
  ),
  [ErrorCode.ILLEGAL_GENERATION]: row(
    'ILLEGAL_GENERATION',
    false,
    S.FAILED_PRECONDITION,
    'Specified group generation id is not valid.',
  ),
  [ErrorCode.INCONSISTENT_GROUP_PROTOCOL]: row(
    'INCONSISTENT_GROUP_PROTOCOL',
    false,
    S.FAILED_PRECONDITION,
    "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.",
  ),
  [ErrorCode.INVALID_GROUP_ID]: row(
    'INVALID_GROUP_ID',
    false,
    S.INVALID_ARGUMENT,
    'The configured groupId is invalid.',
  ),
  [ErrorCode.UNKNOWN_MEMBER_ID]: row(
    'UNKNOWN_MEMBER_ID',
    false,
    S.FAILED_PRECONDITION,
    'The coordinator is not aware of this member.',
  ),
  [ErrorCode.INVALID_SESSION_TIMEOUT]: row(
    'INVALID_SESSION_TIMEOUT',
    false,
    S.INVALID_ARGUMENT,
    'The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).',
  ),
  [ErrorCode.REBALANCE_IN_PROGRESS]: row(
    'REBALANCE_IN_PROGRESS',
    false,
    S.ABORTED,
    'The group is rebalancing, so a rejoin is needed.',
  ),
  [ErrorCode.INVALID_COMMIT_OFFSET_SIZE]: row(
    'INVALID_COMMIT_OFFSET_SIZE',
    false,
    S.INVALID_ARGUMENT,
    'The committing offset data size is not valid.',
  ),
  [ErrorCode.GROUP_AUTHORIZATION_FAILED]: row(
    'GROUP_AUTHORIZATION_FAILED',
    false,
    S.PERMISSION_DENIED,
    'Group authorization failed.',
  ),
  [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]: row(
    'CLUSTER_AUTHORIZATION_FAILED',
    false,
    S.PERMISSION_DENIED,
    'Cluster authorization failed.',
  ),
  [ErrorCode.INVALID_TIMESTAMP]: row(
    'INVALID_TIMESTAMP',
    false,
    S.INVALID_ARGUMENT,
    'The timestamp of the message is out of acceptable range.',
  ),
  [ErrorCode.UNSUPPORTED_VERSION]: row(
    'UNSUPPORTED_VERSION',
    false,
    S.UNIMPLEMENTED,
    'The version of API is not supported.',
  ),
  [ErrorCode.TOPIC_ALREADY_EXISTS]: row(
    'TOPIC_ALREADY_EXISTS',
    false,
    S.ALREADY_EXISTS,
    'Topic with this name already exists.',
  ),
  [ErrorCode.INVALID_PARTITIONS]: row(
    'INVALID_PARTITIONS',
    false,
    S.INVALID_ARGUMENT,
    'Number of partitions is below 1.',
  ),
  [ErrorCode.INVALID_REPLICATION_FACTOR]: row(
    'INVALID_REPLICATION_FACTOR',
    false,
    S.INVALID_ARGUMENT,
    'Replication factor is below 1 or larger than the number of available brokers.',
  ),
  [ErrorCode.INVALID_CONFIG]: row('INVALID_CONFIG', false, S.INVALID_ARGUMENT, 'Configuration is invalid.'),
  [ErrorCode.NOT_CONTROLLER]: row(
    'NOT_CONTROLLER',
    true,
    S.FAILED_PRECONDITION,
    'This is not the correct controller for this cluster.',
  ),
  [ErrorCode.INVALID_REQUEST]: row(
    'INVALID_REQUEST',
    false,
    S.INVALID_ARGUMENT,
    'This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker.',
  ),
  [ErrorCode.POLICY_VIOLATION]: row(
    'POLICY_VIOLATION',
    false,
    S.FAILED_PRECONDITION,
    'Request parameters do not satisfy the configured policy.',
  ),
  [ErrorCode.KAFKA_STORAGE_ERROR]: row(
    'KAFKA_STORAGE_ERROR',
    true,
    S.UNAVAILABLE,
    'Disk error when trying to access log file on the disk.',
  ),
  [ErrorCode.NON_EMPTY_GROUP]: row(
    'NON_EMPTY_GROUP',
    false,
    S.FAILED_PRECONDITION,
    'The group is not empty.',
  ),
  [ErrorCode.GROUP_ID_NOT_FOUND]: row(
    'GROUP_ID_NOT_FOUND',
    false,
    S.NOT_FOUND,
    'The group id does not exist.',
  ),
  [ErrorCode.FENCED_LEADER_EPOCH]: row(
    'FENCED_LEADER_EPOCH',
    true,
    S.FAILED_PRECONDITION,
    'The leader epoch in the request is older than the epoch on the broker.',
  ),
  [ErrorCode.UNKNOWN_LEADER_EPOCH]: row(
    'UNKNOWN_LEADER_EPOCH',
    true,
    S.UNAVAILABLE,
    'The leader epoch in the request is newer than the epoch on the broker.',
  ),
  [ErrorCode.UNSUPPORTED_COMPRESSION_TYPE]: row(
    'UNSUPPORTED_COMPRESSION_TYPE',
    false,
    S.INVALID_ARGUMENT,
    'The requesting client does not support the compression type of given partition.',
  ),
  [ErrorCode.MEMBER_ID_REQUIRED]: row(
    'MEMBER_ID_REQUIRED',
    false,
    S.FAILED_PRECONDITION,
    'The group member needs to have a valid member id before actually entering a consumer group.',
  ),
  [ErrorCode.GROUP_MAX_SIZE_REACHED]: row(
    'GROUP_MAX_SIZE_REACHED',
    false,
    S.RESOURCE_EXHAUSTED,
    'The consumer group has reached its max size.',
  ),
  [ErrorCode.FENCED_INSTANCE_ID]: row(
    'FENCED_INSTANCE_ID',
    false,
    S.FAILED_PRECONDITION,
    'The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.',
  ),
  [ErrorCode.INVALID_RECORD]: row(
    'INVALID_RECORD',
    false,
    S.INVALID_ARGUMENT,
    'This record has failed the validation on broker and hence will be rejected.',
  ),
  [ErrorCode.UNSTABLE_OFFSET_COMMIT]: row(
    'UNSTABLE_OFFSET_COMMIT',
    true,
    S.UNAVAILABLE,
    'There are unstable offsets that need to be cleared.',
  ),
});

/** The row for a code. Unknown numbers (from a newer peer) read as UNKNOWN_SERVER_ERROR. */
export function errorInfo(code: ErrorCode): ErrorInfo {
  return ERROR_TABLE[code] ?? ERROR_TABLE[ErrorCode.UNKNOWN_SERVER_ERROR];
}
