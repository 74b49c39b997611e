import { CohortError, ErrorCode } from '../../../src/errors';
import { storeErrorCode, storeGroupErrorCode } from '../../../src/group/store-error-code';

const failed = (code: ErrorCode): CohortError => new CohortError(code, 'store failed');

describe('what a failed offset or group store becomes for the client', () => {
  it.each([
    [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE],
    [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_COORDINATOR],
    [ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE, ErrorCode.UNKNOWN_SERVER_ERROR],
    [ErrorCode.INVALID_FETCH_SIZE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE, ErrorCode.UNKNOWN_SERVER_ERROR],
    [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REBALANCE_IN_PROGRESS],
    [ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_CONFIG],
    [ErrorCode.NONE, ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.UNKNOWN_SERVER_ERROR],
    // An offline log stays offline until a restart and cohort has no other coordinator to move to.
    [ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.UNKNOWN_SERVER_ERROR],
  ])('%s: OffsetCommit gets %s, a group record %s', (stored, commit, group) => {
    expect(storeErrorCode(failed(stored))).toBe(commit);
    expect(storeGroupErrorCode(failed(stored))).toBe(group);
  });

  it('treats anything but a CohortError as an internal failure', () => {
    expect(storeErrorCode(new Error('boom'))).toBe(ErrorCode.UNKNOWN_SERVER_ERROR);
    expect(storeGroupErrorCode('boom')).toBe(ErrorCode.UNKNOWN_SERVER_ERROR);
  });
});
