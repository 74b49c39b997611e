import { checkUtf8, Reader } from '../../../src/server/proto-wire';

function reader(bytes: readonly number[]): Reader {
  const buf = Buffer.from(bytes);
  return new Reader(buf, 0, buf.length);
}

/** Reads every field of `bytes` as unknown, to the end. */
function skipAll(bytes: readonly number[]): void {
  const r = reader(bytes);
  while (!r.isDone) r.skipField(r.tag());
}

describe('Reader.string', () => {
  test.each([
    ['ASCII', 'group-1'],
    ['two-byte sequences', 'grüße'],
    ['three-byte sequences', '€ 組'],
    ['four-byte sequences (beyond UTF-16 units)', 'g-😀'],
    ['U+FFFD itself, sent as its bytes', '\uFFFD'],
  ])('decodes valid UTF-8: %s', (_what, text) => {
    const bytes = Buffer.from(text);
    expect(reader([bytes.length, ...bytes]).string()).toBe(text);
  });

  test.each([
    ['a byte no UTF-8 text holds', [0x67, 0xff]],
    ['a continuation byte without its lead', [0x80]],
    ['a sequence cut short', [0xe2, 0x82]],
    ['a sequence cut by an ASCII byte', [0xc3, 0x28]],
    ['an overlong NUL', [0xc0, 0x80]],
    ['an overlong three-byte form of "/"', [0xe0, 0x80, 0xaf]],
    ['a UTF-16 surrogate', [0xed, 0xa0, 0x80]],
    ['a code point past U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
  ])('refuses invalid UTF-8, which Buffer.toString would turn into U+FFFD: %s', (_what, bytes) => {
    expect(() => reader([bytes.length, ...bytes]).string()).toThrow(RangeError);
    expect(() => reader([bytes.length, ...bytes]).skipString()).toThrow(RangeError);
  });

  test('checks only the string, not the bytes around it', () => {
    expect(() => checkUtf8(Buffer.from([0xff, 0x61, 0xff]), 1, 2)).not.toThrow();
  });
});

describe('Reader, the fields of a known type', () => {
  test('refuses a field that arrives with a wire type other than its type has', () => {
    expect(() => reader([0x0a, 0x01, 0x05]).int32Field(0x0a)).toThrow(RangeError);
    expect(() => reader([0x08, 0x05]).stringField(0x08)).toThrow(RangeError);
    expect(() => reader([0x0d, 1, 2, 3, 4]).bytesField(0x0d)).toThrow(RangeError);
    expect(() => reader([0x08, 0x05]).int64Field(0x09)).toThrow(RangeError);
    expect(() => reader([0x01]).repeatedMessage(0x0b, [], () => 0)).toThrow(RangeError);
  });

  test('reads a field with its own wire type', () => {
    const r = reader([0x05]);
    expect(r.int32Field(0x08)).toBe(5);
    expect(r.isDone).toBe(true);
  });
});

describe('Reader.tag', () => {
  test('refuses field number 0, which no field has', () => {
    expect(() => reader([0x00, 0x00]).tag()).toThrow(RangeError);
    expect(() => reader([0x02, 0x00]).tag()).toThrow(RangeError);
  });

  test('refuses a tag longer than five bytes', () => {
    expect(reader([0xf8, 0xff, 0xff, 0xff, 0x0f]).tag()).toBe(0xfffffff8);
    expect(() => reader([0xf8, 0xff, 0xff, 0xff, 0x8f, 0x00]).tag()).toThrow(RangeError);
  });
});

describe('Reader.skipField: unknown fields', () => {
  test('skips every valid wire type', () => {
    expect(() =>
      skipAll([0x78, 0x96, 0x01, 0x79, 1, 2, 3, 4, 5, 6, 7, 8, 0x7a, 0x01, 0xff, 0x7d, 1, 2, 3, 4]),
    ).not.toThrow();
  });

  test('skips a group, nested groups included, up to its own end tag', () => {
    // group 15 { varint 1; group 14 { } } then field 1
    const r = reader([0x7b, 0x08, 0x01, 0x73, 0x74, 0x7c, 0x08, 0x07]);
    r.skipField(r.tag());
    expect(r.int32Field(r.tag())).toBe(7);
  });

  test.each([
    ['truncated varint', [0x78, 0x96]],
    ['truncated fixed64', [0x79, 1, 2, 3, 4, 5, 6, 7]],
    ['truncated fixed32', [0x7d, 1, 2, 3]],
    ['length past the end', [0x7a, 0x02, 0xff]],
    ['a group never closed', [0x7b, 0x08, 0x01]],
    ['a group closed by another field number', [0x7b, 0x74]],
    ['an end-group tag where a field should start', [0x7c]],
    ['wire type 6', [0x7e, 0x00]],
    ['wire type 7', [0x7f, 0x00]],
    ['a varint longer than 10 bytes', [0x78, ...new Array<number>(10).fill(0xff), 0x01]],
  ])('refuses %s', (_what, bytes) => {
    expect(() => skipAll(bytes)).toThrow(RangeError);
  });

  test('refuses groups nested deeper than protobuf lets messages nest', () => {
    const deep = [...new Array<number>(101).fill(0x7b), ...new Array<number>(101).fill(0x7c)];
    expect(() => skipAll(deep)).toThrow(RangeError);
    const allowed = [...new Array<number>(100).fill(0x7b), ...new Array<number>(100).fill(0x7c)];
    expect(() => skipAll(allowed)).not.toThrow();
  });
});
