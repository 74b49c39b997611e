/**
 * Writes Kafka's primitive types into a growing buffer; `toBuffer()` returns exactly the bytes written.
 * int64 values are numbers (offsets and timestamps are safe integers).
 */
export class KafkaWriter {
  private buffer: Buffer;
  private position = 0;

  constructor(initialBytes = 256) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  private reserve(bytes: number): number {
    if (this.position + bytes > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.position + bytes));
      this.buffer.copy(grown, 0, 0, this.position);
      this.buffer = grown;
    }
    const at = this.position;
    this.position += bytes;
    return at;
  }

  get length(): number {
    return this.position;
  }

  // Each write reserves first, then reads `this.buffer`: `this.buffer.writeX(value, this.reserve(n))` would
  // take the buffer before reserve() replaced it with a larger one, and write into (or past) the old one.

  int8(value: number): this {
    const at = this.reserve(1);
    this.buffer.writeInt8(value, at);
    return this;
  }

  int16(value: number): this {
    const at = this.reserve(2);
    this.buffer.writeInt16BE(value, at);
    return this;
  }

  int32(value: number): this {
    const at = this.reserve(4);
    this.buffer.writeInt32BE(value, at);
    return this;
  }

  /** Writes at an earlier position (a size prefix filled in once the size is known). */
  int32At(position: number, value: number): this {
    this.buffer.writeInt32BE(value, position);
    return this;
  }

  int64(value: number): this {
    const at = this.reserve(8);
    this.buffer.writeBigInt64BE(BigInt(value), at);
    return this;
  }

  boolean(value: boolean): this {
    return this.int8(value ? 1 : 0);
  }

  uvarint(value: number): this {
    let rest = value;
    while (rest >= 0x80) {
      const at = this.reserve(1);
      this.buffer.writeUInt8((rest & 0x7f) | 0x80, at);
      rest = Math.floor(rest / 128);
    }
    const at = this.reserve(1);
    this.buffer.writeUInt8(rest, at);
    return this;
  }

  varint(value: number): this {
    return this.uvarint(value >= 0 ? value * 2 : -value * 2 - 1);
  }

  raw(bytes: Uint8Array): this {
    const at = this.reserve(bytes.length);
    this.buffer.set(bytes, at);
    return this;
  }

  nullableString(value: string | null, isCompact: boolean): this {
    if (value === null) return isCompact ? this.uvarint(0) : this.int16(-1);
    const bytes = Buffer.from(value, 'utf8');
    if (isCompact) this.uvarint(bytes.length + 1);
    else this.int16(bytes.length);
    return this.raw(bytes);
  }

  nullableBytes(value: Uint8Array | null, isCompact: boolean): this {
    if (value === null) return isCompact ? this.uvarint(0) : this.int32(-1);
    if (isCompact) this.uvarint(value.length + 1);
    else this.int32(value.length);
    return this.raw(value);
  }

  /** -1 for null. */
  arrayLength(length: number, isCompact: boolean): this {
    return isCompact ? this.uvarint(length + 1) : this.int32(length);
  }

  /** An empty tagged-field section: cohort sends none. */
  emptyTaggedFields(): this {
    return this.uvarint(0);
  }

  toBuffer(): Buffer {
    return this.buffer.subarray(0, this.position);
  }
}
