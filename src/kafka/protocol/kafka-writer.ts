/**
 * Writes Kafka's primitive types into a growing buffer; `toBuffer()` returns exactly the bytes written.
 * int64 values are numbers (offsets and timestamps are safe integers).
 *
 * With `referencedBytesMin`, byte fields at least that long (a Fetch answer's record sets, read from a
 * segment file into buffers of their own) are referenced instead of copied: `toChunks()` returns the
 * written bytes as the writer's own runs with those buffers between them, for a socket to write as they
 * are (one writev). A referenced buffer must not change until the chunks are written; the log never
 * changes bytes it has handed out. Below the threshold a copy costs less than another chunk.
 */
export class KafkaWriter {
  private buffer: Buffer;
  /** Bytes written into `buffer` (referenced bytes excluded). */
  private position = 0;
  /** The referenced byte fields, each with where it sits between the writer's own bytes. */
  private referenced: { readonly ownAt: number; readonly bytes: Buffer }[] | undefined;
  private referencedBytes = 0;

  constructor(
    initialBytes = 256,
    private readonly referencedBytesMin = Number.POSITIVE_INFINITY,
  ) {
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

  /** The bytes written, referenced ones included. */
  get length(): number {
    return this.position + this.referencedBytes;
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
    // `position` counts referenced bytes; the writer's own buffer does not hold them.
    let referencedBefore = 0;
    for (const { ownAt, bytes } of this.referenced ?? []) {
      if (position < ownAt + referencedBefore) break;
      if (position < ownAt + referencedBefore + bytes.length) {
        throw new RangeError(`int32At(${position}) falls inside referenced bytes`);
      }
      referencedBefore += bytes.length;
    }
    const ownPosition = position - referencedBefore;
    this.buffer.writeInt32BE(value, ownPosition);
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
    if (bytes.length >= this.referencedBytesMin) {
      const view = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
      (this.referenced ??= []).push({ ownAt: this.position, bytes: view });
      this.referencedBytes += bytes.length;
      return this;
    }
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

  /** The bytes written, as one buffer (referenced bytes copied into it). */
  toBuffer(): Buffer {
    if (this.referenced === undefined) return this.buffer.subarray(0, this.position);
    return Buffer.concat(this.toChunks(), this.length);
  }

  /** The bytes written, in order: runs of the writer's own buffer and the referenced buffers between them. */
  toChunks(): Buffer[] {
    if (this.referenced === undefined) return [this.buffer.subarray(0, this.position)];
    const chunks: Buffer[] = [];
    let from = 0;
    for (const { ownAt, bytes } of this.referenced) {
      if (ownAt > from) chunks.push(this.buffer.subarray(from, ownAt));
      chunks.push(bytes);
      from = ownAt;
    }
    if (this.position > from) chunks.push(this.buffer.subarray(from, this.position));
    return chunks;
  }
}
