/**
 * HPACK (RFC 7541) literal header fields without indexing: how the bench's raw HTTP/2 client writes its
 * request headers. Never indexed, so they leave the server's decoding table as it was; never
 * Huffman-coded, so the encoding is the bytes themselves.
 */

/** An HPACK integer with an N-bit prefix (§5.1), the prefix's other bits set to `high`. */
function integer(value: number, prefixBits: number, high: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [high | value];
  const bytes = [high | max];
  let rest = value - max;
  while (rest >= 0x80) {
    bytes.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  bytes.push(rest);
  return bytes;
}

/** A string literal (§5.2), not Huffman-coded; one byte per char (latin1), as HTTP/2 field values are. */
function string(text: string): Buffer {
  const bytes = Buffer.from(text, 'latin1');
  return Buffer.concat([Buffer.from(integer(bytes.length, 7, 0)), bytes]);
}

/**
 * A literal header field without indexing (§6.2.2): `name` is an index into the static table (Appendix A:
 * 1 :authority, 4 :path, 31 content-type, ...) or a literal name.
 */
export function literalField(name: number | string, value: string): Buffer {
  const nameBytes =
    typeof name === 'number'
      ? Buffer.from(integer(name, 4, 0))
      : Buffer.concat([Buffer.from([0]), string(name)]);
  return Buffer.concat([nameBytes, string(value)]);
}
