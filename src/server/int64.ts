import { CohortError, ErrorCode } from '../errors';

/**
 * An int64 field as decoded (`longs: String`, see load-protos.ts) to a number, exactly. Values beyond
 * ±(2^53 - 1) cannot be represented exactly in a JavaScript number; the request is refused as
 * INVALID_ARGUMENT instead of acting on a rounded value. `field` names the field for the error message.
 */
export function decodeInt64(value: string | number, field: string): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(n)) {
    throw new CohortError(
      ErrorCode.INVALID_REQUEST,
      `${field} (${String(value)}) is outside the range cohort handles exactly, ` +
        `-${Number.MAX_SAFE_INTEGER}..${Number.MAX_SAFE_INTEGER}`,
    );
  }
  return n;
}
