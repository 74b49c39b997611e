export { ErrorCode } from './error-code';
export { ERROR_CODE_TRAILER, ERROR_TABLE, GrpcStatus, errorInfo } from './error-table';
export type { ErrorInfo } from './error-table';
export { CohortError } from './cohort-error';
