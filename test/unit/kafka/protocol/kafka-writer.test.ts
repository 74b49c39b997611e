import { KafkaReader } from '../../../../src/kafka/protocol/kafka-reader';
import { KafkaWriter } from '../../../../src/kafka/protocol/kafka-writer';

describe('KafkaWriter', () => {
  test('a number written as the buffer grows lands in the grown buffer', () => {
    // A 1-byte start makes every write below grow the buffer in the middle of that write.
    const bytes = new KafkaWriter(1)
      .int8(-3)
      .int16(-2)
      .int32(0x01020304)
      .int64(2 ** 40 + 5)
      .uvarint(300)
      .varint(-70)
      .toBuffer();
    const reader = new KafkaReader(bytes);
    expect(reader.int8()).toBe(-3);
    expect(reader.int16()).toBe(-2);
    expect(reader.int32()).toBe(0x01020304);
    expect(reader.int64()).toBe(2 ** 40 + 5);
    expect(reader.uvarint()).toBe(300);
    expect(reader.varint()).toBe(-70);
    expect(reader.remaining).toBe(0);
  });

  test('a bytes field whose length prefix crosses the first 256 bytes is written whole', () => {
    const value = Buffer.alloc(40, 7);
    const writer = new KafkaWriter();
    writer.raw(Buffer.alloc(253, 1)).nullableBytes(value, false);
    const reader = new KafkaReader(writer.toBuffer());
    reader.bytesOf(253, 'padding');
    expect(reader.nullableBytes(false)).toEqual(value);
  });
});
