import fc from 'fast-check';
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

  test('referenced byte fields are chunks of their own, and the size prefix counts them', () => {
    const records = Buffer.alloc(20, 9);
    const writer = new KafkaWriter(4, 16);
    writer.int32(0).int16(1).nullableBytes(records, false).int8(2).nullableBytes(Buffer.alloc(3, 5), false);
    writer.int32At(0, writer.length - 4);
    const chunks = writer.toChunks();
    // The record set is the caller's buffer itself, not a copy.
    expect(chunks[1]).toBe(records);
    expect(chunks.map((c) => c.length)).toEqual([4 + 2 + 4, 20, 1 + 4 + 3]);
    const whole = writer.toBuffer();
    expect(whole).toEqual(Buffer.concat(chunks));
    expect(whole.readInt32BE(0)).toBe(whole.length - 4);
  });

  test('int32At refuses a position inside referenced bytes', () => {
    const writer = new KafkaWriter(4, 8).int32(0).raw(Buffer.alloc(8)).int32(0);
    expect(() => writer.int32At(6, 1)).toThrow(RangeError);
    writer.int32At(12, 7);
    expect(writer.toBuffer().readInt32BE(12)).toBe(7);
  });

  test('a referencing writer writes the same bytes as a copying one, whatever the writes', () => {
    type Op = { kind: 'int32'; value: number } | { kind: 'bytes'; length: number } | { kind: 'sizeAt' };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.integer().map((value) => ({ kind: 'int32' as const, value })),
      fc.nat(40).map((length) => ({ kind: 'bytes' as const, length })),
      fc.constant({ kind: 'sizeAt' as const }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), fc.integer({ min: 1, max: 32 }), (ops, threshold) => {
        const copying = new KafkaWriter(1);
        const referencing = new KafkaWriter(1, threshold);
        /** Positions of int32s written so far, where a size may be written afterwards. */
        const int32s: number[] = [];
        ops.forEach((o, i) => {
          for (const writer of [copying, referencing]) {
            if (o.kind === 'int32') writer.int32(o.value);
            else if (o.kind === 'bytes') writer.nullableBytes(Buffer.alloc(o.length, i), false);
            else if (int32s.length > 0) writer.int32At(int32s[i % int32s.length]!, writer.length);
          }
          if (o.kind === 'int32') int32s.push(copying.length - 4);
        });
        expect(referencing.length).toBe(copying.length);
        expect(referencing.toBuffer()).toEqual(copying.toBuffer());
        expect(Buffer.concat(referencing.toChunks())).toEqual(copying.toBuffer());
      }),
    );
  });
});
