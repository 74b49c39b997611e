import { CohortError, ErrorCode, errorInfo } from '../errors';

/**
 * A `CohortError` rebuilt from a code that came back from the coordinator. The message is the table's, with
 * `context` (what the SDK was doing) in front; nothing the server wrote is trusted or shown. `cause` keeps the
 * underlying failure (a transport error, say) for debugging.
 */
export function errorFromCode(code: ErrorCode, context: string, cause?: unknown): CohortError {
  const info = errorInfo(code);
  const name =
    info === errorInfo(ErrorCode.UNKNOWN_SERVER_ERROR) && code !== ErrorCode.UNKNOWN_SERVER_ERROR
      ? `code ${code}`
      : info.name;
  return new CohortError(
    code,
    `${context}: ${name}: ${info.message}`,
    cause === undefined ? undefined : { cause },
  );
}

/** Whether the SDK may send the same request again after this code (the table's `retriable` flag). */
export function isRetriable(code: ErrorCode): boolean {
  return errorInfo(code).retriable;
}
