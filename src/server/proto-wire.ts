import { isUtf8 } from 'node:buffer';
import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';

/**
 * The protobuf wire format, by hand: a strict Reader, the one every request the server receives is read with
 * (by the hand-written decoders of broker-wire.ts and group-wire.ts, and by wire-schema.ts's check in front
 * of the generic decoder for every other method), and a two-pass Writer that sizes a message first and then
 * writes it, front to back, into one buffer. Every field the hand-written codecs handle numbers below 16, so
 * every tag they write is one byte.
 *
 * Strict means a RangeError (answered INVALID_ARGUMENT, undecodable-request.ts) for bytes that are not a
 * well-formed message, where protobufjs would act on a guess:
 * - input that ends inside a field: mid-tag, mid-varint, mid-fixed32/64, or a length-delimited field (a
 *   string, bytes, a nested message, a packed run) whose length runs past the end of its message, nested
 *   messages included (protobufjs cuts such a string short and decodes the rest);
 * - a known field arriving with a wire type its declared type cannot have (protobufjs reads it as the
 *   declared type anyway; the C++, Java and Go parsers keep it as an unknown field: either way the value
 *   the sender meant is not the value the server would act on). Repeated numeric fields take both their
 *   packed (length-delimited) and unpacked encodings, as every parser must;
 * - a `string` that is not valid UTF-8 (protobufjs and Buffer.toString turn each bad sequence into U+FFFD,
 *   so two different group ids would decode to the same one), as protobuf's own proto3 parsers refuse it;
 * - field number 0, wire types 6 and 7, a varint longer than 10 bytes, an end-group tag where a field should
 *   start or one that does not close the group open at that point.
 * Unknown fields of every valid wire type are skipped, as proto3 requires for forward compatibility,
 * groups (wire types 3 and 4, proto2's) included: a proto3 parser keeps an unknown group as an unknown
 * field, so its whole extent, to the matching end tag, is skipped.
 */

// --- decoding ---

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LEN = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;
/** protobuf's default recursion limit: nested messages and groups deeper than this are refused. */
export const MAX_NESTING_DEPTH = 100;
const TWO_32 = 4_294_967_296;

export const EMPTY: Buffer = Buffer.alloc(0);

/** Reads one message (or a nested one) of a protobuf buffer, field by field, refusing what is not well-formed. */
export class Reader {
  pos: number;

  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  /**
   * The next field's tag, (field number << 3) | wire type. Refuses field number 0, which no field has, and a
   * tag beyond 5 bytes (a field number is at most 2^29 - 1).
   */
  tag(): number {
    const start = this.pos;
    const tag = this.int32() >>> 0;
    if (tag < 8 || this.pos - start > 5) throw new RangeError(`no field has the tag ${tag}`);
    return tag;
  }

  /** A varint's low 32 bits as a signed int32 (int32 and enum fields, sign-extended on the wire). */
  int32(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const byte = this.byte();
      if (shift < 32) result |= (byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result | 0;
      shift += 7;
      if (shift >= 70) throw new RangeError('varint longer than 10 bytes');
    }
  }

  /** An int64 varint: a number when it is a safe integer, its exact decimal text otherwise. */
  int64(): number | string {
    let lo = 0;
    let hi = 0;
    let shift = 0;
    for (;;) {
      const byte = this.byte();
      const bits = byte & 0x7f;
      if (shift < 28) {
        lo |= bits << shift;
      } else if (shift === 28) {
        lo |= (bits & 0x0f) << 28;
        hi |= bits >>> 4;
      } else if (shift < 64) {
        hi |= bits << (shift - 32);
      }
      if ((byte & 0x80) === 0) break;
      shift += 7;
      if (shift >= 70) throw new RangeError('varint longer than 10 bytes');
    }
    lo >>>= 0;
    hi >>>= 0;
    if (hi <= 0x1fffff) return hi * TWO_32 + lo; // 0 .. 2^53 - 1
    if (hi >= 0xffe00000 && !(hi === 0xffe00000 && lo === 0)) {
      // -(2^53 - 1) .. -1: two's complement back to a magnitude
      const mlo = (~lo + 1) >>> 0;
      const mhi = (~hi + (mlo === 0 ? 1 : 0)) >>> 0;
      return -(mhi * TWO_32 + mlo);
    }
    return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)).toString();
  }

  /** The bounds of a length-delimited field's payload; the reader moves past it. */
  delimited(): number {
    const length = this.int32() >>> 0;
    const start = this.pos;
    if (length > this.end - start) throw new RangeError('length-delimited field runs past its message');
    this.pos = start + length;
    return start;
  }

  bytes(): Buffer {
    const start = this.delimited();
    return start === this.pos ? EMPTY : this.buf.subarray(start, this.pos);
  }

  /**
   * A `string` field's payload, refused unless it is valid UTF-8. Buffer.toString turns every invalid
   * sequence into U+FFFD, so a decoded text without one came from valid UTF-8: only a text holding U+FFFD
   * (sent as its own three bytes, or made of bad ones) is checked byte by byte. The hot path pays one
   * native search of the decoded text.
   */
  string(): string {
    const start = this.delimited();
    if (start === this.pos) return '';
    const text = this.buf.toString('utf8', start, this.pos);
    if (text.indexOf('\uFFFD') !== -1) checkUtf8(this.buf, start, this.pos);
    return text;
  }

  /** Moves past a `string` field's payload, refused unless it is valid UTF-8 (the check without the decode). */
  skipString(): void {
    const start = this.delimited();
    checkUtf8(this.buf, start, this.pos);
  }

  // A known field's value by its tag, refused unless it arrived with the wire type of its declared type.

  int32Field(tag: number): number {
    expectWireType(tag, WIRE_VARINT);
    return this.int32();
  }

  int64Field(tag: number): number | string {
    expectWireType(tag, WIRE_VARINT);
    return this.int64();
  }

  /** A `bool`: any varint other than 0 is true, as protobufjs reads it. */
  boolField(tag: number): boolean {
    expectWireType(tag, WIRE_VARINT);
    return this.int64() !== 0;
  }

  stringField(tag: number): string {
    expectWireType(tag, WIRE_LEN);
    return this.string();
  }

  bytesField(tag: number): Buffer {
    expectWireType(tag, WIRE_LEN);
    return this.bytes();
  }

  /** One element of a repeated message field, decoded by `decode` onto `into`. */
  repeatedMessage<T>(tag: number, into: T[], decode: (r: Reader) => T): void {
    expectWireType(tag, WIRE_LEN);
    into.push(decode(this.message()));
  }

  /** Moves past a field this decoder does not know, by its tag (a group up to its own end tag). */
  skipField(tag: number): void {
    this.skipValue(tag & 7, tag >>> 3, 0);
  }

  /** Moves past one value of `wireType`; `fieldNumber` is that of a group, whose end tag must repeat it. */
  skipValue(wireType: number, fieldNumber: number, depth: number): void {
    switch (wireType) {
      case WIRE_VARINT:
        this.int32(); // bounds and length checked; the value is not wanted
        return;
      case WIRE_FIXED64:
        this.advance(8);
        return;
      case WIRE_LEN:
        this.delimited();
        return;
      case WIRE_FIXED32:
        this.advance(4);
        return;
      case WIRE_START_GROUP:
        this.skipGroup(fieldNumber, depth + 1);
        return;
      default:
        throw new RangeError(`wire type ${wireType} where a field should start`);
    }
  }

  /**
   * Moves past a group's fields up to the end tag of the same field number (groups are proto2's; a proto3
   * parser keeps an unknown one as an unknown field, so it is skipped whole, not refused).
   */
  private skipGroup(fieldNumber: number, depth: number): void {
    if (depth > MAX_NESTING_DEPTH) throw new RangeError('groups nested too deep');
    for (;;) {
      const tag = this.tag();
      if ((tag & 7) === WIRE_END_GROUP) {
        if (tag >>> 3 !== fieldNumber) {
          throw new RangeError(`group ${fieldNumber} closed by the end tag of field ${tag >>> 3}`);
        }
        return;
      }
      this.skipValue(tag & 7, tag >>> 3, depth);
    }
  }

  /** The reader over the length-delimited message that starts here. */
  message(): Reader {
    const start = this.delimited();
    return new Reader(this.buf, start, this.pos);
  }

  get isDone(): boolean {
    return this.pos >= this.end;
  }

  private byte(): number {
    if (this.pos >= this.end) throw new RangeError('message ends inside a field');
    return this.buf[this.pos++]!;
  }

  private advance(n: number): void {
    if (n > this.end - this.pos) throw new RangeError('message ends inside a field');
    this.pos += n;
  }
}

function expectWireType(tag: number, wireType: number): void {
  if ((tag & 7) !== wireType) {
    throw new RangeError(`field ${tag >>> 3} arrived with wire type ${tag & 7}, not ${wireType}`);
  }
}

/**
 * Refuses `buf[start, end)` unless it is valid UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF, as protobuf's parsers check it). A leading run of ASCII, what group ids, member ids and topic
 * names nearly always are, is checked here byte by byte, without allocating; the rest by Node's native
 * validator.
 */
export function checkUtf8(buf: Buffer, start: number, end: number): void {
  for (let i = start; i < end; i++) {
    if (buf[i]! > 0x7f) {
      if (!isUtf8(buf.subarray(i, end))) throw new RangeError('string field is not valid UTF-8');
      return;
    }
  }
}

/**
 * A message of a string (field 1) and bytes (field 2), the shape of RecordHeader, Protocol and
 * SyncGroupAssignment, handed to `make`: one decoder for the three.
 */
export function decodeStringAndBytes<T>(r: Reader, make: (text: string, bytes: Buffer) => T): T {
  let text = '';
  let bytes: Buffer = EMPTY;
  while (!r.isDone) {
    const tag = r.tag();
    switch (tag >>> 3) {
      case 1:
        text = r.stringField(tag);
        break;
      case 2:
        bytes = r.bytesField(tag);
        break;
      default:
        r.skipField(tag);
    }
  }
  return make(text, bytes);
}

// --- encoding ---

/** Bytes of a varint holding a non-negative safe integer; negatives (int32 or int64) take 10. */
function varintSize(n: number): number {
  if (n < 0) return 10;
  let size = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** Bytes of a length-delimited field with a one-byte tag (every field here numbers below 16). */
export function delimitedSize(length: number): number {
  return 1 + varintSize(length) + length;
}

/**
 * Bytes of a varint field with a one-byte tag, 0 when the value is the default (left out). A missing
 * value (a bug upstream; the types forbid it) is left out as the generic encoder leaves it out.
 */
export function varintFieldSize(n: number): number {
  return n === 0 || n == null ? 0 : 1 + varintSize(n);
}

/** Bytes of a bytes field; 0 when empty, or missing (left out, as `varintFieldSize` leaves a number). */
export function bytesFieldSize(bytes: Uint8Array | null): number {
  return bytes == null || bytes.length === 0 ? 0 : delimitedSize(bytes.length);
}

/**
 * Writes a message front to back into one buffer. Nested message lengths and strings' UTF-8 lengths are computed
 * in a first pass and queued in `lengths`, in the order the second pass meets them.
 */
export class Writer {
  private readonly buf: Buffer;
  private pos = 0;
  private next = 0;

  constructor(
    size: number,
    private readonly lengths: number[],
  ) {
    this.buf = Buffer.allocUnsafe(size);
  }

  varint(n: number): void {
    const buf = this.buf;
    if (n >= 0) {
      while (n >= 128) {
        buf[this.pos++] = (n % 128) | 0x80;
        n = Math.floor(n / 128);
      }
      buf[this.pos++] = n;
      return;
    }
    // A negative int32 or int64: 64-bit two's complement, ten bytes.
    const magnitude = -n;
    let lo = (~(magnitude >>> 0) + 1) >>> 0;
    let hi = (~Math.floor(magnitude / TWO_32) + (lo === 0 ? 1 : 0)) >>> 0;
    for (let i = 0; i < 9; i++) {
      buf[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    buf[this.pos++] = lo & 0x01;
  }

  varintField(tag: number, n: number): void {
    if (n === 0 || n == null) return;
    this.buf[this.pos++] = tag;
    this.varint(n);
  }

  bytesField(tag: number, bytes: Uint8Array | null): void {
    if (bytes == null || bytes.length === 0) return;
    this.buf[this.pos++] = tag;
    this.varint(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /**
   * A string field; its UTF-8 length is the next one queued by the first pass (`stringFieldSize`). A lone
   * surrogate (a string that is not valid UTF-16) becomes U+FFFD, as Buffer.write makes it, where protobufjs
   * writes the surrogate's own three bytes; the strings encoded here come from decoded requests (valid UTF-8)
   * or from the server itself.
   */
  stringField(tag: number, text: string): void {
    if (text == null || text.length === 0) return;
    const byteLength = this.lengths[this.next++]!;
    this.buf[this.pos++] = tag;
    this.varint(byteLength);
    this.pos += this.buf.write(text, this.pos, byteLength, 'utf8');
  }

  /** The tag and length of the next nested message (its length from the first pass). */
  beginMessage(tag: number): void {
    this.buf[this.pos++] = tag;
    this.varint(this.lengths[this.next++]!);
  }

  finish(): Buffer {
    if (this.pos !== this.buf.length) throw new Error(`encoded ${this.pos} bytes, sized ${this.buf.length}`);
    return this.buf;
  }
}

/** Sizes a string field, queuing its UTF-8 length for the second pass (an empty or missing one is left out). */
export function stringFieldSize(text: string, lengths: number[]): number {
  if (text == null || text.length === 0) return 0;
  const byteLength = Buffer.byteLength(text, 'utf8');
  lengths.push(byteLength);
  return delimitedSize(byteLength);
}

// Tags: (field number << 3) | wire type.
export const TAG_1_VARINT = 0x08;
export const TAG_2_VARINT = 0x10;
export const TAG_3_VARINT = 0x18;
export const TAG_4_VARINT = 0x20;
export const TAG_5_VARINT = 0x28;
export const TAG_6_VARINT = 0x30;
export const TAG_7_VARINT = 0x38;
export const TAG_8_VARINT = 0x40;
export const TAG_1_LEN = 0x0a;
export const TAG_2_LEN = 0x12;
export const TAG_3_LEN = 0x1a;
export const TAG_4_LEN = 0x22;
export const TAG_5_LEN = 0x2a;
export const TAG_6_LEN = 0x32;
export const TAG_7_LEN = 0x3a;

// --- installing ---

/** What a hand-written codec replaces of a method: the server's side only; clients keep the generic one. */
export type ServerWireCodec = Partial<
  Pick<MethodDefinition<object, object>, 'requestDeserialize' | 'responseSerialize'>
>;

/**
 * `definition` (a service as proto-loader built it) with `codecs` installed on the server's side of the
 * methods they name. A codec for a method the service does not have is a bug here, not a request to skip.
 */
export function withServerWireCodecs(
  definition: ServiceDefinition,
  codecs: Readonly<Record<string, ServerWireCodec>>,
): ServiceDefinition {
  const result: ServiceDefinition = { ...definition };
  for (const [method, codec] of Object.entries(codecs)) {
    const rpc = definition[method];
    if (rpc === undefined) throw new Error(`no method ${method} to install a wire codec on`);
    result[method] = { ...(rpc as MethodDefinition<object, object>), ...codec };
  }
  return result;
}
