import { KafkaProtocolError } from './kafka-protocol-error';

/**
 * Reads Kafka's primitive types (https://kafka.apache.org/protocol#protocol_types) from one request
 * buffer, front to back. Every read checks the bytes are there: a short or lying frame throws a
 * KafkaProtocolError, never reads past the end or allocates what a length claims before checking it.
 * int64 values are numbers, refused when outside JavaScript's safe integers (offsets and timestamps fit).
 */
export class KafkaReader {
  private position = 0;

  constructor(private readonly buffer: Buffer) {}

  get offset(): number {
    return this.position;
  }

  get remaining(): number {
    return this.buffer.length - this.position;
  }

  private need(bytes: number, what: string): number {
    if (bytes < 0 || this.position + bytes > this.buffer.length) {
      throw new KafkaProtocolError(
        `${what} needs ${bytes} bytes at ${this.position}, the frame has ${this.remaining}`,
      );
    }
    const at = this.position;
    this.position += bytes;
    return at;
  }

  int8(): number {
    return this.buffer.readInt8(this.need(1, 'int8'));
  }

  int16(): number {
    return this.buffer.readInt16BE(this.need(2, 'int16'));
  }

  int32(): number {
    return this.buffer.readInt32BE(this.need(4, 'int32'));
  }

  uint32(): number {
    return this.buffer.readUInt32BE(this.need(4, 'uint32'));
  }

  int64(): number {
    const value = this.buffer.readBigInt64BE(this.need(8, 'int64'));
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new KafkaProtocolError(`int64 ${value} is outside the range cohort reads exactly`);
    }
    return Number(value);
  }

  boolean(): boolean {
    return this.int8() !== 0;
  }

  /** Unsigned LEB128, at most 5 bytes (a 32-bit value). */
  uvarint(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const byte = this.buffer.readUInt8(this.need(1, 'varint'));
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) {
        if (value > 0xffffffff) throw new KafkaProtocolError('varint exceeds 32 bits');
        return value;
      }
    }
    throw new KafkaProtocolError('varint longer than 5 bytes');
  }

  /** Zig-zag signed varint (32 bits). */
  varint(): number {
    const raw = this.uvarint();
    return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
  }

  /** A length-prefixed slice; `length` was read by the caller and is checked here. */
  bytesOf(length: number, what: string): Buffer {
    const at = this.need(length, what);
    return this.buffer.subarray(at, at + length);
  }

  /** INT16 length (-1 = null when nullable), or a COMPACT uvarint length + 1 (0 = null). */
  nullableString(isCompact: boolean): string | null {
    const length = isCompact ? this.uvarint() - 1 : this.int16();
    if (length < 0) {
      if (length === -1) return null;
      throw new KafkaProtocolError(`string length ${length}`);
    }
    return this.bytesOf(length, 'string').toString('utf8');
  }

  string(isCompact: boolean): string {
    const value = this.nullableString(isCompact);
    if (value === null) throw new KafkaProtocolError('null in a non-nullable string');
    return value;
  }

  /**
   * INT32 length (-1 = null when nullable), or a COMPACT uvarint length + 1 (0 = null). A copy: what a
   * request's bytes field carries (a member's metadata, its assignment) can outlive the request, and a view
   * would keep the whole frame alive with it.
   */
  nullableBytes(isCompact: boolean): Buffer | null {
    const view = this.nullableBytesView(isCompact);
    return view === null ? null : Buffer.from(view);
  }

  /**
   * The same field as a view into the frame, no copy: for a Produce's records, which the log writes and
   * lets go (its in-memory tail copies a view it keeps) and which can be a megabyte a request.
   */
  nullableBytesView(isCompact: boolean): Buffer | null {
    const length = isCompact ? this.uvarint() - 1 : this.int32();
    if (length < 0) {
      if (length === -1) return null;
      throw new KafkaProtocolError(`bytes length ${length}`);
    }
    return this.bytesOf(length, 'bytes');
  }

  bytes(isCompact: boolean): Buffer {
    const value = this.nullableBytes(isCompact);
    if (value === null) throw new KafkaProtocolError('null in non-nullable bytes');
    return value;
  }

  /** An array's element count: -1 (null) is returned as is, for the caller to accept or refuse. */
  arrayLength(isCompact: boolean): number {
    const length = isCompact ? this.uvarint() - 1 : this.int32();
    if (length < -1) throw new KafkaProtocolError(`array length ${length}`);
    // Each element takes at least one byte: a count past the frame's end is a lie, refused before any work.
    if (length > this.remaining) {
      throw new KafkaProtocolError(`array of ${length} elements in ${this.remaining} bytes`);
    }
    return length;
  }

  /** Skips a flexible struct's tagged fields (none of the versions cohort serves defines one it needs). */
  skipTaggedFields(): void {
    const count = this.uvarint();
    if (count > this.remaining)
      throw new KafkaProtocolError(`${count} tagged fields in ${this.remaining} bytes`);
    for (let i = 0; i < count; i++) {
      this.uvarint();
      this.bytesOf(this.uvarint(), 'tagged field');
    }
  }
}
