import { CohortError, ErrorCode } from '../../../src/errors';
import { errorResponseFor } from '../../../src/kafka/kafka-error-response';
import { FETCH, JOIN_GROUP, OFFSET_FETCH } from '../../../src/kafka/protocol/kafka-apis';

describe('the Kafka door maps a failed handler once', () => {
  test("a CohortError's code rides in the response's top-level error field", () => {
    expect(
      errorResponseFor(JOIN_GROUP, 5, new CohortError(ErrorCode.INVALID_REQUEST, 'internal detail')),
    ).toEqual({
      errorCode: ErrorCode.INVALID_REQUEST,
    });
  });

  test('anything else is UNKNOWN_SERVER_ERROR, with none of its text', () => {
    const answer = errorResponseFor(JOIN_GROUP, 0, new Error('secret stack'));
    expect(answer).toEqual({ errorCode: ErrorCode.UNKNOWN_SERVER_ERROR });
  });

  test('without a top-level error field in that version, nothing: the connection is closed', () => {
    expect(errorResponseFor(FETCH, 6, new Error('x'))).toBeUndefined();
    // OffsetFetch has one from v2 only.
    expect(errorResponseFor(OFFSET_FETCH, 1, new Error('x'))).toBeUndefined();
    expect(errorResponseFor(OFFSET_FETCH, 2, new Error('x'))).toEqual({
      errorCode: ErrorCode.UNKNOWN_SERVER_ERROR,
    });
  });
});
