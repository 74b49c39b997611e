import { credentials, loadPackageDefinition, Metadata } from '@grpc/grpc-js';
import type { Client, GrpcObject, ServiceClientConstructor, ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import type * as group from '../../src/group/group-protocol';
import { PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../src/server/load-protos';

export interface CallOptions {
  /** Milliseconds from now until the call's deadline. */
  readonly deadlineMs?: number;
  /** Aborting cancels the call (the server sees CANCELLED). */
  readonly signal?: AbortSignal;
  readonly metadata?: Metadata;
}

/** A unary RPC as a promise. Unset request fields take proto3 defaults. Rejects with a grpc-js ServiceError. */
export type UnaryCall<Req, Res> = (request?: Partial<Req>, options?: CallOptions) => Promise<Res>;

export interface GroupCoordinatorClient {
  readonly joinGroup: UnaryCall<group.JoinGroupRequest, group.JoinGroupResponse>;
  readonly syncGroup: UnaryCall<group.SyncGroupRequest, group.SyncGroupResponse>;
  readonly heartbeat: UnaryCall<group.HeartbeatRequest, group.HeartbeatResponse>;
  readonly leaveGroup: UnaryCall<group.LeaveGroupRequest, group.LeaveGroupResponse>;
  readonly offsetCommit: UnaryCall<group.OffsetCommitRequest, group.OffsetCommitResponse>;
  readonly offsetFetch: UnaryCall<group.OffsetFetchRequest, group.OffsetFetchResponse>;
  readonly describeGroups: UnaryCall<group.DescribeGroupsRequest, group.DescribeGroupsResponse>;
  readonly listGroups: UnaryCall<group.ListGroupsRequest, group.ListGroupsResponse>;
  readonly deleteGroups: UnaryCall<group.DeleteGroupsRequest, group.DeleteGroupsResponse>;
  /** The underlying grpc-js client, for anything the wrappers do not cover. */
  readonly raw: Client;
  close(): void;
}

export interface TestClockClient {
  /** Int64 fields go out as strings here, so tests can send values beyond 2^53 exactly. */
  readonly advance: UnaryCall<{ ms: number | string }, { nowMs: number }>;
  readonly now: UnaryCall<Record<string, never>, { nowMs: number }>;
  readonly raw: Client;
  close(): void;
}

let clientPackage: GrpcObject | undefined;

/**
 * The client side decodes int64 as numbers (`longs: Number`), so responses match the domain types
 * (`committedOffset: number`); tests use offsets far below 2^53. Requests may still carry int64 as decimal
 * strings, which protobufjs encodes exactly.
 */
function cohortPackage(): GrpcObject {
  clientPackage ??= loadPackageDefinition(
    loadSync([...PROTO_FILES], { ...PROTO_LOADER_OPTIONS, longs: Number }),
  );
  return clientPackage;
}

function serviceClient(name: 'GroupCoordinator' | 'TestClock', target: string): Client {
  const v1 = (cohortPackage().cohort as GrpcObject).v1 as GrpcObject;
  const Ctor = v1[name] as ServiceClientConstructor;
  return new Ctor(target, credentials.createInsecure());
}

type RawUnary = (
  request: unknown,
  metadata: Metadata,
  options: { deadline?: number },
  callback: (error: ServiceError | null, response: unknown) => void,
) => { cancel(): void };

function unary<Req, Res>(client: Client, method: string): UnaryCall<Req, Res> {
  const fn = (client as unknown as Record<string, RawUnary>)[method].bind(client);
  return (request = {}, options = {}) =>
    new Promise<Res>((resolve, reject) => {
      const call = fn(
        request,
        options.metadata ?? new Metadata(),
        options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs },
        (error, response) => (error !== null ? reject(error) : resolve(response as Res)),
      );
      if (options.signal !== undefined) {
        if (options.signal.aborted) call.cancel();
        else options.signal.addEventListener('abort', () => call.cancel(), { once: true });
      }
    });
}

export function groupCoordinatorClient(target: string): GroupCoordinatorClient {
  const raw = serviceClient('GroupCoordinator', target);
  return {
    joinGroup: unary(raw, 'JoinGroup'),
    syncGroup: unary(raw, 'SyncGroup'),
    heartbeat: unary(raw, 'Heartbeat'),
    leaveGroup: unary(raw, 'LeaveGroup'),
    offsetCommit: unary(raw, 'OffsetCommit'),
    offsetFetch: unary(raw, 'OffsetFetch'),
    describeGroups: unary(raw, 'DescribeGroups'),
    listGroups: unary(raw, 'ListGroups'),
    deleteGroups: unary(raw, 'DeleteGroups'),
    raw,
    close: () => raw.close(),
  };
}

export function testClockClient(target: string): TestClockClient {
  const raw = serviceClient('TestClock', target);
  return { advance: unary(raw, 'Advance'), now: unary(raw, 'Now'), raw, close: () => raw.close() };
}
