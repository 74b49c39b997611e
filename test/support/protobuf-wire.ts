import fc from 'fast-check';

/**
 * Shared by the tests of the hand-written codecs (broker-wire, group-wire): field 15 in every wire type a
 * decoder must skip when it does not know the field.
 */
export const UNKNOWN_FIELD_15: readonly (readonly number[])[] = [
  [0x78, 0x96, 0x01], // varint
  [0x79, 1, 2, 3, 4, 5, 6, 7, 8], // fixed64
  [0x7a, 0x02, 0xaa, 0xbb], // length-delimited
  [0x7d, 1, 2, 3, 4], // fixed32
];

/** UNKNOWN_FIELD_15's fields one after another, as bytes. */
export function unknownFields(): Buffer {
  return Buffer.from(UNKNOWN_FIELD_15.flat());
}

/** A group holding a varint and a nested group (proto2's; a proto3 decoder skips it whole). */
export const GROUP_FIELD_15: readonly number[] = [0x7b, 0x08, 0x01, 0x7b, 0x7c, 0x7c];

/** `bytes` values: empty (the proto3 default), short, or long enough for a two-byte length varint. */
export const bytesValue = fc.oneof(
  fc.constant(Buffer.alloc(0)),
  fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
  fc.uint8Array({ minLength: 120, maxLength: 400 }).map((a) => Buffer.from(a)),
);

/**
 * `string` values: empty, short, multi-byte graphemes (UTF-8 lengths differ from .length), and long
 * enough for a two-byte length varint.
 */
export const textValue = fc.oneof(
  fc.constant(''),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.string({ unit: 'grapheme', minLength: 60, maxLength: 200 }),
);

/** Checks that `decode` returns or throws a RangeError, never anything else, on arbitrary bytes. */
export function expectDecodesOrRangeError(decode: (bytes: Buffer) => unknown): void {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (raw) => {
      try {
        decode(Buffer.from(raw));
      } catch (error) {
        expect(error).toBeInstanceOf(RangeError);
      }
    }),
  );
}
