import { status } from '@grpc/grpc-js';
import { CohortError, ERROR_TABLE, ErrorCode, GrpcStatus } from '../../../src/errors';
import { ERROR_CODE_TRAILER, INTERNAL_ERROR_MESSAGE, statusForError } from '../../../src/server';

const codes = (Object.values(ErrorCode).filter((v) => typeof v === 'number') as ErrorCode[]).filter(
  (code) => code !== ErrorCode.NONE,
);

describe('statusForError', () => {
  it.each(codes.map((code) => [ErrorCode[code], code] as const))(
    'ends a call failing with %s with the status and message of its table row',
    (_name, code) => {
      const { status: s, isUnexpected } = statusForError(new CohortError(code));
      expect(isUnexpected).toBe(false);
      expect(s.code).toBe(ERROR_TABLE[code].grpcStatus);
      expect(s.details).toBe(ERROR_TABLE[code].message);
      expect(s.metadata.get(ERROR_CODE_TRAILER)).toEqual([String(code)]);
    },
  );

  it('uses the same numbers as grpc-js for every status', () => {
    for (const [name, value] of Object.entries(GrpcStatus)) {
      expect(status[name as keyof typeof status]).toBe(value);
    }
  });

  it.each([new Error('boom'), 'a string', undefined, { code: 3 }])(
    'turns anything that is not a CohortError (%p) into INTERNAL with the generic message',
    (error) => {
      const { status: s, isUnexpected } = statusForError(error);
      expect(isUnexpected).toBe(true);
      expect(s.code).toBe(status.INTERNAL);
      expect(s.details).toBe(INTERNAL_ERROR_MESSAGE);
    },
  );
});
