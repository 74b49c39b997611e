import { ExitCode, exitCodeFor } from '../../../src/cli/exit-code';
import { CohortError, ErrorCode } from '../../../src/errors';

describe('exit statuses', () => {
  it.each([
    [ErrorCode.GROUP_ID_NOT_FOUND, ExitCode.NOT_FOUND],
    [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ExitCode.NOT_FOUND],
    [ErrorCode.COORDINATOR_NOT_AVAILABLE, ExitCode.UNAVAILABLE],
    [ErrorCode.REQUEST_TIMED_OUT, ExitCode.UNAVAILABLE],
    [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ExitCode.UNAVAILABLE],
    [ErrorCode.TOPIC_ALREADY_EXISTS, ExitCode.FAILED],
    [ErrorCode.NON_EMPTY_GROUP, ExitCode.FAILED],
    [ErrorCode.GROUP_AUTHORIZATION_FAILED, ExitCode.FAILED],
  ])('code %i exits with %i', (code, status) => {
    expect(exitCodeFor(new CohortError(code))).toBe(status);
  });

  it('keeps the documented numbers', () => {
    expect([ExitCode.OK, ExitCode.FAILED, ExitCode.USAGE, ExitCode.NOT_FOUND, ExitCode.UNAVAILABLE]).toEqual([
      0, 1, 2, 3, 4,
    ]);
    expect(exitCodeFor(new Error('a handler failed'))).toBe(ExitCode.FAILED);
  });
});
