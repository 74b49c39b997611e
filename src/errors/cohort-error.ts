import { ErrorCode } from './error-code';
import { errorInfo } from './error-table';

/**
 * Thrown only for requests that cannot be understood and for broken invariants; protocol outcomes are
 * returned as an `ErrorCode` in the response instead. The server maps it once, through `ERROR_TABLE`.
 */
export class CohortError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message?: string, options?: { cause?: unknown }) {
    super(message ?? errorInfo(code).message, options);
    this.name = 'CohortError';
    this.code = code;
  }

  get retriable(): boolean {
    return errorInfo(this.code).retriable;
  }
}
