import { status as Status, type Metadata } from '@grpc/grpc-js';
import { CohortError, ERROR_CODE_TRAILER, ErrorCode, errorInfo } from '../errors';
import { errorFromCode } from './error-from-code';

/** How a call ended, as grpc-js reports it (a `ServiceError` or a `status` event's StatusObject). */
export interface EndedCall {
  readonly code: Status;
  readonly metadata?: Metadata;
}

/**
 * The code a call that ended without a response stands for. Transient transport failures map to retriable
 * codes (the member backs off and retries), refusals to codes that are not. The server's status text is
 * never parsed: the status number counts, and for a status that says nothing more specific (FAILED_PRECONDITION,
 * say) the `cohort-error-code` trailer the server adds, if its code is one the error table sends with that
 * very status: so NOT_COORDINATOR (16, FAILED_PRECONDITION) is NOT_COORDINATOR, not UNKNOWN_SERVER_ERROR.
 */
export function codeForStatus(code: Status, trailers?: Metadata): ErrorCode {
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
      return trailerCode(code, trailers) ?? ErrorCode.UNKNOWN_SERVER_ERROR;
  }
}

/** The trailer's code, when it is a known code the table sends with `status`; otherwise undefined. */
function trailerCode(status: Status, trailers: Metadata | undefined): ErrorCode | undefined {
  const [value] = trailers?.get(ERROR_CODE_TRAILER) ?? [];
  if (typeof value !== 'string' || !/^-?\d{1,5}$/.test(value)) return undefined;
  const code = Number(value) as ErrorCode;
  if (ErrorCode[code] === undefined || code === ErrorCode.NONE) return undefined;
  return (errorInfo(code).grpcStatus as number) === status ? code : undefined;
}

/** A `CohortError` for a failed gRPC call, rebuilt from its status code (and trailer, see codeForStatus). */
export function errorFromStatus(error: EndedCall, what: string): CohortError {
  const name = Status[error.code] ?? String(error.code);
  return errorFromCode(
    codeForStatus(error.code, error.metadata),
    `${what} ended with gRPC status ${name}`,
    error,
  );
}
