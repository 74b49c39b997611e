import { Metadata, status as Status } from '@grpc/grpc-js';
import type { StatusObject } from '@grpc/grpc-js';
import { CohortError, ERROR_CODE_TRAILER, ErrorCode, GrpcStatus, errorInfo } from '../errors';

export { ERROR_CODE_TRAILER };

/** All a client ever learns about a failure we did not expect; the details stay in the server's log. */
export const INTERNAL_ERROR_MESSAGE = 'Internal server error; the server log has the details.';

export interface MappedStatus {
  readonly status: StatusObject;
  /** True when the error was not a CohortError: a bug to log with its stack, not a request to refuse. */
  readonly isUnexpected: boolean;
}

/**
 * The one place a thrown error becomes a gRPC status. A CohortError ends the call with its code's
 * `grpcStatus` from ERROR_TABLE and its message (the table's, unless it gave a more precise one), and the
 * numeric code rides in the `cohort-error-code` trailer so clients rebuild errors from codes, never from
 * messages. Anything else is INTERNAL with a generic message: internal text never reaches a client.
 */
export function statusForError(error: unknown): MappedStatus {
  if (error instanceof CohortError) {
    const { grpcStatus } = errorInfo(error.code);
    // A CohortError that maps to OK (NONE) would make a failure look like success: that is a bug.
    if (grpcStatus !== GrpcStatus.OK) {
      const metadata = new Metadata();
      metadata.set(ERROR_CODE_TRAILER, String(error.code));
      return { status: { code: grpcStatus, details: error.message, metadata }, isUnexpected: false };
    }
  }
  const metadata = new Metadata();
  metadata.set(ERROR_CODE_TRAILER, String(ErrorCode.UNKNOWN_SERVER_ERROR));
  return { status: { code: Status.INTERNAL, details: INTERNAL_ERROR_MESSAGE, metadata }, isUnexpected: true };
}
