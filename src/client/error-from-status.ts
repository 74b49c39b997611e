import { status as Status, type ServiceError } from '@grpc/grpc-js';
import { CohortError, ErrorCode } from '../errors';
import { errorFromCode } from './error-from-code';

/**
 * The code a call that ended without a response stands for. Transient transport failures map to retriable
 * codes (the member backs off and retries), refusals to codes that are not. The server's status text is
 * never parsed: only the status number counts, and the original error is kept as `cause`.
 */
export function codeForStatus(code: Status): ErrorCode {
  switch (code) {
    case Status.DEADLINE_EXCEEDED:
      return ErrorCode.REQUEST_TIMED_OUT;
    case Status.UNAVAILABLE:
    case Status.CANCELLED: // not by us (we ignore our own cancellations): the server went away mid-call
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    case Status.UNAUTHENTICATED:
    case Status.PERMISSION_DENIED:
      return ErrorCode.GROUP_AUTHORIZATION_FAILED;
    case Status.INVALID_ARGUMENT:
    case Status.UNIMPLEMENTED:
      return ErrorCode.INVALID_REQUEST;
    case Status.RESOURCE_EXHAUSTED:
      return ErrorCode.MESSAGE_TOO_LARGE;
    default:
      return ErrorCode.UNKNOWN_SERVER_ERROR;
  }
}

/** A `CohortError` for a failed gRPC call, rebuilt from its status code. */
export function errorFromStatus(error: ServiceError, what: string): CohortError {
  const name = Status[error.code] ?? String(error.code);
  return errorFromCode(codeForStatus(error.code), `${what} ended with gRPC status ${name}`, error);
}
