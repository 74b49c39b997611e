import { CompressionCodec } from '../../../../src/kafka/records/compression';
import { decodeKafkaRecordBatches } from '../../../../src/kafka/records/kafka-record-batch';

/**
 * Batches written by a third client's encoder: kafka-python 2.0.2's DefaultRecordBatchBuilder (magic 2),
 * one per codec, with python-snappy (xerial framing, as the Java client), python-lz4 (frames with a
 * content size) and python-zstandard. Each holds the same three records:
 *
 *   builder.append(0, 1700000000000, b'k0', b'cohort ' * 12, [('h-trace', b'x'), ('h-null', None)])
 *   builder.append(1, 1700000000005, None, b'kafka ' * 10, [])
 *   builder.append(2, 1699999999997, b'k2', None, [])
 */
const VECTORS: readonly (readonly [CompressionCodec, string])[] = [
  [
    CompressionCodec.NONE,
    '0000000000000000000000ef0000000002eafea15d0000000000020000018bcfe568000000018bcfe56805ffffffffffffff' +
      'ffffffffffffff00000003de01000000046b30a801636f686f727420636f686f727420636f686f727420636f686f72742063' +
      '6f686f727420636f686f727420636f686f727420636f686f727420636f686f727420636f686f727420636f686f727420636f' +
      '686f727420040e682d747261636502780c682d6e756c6c018401000a0201786b61666b61206b61666b61206b61666b61206b' +
      '61666b61206b61666b61206b61666b61206b61666b61206b61666b61206b61666b61206b61666b61200010000504046b3201' +
      '00',
  ],
  [
    CompressionCodec.GZIP,
    '00000000000000000000008400000000022f9ab9c30001000000020000018bcfe568000000018bcfe56805ffffffffffffff' +
      'ffffffffffffff000000031f8b08005234166b02ffbbc7c8c0c0c0926db08231393f23bfa84481aa140b5f866e495162722a' +
      '53054f866e5e694e0e630b23031713634576625a76a20279248300032b0b4bb6112303000362c6a2be000000',
  ],
  [
    CompressionCodec.SNAPPY,
    '00000000000000000000008e0000000002531bc82e0002000000020000018bcfe568000000018bcfe56805ffffffffffffff' +
      'ffffffffffffff0000000382534e4150505900000000010000000100000049be0140de01000000046b30a801636f686f7274' +
      '20fe07003207007c040e682d747261636502780c682d6e756c6c018401000a0201786b61666b6120d6060024001000050404' +
      '6b320100',
  ],
  [
    CompressionCodec.LZ4,
    '00000000000000000000008e000000000213e6ef7a0003000000020000018bcfe568000000018bcfe56805ffffffffffffff' +
      'ffffffffffffff0000000304224d186840be000000000000004846000000ff02de01000000046b30a801636f686f72742007' +
      '003aff11040e682d747261636502780c682d6e756c6c018401000a0201786b61666b6120060023a00010000504046b320100' +
      '00000000',
  ],
  [
    CompressionCodec.ZSTD,
    '0000000000000000000000800000000002aca5ef660004000000020000018bcfe568000000018bcfe56805ffffffffffffff' +
      'ffffffffffffff0000000328b52ffd20be350200b403de01000000046b30a801636f686f727420040e682d74726163650278' +
      '0c682d6e756c6c018401000a0201786b61666b61200010000504046b320100020058caf9aad0b204',
  ],
];

const TS = 1_700_000_000_000;
const EXPECTED = [
  {
    offsetDelta: 0,
    timestampMs: TS,
    key: Buffer.from('k0'),
    value: Buffer.from('cohort '.repeat(12)),
    headers: [
      { key: 'h-trace', value: Buffer.from('x') },
      { key: 'h-null', value: null },
    ],
  },
  { offsetDelta: 1, timestampMs: TS + 5, key: null, value: Buffer.from('kafka '.repeat(10)), headers: [] },
  { offsetDelta: 2, timestampMs: TS - 3, key: Buffer.from('k2'), value: null, headers: [] },
];

describe('batches from kafka-python 2.0.2', () => {
  test.each(VECTORS)('codec %i decodes to the records it was given', (codec, hex) => {
    const [batch, ...rest] = decodeKafkaRecordBatches(Buffer.from(hex, 'hex'));
    expect(rest).toHaveLength(0);
    expect(batch!.compression).toBe(codec);
    expect(batch!.baseTimestampMs).toBe(TS);
    expect(batch!.maxTimestampMs).toBe(TS + 5);
    expect(batch!.lastOffsetDelta).toBe(2);
    expect(batch!.producerId).toBe(-1);
    expect(batch!.records).toEqual(EXPECTED);
  });
});
