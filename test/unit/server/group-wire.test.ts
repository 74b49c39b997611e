import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { loadSync } from '@grpc/proto-loader';
import fc from 'fast-check';
import type {
  HeartbeatResponse,
  HeartbeatStreamResponse,
  JoinGroupResponse,
  SyncGroupResponse,
} from '../../../src/group/group-protocol';
import {
  decodeHeartbeatRequest,
  decodeJoinGroupRequest,
  decodeSyncGroupRequest,
  encodeHeartbeatResponse,
  encodeHeartbeatStreamResponse,
  encodeJoinGroupResponse,
  encodeSyncGroupResponse,
  GROUP_WIRE_CODECS,
  HANDLED_FIELDS,
  withGroupWireCodecs,
} from '../../../src/server/group-wire';
import { loadCohortProtos, PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../../src/server/load-protos';
import {
  bytesValue,
  expectDecodesOrRangeError,
  GROUP_FIELD_15,
  textValue,
  unknownFields,
} from '../../support/protobuf-wire';

// The generic codecs (protobufjs through proto-loader, as clients use them) are the reference.
const generic = loadSync([...PROTO_FILES], PROTO_LOADER_OPTIONS);
const service = generic['cohort.v1.GroupCoordinator'] as ServiceDefinition;
const method = (name: string) => service[name] as MethodDefinition<object, object>;
const joinGroup = method('JoinGroup');
const syncGroup = method('SyncGroup');
const heartbeat = method('Heartbeat');
const heartbeatStream = method('HeartbeatStream');

const int32 = fc.oneof(
  fc.integer({ min: -5, max: 70_000 }),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
);
const bytes = bytesValue;
const text = textValue;
const errorCode = fc.integer({ min: -1, max: 120 });

const joinGroupRequest = fc.record({
  groupId: text,
  memberId: text,
  groupInstanceId: text,
  sessionTimeoutMs: int32,
  rebalanceTimeoutMs: int32,
  protocolType: text,
  protocols: fc.array(fc.record({ name: text, metadata: bytes }), { maxLength: 4 }),
  clientId: text,
  reason: text,
});
const syncGroupRequest = fc.record({
  groupId: text,
  generationId: int32,
  memberId: text,
  groupInstanceId: text,
  protocolType: text,
  protocolName: text,
  assignments: fc.array(fc.record({ memberId: text, assignment: bytes }), { maxLength: 4 }),
});
const heartbeatRequest = fc.record({
  groupId: text,
  generationId: int32,
  memberId: text,
  groupInstanceId: text,
});

const joinGroupResponse: fc.Arbitrary<JoinGroupResponse> = fc.record({
  errorCode,
  generationId: int32,
  protocolType: text,
  protocolName: text,
  leaderId: text,
  memberId: text,
  members: fc.array(fc.record({ memberId: text, groupInstanceId: text, metadata: bytes }), { maxLength: 4 }),
  skipAssignment: fc.boolean(),
});
const syncGroupResponse: fc.Arbitrary<SyncGroupResponse> = fc.record({
  errorCode,
  protocolType: text,
  protocolName: text,
  assignment: bytes,
});
const heartbeatResponse: fc.Arbitrary<HeartbeatResponse> = fc.record({ errorCode });
const heartbeatStreamResponse: fc.Arbitrary<HeartbeatStreamResponse> = fc.record({
  errorCode,
  sequence: fc.oneof(fc.nat(300), fc.maxSafeNat()),
});

const DECODERS = [
  ['JoinGroupRequest', joinGroup, joinGroupRequest, decodeJoinGroupRequest],
  ['SyncGroupRequest', syncGroup, syncGroupRequest, decodeSyncGroupRequest],
  ['HeartbeatRequest', heartbeat, heartbeatRequest, decodeHeartbeatRequest],
] as const;

describe.each(DECODERS)('decoding %s', (_name, rpc, arbitrary, decode) => {
  test('gives what the generic decoder gives for what the generic encoder writes (property)', () => {
    fc.assert(
      fc.property(arbitrary as fc.Arbitrary<object>, (request) => {
        const encoded = rpc.requestSerialize(request);
        expect(decode(encoded)).toEqual(rpc.requestDeserialize(encoded));
      }),
    );
  });

  test('on any bytes, returns a request or throws a RangeError (property)', () => {
    expectDecodesOrRangeError(decode);
  });
});

describe('decoding, beyond the generic encoder', () => {
  const unknown = [...unknownFields(), ...GROUP_FIELD_15];

  test('skips unknown fields of every wire type, at both levels of a JoinGroupRequest', () => {
    const protocol = [0x0a, 0x01, 0x72, ...unknown, 0x12, 0x01, 0x09]; // name "r", metadata [9]
    const request = Buffer.from([
      ...unknown,
      0x0a,
      0x01,
      0x67, // group_id "g"
      0x20,
      0x05, // session_timeout_ms 5
      0x3a,
      protocol.length,
      ...protocol,
    ]);
    expect(decodeJoinGroupRequest(request)).toEqual(joinGroup.requestDeserialize(request));
    expect(decodeJoinGroupRequest(request)).toMatchObject({
      groupId: 'g',
      sessionTimeoutMs: 5,
      protocols: [{ name: 'r', metadata: Buffer.from([9]) }],
    });
  });

  test('refuses a known field that arrives with another wire type', () => {
    // generation_id (a varint) sent length-delimited, then as a varint
    const request = Buffer.from([0x12, 0x01, 0x05, 0x10, 0x07, 0x1a, 0x01, 0x6d]);
    expect(() => decodeHeartbeatRequest(request)).toThrow(RangeError);
    // group_id (a string) as a varint, and a JoinGroup protocol's name as a fixed32
    expect(() => decodeJoinGroupRequest(Buffer.from([0x08, 0x01]))).toThrow(RangeError);
    expect(() => decodeJoinGroupRequest(Buffer.from([0x3a, 0x05, 0x0d, 1, 2, 3, 4]))).toThrow(RangeError);
  });

  test('refuses a group id that is not UTF-8, which protobufjs would turn into U+FFFD', () => {
    const invalid = Buffer.from([0x0a, 0x02, 0x67, 0xff]); // "g" then a byte no UTF-8 text holds
    const replaced = Buffer.concat([Buffer.from([0x0a, 0x04, 0x67]), Buffer.from('\uFFFD')]);
    expect(joinGroup.requestDeserialize(invalid)).toEqual(joinGroup.requestDeserialize(replaced));
    for (const decode of [decodeJoinGroupRequest, decodeSyncGroupRequest, decodeHeartbeatRequest]) {
      expect(() => decode(invalid)).toThrow(RangeError);
      expect(decode(replaced).groupId).toBe('g\uFFFD');
    }
  });

  test('refuses truncated messages, lengths past their message and overlong varints', () => {
    for (const decode of [decodeJoinGroupRequest, decodeSyncGroupRequest, decodeHeartbeatRequest]) {
      expect(() => decode(Buffer.from([0x10]))).toThrow(RangeError); // varint cut short
      expect(() => decode(Buffer.from([0x0a, 0x05, 0x67]))).toThrow(RangeError); // string past the end
      expect(() => decode(Buffer.from([0x7c]))).toThrow(RangeError); // end group alone
      expect(() => decode(Buffer.from(new Array<number>(11).fill(0xff)))).toThrow(RangeError);
    }
    // a nested message whose own field runs past the nested message's end
    expect(() => decodeSyncGroupRequest(Buffer.from([0x3a, 0x02, 0x0a, 0x05]))).toThrow(RangeError);
  });
});

/** What the generic decoder makes of a response the generic encoder wrote (the reference). */
function viaGeneric(rpc: MethodDefinition<object, object>, response: object): unknown {
  return rpc.responseDeserialize(rpc.responseSerialize(response));
}

const ENCODERS = [
  ['JoinGroupResponse', joinGroup, joinGroupResponse, encodeJoinGroupResponse],
  ['SyncGroupResponse', syncGroup, syncGroupResponse, encodeSyncGroupResponse],
  ['HeartbeatResponse', heartbeat, heartbeatResponse, encodeHeartbeatResponse],
  ['HeartbeatStreamResponse', heartbeatStream, heartbeatStreamResponse, encodeHeartbeatStreamResponse],
] as const;

describe.each(ENCODERS)('encoding %s', (_name, rpc, arbitrary, encode) => {
  test('decodes as the generic encoding of it does (property)', () => {
    fc.assert(
      fc.property(arbitrary as fc.Arbitrary<never>, (response) => {
        expect(rpc.responseDeserialize(encode(response))).toEqual(viaGeneric(rpc, response));
      }),
    );
  });
});

test('an all-default response encodes as an empty message', () => {
  expect(encodeHeartbeatResponse({ errorCode: 0 })).toHaveLength(0);
  expect(
    encodeSyncGroupResponse({
      errorCode: 0,
      protocolType: '',
      protocolName: '',
      assignment: Buffer.alloc(0),
    }),
  ).toHaveLength(0);
});

test('leaves out a field that is missing, as the generic encoder does', () => {
  const partial = { errorCode: 27, members: [{ memberId: 'm' }] } as unknown as JoinGroupResponse;
  expect(joinGroup.responseDeserialize(encodeJoinGroupResponse(partial))).toEqual(
    viaGeneric(joinGroup, partial),
  );
});

describe('HANDLED_FIELDS', () => {
  test.each(Object.entries(HANDLED_FIELDS))('covers every field of %s in the .proto', (message, handled) => {
    const type = (generic[message] as { type: { field: { number: number }[] } }).type;
    expect(type.field.map((f) => f.number).sort()).toEqual([...handled].sort());
  });
});

describe('withGroupWireCodecs', () => {
  test("replaces only the server's side of JoinGroup, SyncGroup and Heartbeat", () => {
    const wired = withGroupWireCodecs(service);
    for (const [name, rpc] of Object.entries(service)) {
      const codec = GROUP_WIRE_CODECS[name as keyof typeof GROUP_WIRE_CODECS];
      expect(wired[name]!.requestSerialize).toBe(rpc.requestSerialize);
      expect(wired[name]!.responseDeserialize).toBe(rpc.responseDeserialize);
      expect(wired[name]!.requestDeserialize).toBe(codec?.requestDeserialize ?? rpc.requestDeserialize);
      expect(wired[name]!.responseSerialize).toBe(codec?.responseSerialize ?? rpc.responseSerialize);
    }
  });

  test('is what the server loads', () => {
    const loaded = loadCohortProtos().groupCoordinator;
    expect(loaded.Heartbeat!.requestDeserialize).toBe(GROUP_WIRE_CODECS.Heartbeat.requestDeserialize);
    expect(loaded.JoinGroup!.responseSerialize).toBe(GROUP_WIRE_CODECS.JoinGroup.responseSerialize);
  });
});
