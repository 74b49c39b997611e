import { CohortError, ErrorCode } from '../errors';
import type {
  DeleteGroupsRequest,
  DescribeGroupsRequest,
  HeartbeatRequest,
  JoinGroupRequest,
  LeaveGroupRequest,
  ListGroupsRequest,
  OffsetCommitRequest,
  OffsetFetchRequest,
  SyncGroupRequest,
} from './group-protocol';

/**
 * Shape checks for requests that cannot be understood (a field of the wrong type, a protocol offered twice).
 * The transport decodes with defaults, so a well-formed message always passes; these guard the domain from
 * anything else that calls it. Each returns the error to reject with, or undefined. Cheap: no allocation on
 * the success path.
 */

const isString = (value: unknown): value is string => typeof value === 'string';
const isInt32 = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= -2_147_483_648 && value <= 2_147_483_647;
const isOffset = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value);

/** Kafka's topic name rule (the log layer's topic-partition.ts has the same; a test holds them together). */
const MAX_TOPIC_NAME_LENGTH = 249;
const LEGAL_TOPIC_NAME = /^[a-zA-Z0-9._-]+$/;

/**
 * Whether `name` could ever be a topic: 1 to 249 ASCII letters, digits, '.', '_' and '-', not '.' or '..'.
 * An offset committed for any other name can never be consumed (OffsetCommit answers INVALID_TOPIC_EXCEPTION).
 */
export function isLegalTopicName(name: string): boolean {
  return name.length <= MAX_TOPIC_NAME_LENGTH && name !== '.' && name !== '..' && LEGAL_TOPIC_NAME.test(name);
}

function invalid(what: string): CohortError {
  return new CohortError(ErrorCode.INVALID_REQUEST, `Malformed request: ${what}`);
}

export function checkJoinGroupRequest(request: JoinGroupRequest): CohortError | undefined {
  if (request === null || typeof request !== 'object') return invalid('JoinGroup request is not an object');
  if (!isString(request.groupId) || !isString(request.memberId) || !isString(request.groupInstanceId)) {
    return invalid('JoinGroup ids must be strings');
  }
  if (!isString(request.protocolType) || !isString(request.clientId) || !isString(request.reason)) {
    return invalid('JoinGroup protocolType, clientId and reason must be strings');
  }
  if (!isInt32(request.sessionTimeoutMs) || !isInt32(request.rebalanceTimeoutMs)) {
    return invalid('JoinGroup timeouts must be 32-bit integers');
  }
  if (!Array.isArray(request.protocols)) return invalid('JoinGroup protocols must be a list');
  const protocols = request.protocols;
  for (let i = 0; i < protocols.length; i++) {
    const protocol = protocols[i];
    if (protocol === null || typeof protocol !== 'object' || !isString(protocol.name)) {
      return invalid('JoinGroup protocol names must be strings');
    }
    if (!Buffer.isBuffer(protocol.metadata)) return invalid('JoinGroup protocol metadata must be bytes');
    for (let j = 0; j < i; j++) {
      if (protocols[j].name === protocol.name)
        return invalid(`JoinGroup offers protocol ${protocol.name} twice`);
    }
  }
  return undefined;
}

export function checkSyncGroupRequest(request: SyncGroupRequest): CohortError | undefined {
  if (request === null || typeof request !== 'object') return invalid('SyncGroup request is not an object');
  if (!isString(request.groupId) || !isString(request.memberId) || !isString(request.groupInstanceId)) {
    return invalid('SyncGroup ids must be strings');
  }
  if (!isString(request.protocolType) || !isString(request.protocolName)) {
    return invalid('SyncGroup protocolType and protocolName must be strings');
  }
  if (!isInt32(request.generationId)) return invalid('SyncGroup generationId must be a 32-bit integer');
  if (!Array.isArray(request.assignments)) return invalid('SyncGroup assignments must be a list');
  for (const assignment of request.assignments) {
    if (assignment === null || typeof assignment !== 'object' || !isString(assignment.memberId)) {
      return invalid('SyncGroup assignment member ids must be strings');
    }
    if (!Buffer.isBuffer(assignment.assignment)) return invalid('SyncGroup assignments must be bytes');
  }
  return undefined;
}

export function checkHeartbeatRequest(request: HeartbeatRequest): CohortError | undefined {
  if (
    request === null ||
    typeof request !== 'object' ||
    !isString(request.groupId) ||
    !isString(request.memberId) ||
    !isString(request.groupInstanceId) ||
    !isInt32(request.generationId)
  ) {
    return invalid('Heartbeat needs string ids and a 32-bit generationId');
  }
  return undefined;
}

export function checkLeaveGroupRequest(request: LeaveGroupRequest): CohortError | undefined {
  if (
    request === null ||
    typeof request !== 'object' ||
    !isString(request.groupId) ||
    !Array.isArray(request.members)
  ) {
    return invalid('LeaveGroup needs a groupId and a list of members');
  }
  for (const member of request.members) {
    if (
      member === null ||
      typeof member !== 'object' ||
      !isString(member.memberId) ||
      !isString(member.groupInstanceId) ||
      !isString(member.reason)
    ) {
      return invalid('LeaveGroup member identities must be strings');
    }
  }
  return undefined;
}

export function checkOffsetCommitRequest(request: OffsetCommitRequest): CohortError | undefined {
  if (request === null || typeof request !== 'object')
    return invalid('OffsetCommit request is not an object');
  if (!isString(request.groupId) || !isString(request.memberId) || !isString(request.groupInstanceId)) {
    return invalid('OffsetCommit ids must be strings');
  }
  if (!isInt32(request.generationId)) return invalid('OffsetCommit generationId must be a 32-bit integer');
  if (!Array.isArray(request.topics)) return invalid('OffsetCommit topics must be a list');
  for (const topic of request.topics) {
    if (
      topic === null ||
      typeof topic !== 'object' ||
      !isString(topic.name) ||
      !Array.isArray(topic.partitions)
    ) {
      return invalid('OffsetCommit topics need a name and a list of partitions');
    }
    for (const partition of topic.partitions) {
      if (
        partition === null ||
        typeof partition !== 'object' ||
        !isInt32(partition.partitionIndex) ||
        !isOffset(partition.committedOffset) ||
        !isInt32(partition.committedLeaderEpoch) ||
        !isString(partition.committedMetadata)
      ) {
        return invalid(`OffsetCommit partition of ${topic.name} is malformed`);
      }
    }
  }
  return undefined;
}

export function checkOffsetFetchRequest(request: OffsetFetchRequest): CohortError | undefined {
  if (
    request === null ||
    typeof request !== 'object' ||
    !isString(request.groupId) ||
    !Array.isArray(request.topics)
  ) {
    return invalid('OffsetFetch needs a groupId and a list of topics');
  }
  for (const topic of request.topics) {
    if (
      topic === null ||
      typeof topic !== 'object' ||
      !isString(topic.name) ||
      !Array.isArray(topic.partitionIndexes)
    ) {
      return invalid('OffsetFetch topics need a name and a list of partition indexes');
    }
    for (const index of topic.partitionIndexes) {
      if (!isInt32(index))
        return invalid(`OffsetFetch partition index of ${topic.name} is not a 32-bit integer`);
    }
  }
  return undefined;
}

export function checkDescribeGroupsRequest(request: DescribeGroupsRequest): CohortError | undefined {
  if (
    request === null ||
    typeof request !== 'object' ||
    !Array.isArray(request.groups) ||
    !request.groups.every(isString)
  ) {
    return invalid('DescribeGroups needs a list of group ids');
  }
  return undefined;
}

export function checkListGroupsRequest(request: ListGroupsRequest): CohortError | undefined {
  if (
    request === null ||
    typeof request !== 'object' ||
    !Array.isArray(request.statesFilter) ||
    !request.statesFilter.every(isString)
  ) {
    return invalid('ListGroups needs a list of state names');
  }
  return undefined;
}

export function checkDeleteGroupsRequest(request: DeleteGroupsRequest): CohortError | undefined {
  if (
    request === null ||
    typeof request !== 'object' ||
    !Array.isArray(request.groupsNames) ||
    !request.groupsNames.every(isString)
  ) {
    return invalid('DeleteGroups needs a list of group ids');
  }
  return undefined;
}
