import type { ServiceDefinition } from '@grpc/proto-loader';
import type {
  HeartbeatRequest,
  HeartbeatResponse,
  HeartbeatStreamResponse,
  JoinGroupRequest,
  JoinGroupResponse,
  Protocol,
  SyncGroupAssignment,
  SyncGroupRequest,
  SyncGroupResponse,
} from '../group/group-protocol';
import {
  bytesFieldSize,
  decodeStringAndBytes,
  delimitedSize,
  Reader,
  stringFieldSize,
  TAG_1_LEN,
  TAG_1_VARINT,
  TAG_2_LEN,
  TAG_2_VARINT,
  TAG_3_LEN,
  TAG_4_LEN,
  TAG_5_LEN,
  TAG_6_LEN,
  TAG_7_LEN,
  TAG_8_VARINT,
  varintFieldSize,
  withServerWireCodecs,
  Writer,
  type ServerWireCodec,
} from './proto-wire';

/**
 * Hand-written protobuf codecs for the group coordinator's hot messages (proto/cohort/v1/
 * group_coordinator.proto): the JoinGroup, SyncGroup and Heartbeat requests the server decodes and the
 * responses it encodes. A rebalance of N members is 2N of these calls, and heartbeats are most of a
 * steady group's traffic; the generic codecs (protobufjs through proto-loader: decode, then toObject;
 * fromObject, then encode) cost ~7 µs of a call's server CPU and 7% of the bytes a rebalance allocates
 * (docs/performance.md, G6).
 *
 * Same contract as broker-wire.ts: the decoders give what the generic decoder gives with the server's
 * options (every field present with its default, bytes as Buffers viewing the request) for every
 * well-formed message, skip unknown fields (groups included), and throw a RangeError, answered
 * INVALID_ARGUMENT, for whatever proto-wire.ts's strict Reader refuses: truncation, a length past its
 * message, a known field with the wrong wire type, a string that is not UTF-8. The encoders write canonical
 * proto3. test/unit/server/group-wire.test.ts holds them against protobufjs and the .proto.
 */

// --- decoding ---

function protocolOf(name: string, metadata: Buffer): Protocol {
  return { name, metadata };
}

function decodeProtocol(r: Reader): Protocol {
  return decodeStringAndBytes(r, protocolOf);
}

/** cohort.v1.JoinGroupRequest from bytes. */
export function decodeJoinGroupRequest(buf: Buffer): JoinGroupRequest {
  const r = new Reader(buf, 0, buf.length);
  let groupId = '';
  let memberId = '';
  let groupInstanceId = '';
  let sessionTimeoutMs = 0;
  let rebalanceTimeoutMs = 0;
  let protocolType = '';
  const protocols: Protocol[] = [];
  let clientId = '';
  let reason = '';
  while (!r.isDone) {
    const tag = r.tag();
    switch (tag >>> 3) {
      case 1:
        groupId = r.stringField(tag);
        break;
      case 2:
        memberId = r.stringField(tag);
        break;
      case 3:
        groupInstanceId = r.stringField(tag);
        break;
      case 4:
        sessionTimeoutMs = r.int32Field(tag);
        break;
      case 5:
        rebalanceTimeoutMs = r.int32Field(tag);
        break;
      case 6:
        protocolType = r.stringField(tag);
        break;
      case 7:
        r.repeatedMessage(tag, protocols, decodeProtocol);
        break;
      case 8:
        clientId = r.stringField(tag);
        break;
      case 9:
        reason = r.stringField(tag);
        break;
      default:
        r.skipField(tag);
    }
  }
  return {
    groupId,
    memberId,
    groupInstanceId,
    sessionTimeoutMs,
    rebalanceTimeoutMs,
    protocolType,
    protocols,
    clientId,
    reason,
  };
}

function assignmentOf(memberId: string, assignment: Buffer): SyncGroupAssignment {
  return { memberId, assignment };
}

function decodeAssignment(r: Reader): SyncGroupAssignment {
  return decodeStringAndBytes(r, assignmentOf);
}

/** cohort.v1.SyncGroupRequest from bytes. */
export function decodeSyncGroupRequest(buf: Buffer): SyncGroupRequest {
  const r = new Reader(buf, 0, buf.length);
  let groupId = '';
  let generationId = 0;
  let memberId = '';
  let groupInstanceId = '';
  let protocolType = '';
  let protocolName = '';
  const assignments: SyncGroupAssignment[] = [];
  while (!r.isDone) {
    const tag = r.tag();
    switch (tag >>> 3) {
      case 1:
        groupId = r.stringField(tag);
        break;
      case 2:
        generationId = r.int32Field(tag);
        break;
      case 3:
        memberId = r.stringField(tag);
        break;
      case 4:
        groupInstanceId = r.stringField(tag);
        break;
      case 5:
        protocolType = r.stringField(tag);
        break;
      case 6:
        protocolName = r.stringField(tag);
        break;
      case 7:
        r.repeatedMessage(tag, assignments, decodeAssignment);
        break;
      default:
        r.skipField(tag);
    }
  }
  return { groupId, generationId, memberId, groupInstanceId, protocolType, protocolName, assignments };
}

/** cohort.v1.HeartbeatRequest from bytes. */
export function decodeHeartbeatRequest(buf: Buffer): HeartbeatRequest {
  const r = new Reader(buf, 0, buf.length);
  let groupId = '';
  let generationId = 0;
  let memberId = '';
  let groupInstanceId = '';
  while (!r.isDone) {
    const tag = r.tag();
    switch (tag >>> 3) {
      case 1:
        groupId = r.stringField(tag);
        break;
      case 2:
        generationId = r.int32Field(tag);
        break;
      case 3:
        memberId = r.stringField(tag);
        break;
      case 4:
        groupInstanceId = r.stringField(tag);
        break;
      default:
        r.skipField(tag);
    }
  }
  return { groupId, generationId, memberId, groupInstanceId };
}

// --- encoding ---

/** cohort.v1.JoinGroupResponse as bytes. */
export function encodeJoinGroupResponse(response: JoinGroupResponse): Buffer {
  const lengths: number[] = [];
  let size =
    varintFieldSize(response.errorCode) +
    varintFieldSize(response.generationId) +
    stringFieldSize(response.protocolType, lengths) +
    stringFieldSize(response.protocolName, lengths) +
    stringFieldSize(response.leaderId, lengths) +
    stringFieldSize(response.memberId, lengths) +
    (response.skipAssignment ? 2 : 0);
  for (const member of response.members) {
    const at = lengths.push(0) - 1;
    const memberSize =
      stringFieldSize(member.memberId, lengths) +
      stringFieldSize(member.groupInstanceId, lengths) +
      bytesFieldSize(member.metadata);
    lengths[at] = memberSize;
    size += delimitedSize(memberSize);
  }

  const w = new Writer(size, lengths);
  w.varintField(TAG_1_VARINT, response.errorCode);
  w.varintField(TAG_2_VARINT, response.generationId);
  w.stringField(TAG_3_LEN, response.protocolType);
  w.stringField(TAG_4_LEN, response.protocolName);
  w.stringField(TAG_5_LEN, response.leaderId);
  w.stringField(TAG_6_LEN, response.memberId);
  for (const member of response.members) {
    w.beginMessage(TAG_7_LEN);
    w.stringField(TAG_1_LEN, member.memberId);
    w.stringField(TAG_2_LEN, member.groupInstanceId);
    w.bytesField(TAG_3_LEN, member.metadata);
  }
  if (response.skipAssignment) w.varintField(TAG_8_VARINT, 1);
  return w.finish();
}

/** cohort.v1.SyncGroupResponse as bytes. */
export function encodeSyncGroupResponse(response: SyncGroupResponse): Buffer {
  const lengths: number[] = [];
  const size =
    varintFieldSize(response.errorCode) +
    stringFieldSize(response.protocolType, lengths) +
    stringFieldSize(response.protocolName, lengths) +
    bytesFieldSize(response.assignment);
  const w = new Writer(size, lengths);
  w.varintField(TAG_1_VARINT, response.errorCode);
  w.stringField(TAG_2_LEN, response.protocolType);
  w.stringField(TAG_3_LEN, response.protocolName);
  w.bytesField(TAG_4_LEN, response.assignment);
  return w.finish();
}

/** cohort.v1.HeartbeatResponse as bytes. */
export function encodeHeartbeatResponse(response: HeartbeatResponse): Buffer {
  const w = new Writer(varintFieldSize(response.errorCode), NO_LENGTHS);
  w.varintField(TAG_1_VARINT, response.errorCode);
  return w.finish();
}

/**
 * cohort.v1.HeartbeatStreamResponse as bytes: two varints. `sequence` is int64 on the wire, and a stream
 * would need 2^53 requests to leave the safe integers.
 */
export function encodeHeartbeatStreamResponse(response: HeartbeatStreamResponse): Buffer {
  const w = new Writer(varintFieldSize(response.errorCode) + varintFieldSize(response.sequence), NO_LENGTHS);
  w.varintField(TAG_1_VARINT, response.errorCode);
  w.varintField(TAG_2_VARINT, response.sequence);
  return w.finish();
}

const NO_LENGTHS: number[] = [];

/** Field numbers each codec here handles, by message: the test holds them against the .proto. */
export const HANDLED_FIELDS: Readonly<Record<string, readonly number[]>> = {
  'cohort.v1.JoinGroupRequest': [1, 2, 3, 4, 5, 6, 7, 8, 9],
  'cohort.v1.Protocol': [1, 2],
  'cohort.v1.JoinGroupResponse': [1, 2, 3, 4, 5, 6, 7, 8],
  'cohort.v1.JoinGroupMember': [1, 2, 3],
  'cohort.v1.SyncGroupRequest': [1, 2, 3, 4, 5, 6, 7],
  'cohort.v1.SyncGroupAssignment': [1, 2],
  'cohort.v1.SyncGroupResponse': [1, 2, 3, 4],
  'cohort.v1.HeartbeatRequest': [1, 2, 3, 4],
  'cohort.v1.HeartbeatResponse': [1],
  'cohort.v1.HeartbeatStreamResponse': [1, 2],
};

/** The hand-written codecs by method; the server installs them with `withGroupWireCodecs`. */
export const GROUP_WIRE_CODECS: Readonly<
  Record<'JoinGroup' | 'SyncGroup' | 'Heartbeat' | 'HeartbeatStream', Required<ServerWireCodec>>
> = {
  JoinGroup: {
    requestDeserialize: decodeJoinGroupRequest,
    responseSerialize: (response) => encodeJoinGroupResponse(response as JoinGroupResponse),
  },
  SyncGroup: {
    requestDeserialize: decodeSyncGroupRequest,
    responseSerialize: (response) => encodeSyncGroupResponse(response as SyncGroupResponse),
  },
  Heartbeat: {
    requestDeserialize: decodeHeartbeatRequest,
    responseSerialize: (response) => encodeHeartbeatResponse(response as HeartbeatResponse),
  },
  // Each message of the stream goes through the same strict decoder as a unary Heartbeat.
  HeartbeatStream: {
    requestDeserialize: decodeHeartbeatRequest,
    responseSerialize: (response) => encodeHeartbeatStreamResponse(response as HeartbeatStreamResponse),
  },
};

/**
 * `definition` (cohort.v1.GroupCoordinator as proto-loader built it) with the hand-written codecs above for
 * the requests the server decodes and the responses it encodes. Clients keep the generic codecs.
 */
export function withGroupWireCodecs(definition: ServiceDefinition): ServiceDefinition {
  return withServerWireCodecs(definition, GROUP_WIRE_CODECS);
}
