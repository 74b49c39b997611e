import { errorFromCode, isRetriable } from '../../../src/client/error-from-code';
import { CohortError, ERROR_TABLE, ErrorCode } from '../../../src/errors';

describe('errorFromCode', () => {
  it('builds the message from the table, never from anything the server said, and keeps the cause', () => {
    const cause = new Error('server text that must not leak into the message');
    const error = errorFromCode(ErrorCode.REBALANCE_IN_PROGRESS, 'Heartbeat of group "g"', cause);
    expect(error).toBeInstanceOf(CohortError);
    expect(error.code).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(error.message).toBe(
      `Heartbeat of group "g": REBALANCE_IN_PROGRESS: ${ERROR_TABLE[ErrorCode.REBALANCE_IN_PROGRESS].message}`,
    );
    expect(error.cause).toBe(cause);
  });

  it('names an unknown code by its number and treats it as not retriable', () => {
    const error = errorFromCode(9999 as ErrorCode, 'JoinGroup');
    expect(error.message).toContain('code 9999');
    expect(error.retriable).toBe(false);
    expect(isRetriable(9999 as ErrorCode)).toBe(false);
  });

  it("follows the table's retriable flag", () => {
    for (const [code, info] of Object.entries(ERROR_TABLE))
      expect(isRetriable(Number(code))).toBe(info.retriable);
  });
});
