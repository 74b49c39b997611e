import { CohortError, ErrorCode } from '../errors';

/**
 * The error for a state the coordinator's own bookkeeping should make impossible. Thrown, never returned:
 * reaching it is a bug, and the server layer turns it into INTERNAL with a generic message.
 */
export function brokenInvariant(message: string): CohortError {
  return new CohortError(ErrorCode.UNKNOWN_SERVER_ERROR, message);
}
