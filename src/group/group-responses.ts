import { ErrorCode } from '../errors';
import type {
  HeartbeatResponse,
  JoinGroupResponse,
  LeaveGroupResponse,
  SyncGroupResponse,
} from './group-protocol';

/**
 * Error responses, built the way Kafka builds them (`JoinGroupResult(memberId, error)`, ...): no generation
 * (-1), no protocol, no leader. Responses without a per-call field are frozen singletons so the hot paths
 * (Heartbeat above all) allocate nothing; the transport only reads responses.
 */

export const NO_GENERATION = -1;
export const EMPTY_BUFFER: Buffer = Buffer.alloc(0);

export function joinError(memberId: string, errorCode: ErrorCode): JoinGroupResponse {
  return {
    errorCode,
    generationId: NO_GENERATION,
    protocolType: '',
    protocolName: '',
    leaderId: '',
    memberId,
    members: [],
    skipAssignment: false,
  };
}

const syncErrors = new Map<ErrorCode, SyncGroupResponse>();
export function syncError(errorCode: ErrorCode): SyncGroupResponse {
  let response = syncErrors.get(errorCode);
  if (response === undefined) {
    response = Object.freeze({ errorCode, protocolType: '', protocolName: '', assignment: EMPTY_BUFFER });
    syncErrors.set(errorCode, response);
  }
  return response;
}

const heartbeatResponses = new Map<ErrorCode, Promise<HeartbeatResponse>>();
/** An already-resolved promise per code: a heartbeat's answer costs no allocation. */
export function heartbeatReply(errorCode: ErrorCode): Promise<HeartbeatResponse> {
  let reply = heartbeatResponses.get(errorCode);
  if (reply === undefined) {
    reply = Promise.resolve(Object.freeze({ errorCode }));
    heartbeatResponses.set(errorCode, reply);
  }
  return reply;
}

export function leaveError(errorCode: ErrorCode): LeaveGroupResponse {
  return { errorCode, members: [] };
}
