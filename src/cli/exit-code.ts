import { CohortError, ErrorCode } from '../errors';

/**
 * What a `cohort` command's exit status means. Scripts may rely on these numbers; they never change.
 *
 * | status | meaning                                                                                |
 * | ------ | -------------------------------------------------------------------------------------- |
 * | 0      | done                                                                                   |
 * | 1      | the server refused or failed the operation (topic exists, group not empty, ...)        |
 * | 2      | usage error: unknown command or flag, missing or malformed argument (nothing was sent) |
 * | 3      | not found: the group or topic does not exist                                           |
 * | 4      | unavailable: the server could not be reached or did not answer in time                  |
 */
export enum ExitCode {
  OK = 0,
  FAILED = 1,
  USAGE = 2,
  NOT_FOUND = 3,
  UNAVAILABLE = 4,
}

const NOT_FOUND_CODES = new Set([ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]);
const UNAVAILABLE_CODES = new Set([
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.REQUEST_TIMED_OUT,
  ErrorCode.LEADER_NOT_AVAILABLE,
]);

/** The exit status for an error a command ran into: by its code when it is a `CohortError`. */
export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof CohortError) {
    if (NOT_FOUND_CODES.has(error.code)) return ExitCode.NOT_FOUND;
    if (UNAVAILABLE_CODES.has(error.code)) return ExitCode.UNAVAILABLE;
  }
  return ExitCode.FAILED;
}
