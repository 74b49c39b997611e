import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';
import type { FetchResponse, ProduceResponse, RecordHeader } from '../log/broker-protocol';

/**
 * Hand-written protobuf codecs for the messages on the log's hot path: the ProduceRequest a broker decodes
 * and the FetchResponse and ProduceResponse it encodes (proto/cohort/v1/broker.proto). A woken Fetch is
 * answered while the Produce that woke it is still being handled, so their encoding is part of every
 * long-poll wake; the generic codecs (protobufjs through proto-loader) convert every int64 through a
 * Long and walk reflection data, ~70 µs decoding the Produce and ~55 µs encoding the FetchResponse on a
 * wake that had been idle (docs/log.md, Performance). Kafka writes its record batches by hand for the
 * same reason.
 *
 * The decoder produces what the generic one does with the server's options (load-protos.ts): every field
 * present with its default, bytes as Buffers (views into the request, as protobufjs gives them), int64 as a
 * number when it is exact and as a decimal string when it is not, which `decodeInt64` then refuses.
 * Unknown fields are skipped, groups included, and so is a known field arriving with another wire type (as
 * the C++, Java and Go parsers treat it; protobufjs would read it as the expected type). Where protobufjs
 * is lenient with broken input this decoder refuses it: a length or a varint running past its message (a
 * truncated string protobufjs would cut short) ends in a RangeError, which the server answers with
 * INVALID_ARGUMENT. The encoders write canonical proto3: fields at their default are left out.
 * test/unit/server/broker-wire.test.ts checks both against protobufjs on generated messages, and that every
 * field of these messages in the .proto is handled here.
 */

// --- decoding ---

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const WIRE_START_GROUP = 3;
const WIRE_END_GROUP = 4;
const WIRE_FIXED32 = 5;
const MAX_GROUP_DEPTH = 100;
const TWO_32 = 4_294_967_296;

/** A record as the decoder gives it: `offset` and `timestampMs` exact numbers, or strings if not exact. */
export interface ProduceRecordWire {
  offset: number | string;
  timestampMs: number | string;
  key: Buffer;
  value: Buffer;
  headers: RecordHeader[];
}

export interface ProduceRequestWire {
  acks: number;
  timeoutMs: number;
  topics: { name: string; partitions: { partitionIndex: number; records: ProduceRecordWire[] }[] }[];
}

const EMPTY: Buffer = Buffer.alloc(0);

class Reader {
  pos: number;

  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
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

  string(): string {
    const start = this.delimited();
    return start === this.pos ? '' : this.buf.toString('utf8', start, this.pos);
  }

  /** Moves past a field of `wireType` that this decoder does not know. */
  skip(wireType: number): void {
    switch (wireType) {
      case WIRE_VARINT:
        while ((this.byte() & 0x80) !== 0);
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
        this.skipGroup();
        return;
      default:
        throw new RangeError(`wire type ${wireType} where a field should start`);
    }
  }

  /** Moves past a group's fields up to its end tag (groups are proto2's; protobufjs skips them too). */
  private skipGroup(): void {
    for (let depth = 1; ;) {
      const wireType = this.int32() & 7;
      if (wireType === WIRE_END_GROUP) {
        if (--depth === 0) return;
      } else if (wireType === WIRE_START_GROUP) {
        if (++depth > MAX_GROUP_DEPTH) throw new RangeError('groups nested too deep');
      } else {
        this.skip(wireType);
      }
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

function decodeHeader(r: Reader): RecordHeader {
  let key = '';
  let value: Buffer = EMPTY;
  while (!r.isDone) {
    const tag = r.int32();
    switch (tag >>> 3) {
      case 1:
        if ((tag & 7) === WIRE_LEN) key = r.string();
        else r.skip(tag & 7);
        break;
      case 2:
        if ((tag & 7) === WIRE_LEN) value = r.bytes();
        else r.skip(tag & 7);
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return { key, value };
}

function decodeRecord(r: Reader): ProduceRecordWire {
  let offset: number | string = 0;
  let timestampMs: number | string = 0;
  let key: Buffer = EMPTY;
  let value: Buffer = EMPTY;
  const headers: RecordHeader[] = [];
  while (!r.isDone) {
    const tag = r.int32();
    switch (tag >>> 3) {
      case 1:
        if ((tag & 7) === WIRE_VARINT) offset = r.int64();
        else r.skip(tag & 7);
        break;
      case 2:
        if ((tag & 7) === WIRE_VARINT) timestampMs = r.int64();
        else r.skip(tag & 7);
        break;
      case 3:
        if ((tag & 7) === WIRE_LEN) key = r.bytes();
        else r.skip(tag & 7);
        break;
      case 4:
        if ((tag & 7) === WIRE_LEN) value = r.bytes();
        else r.skip(tag & 7);
        break;
      case 5:
        if ((tag & 7) === WIRE_LEN) headers.push(decodeHeader(r.message()));
        else r.skip(tag & 7);
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return { offset, timestampMs, key, value, headers };
}

function decodePartition(r: Reader): { partitionIndex: number; records: ProduceRecordWire[] } {
  let partitionIndex = 0;
  const records: ProduceRecordWire[] = [];
  while (!r.isDone) {
    const tag = r.int32();
    switch (tag >>> 3) {
      case 1:
        if ((tag & 7) === WIRE_VARINT) partitionIndex = r.int32();
        else r.skip(tag & 7);
        break;
      case 2:
        if ((tag & 7) === WIRE_LEN) records.push(decodeRecord(r.message()));
        else r.skip(tag & 7);
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return { partitionIndex, records };
}

function decodeTopic(r: Reader): ProduceRequestWire['topics'][number] {
  let name = '';
  const partitions: ProduceRequestWire['topics'][number]['partitions'] = [];
  while (!r.isDone) {
    const tag = r.int32();
    switch (tag >>> 3) {
      case 1:
        if ((tag & 7) === WIRE_LEN) name = r.string();
        else r.skip(tag & 7);
        break;
      case 2:
        if ((tag & 7) === WIRE_LEN) partitions.push(decodePartition(r.message()));
        else r.skip(tag & 7);
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return { name, partitions };
}

/** cohort.v1.ProduceRequest from its bytes. Throws RangeError for bytes that are not one. */
export function decodeProduceRequest(buf: Buffer): ProduceRequestWire {
  const r = new Reader(buf, 0, buf.length);
  let acks = 0;
  let timeoutMs = 0;
  const topics: ProduceRequestWire['topics'] = [];
  while (!r.isDone) {
    const tag = r.int32();
    switch (tag >>> 3) {
      case 1:
        if ((tag & 7) === WIRE_VARINT) acks = r.int32();
        else r.skip(tag & 7);
        break;
      case 2:
        if ((tag & 7) === WIRE_VARINT) timeoutMs = r.int32();
        else r.skip(tag & 7);
        break;
      case 3:
        if ((tag & 7) === WIRE_LEN) topics.push(decodeTopic(r.message()));
        else r.skip(tag & 7);
        break;
      default:
        r.skip(tag & 7);
    }
  }
  return { acks, timeoutMs, topics };
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
function delimitedSize(length: number): number {
  return 1 + varintSize(length) + length;
}

/**
 * Bytes of a varint field with a one-byte tag, 0 when the value is the default (left out). A missing
 * value (a bug upstream; the types forbid it) is left out as the generic encoder leaves it out.
 */
function varintFieldSize(n: number): number {
  return n === 0 || n == null ? 0 : 1 + varintSize(n);
}

function bytesFieldSize(bytes: Uint8Array | null): number {
  return bytes === null || bytes.length === 0 ? 0 : delimitedSize(bytes.length);
}

/**
 * Writes a message front to back into one buffer. Nested message lengths and strings' UTF-8 lengths are computed
 * in a first pass and queued in `lengths`, in the order the second pass meets them.
 */
class Writer {
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
    if (bytes === null || bytes.length === 0) return;
    this.buf[this.pos++] = tag;
    this.varint(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** A string field; its UTF-8 length is the next one queued by the first pass (`stringFieldSize`). */
  stringField(tag: number, text: string): void {
    if (text.length === 0) return;
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

// Tags: (field number << 3) | wire type.
const TAG_1_VARINT = 0x08;
const TAG_2_VARINT = 0x10;
const TAG_3_VARINT = 0x18;
const TAG_4_VARINT = 0x20;
const TAG_5_VARINT = 0x28;
const TAG_1_LEN = 0x0a;
const TAG_2_LEN = 0x12;
const TAG_3_LEN = 0x1a;
const TAG_4_LEN = 0x22;
const TAG_5_LEN = 0x2a;

interface EncodableRecord {
  readonly offset: number;
  readonly timestampMs: number;
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly RecordHeader[];
}

/** Sizes one Record (queuing its headers' lengths); returns its length. */
function sizeRecord(record: EncodableRecord, lengths: number[]): number {
  let size =
    varintFieldSize(record.offset) +
    varintFieldSize(record.timestampMs) +
    bytesFieldSize(record.key) +
    bytesFieldSize(record.value);
  for (const header of record.headers) {
    const at = lengths.push(0) - 1;
    const length = stringFieldSize(header.key, lengths) + bytesFieldSize(header.value);
    lengths[at] = length;
    size += delimitedSize(length);
  }
  return size;
}

/** Sizes a string field, queuing its UTF-8 length for the second pass (an empty one is left out). */
function stringFieldSize(text: string, lengths: number[]): number {
  if (text.length === 0) return 0;
  const byteLength = Buffer.byteLength(text, 'utf8');
  lengths.push(byteLength);
  return delimitedSize(byteLength);
}

function writeRecord(w: Writer, record: EncodableRecord): void {
  w.varintField(TAG_1_VARINT, record.offset);
  w.varintField(TAG_2_VARINT, record.timestampMs);
  w.bytesField(TAG_3_LEN, record.key);
  w.bytesField(TAG_4_LEN, record.value);
  for (const header of record.headers) {
    w.beginMessage(TAG_5_LEN);
    w.stringField(TAG_1_LEN, header.key);
    w.bytesField(TAG_2_LEN, header.value);
  }
}

/** cohort.v1.FetchResponse as bytes. */
export function encodeFetchResponse(response: FetchResponse): Buffer {
  const lengths: number[] = [];
  let size = varintFieldSize(response.errorCode);
  for (const topic of response.responses) {
    const topicAt = lengths.push(0) - 1;
    let topicSize = stringFieldSize(topic.name, lengths);
    for (const partition of topic.partitions) {
      const partitionAt = lengths.push(0) - 1;
      let partitionSize =
        varintFieldSize(partition.partitionIndex) +
        varintFieldSize(partition.errorCode) +
        varintFieldSize(partition.highWatermark) +
        varintFieldSize(partition.logStartOffset);
      for (const record of partition.records) {
        const recordAt = lengths.push(0) - 1;
        const recordSize = sizeRecord(record, lengths);
        lengths[recordAt] = recordSize;
        partitionSize += delimitedSize(recordSize);
      }
      lengths[partitionAt] = partitionSize;
      topicSize += delimitedSize(partitionSize);
    }
    lengths[topicAt] = topicSize;
    size += delimitedSize(topicSize);
  }

  const w = new Writer(size, lengths);
  w.varintField(TAG_1_VARINT, response.errorCode);
  for (const topic of response.responses) {
    w.beginMessage(TAG_2_LEN);
    w.stringField(TAG_1_LEN, topic.name);
    for (const partition of topic.partitions) {
      w.beginMessage(TAG_2_LEN);
      w.varintField(TAG_1_VARINT, partition.partitionIndex);
      w.varintField(TAG_2_VARINT, partition.errorCode);
      w.varintField(TAG_3_VARINT, partition.highWatermark);
      w.varintField(TAG_4_VARINT, partition.logStartOffset);
      for (const record of partition.records) {
        w.beginMessage(TAG_5_LEN);
        writeRecord(w, record);
      }
    }
  }
  return w.finish();
}

/** cohort.v1.ProduceResponse as bytes. */
export function encodeProduceResponse(response: ProduceResponse): Buffer {
  const lengths: number[] = [];
  let size = 0;
  for (const topic of response.topics) {
    const topicAt = lengths.push(0) - 1;
    let topicSize = stringFieldSize(topic.name, lengths);
    for (const partition of topic.partitions) {
      const partitionSize =
        varintFieldSize(partition.partitionIndex) +
        varintFieldSize(partition.errorCode) +
        varintFieldSize(partition.baseOffset) +
        varintFieldSize(partition.logAppendTimeMs) +
        varintFieldSize(partition.logStartOffset);
      lengths.push(partitionSize);
      topicSize += delimitedSize(partitionSize);
    }
    lengths[topicAt] = topicSize;
    size += delimitedSize(topicSize);
  }

  const w = new Writer(size, lengths);
  for (const topic of response.topics) {
    w.beginMessage(TAG_1_LEN);
    w.stringField(TAG_1_LEN, topic.name);
    for (const partition of topic.partitions) {
      w.beginMessage(TAG_2_LEN);
      w.varintField(TAG_1_VARINT, partition.partitionIndex);
      w.varintField(TAG_2_VARINT, partition.errorCode);
      w.varintField(TAG_3_VARINT, partition.baseOffset);
      w.varintField(TAG_4_VARINT, partition.logAppendTimeMs);
      w.varintField(TAG_5_VARINT, partition.logStartOffset);
    }
  }
  return w.finish();
}

/** Field numbers each codec here handles, by message: the test holds them against the .proto. */
export const HANDLED_FIELDS: Readonly<Record<string, readonly number[]>> = {
  'cohort.v1.ProduceRequest': [1, 2, 3],
  'cohort.v1.ProduceTopicData': [1, 2],
  'cohort.v1.ProducePartitionData': [1, 2],
  'cohort.v1.Record': [1, 2, 3, 4, 5],
  'cohort.v1.RecordHeader': [1, 2],
  'cohort.v1.ProduceResponse': [1],
  'cohort.v1.ProduceTopicResponse': [1, 2],
  'cohort.v1.ProducePartitionResponse': [1, 2, 3, 4, 5],
  'cohort.v1.FetchResponse': [1, 2],
  'cohort.v1.FetchableTopicResponse': [1, 2],
  'cohort.v1.FetchPartitionData': [1, 2, 3, 4, 5],
};

/**
 * `definition` (cohort.v1.Broker as proto-loader built it) with the hand-written codecs above for Produce's
 * request and response and Fetch's response. Only the server's side changes: clients still encode
 * requests and decode responses with the generic codecs.
 */
export function withBrokerWireCodecs(definition: ServiceDefinition): ServiceDefinition {
  const produce = definition.Produce as MethodDefinition<object, object>;
  const fetch = definition.Fetch as MethodDefinition<object, object>;
  return {
    ...definition,
    Produce: {
      ...produce,
      requestDeserialize: decodeProduceRequest,
      responseSerialize: (response) => encodeProduceResponse(response as ProduceResponse),
    },
    Fetch: { ...fetch, responseSerialize: (response) => encodeFetchResponse(response as FetchResponse) },
  };
}
