import type { ServiceDefinition } from '@grpc/proto-loader';
import type { FetchResponse, ProduceResponse, RecordHeader } from '../log/broker-protocol';
import {
  bytesFieldSize,
  decodeStringAndBytes,
  delimitedSize,
  EMPTY,
  Reader,
  stringFieldSize,
  TAG_1_LEN,
  TAG_1_VARINT,
  TAG_2_LEN,
  TAG_2_VARINT,
  TAG_3_LEN,
  TAG_3_VARINT,
  TAG_4_LEN,
  TAG_4_VARINT,
  TAG_5_LEN,
  TAG_5_VARINT,
  TAG_6_VARINT,
  TAG_7_VARINT,
  varintFieldSize,
  withServerWireCodecs,
  Writer,
  type ServerWireCodec,
} from './proto-wire';

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
 * Unknown fields are skipped, groups included. Where protobufjs is lenient with broken input this decoder
 * refuses it, as proto-wire.ts's strict Reader does for every request: a length or a varint running past
 * its message (a truncated string protobufjs would cut short), a known field arriving with another wire
 * type, a string that is not UTF-8 end in a RangeError, which the server answers with INVALID_ARGUMENT.
 * The encoders write canonical proto3: fields at their default are left out.
 * test/unit/server/broker-wire.test.ts checks both against protobufjs on generated messages, and that every
 * field of these messages in the .proto is handled here.
 */

// --- decoding ---

/** A record as the decoder gives it: `offset` and `timestampMs` exact numbers, or strings if not exact. */
export interface ProduceRecordWire {
  offset: number | string;
  timestampMs: number | string;
  key: Buffer;
  value: Buffer;
  headers: RecordHeader[];
  /** Ignored in a Produce (the leader stamps its own); decoded as the generic decoder does. */
  leaderEpoch: number;
  /** The value is null, not empty (`value` is then empty). */
  valueNull: boolean;
}

export interface ProduceRequestWire {
  acks: number;
  timeoutMs: number;
  topics: { name: string; partitions: { partitionIndex: number; records: ProduceRecordWire[] }[] }[];
}

function headerOf(key: string, value: Buffer): RecordHeader {
  return { key, value };
}

function decodeHeader(r: Reader): RecordHeader {
  return decodeStringAndBytes(r, headerOf);
}

function decodeRecord(r: Reader): ProduceRecordWire {
  let offset: number | string = 0;
  let timestampMs: number | string = 0;
  let key: Buffer = EMPTY;
  let value: Buffer = EMPTY;
  const headers: RecordHeader[] = [];
  let leaderEpoch = 0;
  let valueNull = false;
  while (!r.isDone) {
    const tag = r.tag();
    switch (tag >>> 3) {
      case 1:
        offset = r.int64Field(tag);
        break;
      case 2:
        timestampMs = r.int64Field(tag);
        break;
      case 3:
        key = r.bytesField(tag);
        break;
      case 4:
        value = r.bytesField(tag);
        break;
      case 5:
        r.repeatedMessage(tag, headers, decodeHeader);
        break;
      case 6:
        leaderEpoch = r.int32Field(tag);
        break;
      case 7:
        valueNull = r.boolField(tag);
        break;
      default:
        r.skipField(tag);
    }
  }
  return { offset, timestampMs, key, value, headers, leaderEpoch, valueNull };
}

function decodePartition(r: Reader): { partitionIndex: number; records: ProduceRecordWire[] } {
  let partitionIndex = 0;
  const records: ProduceRecordWire[] = [];
  while (!r.isDone) {
    const tag = r.tag();
    switch (tag >>> 3) {
      case 1:
        partitionIndex = r.int32Field(tag);
        break;
      case 2:
        r.repeatedMessage(tag, records, decodeRecord);
        break;
      default:
        r.skipField(tag);
    }
  }
  return { partitionIndex, records };
}

function decodeTopic(r: Reader): ProduceRequestWire['topics'][number] {
  let name = '';
  const partitions: ProduceRequestWire['topics'][number]['partitions'] = [];
  while (!r.isDone) {
    const tag = r.tag();
    switch (tag >>> 3) {
      case 1:
        name = r.stringField(tag);
        break;
      case 2:
        r.repeatedMessage(tag, partitions, decodePartition);
        break;
      default:
        r.skipField(tag);
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
    const tag = r.tag();
    switch (tag >>> 3) {
      case 1:
        acks = r.int32Field(tag);
        break;
      case 2:
        timeoutMs = r.int32Field(tag);
        break;
      case 3:
        r.repeatedMessage(tag, topics, decodeTopic);
        break;
      default:
        r.skipField(tag);
    }
  }
  return { acks, timeoutMs, topics };
}

// --- encoding ---

interface EncodableRecord {
  readonly offset: number;
  readonly timestampMs: number;
  readonly key: Uint8Array | null;
  readonly value: Uint8Array | null;
  readonly headers: readonly RecordHeader[];
  /** The epoch of the leader that wrote it, where the log records one (a follower stores it too). */
  readonly leaderEpoch?: number;
}

/** Sizes one Record (queuing its headers' lengths); returns its length. */
function sizeRecord(record: EncodableRecord, lengths: number[]): number {
  let size =
    varintFieldSize(record.offset) +
    varintFieldSize(record.timestampMs) +
    bytesFieldSize(record.key) +
    bytesFieldSize(record.value) +
    varintFieldSize(record.leaderEpoch ?? 0) +
    (record.value === null ? 2 : 0);
  for (const header of record.headers) {
    const at = lengths.push(0) - 1;
    const length = stringFieldSize(header.key, lengths) + bytesFieldSize(header.value);
    lengths[at] = length;
    size += delimitedSize(length);
  }
  return size;
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
  w.varintField(TAG_6_VARINT, record.leaderEpoch ?? 0);
  if (record.value === null) w.varintField(TAG_7_VARINT, 1);
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
  'cohort.v1.Record': [1, 2, 3, 4, 5, 6, 7],
  'cohort.v1.RecordHeader': [1, 2],
  'cohort.v1.ProduceResponse': [1],
  'cohort.v1.ProduceTopicResponse': [1, 2],
  'cohort.v1.ProducePartitionResponse': [1, 2, 3, 4, 5],
  'cohort.v1.FetchResponse': [1, 2],
  'cohort.v1.FetchableTopicResponse': [1, 2],
  'cohort.v1.FetchPartitionData': [1, 2, 3, 4, 5],
};

/** The hand-written codecs by method: Produce's request and response, Fetch's response. */
export const BROKER_WIRE_CODECS: Readonly<Record<'Produce' | 'Fetch', ServerWireCodec>> = {
  Produce: {
    requestDeserialize: decodeProduceRequest,
    responseSerialize: (response) => encodeProduceResponse(response as ProduceResponse),
  },
  Fetch: { responseSerialize: (response) => encodeFetchResponse(response as FetchResponse) },
};

/**
 * `definition` (cohort.v1.Broker as proto-loader built it) with the hand-written codecs above. Only the
 * server's side changes: clients still encode requests and decode responses with the generic codecs.
 */
export function withBrokerWireCodecs(definition: ServiceDefinition): ServiceDefinition {
  return withServerWireCodecs(definition, BROKER_WIRE_CODECS);
}
