import { status } from '@grpc/grpc-js';
import { CohortError, ErrorCode } from '../../../src/errors';
import { statusForError } from '../../../src/server';
import { decodeInt64 } from '../../../src/server/int64';

describe('decodeInt64', () => {
  it('converts decimal strings within ±(2^53 - 1) exactly', () => {
    expect(decodeInt64('0', 'f')).toBe(0);
    expect(decodeInt64('-1', 'f')).toBe(-1);
    expect(decodeInt64('9007199254740991', 'f')).toBe(Number.MAX_SAFE_INTEGER);
    expect(decodeInt64('-9007199254740991', 'f')).toBe(-Number.MAX_SAFE_INTEGER);
    expect(decodeInt64(42, 'f')).toBe(42);
  });

  it.each(['9007199254740992', '9007199254740993', '-9007199254740992', '9223372036854775807'])(
    'refuses %s as INVALID_ARGUMENT instead of rounding it, naming the field',
    (text) => {
      let thrown: unknown;
      try {
        decodeInt64(text, 'topics[0].partitions[2].committed_offset');
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(CohortError);
      expect((thrown as CohortError).code).toBe(ErrorCode.INVALID_REQUEST);
      expect((thrown as CohortError).message).toContain(`topics[0].partitions[2].committed_offset (${text})`);
      expect(statusForError(thrown).status.code).toBe(status.INVALID_ARGUMENT);
    },
  );
});
