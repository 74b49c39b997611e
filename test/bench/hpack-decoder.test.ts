import { once } from 'node:events';
import { createServer, type Http2Server, type OutgoingHttpHeaders } from 'node:http2';
import { connect, type AddressInfo } from 'node:net';
import fc from 'fast-check';
import { decodeHuffman, HpackDecoder, type HeaderField } from '../../bench/support/hpack-decoder';
import { literalField } from '../../bench/support/hpack-literals';

/**
 * The decoder against nghttp2's encoder (Node's http2 server), which indexes repeated headers in its
 * dynamic table, evicts old ones, and Huffman-codes strings when that is shorter: a raw socket reads the
 * server's header blocks, and every block must decode to the headers the server was given.
 */
describe('HpackDecoder', () => {
  let server: Http2Server;
  let port: number;
  /** The headers each request path's answer carries, set by the test before it sends the request. */
  const answers = new Map<string, OutgoingHttpHeaders>();

  beforeAll(async () => {
    server = createServer();
    server.on('stream', (stream, headers) => {
      stream.respond(answers.get(String(headers[':path']))!, { endStream: true });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.close();
    await once(server, 'close');
  });

  /**
   * Sends one request per header set on one connection and returns each answer's decoded block, in order.
   * `tableSize` is the SETTINGS_HEADER_TABLE_SIZE the raw client advertises: below the default 4,096,
   * nghttp2 must open its next block with a table size update and evicts sooner.
   */
  async function decodeAnswers(
    headerSets: OutgoingHttpHeaders[],
    tableSize = 4_096,
  ): Promise<HeaderField[][]> {
    const socket = connect(port, '127.0.0.1');
    const decoder = new HpackDecoder(tableSize);
    const blocks: HeaderField[][] = [];
    const done = new Promise<void>((resolve, reject) => {
      let unread = Buffer.alloc(0);
      socket.on('error', reject);
      socket.on('data', (data: Buffer) => {
        unread = Buffer.concat([unread, data]);
        while (unread.length >= 9 && unread.length >= 9 + unread.readUIntBE(0, 3)) {
          const length = unread.readUIntBE(0, 3);
          const [type, flags] = [unread[3], unread[4]];
          const payload = unread.subarray(9, 9 + length);
          unread = unread.subarray(9 + length);
          if (type === 0x4 && (flags & 0x1) === 0) socket.write(frame(0x4, 0x1, 0, Buffer.alloc(0)));
          if (type === 0x3 || type === 0x7)
            reject(new Error(`the server refused a request (frame type ${type})`));
          if (type === 0x1) {
            // Node's server sends each block in one HEADERS frame with END_HEADERS, unpadded.
            if ((flags & 0x4) === 0) reject(new Error('a header block continued in CONTINUATION frames'));
            try {
              blocks.push(decoder.decode(payload));
            } catch (error) {
              reject(error);
            }
            // Eviction cannot be seen in what decodes (entries are indexed newest first), only here.
            if (decoder.tableSize > tableSize)
              reject(new Error(`table of ${decoder.tableSize} B over ${tableSize}`));
            if (blocks.length === headerSets.length) resolve();
          }
        }
      });
    });
    const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
    const requests = headerSets.map((headers, i) => {
      const path = `/answer-${i}-${Math.random()}`;
      answers.set(path, headers);
      // :method GET (2) and :scheme http (6) from the static table, then :path and :authority (name
      // indexes 4 and 1); nghttp2 resets a request without :authority.
      const block = Buffer.concat([
        Buffer.from([0x82, 0x86]),
        literalField(4, path),
        literalField(1, 'localhost'),
      ]);
      return frame(0x1, 0x5, 1 + 2 * i, block);
    });
    const settings = Buffer.alloc(6);
    settings.writeUInt16BE(0x1, 0); // SETTINGS_HEADER_TABLE_SIZE
    settings.writeUInt32BE(tableSize, 2);
    socket.write(Buffer.concat([preface, frame(0x4, 0, 0, settings), ...requests]));
    await done;
    socket.destroy();
    return blocks;
  }

  test('decodes what nghttp2 encodes: static and dynamic entries, Huffman and raw strings, eviction', async () => {
    // Every byte HTTP allows in a field value except tab: visible ASCII, space, and 0x80-0xff.
    const fieldByte = fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }));
    const headerValue = fc.string({ unit: fieldByte.map((c) => String.fromCharCode(c)), maxLength: 300 });
    const headerName = fc.stringMatching(/^x-[a-z0-9-]{1,20}$/);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.dictionary(headerName, headerValue, { maxKeys: 6 }), { minLength: 1, maxLength: 40 }),
        fc.constantFrom(4_096, 256),
        async (sets, tableSize) => {
          const sent = sets.map((extra) => ({
            ':status': 200,
            'content-type': 'application/grpc',
            ...extra,
          }));
          const decoded = await decodeAnswers(sent, tableSize);
          expect(decoded).toHaveLength(sent.length);
          decoded.forEach((fields, i) => {
            // Exactly what the server was given, in order; Node adds a `date` header of its own. Node
            // writes header values as latin1 bytes; the decoder reads them back one char per byte.
            expect(fields.filter(([name]) => name !== 'date')).toEqual([
              [':status', '200'],
              ['content-type', 'application/grpc'],
              ...Object.entries(sets[i]),
            ]);
          });
        },
      ),
      { numRuns: 40 },
    );
  });

  test('applies a table size update and refuses one above the advertised limit', () => {
    const decoder = new HpackDecoder(4_096);
    // Literal with incremental indexing, new name "x-a": "b"; then an indexed reference to it (62).
    const insert = Buffer.from([0x40, 3, ...Buffer.from('x-a'), 1, ...Buffer.from('b')]);
    expect(decoder.decode(insert)).toEqual([['x-a', 'b']]);
    expect(decoder.tableSize).toBe(3 + 1 + 32);
    expect(decoder.decode(Buffer.from([0x80 | 62]))).toEqual([['x-a', 'b']]);
    // Size update to 0 (001 00000) empties the table: index 62 no longer exists.
    expect(decoder.decode(Buffer.from([0x20]))).toEqual([]);
    expect(decoder.tableSize).toBe(0);
    expect(() => decoder.decode(Buffer.from([0x80 | 62]))).toThrow(/beyond the table/);
    // A size update belongs at the start of a block (RFC 7541 §4.2): after :method GET (2) it is refused.
    expect(() => decoder.decode(Buffer.from([0x82, 0x20]))).toThrow(/after a header field/);
    // 4,097 = 31 + 4,066: 0x3f, then 4,066 as 0xe2 0x1f.
    expect(() => decoder.decode(Buffer.from([0x3f, 0xe2, 0x1f]))).toThrow(/over 4096/);
  });

  test('refuses truncated blocks and bad Huffman padding', () => {
    expect(() => new HpackDecoder().decode(Buffer.from([0x40, 5, 0x61]))).toThrow(/truncated/);
    expect(() => new HpackDecoder().decode(Buffer.from([0xff]))).toThrow(/truncated integer/);
    // "a" is the 5-bit code 00011; padding must be 1s: 00011 111 is valid, 00011 000 is not.
    expect(decodeHuffman(Buffer.from([0b00011111]), 0, 1)).toBe('a');
    expect(() => decodeHuffman(Buffer.from([0b00011000]), 0, 1)).toThrow(/padding/);
    // A whole byte of padding (over 7 bits) is refused too.
    expect(() => decodeHuffman(Buffer.from([0b00011111, 0xff]), 0, 2)).toThrow(/padding/);
  });
});

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}
