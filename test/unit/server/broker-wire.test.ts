import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { loadSync } from '@grpc/proto-loader';
import fc from 'fast-check';
import type { FetchResponse, ProduceResponse } from '../../../src/log/broker-protocol';
import {
  BROKER_WIRE_CODECS,
  decodeProduceRequest,
  encodeFetchResponse,
  encodeProduceResponse,
  HANDLED_FIELDS,
  type ProduceRequestWire,
  withBrokerWireCodecs,
} from '../../../src/server/broker-wire';
import { loadCohortProtos, PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../../src/server/load-protos';
import { withServerWireCodecs } from '../../../src/server/proto-wire';
import {
  bytesValue,
  expectDecodesOrRangeError,
  GROUP_FIELD_15,
  textValue,
  unknownFields,
} from '../../support/protobuf-wire';

// The generic codecs (protobufjs through proto-loader, as clients use them) are the reference.
const generic = loadSync([...PROTO_FILES], PROTO_LOADER_OPTIONS);
const broker = generic['cohort.v1.Broker'] as ServiceDefinition;
const produce = broker.Produce as MethodDefinition<object, object>;
const fetch = broker.Fetch as MethodDefinition<object, object>;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
/** Mostly small values, with the edges of the safe range and of int64 mixed in. */
const int64Text = fc.oneof(
  fc.integer({ min: -5, max: 1_000 }).map(String),
  fc.maxSafeInteger().map(String),
  fc.constantFrom('9007199254740991', '9007199254740992', '-9007199254740991', '-9007199254740992'),
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }).map(String),
);
const bytes = bytesValue;
const text = textValue;
const header = fc.record({ key: text, value: bytes });

const produceRequest = fc.record({
  acks: int32,
  timeoutMs: int32,
  topics: fc.array(
    fc.record({
      name: text,
      partitions: fc.array(
        fc.record({
          partitionIndex: int32,
          records: fc.array(
            fc.record({
              offset: int64Text,
              timestampMs: int64Text,
              key: bytes,
              value: bytes,
              headers: fc.array(header, { maxLength: 3 }),
              valueNull: fc.boolean(),
            }),
            { maxLength: 4 },
          ),
        }),
        { maxLength: 3 },
      ),
    }),
    { maxLength: 3 },
  ),
});

/** int64 fields as the generic decoder gives them (strings), for comparison. */
function int64AsText(request: ProduceRequestWire): unknown {
  return {
    ...request,
    topics: request.topics.map((topic) => ({
      ...topic,
      partitions: topic.partitions.map((partition) => ({
        ...partition,
        records: partition.records.map((record) => ({
          ...record,
          offset: String(record.offset),
          timestampMs: String(record.timestampMs),
        })),
      })),
    })),
  };
}

describe('decodeProduceRequest', () => {
  test('decodes what the generic encoder writes exactly as the generic decoder does (property)', () => {
    fc.assert(
      fc.property(produceRequest, (request) => {
        const bytes = produce.requestSerialize(request);
        const ours = decodeProduceRequest(bytes);
        expect(int64AsText(ours)).toEqual(produce.requestDeserialize(bytes));
      }),
    );
  });

  test('gives int64 as an exact number inside ±(2^53 - 1) and as decimal text outside it', () => {
    const decoded = (timestampMs: string) =>
      decodeProduceRequest(
        produce.requestSerialize({
          topics: [{ name: 't', partitions: [{ records: [{ timestampMs, value: Buffer.from('v') }] }] }],
        }),
      ).topics[0]!.partitions[0]!.records[0]!.timestampMs;
    expect(decoded('9007199254740991')).toBe(9007199254740991);
    expect(decoded('-9007199254740991')).toBe(-9007199254740991);
    expect(decoded('-1')).toBe(-1);
    expect(decoded('9007199254740992')).toBe('9007199254740992');
    expect(decoded('-9007199254740992')).toBe('-9007199254740992');
    expect(decoded('-9223372036854775808')).toBe('-9223372036854775808');
  });

  test('skips unknown fields of every wire type, at every level', () => {
    const unknown = unknownFields();
    const record = Buffer.concat([Buffer.from([0x22, 0x01, 0x76]), unknown]); // value "v"
    const partition = Buffer.concat([unknown, Buffer.from([0x12, record.length]), record]);
    const topic = Buffer.concat([
      Buffer.from([0x0a, 0x01, 0x74]),
      Buffer.from([0x12, partition.length]),
      partition,
    ]);
    const request = Buffer.concat([
      Buffer.from([0x08, 0x01]),
      unknown,
      Buffer.from([0x1a, topic.length]),
      topic,
    ]);
    const decoded = decodeProduceRequest(request);
    expect(decoded.acks).toBe(1);
    expect(decoded.topics[0]!.name).toBe('t');
    expect(decoded.topics[0]!.partitions[0]!.records[0]!.value).toEqual(Buffer.from('v'));
  });

  test('skips groups as unknown fields', () => {
    const decoded = decodeProduceRequest(Buffer.from([...GROUP_FIELD_15, 0x10, 0x07]));
    expect(decoded).toEqual({ acks: 0, timeoutMs: 7, topics: [] });
  });

  test('refuses a known field that arrives with another wire type, at every level', () => {
    const acksAsBytes = [0x0a, 0x01, 0x05]; // field 1 (acks, a varint) sent length-delimited
    expect(() => decodeProduceRequest(Buffer.from([...acksAsBytes, 0x10, 0x07]))).toThrow(RangeError);
    // topics[0].partitions[0].records[0].headers[0].key (a string) sent as a varint
    const header = [0x08, 0x01];
    const record = [0x2a, header.length, ...header];
    const partition = [0x12, record.length, ...record];
    const topic = [0x12, partition.length, ...partition];
    expect(() => decodeProduceRequest(Buffer.from([0x1a, topic.length, ...topic]))).toThrow(RangeError);
  });

  test('refuses a record header key that is not UTF-8', () => {
    const header = [0x0a, 0x02, 0xc3, 0x28]; // 0xc3 needs a continuation byte, 0x28 is not one
    const record = [0x2a, header.length, ...header];
    const partition = [0x12, record.length, ...record];
    const topic = [0x0a, 0x01, 0x74, 0x12, partition.length, ...partition];
    expect(() => decodeProduceRequest(Buffer.from([0x1a, topic.length, ...topic]))).toThrow(RangeError);
  });

  test('refuses truncated messages, lengths past their message, stray end-groups and overlong varints', () => {
    expect(() => decodeProduceRequest(Buffer.from([0x08]))).toThrow(RangeError); // varint cut short
    expect(() => decodeProduceRequest(Buffer.from([0x1a, 0x05, 0x0a]))).toThrow(RangeError);
    expect(() => decodeProduceRequest(Buffer.from([0x7b, 0x08]))).toThrow(RangeError); // unclosed group
    expect(() => decodeProduceRequest(Buffer.from([0x7c]))).toThrow(RangeError); // end group alone
    expect(() => decodeProduceRequest(Buffer.from(new Array<number>(11).fill(0xff)))).toThrow(RangeError);
  });

  test('on any bytes, returns a request or throws a RangeError (property)', () => {
    expectDecodesOrRangeError(decodeProduceRequest);
  });
});

const safeInt64 = fc.oneof(
  fc.integer({ min: -2, max: 1_000 }),
  fc.maxSafeInteger(),
  fc.maxSafeInteger().map((n) => -n),
);
const errorCode = fc.integer({ min: -1, max: 120 });

const fetchResponse: fc.Arbitrary<FetchResponse> = fc.record({
  errorCode,
  responses: fc.array(
    fc.record({
      name: text,
      partitions: fc.array(
        fc.record({
          partitionIndex: int32,
          errorCode,
          highWatermark: safeInt64,
          logStartOffset: safeInt64,
          records: fc.array(
            fc.record({
              offset: safeInt64,
              timestampMs: safeInt64,
              key: fc.option(bytes, { nil: null }),
              value: fc.option(bytes, { nil: null }),
              headers: fc.array(header, { maxLength: 3 }),
              // The wire carries no epoch: the decoder gives the leader's default.
              leaderEpoch: fc.constant(0),
            }),
            { maxLength: 4 },
          ),
        }),
        { maxLength: 3 },
      ),
    }),
    { maxLength: 3 },
  ),
});

const produceResponse: fc.Arbitrary<ProduceResponse> = fc.record({
  topics: fc.array(
    fc.record({
      name: text,
      partitions: fc.array(
        fc.record({
          partitionIndex: int32,
          errorCode,
          baseOffset: safeInt64,
          logAppendTimeMs: safeInt64,
          logStartOffset: safeInt64,
        }),
        { maxLength: 3 },
      ),
    }),
    { maxLength: 3 },
  ),
});

/** What the generic decoder makes of a response the generic encoder wrote (the reference). */
function viaGeneric(method: MethodDefinition<object, object>, response: object): unknown {
  return method.responseDeserialize(method.responseSerialize(response));
}

/** The message a generic encoder is given for `response`: a null value is `value_null`, as the door writes it. */
function withValueNull(response: FetchResponse): object {
  return {
    ...response,
    responses: response.responses.map((topic) => ({
      ...topic,
      partitions: topic.partitions.map((partition) => ({
        ...partition,
        records: partition.records.map((record) => ({ ...record, valueNull: record.value === null })),
      })),
    })),
  };
}

describe('encodeFetchResponse and encodeProduceResponse', () => {
  test('a FetchResponse decodes as the generic encoding of it does (property)', () => {
    fc.assert(
      fc.property(fetchResponse, (response) => {
        expect(fetch.responseDeserialize(encodeFetchResponse(response))).toEqual(
          viaGeneric(fetch, withValueNull(response)),
        );
      }),
    );
  });

  test('a ProduceResponse decodes as the generic encoding of it does (property)', () => {
    fc.assert(
      fc.property(produceResponse, (response) => {
        expect(produce.responseDeserialize(encodeProduceResponse(response))).toEqual(
          viaGeneric(produce, response),
        );
      }),
    );
  });

  test('writes canonical proto3: an all-default message is empty', () => {
    expect(encodeFetchResponse({ errorCode: 0, responses: [] })).toHaveLength(0);
    expect(encodeProduceResponse({ topics: [] })).toHaveLength(0);
  });

  test('leaves out a number that is missing, as the generic encoder does', () => {
    const partition = {
      partitionIndex: 3,
      errorCode: 0,
      baseOffset: 5,
    } as unknown as ProduceResponse['topics'][number]['partitions'][number];
    const response: ProduceResponse = { topics: [{ name: 't', partitions: [partition] }] };
    expect(produce.responseDeserialize(encodeProduceResponse(response))).toEqual(
      viaGeneric(produce, response),
    );
  });
});

describe('HANDLED_FIELDS', () => {
  test.each(Object.entries(HANDLED_FIELDS))('covers every field of %s in the .proto', (message, handled) => {
    const type = (generic[message] as { type: { field: { number: number }[] } }).type;
    expect(type.field.map((f) => f.number).sort()).toEqual([...handled].sort());
  });
});

describe('withBrokerWireCodecs', () => {
  test("replaces only the server's side of Produce (request and response) and Fetch (response)", () => {
    const wired = withBrokerWireCodecs(broker);
    for (const [name, rpc] of Object.entries(broker)) {
      const codec: { requestDeserialize?: unknown; responseSerialize?: unknown } | undefined =
        BROKER_WIRE_CODECS[name as keyof typeof BROKER_WIRE_CODECS];
      expect(wired[name]!.requestSerialize).toBe(rpc.requestSerialize);
      expect(wired[name]!.responseDeserialize).toBe(rpc.responseDeserialize);
      expect(wired[name]!.requestDeserialize).toBe(codec?.requestDeserialize ?? rpc.requestDeserialize);
      expect(wired[name]!.responseSerialize).toBe(codec?.responseSerialize ?? rpc.responseSerialize);
    }
    expect(wired.Fetch!.requestDeserialize).toBe(fetch.requestDeserialize);
  });

  test('is what the server loads', () => {
    const loaded = loadCohortProtos().broker;
    expect(loaded.Produce!.requestDeserialize).toBe(BROKER_WIRE_CODECS.Produce.requestDeserialize);
    expect(loaded.Fetch!.responseSerialize).toBe(BROKER_WIRE_CODECS.Fetch.responseSerialize);
  });

  test('refuses a codec for a method the service does not have', () => {
    expect(() => withServerWireCodecs(broker, { Fetsch: BROKER_WIRE_CODECS.Fetch })).toThrow(/Fetsch/);
  });
});
