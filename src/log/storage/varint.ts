import { CohortError, ErrorCode } from '../../errors';

/**
 * Unsigned LEB128 varints (Kafka's unsigned varint) for every variable-size field inside a record.
 * Seven bits per byte, least significant group first, high bit set on every byte but the last:
 * 300 = 0b1_0010_1100 → bytes 0xAC 0x02.
 *
 * cohort only stores non-negative safe integers (lengths + 1, deltas from a batch minimum), so no zigzag
 * step is needed, and arithmetic (not 32-bit bitwise operators) keeps values above 2^31 exact. Eight
 * bytes carry 56 bits, enough for any safe integer; a longer or larger varint is corrupt.
 */
export const MAX_UVARINT_BYTES = 8;

export function uvarintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    size++;
  }
  return size;
}

/** Writes `value` at `position` and returns the position after it. The caller sized the buffer. */
export function writeUvarint(buffer: Buffer, position: number, value: number): number {
  while (value >= 0x80) {
    buffer[position++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  buffer[position++] = value;
  return position;
}

/** A read position that decoding functions advance, so they need not return pairs. */
export interface Cursor {
  position: number;
}

/** Reads a varint at `cursor.position` (advancing it) that must end before `end`. */
export function readUvarint(buffer: Buffer, cursor: Cursor, end: number): number {
  let value = 0;
  let scale = 1;
  let position = cursor.position;
  for (let i = 0; i < MAX_UVARINT_BYTES; i++) {
    if (position >= end)
      throw new CohortError(ErrorCode.CORRUPT_MESSAGE, 'varint runs past the end of its record');
    const byte = buffer[position++]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      if (!Number.isSafeInteger(value)) {
        throw new CohortError(ErrorCode.CORRUPT_MESSAGE, 'varint is larger than a safe integer');
      }
      cursor.position = position;
      return value;
    }
    scale *= 0x80;
  }
  throw new CohortError(ErrorCode.CORRUPT_MESSAGE, `varint longer than ${MAX_UVARINT_BYTES} bytes`);
}
