import fc from 'fast-check';
import { compressSync as snappyBlock } from 'snappy';
import { gzipSync } from 'node:zlib';
import { compress, CompressionCodec, decompress } from '../../../../src/kafka/records/compression';
import { KafkaRecordsError } from '../../../../src/kafka/records/kafka-records-error';

const CODECS = [
  CompressionCodec.NONE,
  CompressionCodec.GZIP,
  CompressionCodec.SNAPPY,
  CompressionCodec.LZ4,
  CompressionCodec.ZSTD,
] as const;
const MAX = 1 << 20;
const TEXT = 'abcabcabcabcabcabcabcabc-kafka-kafka-kafka-kafka';

function refusal(run: () => unknown): KafkaRecordsError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(KafkaRecordsError);
    return error as KafkaRecordsError;
  }
  throw new Error('expected a KafkaRecordsError');
}

describe('compress and decompress', () => {
  test.each(CODECS)('codec %i round-trips any bytes', (codec) => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 70_000 }), (bytes) => {
        const input = Buffer.from(bytes);
        expect(decompress(codec, compress(codec, input), MAX).equals(input)).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  test.each(CODECS.filter((codec) => codec !== CompressionCodec.NONE))(
    'codec %i refuses output past the limit (a decompression bomb) as too-large',
    (codec) => {
      const bomb = compress(codec, Buffer.alloc(4 << 20));
      expect(bomb.length).toBeLessThan(300_000);
      expect(refusal(() => decompress(codec, bomb, 1 << 20)).reason).toBe('too-large');
    },
  );

  test('uncompressed records past the limit are too-large as well', () => {
    expect(refusal(() => decompress(CompressionCodec.NONE, Buffer.alloc(11), 10)).reason).toBe('too-large');
  });

  test.each(CODECS.filter((codec) => codec !== CompressionCodec.NONE))(
    'codec %i refuses garbage as corrupt-compression and never crashes on random bytes',
    (codec) => {
      expect(refusal(() => decompress(codec, Buffer.from('not compressed at all'), MAX)).reason).toBe(
        'corrupt-compression',
      );
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
          try {
            decompress(codec, Buffer.from(bytes), 4096);
          } catch (error) {
            expect(error).toBeInstanceOf(KafkaRecordsError);
          }
        }),
        { numRuns: 300 },
      );
    },
  );

  test('codec ids 5 to 7 are unsupported-compression', () => {
    for (const codec of [5, 6, 7]) {
      expect(refusal(() => decompress(codec, Buffer.from('x'), MAX)).reason).toBe('unsupported-compression');
    }
  });

  test('gzip from another encoder (a fixed vector) decodes', () => {
    const vector = Buffer.from(
      '1f8b08089932166b0003762e747874004b4c4a4ec48674b313d3b21331490063146b4b30000000',
      'hex',
    );
    expect(decompress(CompressionCodec.GZIP, vector, MAX).toString()).toBe(TEXT);
    expect(decompress(CompressionCodec.GZIP, gzipSync(Buffer.from(TEXT)), MAX).toString()).toBe(TEXT);
  });
});

describe('snappy', () => {
  const XERIAL_HEADER = '82534e415050590000000001' + '00000001';

  test('a raw block (librdkafka) decodes: a hand-written literal-only block', () => {
    // length 5, then a literal tag ((5 - 1) << 2) and the five bytes
    const raw = Buffer.from('0510' + Buffer.from('hello').toString('hex'), 'hex');
    expect(decompress(CompressionCodec.SNAPPY, raw, MAX).toString()).toBe('hello');
  });

  test('xerial framing (the Java client) decodes, one chunk or several', () => {
    const one = Buffer.from(
      XERIAL_HEADER + '00000007' + '0510' + Buffer.from('hello').toString('hex'),
      'hex',
    );
    expect(decompress(CompressionCodec.SNAPPY, one, MAX).toString()).toBe('hello');
    const a = snappyBlock(Buffer.from('kafka '));
    const b = snappyBlock(Buffer.from('cohort'));
    const two = Buffer.concat([
      Buffer.from(XERIAL_HEADER, 'hex'),
      Buffer.from([0, 0, 0, a.length]),
      a,
      Buffer.from([0, 0, 0, b.length]),
      b,
    ]);
    expect(decompress(CompressionCodec.SNAPPY, two, MAX).toString()).toBe('kafka cohort');
  });

  test('what compress writes is xerial-framed', () => {
    const out = compress(CompressionCodec.SNAPPY, Buffer.from(TEXT));
    expect(out.subarray(0, 16).toString('hex')).toBe(XERIAL_HEADER);
    expect(out.readInt32BE(16)).toBe(out.length - 20);
  });

  test('a raw block whose length preamble passes the limit is refused before decoding', () => {
    // claims 2^28 bytes in 4 bytes of preamble
    const raw = Buffer.from('80808080010000', 'hex');
    expect(refusal(() => decompress(CompressionCodec.SNAPPY, raw, MAX)).reason).toBe('too-large');
  });

  test('a xerial chunk length past the data is corrupt-compression', () => {
    const bad = Buffer.from(XERIAL_HEADER + '7fffffff0510', 'hex');
    expect(refusal(() => decompress(CompressionCodec.SNAPPY, bad, MAX)).reason).toBe('corrupt-compression');
  });
});

describe('lz4 frames', () => {
  test('a frame from another encoder decodes: linked blocks, content size and checksum', () => {
    const vector = Buffer.from(
      '04224d186c40300000000000000084160000003f616263030002692d6b61666b610600506b61666b61000000004455e473',
      'hex',
    );
    expect(decompress(CompressionCodec.LZ4, vector, MAX).toString()).toBe(TEXT);
  });

  test('a frame with block checksums decodes', () => {
    const vector = Buffer.from(
      '04224d187440bd160000003f616263030002692d6b61666b610600506b61666b6178392052000000004455e473',
      'hex',
    );
    expect(decompress(CompressionCodec.LZ4, vector, MAX).toString()).toBe(TEXT);
  });

  test('a hand-built frame: one literal, an overlapping match, an uncompressed block', () => {
    const frame = Buffer.from(
      '04224d18' +
        '6040' +
        '82' + // magic, FLG (v1, independent), BD (64 KB), header checksum (unchecked)
        '08000000' +
        '1161010030616161' + // block: 'a', match offset 1 length 5, then 'aaa'
        '03000080' +
        '78797a' + // an uncompressed block 'xyz'
        '00000000', // end mark
      'hex',
    );
    expect(decompress(CompressionCodec.LZ4, frame, MAX).toString()).toBe('aaaaaaaaaxyz');
  });

  test('a frame whose content size passes the limit is refused before decoding', () => {
    const frame = Buffer.from('04224d18' + '6840' + '0000000001000000' + '00' + '00000000', 'hex');
    expect(refusal(() => decompress(CompressionCodec.LZ4, frame, MAX)).reason).toBe('too-large');
  });

  test('a match that points before the output is corrupt-compression', () => {
    const frame = Buffer.from('04224d18' + '6040' + '82' + '04000000' + '10610500' + '00000000', 'hex');
    expect(refusal(() => decompress(CompressionCodec.LZ4, frame, MAX)).reason).toBe('corrupt-compression');
  });
});

describe('zstd', () => {
  test('a frame from another encoder (a fixed vector) decodes', () => {
    const vector = Buffer.from('28b52ffd24308d0000486162632d6b61666b610200295ef1734385426ce0', 'hex');
    expect(decompress(CompressionCodec.ZSTD, vector, MAX).toString()).toBe(TEXT);
  });

  test('a frame declaring a window far past the limit is refused before its window is allocated', () => {
    // descriptor 00, window byte 0x88 (2^27 bytes), then an empty last raw block
    const frame = Buffer.from('28b52ffd' + '00' + '88' + '010000', 'hex');
    expect(refusal(() => decompress(CompressionCodec.ZSTD, frame, MAX)).reason).toBe('too-large');
    const small = Buffer.from('28b52ffd' + '00' + '60' + '010000', 'hex');
    expect(decompress(CompressionCodec.ZSTD, small, MAX).length).toBe(0);
  });

  test('a single-segment frame whose content size passes the limit is refused', () => {
    const frame = Buffer.from('28b52ffd' + 'e0' + 'ffffffff00000000' + '010000', 'hex');
    expect(refusal(() => decompress(CompressionCodec.ZSTD, frame, MAX)).reason).toBe('too-large');
  });
});
