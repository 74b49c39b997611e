import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PackageDefinition } from '@grpc/proto-loader';
import { loadSync } from '@grpc/proto-loader';
import { ErrorCode } from '../../../src/errors';
import { PROTO_DIR, PROTO_FILES } from '../../../src/server';

/**
 * The contracts of issues 3 (GroupCoordinator, TestClock) and 4 (Broker), verbatim: clients outside this repository are built against these names and
 * numbers. The real .proto files may add fields and RPCs; they may not rename, renumber or retype these.
 */
const CONTRACT = `
syntax = "proto3";
package cohort.v1;
import "cohort/v1/errors.proto";

service GroupCoordinator {
  rpc JoinGroup(JoinGroupRequest) returns (JoinGroupResponse);
  rpc SyncGroup(SyncGroupRequest) returns (SyncGroupResponse);
  rpc Heartbeat(HeartbeatRequest) returns (HeartbeatResponse);
  rpc LeaveGroup(LeaveGroupRequest) returns (LeaveGroupResponse);
  rpc OffsetCommit(OffsetCommitRequest) returns (OffsetCommitResponse);
  rpc OffsetFetch(OffsetFetchRequest) returns (OffsetFetchResponse);
  rpc DescribeGroups(DescribeGroupsRequest) returns (DescribeGroupsResponse);
  rpc ListGroups(ListGroupsRequest) returns (ListGroupsResponse);
  rpc DeleteGroups(DeleteGroupsRequest) returns (DeleteGroupsResponse);
}

message Protocol { string name = 1; bytes metadata = 2; }
message JoinGroupRequest {
  string group_id = 1; string member_id = 2; string group_instance_id = 3;   // "" = none
  int32 session_timeout_ms = 4; int32 rebalance_timeout_ms = 5;
  string protocol_type = 6; repeated Protocol protocols = 7; string client_id = 8; string reason = 9;
}
message JoinGroupMember { string member_id = 1; string group_instance_id = 2; bytes metadata = 3; }
message JoinGroupResponse {
  ErrorCode error_code = 1; int32 generation_id = 2; string protocol_type = 3; string protocol_name = 4;
  string leader_id = 5; string member_id = 6; repeated JoinGroupMember members = 7; bool skip_assignment = 8;
}
message SyncGroupAssignment { string member_id = 1; bytes assignment = 2; }
message SyncGroupRequest {
  string group_id = 1; int32 generation_id = 2; string member_id = 3; string group_instance_id = 4;
  string protocol_type = 5; string protocol_name = 6;                        // "" = not sent
  repeated SyncGroupAssignment assignments = 7;
}
message SyncGroupResponse { ErrorCode error_code = 1; string protocol_type = 2; string protocol_name = 3; bytes assignment = 4; }
message HeartbeatRequest { string group_id = 1; int32 generation_id = 2; string member_id = 3; string group_instance_id = 4; }
message HeartbeatResponse { ErrorCode error_code = 1; }
message MemberIdentity { string member_id = 1; string group_instance_id = 2; string reason = 3; }
message LeaveGroupRequest { string group_id = 1; repeated MemberIdentity members = 2; }
message LeaveGroupMemberResponse { string member_id = 1; string group_instance_id = 2; ErrorCode error_code = 3; }
message LeaveGroupResponse { ErrorCode error_code = 1; repeated LeaveGroupMemberResponse members = 2; }

message OffsetCommitPartition { int32 partition_index = 1; int64 committed_offset = 2; int32 committed_leader_epoch = 3; string committed_metadata = 4; }
message OffsetCommitTopic { string name = 1; repeated OffsetCommitPartition partitions = 2; }
message OffsetCommitRequest {
  string group_id = 1; int32 generation_id = 2;   // -1 = a commit outside group membership
  string member_id = 3; string group_instance_id = 4; repeated OffsetCommitTopic topics = 5;
}
message OffsetCommitPartitionResponse { int32 partition_index = 1; ErrorCode error_code = 2; }
message OffsetCommitTopicResponse { string name = 1; repeated OffsetCommitPartitionResponse partitions = 2; }
message OffsetCommitResponse { repeated OffsetCommitTopicResponse topics = 1; }
message OffsetFetchTopic { string name = 1; repeated int32 partition_indexes = 2; }
message OffsetFetchRequest { string group_id = 1; repeated OffsetFetchTopic topics = 2; /* empty = all */ bool require_stable = 3; }
message OffsetFetchPartition { int32 partition_index = 1; int64 committed_offset = 2; int32 committed_leader_epoch = 3; string metadata = 4; ErrorCode error_code = 5; }
message OffsetFetchTopicResponse { string name = 1; repeated OffsetFetchPartition partitions = 2; }
message OffsetFetchResponse { ErrorCode error_code = 1; repeated OffsetFetchTopicResponse topics = 2; }

message DescribeGroupsRequest { repeated string groups = 1; }
message DescribedGroupMember { string member_id = 1; string group_instance_id = 2; string client_id = 3; string client_host = 4; bytes member_metadata = 5; bytes member_assignment = 6; }
message DescribedGroup { ErrorCode error_code = 1; string error_message = 2; string group_id = 3; string group_state = 4; string protocol_type = 5; string protocol_data = 6; repeated DescribedGroupMember members = 7; }
message DescribeGroupsResponse { repeated DescribedGroup groups = 1; }
message ListGroupsRequest { repeated string states_filter = 1; }
message ListedGroup { string group_id = 1; string protocol_type = 2; string group_state = 3; }
message ListGroupsResponse { ErrorCode error_code = 1; repeated ListedGroup groups = 2; }
message DeleteGroupsRequest { repeated string groups_names = 1; }
message DeletableGroupResult { string group_id = 1; ErrorCode error_code = 2; }
message DeleteGroupsResponse { repeated DeletableGroupResult results = 1; }

service TestClock {
  rpc Advance(AdvanceClockRequest) returns (AdvanceClockResponse);
  rpc Now(NowRequest) returns (AdvanceClockResponse);
}
message AdvanceClockRequest { int64 ms = 1; }
message NowRequest {}
message AdvanceClockResponse { int64 now_ms = 1; }

service Broker {
  rpc CreateTopics(CreateTopicsRequest) returns (CreateTopicsResponse);
  rpc Metadata(MetadataRequest) returns (MetadataResponse);
  rpc Produce(ProduceRequest) returns (ProduceResponse);
  rpc Fetch(FetchRequest) returns (FetchResponse);
  rpc ListOffsets(ListOffsetsRequest) returns (ListOffsetsResponse);
}
message CreatableTopic { string name = 1; int32 num_partitions = 2; int32 replication_factor = 3; }
message CreateTopicsRequest { repeated CreatableTopic topics = 1; }
message CreatableTopicResult { string name = 1; ErrorCode error_code = 2; string error_message = 3; }
message CreateTopicsResponse { repeated CreatableTopicResult topics = 1; }
message MetadataRequest { repeated string topics = 1; /* empty = all */ }
message PartitionMetadata { int32 partition_index = 1; int32 leader_id = 2; repeated int32 replica_nodes = 3; repeated int32 isr_nodes = 4; ErrorCode error_code = 5; }
message TopicMetadata { string name = 1; ErrorCode error_code = 2; repeated PartitionMetadata partitions = 3; }
message BrokerNode { int32 node_id = 1; string host = 2; int32 port = 3; }
message MetadataResponse { repeated BrokerNode brokers = 1; repeated TopicMetadata topics = 2; }

message RecordHeader { string key = 1; bytes value = 2; }
message Record { int64 offset = 1; int64 timestamp_ms = 2; bytes key = 3; bytes value = 4; repeated RecordHeader headers = 5; }
message ProducePartitionData { int32 partition_index = 1; repeated Record records = 2; }
message ProduceTopicData { string name = 1; repeated ProducePartitionData partitions = 2; }
message ProduceRequest { int32 acks = 1; /* 0, 1 or -1 (all in-sync replicas) */ int32 timeout_ms = 2; repeated ProduceTopicData topics = 3; }
message ProducePartitionResponse { int32 partition_index = 1; ErrorCode error_code = 2; int64 base_offset = 3; int64 log_append_time_ms = 4; int64 log_start_offset = 5; }
message ProduceTopicResponse { string name = 1; repeated ProducePartitionResponse partitions = 2; }
message ProduceResponse { repeated ProduceTopicResponse topics = 1; }

message FetchPartition { int32 partition_index = 1; int64 fetch_offset = 2; int32 partition_max_bytes = 3; }
message FetchTopic { string name = 1; repeated FetchPartition partitions = 2; }
message FetchRequest { int32 replica_id = 1; /* -1 = consumer, >= 0 = a follower's node id */ int32 max_wait_ms = 2; int32 min_bytes = 3; int32 max_bytes = 4; repeated FetchTopic topics = 5; }
message FetchPartitionData { int32 partition_index = 1; ErrorCode error_code = 2; int64 high_watermark = 3; int64 log_start_offset = 4; repeated Record records = 5; }
message FetchableTopicResponse { string name = 1; repeated FetchPartitionData partitions = 2; }
message FetchResponse { ErrorCode error_code = 1; repeated FetchableTopicResponse responses = 2; }
message ListOffsetsPartition { int32 partition_index = 1; int64 timestamp = 2; /* -1 latest, -2 earliest */ }
message ListOffsetsTopic { string name = 1; repeated ListOffsetsPartition partitions = 2; }
message ListOffsetsRequest { repeated ListOffsetsTopic topics = 1; }
message ListOffsetsPartitionResponse { int32 partition_index = 1; ErrorCode error_code = 2; int64 offset = 3; int64 timestamp = 4; }
message ListOffsetsTopicResponse { string name = 1; repeated ListOffsetsPartitionResponse partitions = 2; }
message ListOffsetsResponse { repeated ListOffsetsTopicResponse topics = 1; }
`;

interface FieldDescriptor {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName: string;
}
interface MethodDescriptor {
  path: string;
  requestStream: boolean;
  responseStream: boolean;
  requestType: { type: { name: string } };
  responseType: { type: { name: string } };
}

function load(files: string[], includeDirs: string[]): PackageDefinition {
  return loadSync(files, { keepCase: true, includeDirs });
}

function messagesOf(definition: PackageDefinition): Map<string, FieldDescriptor[]> {
  const messages = new Map<string, FieldDescriptor[]>();
  for (const [name, entry] of Object.entries(definition)) {
    if ('format' in entry && entry.format === 'Protocol Buffer 3 DescriptorProto') {
      messages.set(name, (entry.type as { field: FieldDescriptor[] }).field);
    }
  }
  return messages;
}

function fieldShape(f: FieldDescriptor): string {
  return `${f.label} ${f.type} ${f.typeName} ${f.name} = ${f.number}`;
}

describe('the proto contract', () => {
  const actual = load([...PROTO_FILES], [PROTO_DIR]);
  let contract: PackageDefinition;

  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-contract-'));
    try {
      writeFileSync(join(dir, 'contract.proto'), CONTRACT);
      contract = load(['contract.proto'], [dir, PROTO_DIR]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps every field of the contract with its name, number, label and type', () => {
    const actualMessages = messagesOf(actual);
    const missing: string[] = [];
    for (const [message, fields] of messagesOf(contract)) {
      const have = new Set((actualMessages.get(message) ?? []).map(fieldShape));
      for (const field of fields) {
        if (!have.has(fieldShape(field))) missing.push(`${message}: ${fieldShape(field)}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('never reuses a contract field number for another field', () => {
    const actualMessages = messagesOf(actual);
    for (const [message, fields] of messagesOf(contract)) {
      const byNumber = new Map((actualMessages.get(message) ?? []).map((f) => [f.number, f.name]));
      for (const field of fields)
        expect(`${message}.${byNumber.get(field.number)}`).toBe(`${message}.${field.name}`);
    }
  });

  it.each(['cohort.v1.GroupCoordinator', 'cohort.v1.TestClock', 'cohort.v1.Broker'])(
    'serves every RPC of %s with the contract request and response types, unary',
    (service) => {
      const want = contract[service] as unknown as Record<string, MethodDescriptor>;
      const have = actual[service] as unknown as Record<string, MethodDescriptor>;
      for (const [name, method] of Object.entries(want)) {
        expect(have[name]).toBeDefined();
        expect({
          path: have[name].path,
          requestStream: have[name].requestStream,
          responseStream: have[name].responseStream,
          request: have[name].requestType.type.name,
          response: have[name].responseType.type.name,
        }).toEqual({
          path: method.path,
          requestStream: false,
          responseStream: false,
          request: method.requestType.type.name,
          response: method.responseType.type.name,
        });
      }
    },
  );

  it('declares ErrorCode with exactly the names and numbers of src/errors, NONE = 0 first', () => {
    const values = (actual['cohort.v1.ErrorCode'].type as { value: { name: string; number: number }[] })
      .value;
    expect(values[0]).toMatchObject({ name: 'NONE', number: 0 });
    const fromProto = Object.fromEntries(values.map((v) => [v.name, v.number]));
    const fromSource = Object.fromEntries(
      Object.entries(ErrorCode).filter(([, v]) => typeof v === 'number') as [string, number][],
    );
    expect(fromProto).toEqual(fromSource);
  });
});
