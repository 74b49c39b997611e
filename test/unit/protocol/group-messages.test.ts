import { loadSync } from '@grpc/proto-loader';
import { join } from 'node:path';
import type * as m from '../../../src/protocol/group-messages';

/**
 * One complete example of every group message. Object literals typed with the interfaces make
 * the compiler reject a missing or an extra field; the test then compares the field names with the proto.
 */
const examples: Record<string, object> = {
  Protocol: { name: '', metadata: Buffer.alloc(0) } satisfies m.Protocol,
  JoinGroupRequest: {
    groupId: '',
    memberId: '',
    groupInstanceId: '',
    sessionTimeoutMs: 0,
    rebalanceTimeoutMs: 0,
    protocolType: '',
    protocols: [],
    clientId: '',
    reason: '',
  } satisfies m.JoinGroupRequest,
  JoinGroupMember: {
    memberId: '',
    groupInstanceId: '',
    metadata: Buffer.alloc(0),
  } satisfies m.JoinGroupMember,
  JoinGroupResponse: {
    errorCode: 0,
    generationId: 0,
    protocolType: '',
    protocolName: '',
    leaderId: '',
    memberId: '',
    members: [],
    skipAssignment: false,
  } satisfies m.JoinGroupResponse,
  SyncGroupAssignment: { memberId: '', assignment: Buffer.alloc(0) } satisfies m.SyncGroupAssignment,
  SyncGroupRequest: {
    groupId: '',
    generationId: 0,
    memberId: '',
    groupInstanceId: '',
    protocolType: '',
    protocolName: '',
    assignments: [],
  } satisfies m.SyncGroupRequest,
  SyncGroupResponse: {
    errorCode: 0,
    protocolType: '',
    protocolName: '',
    assignment: Buffer.alloc(0),
  } satisfies m.SyncGroupResponse,
  HeartbeatRequest: {
    groupId: '',
    generationId: 0,
    memberId: '',
    groupInstanceId: '',
  } satisfies m.HeartbeatRequest,
  HeartbeatResponse: { errorCode: 0 } satisfies m.HeartbeatResponse,
  MemberIdentity: { memberId: '', groupInstanceId: '', reason: '' } satisfies m.MemberIdentity,
  LeaveGroupRequest: { groupId: '', members: [] } satisfies m.LeaveGroupRequest,
  LeaveGroupMemberResponse: {
    memberId: '',
    groupInstanceId: '',
    errorCode: 0,
  } satisfies m.LeaveGroupMemberResponse,
  LeaveGroupResponse: { errorCode: 0, members: [] } satisfies m.LeaveGroupResponse,
  OffsetCommitPartition: {
    partitionIndex: 0,
    committedOffset: 0,
    committedLeaderEpoch: 0,
    committedMetadata: '',
  } satisfies m.OffsetCommitPartition,
  OffsetCommitTopic: { name: '', partitions: [] } satisfies m.OffsetCommitTopic,
  OffsetCommitRequest: {
    groupId: '',
    generationId: 0,
    memberId: '',
    groupInstanceId: '',
    topics: [],
  } satisfies m.OffsetCommitRequest,
  OffsetCommitPartitionResponse: {
    partitionIndex: 0,
    errorCode: 0,
  } satisfies m.OffsetCommitPartitionResponse,
  OffsetCommitTopicResponse: { name: '', partitions: [] } satisfies m.OffsetCommitTopicResponse,
  OffsetCommitResponse: { topics: [] } satisfies m.OffsetCommitResponse,
  OffsetFetchTopic: { name: '', partitionIndexes: [] } satisfies m.OffsetFetchTopic,
  OffsetFetchRequest: { groupId: '', topics: [], requireStable: false } satisfies m.OffsetFetchRequest,
  OffsetFetchPartition: {
    partitionIndex: 0,
    committedOffset: 0,
    committedLeaderEpoch: 0,
    metadata: '',
    errorCode: 0,
  } satisfies m.OffsetFetchPartition,
  OffsetFetchTopicResponse: { name: '', partitions: [] } satisfies m.OffsetFetchTopicResponse,
  OffsetFetchResponse: { errorCode: 0, topics: [] } satisfies m.OffsetFetchResponse,
  DescribeGroupsRequest: { groups: [] } satisfies m.DescribeGroupsRequest,
  DescribedGroupMember: {
    memberId: '',
    groupInstanceId: '',
    clientId: '',
    clientHost: '',
    memberMetadata: Buffer.alloc(0),
    memberAssignment: Buffer.alloc(0),
    lastHeartbeatMs: 0,
  } satisfies m.DescribedGroupMember,
  DescribedGroup: {
    errorCode: 0,
    errorMessage: '',
    groupId: '',
    groupState: '',
    protocolType: '',
    protocolData: '',
    members: [],
    generationId: 0,
  } satisfies m.DescribedGroup,
  DescribeGroupsResponse: { groups: [] } satisfies m.DescribeGroupsResponse,
  ListGroupsRequest: { statesFilter: [] } satisfies m.ListGroupsRequest,
  ListedGroup: { groupId: '', protocolType: '', groupState: '' } satisfies m.ListedGroup,
  ListGroupsResponse: { errorCode: 0, groups: [] } satisfies m.ListGroupsResponse,
  DeleteGroupsRequest: { groupsNames: [] } satisfies m.DeleteGroupsRequest,
  DeletableGroupResult: { groupId: '', errorCode: 0 } satisfies m.DeletableGroupResult,
  DeleteGroupsResponse: { results: [] } satisfies m.DeleteGroupsResponse,
};

describe('the client copy of the coordinator messages', () => {
  const definition = loadSync('cohort/v1/group_coordinator.proto', {
    includeDirs: [join(__dirname, '..', '..', '..', 'proto')],
    keepCase: false,
  });

  it.each(Object.keys(examples))('%s has exactly the fields of the proto message', (name) => {
    const type = definition[`cohort.v1.${name}`] as { type: { field: { name: string }[] } };
    const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    expect(Object.keys(examples[name]).sort()).toEqual(type.type.field.map((f) => camel(f.name)).sort());
  });
});
