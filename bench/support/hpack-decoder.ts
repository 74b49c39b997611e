/**
 * An HPACK (RFC 7541) header-block decoder: what the rebalance bench's raw HTTP/2 client needs to read the
 * `grpc-status` of an answer. A server's encoder (nghttp2, under Node's http2 and grpc-js) indexes the
 * headers it repeats in a dynamic table and Huffman-codes strings when that is shorter, so reading a status
 * means keeping that table in step with every block the connection carries, in order.
 *
 * Decoding only: the client's own requests use a fixed block of literals that never touches its table.
 */

/** RFC 7541 Appendix A: the static table, index 1 to 61 (a name, and a value where it has one). */
const STATIC_TABLE: readonly (readonly [string, string])[] = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

/**
 * RFC 7541 Appendix B gives each of the 256 byte values and EOS (257th) a Huffman code. The code is
 * canonical: codes are handed out in order of length, then of symbol, so the lengths alone determine it.
 * These are the lengths, in bits, symbol by symbol.
 */
// prettier-ignore
const HUFFMAN_CODE_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0-15
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 16-31
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // ' ' to '/'
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // '0' to '?'
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // '@' to 'O'
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 'P' to '_'
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // '`' to 'o'
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 'p' to 127
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 128-143
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 144-159
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 160-175
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 176-191
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 192-207
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 208-223
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 224-239
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 240-255
  30, // EOS
];

const EOS = 256;

/**
 * The code as a binary tree in three parallel arrays: node 0 is the root; `next0[n]`/`next1[n]` are the
 * children of node n (0 = none); `symbol[n]` is the symbol at a leaf, -1 elsewhere.
 */
interface HuffmanTree {
  readonly next0: Int32Array;
  readonly next1: Int32Array;
  readonly symbol: Int32Array;
}

function buildHuffmanTree(lengths: readonly number[]): HuffmanTree {
  // A full binary tree with 257 leaves has 513 nodes.
  const size = 2 * lengths.length - 1;
  const next0 = new Int32Array(size);
  const next1 = new Int32Array(size);
  const symbol = new Int32Array(size).fill(-1);
  let nodes = 1;
  const order = lengths.map((_, s) => s).sort((a, b) => lengths[a] - lengths[b] || a - b);
  let code = 0;
  let codeLength = lengths[order[0]];
  for (const s of order) {
    code <<= lengths[s] - codeLength;
    codeLength = lengths[s];
    let node = 0;
    for (let bit = codeLength - 1; bit >= 0; bit--) {
      const children = ((code >>> bit) & 1) === 0 ? next0 : next1;
      if (children[node] === 0) children[node] = nodes++;
      node = children[node];
    }
    symbol[node] = s;
    code++;
  }
  return { next0, next1, symbol };
}

const HUFFMAN = buildHuffmanTree(HUFFMAN_CODE_LENGTHS);

/** Decodes `length` Huffman-coded bytes at `offset` (RFC 7541 §5.2) as latin1 text. */
export function decodeHuffman(bytes: Uint8Array, offset: number, length: number): string {
  const { next0, next1, symbol } = HUFFMAN;
  let text = '';
  let node = 0;
  // Bits read since the last complete symbol, and whether all were 1: the only padding allowed.
  let pendingBits = 0;
  let pendingAllOnes = true;
  for (let i = offset; i < offset + length; i++) {
    const byte = bytes[i];
    for (let bit = 7; bit >= 0; bit--) {
      const one = (byte >>> bit) & 1;
      node = one === 0 ? next0[node] : next1[node];
      pendingBits++;
      if (one === 0) pendingAllOnes = false;
      if (node === 0) throw new Error('HPACK: invalid Huffman code');
      const s = symbol[node];
      if (s >= 0) {
        if (s === EOS) throw new Error('HPACK: EOS inside a Huffman-coded string');
        text += String.fromCharCode(s);
        node = 0;
        pendingBits = 0;
        pendingAllOnes = true;
      }
    }
  }
  if (pendingBits > 7 || !pendingAllOnes) throw new Error('HPACK: invalid Huffman padding');
  return text;
}

/** A header as decoded: lowercase name, value as latin1 text (HTTP/2 field bytes, one char per byte). */
export type HeaderField = readonly [name: string, value: string];

/** Per-entry overhead in the table's size accounting (RFC 7541 §4.1). */
const ENTRY_OVERHEAD = 32;

/**
 * One direction of one connection: blocks must be decoded in the order they arrive, since each may change
 * the dynamic table the next ones refer to.
 */
export class HpackDecoder {
  /** Newest first, as HPACK indexes them. */
  private readonly dynamic: HeaderField[] = [];
  private dynamicSize = 0;
  private maxSize: number;
  private offset = 0;
  private bytes: Uint8Array = new Uint8Array(0);

  /** `maxTableSize`: the SETTINGS_HEADER_TABLE_SIZE this side advertised (4,096 unless it sent another). */
  constructor(private readonly maxTableSize = 4_096) {
    this.maxSize = maxTableSize;
  }

  /** The dynamic table's size as RFC 7541 §4.1 counts it (for tests). */
  get tableSize(): number {
    return this.dynamicSize;
  }

  /** Decodes one complete header block (HEADERS plus any CONTINUATION payloads, joined). */
  decode(block: Uint8Array): HeaderField[] {
    this.bytes = block;
    this.offset = 0;
    const fields: HeaderField[] = [];
    while (this.offset < block.length) {
      const first = block[this.offset];
      // Checked here rather than below: a table size update must come before the first field (§4.2).
      if ((first & 0xe0) === 0x20 && fields.length > 0) {
        throw new Error('HPACK: table size update after a header field');
      }
      if ((first & 0x80) !== 0) {
        fields.push(this.field(this.integer(7)));
      } else if ((first & 0x40) !== 0) {
        const field = this.literal(6);
        this.insert(field);
        fields.push(field);
      } else if ((first & 0x20) !== 0) {
        const size = this.integer(5);
        if (size > this.maxTableSize) throw new Error(`HPACK: table size ${size} over ${this.maxTableSize}`);
        this.maxSize = size;
        this.evict(0);
      } else {
        // Without indexing (0000) or never indexed (0001): both leave the table alone.
        fields.push(this.literal(4));
      }
    }
    return fields;
  }

  private field(index: number): HeaderField {
    if (index === 0) throw new Error('HPACK: index 0');
    if (index <= STATIC_TABLE.length) return STATIC_TABLE[index - 1];
    const field = this.dynamic[index - STATIC_TABLE.length - 1];
    if (field === undefined) throw new Error(`HPACK: index ${index} beyond the table`);
    return field;
  }

  private literal(prefixBits: number): HeaderField {
    const nameIndex = this.integer(prefixBits);
    const name = nameIndex === 0 ? this.string() : this.field(nameIndex)[0];
    return [name, this.string()];
  }

  private insert(field: HeaderField): void {
    const size = field[0].length + field[1].length + ENTRY_OVERHEAD;
    // An entry larger than the table empties it and is not added (§4.4).
    this.evict(size);
    if (size > this.maxSize) return;
    this.dynamic.unshift(field);
    this.dynamicSize += size;
  }

  /** Evicts the oldest entries until `room` more bytes fit. */
  private evict(room: number): void {
    while (this.dynamic.length > 0 && this.dynamicSize + room > this.maxSize) {
      const [name, value] = this.dynamic.pop()!;
      this.dynamicSize -= name.length + value.length + ENTRY_OVERHEAD;
    }
  }

  /** An integer with an N-bit prefix (§5.1). */
  private integer(prefixBits: number): number {
    const bytes = this.bytes;
    if (this.offset >= bytes.length) throw new Error('HPACK: truncated integer');
    const max = (1 << prefixBits) - 1;
    let value = bytes[this.offset++] & max;
    if (value < max) return value;
    let shift = 0;
    for (;;) {
      if (this.offset >= bytes.length) throw new Error('HPACK: truncated integer');
      const byte = bytes[this.offset++];
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if ((byte & 0x80) === 0) break;
      if (shift > 28) throw new Error('HPACK: integer too large');
    }
    return value;
  }

  /** A string literal (§5.2): a Huffman flag, a 7-bit-prefix length, the bytes. */
  private string(): string {
    if (this.offset >= this.bytes.length) throw new Error('HPACK: truncated string');
    const huffman = (this.bytes[this.offset] & 0x80) !== 0;
    const length = this.integer(7);
    const start = this.offset;
    if (start + length > this.bytes.length) throw new Error('HPACK: truncated string');
    this.offset += length;
    if (huffman) return decodeHuffman(this.bytes, start, length);
    let text = '';
    for (let i = start; i < start + length; i++) text += String.fromCharCode(this.bytes[i]);
    return text;
  }
}
