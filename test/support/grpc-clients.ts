import { dirname, join } from 'node:path';
import { credentials, loadPackageDefinition, makeClientConstructor, Metadata } from '@grpc/grpc-js';
import type {
  ChannelCredentials,
  ChannelOptions,
  Client,
  ClientDuplexStream,
  ClientReadableStream,
  GrpcObject,
  ServiceClientConstructor,
  ServiceDefinition,
  ServiceError,
} from '@grpc/grpc-js';
import { loadFileDescriptorSetFromBuffer, loadSync } from '@grpc/proto-loader';
import { service as healthService } from 'grpc-health-check';
import type * as group from '../../src/group/group-protocol';
import type { FindCoordinatorRequest, FindCoordinatorResponse } from '../../src/server/find-coordinator';
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
  readonly findCoordinator: UnaryCall<FindCoordinatorRequest, FindCoordinatorResponse>;
  /** Opens a HeartbeatStream (a bidi call); aborting `options.signal` cancels it. */
  heartbeatStream(
    options?: CallOptions,
  ): ClientDuplexStream<Partial<group.HeartbeatRequest>, group.HeartbeatStreamResponse>;
  /** Opens a WatchGroups (a server-streaming call); aborting `options.signal` cancels it. */
  watchGroups(
    request?: Partial<group.WatchGroupsRequest>,
    options?: CallOptions,
  ): ClientReadableStream<group.GroupEvent>;
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

/** How a test client reaches a server: plaintext unless a test asks for TLS. */
export interface ChannelSettings {
  readonly credentials?: ChannelCredentials;
  readonly options?: ChannelOptions;
}

function serviceClient(
  name: 'GroupCoordinator' | 'TestClock' | 'Broker',
  target: string,
  channel: ChannelSettings = {},
): Client {
  const v1 = (cohortPackage().cohort as GrpcObject).v1 as GrpcObject;
  const Ctor = v1[name] as ServiceClientConstructor;
  return new Ctor(target, channel.credentials ?? credentials.createInsecure(), channel.options);
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

export function groupCoordinatorClient(target: string, channel?: ChannelSettings): GroupCoordinatorClient {
  const raw = serviceClient('GroupCoordinator', target, channel);
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
    findCoordinator: unary(raw, 'FindCoordinator'),
    heartbeatStream: (options = {}) => {
      const open = (raw as unknown as Record<string, (metadata: Metadata, callOptions: object) => unknown>)
        .HeartbeatStream;
      const stream = open.call(
        raw,
        options.metadata ?? new Metadata(),
        options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs },
      ) as ClientDuplexStream<Partial<group.HeartbeatRequest>, group.HeartbeatStreamResponse>;
      options.signal?.addEventListener('abort', () => stream.cancel(), { once: true });
      return stream;
    },
    watchGroups: (request = {}, options = {}) => {
      const open = (
        raw as unknown as Record<
          string,
          (request: unknown, metadata: Metadata, callOptions: object) => unknown
        >
      ).WatchGroups;
      const stream = open.call(
        raw,
        request,
        options.metadata ?? new Metadata(),
        options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs },
      ) as ClientReadableStream<group.GroupEvent>;
      options.signal?.addEventListener('abort', () => stream.cancel(), { once: true });
      return stream;
    },
    raw,
    close: () => raw.close(),
  };
}

export interface BrokerClient {
  readonly createTopics: UnaryCall<
    { topics: { name: string; numPartitions: number; replicationFactor: number }[] },
    { topics: { name: string; errorCode: number; errorMessage: string }[] }
  >;
  /** Offsets and timestamps go out as strings (int64). */
  readonly fetch: UnaryCall<Record<string, unknown>, { errorCode: number; responses: unknown[] }>;
  readonly produce: UnaryCall<Record<string, unknown>, { topics: unknown[] }>;
  readonly raw: Client;
  close(): void;
}

export function brokerClient(target: string, channel?: ChannelSettings): BrokerClient {
  const raw = serviceClient('Broker', target, channel);
  return {
    createTopics: unary(raw, 'CreateTopics'),
    fetch: unary(raw, 'Fetch'),
    produce: unary(raw, 'Produce'),
    raw,
    close: () => raw.close(),
  };
}

export function testClockClient(target: string): TestClockClient {
  const raw = serviceClient('TestClock', target);
  return { advance: unary(raw, 'Advance'), now: unary(raw, 'Now'), raw, close: () => raw.close() };
}

export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

export interface HealthClient {
  /** grpc.health.v1.Health/Check; `''` is the whole server. */
  check(service: string): Promise<ServingStatus>;
  /** Opens a Watch stream; `statuses` collects every status the server sends. */
  watch(service: string): {
    readonly statuses: ServingStatus[];
    next(): Promise<ServingStatus>;
    cancel(): void;
  };
  readonly raw: Client;
  close(): void;
}

export function healthClient(target: string, channel: ChannelSettings = {}): HealthClient {
  const Ctor = makeClientConstructor(healthService as ServiceDefinition, 'grpc.health.v1.Health');
  const raw = new Ctor(target, channel.credentials ?? credentials.createInsecure(), channel.options);
  const client = raw as unknown as {
    check(rq: { service: string }, cb: (e: ServiceError | null, r: { status: ServingStatus }) => void): void;
    watch(rq: { service: string }): ClientReadableStream<{ status: ServingStatus }>;
  };
  return {
    check: (service) =>
      new Promise((resolve, reject) =>
        client.check({ service }, (error, response) =>
          error !== null ? reject(error) : resolve(response.status),
        ),
      ),
    watch: (service) => {
      const stream = client.watch({ service });
      const statuses: ServingStatus[] = [];
      const pending: ((status: ServingStatus) => void)[] = [];
      stream.on('data', (message: { status: ServingStatus }) => {
        statuses.push(message.status);
        pending.shift()?.(message.status);
      });
      stream.on('error', () => undefined); // cancel() and server shutdown end the stream with an error
      let read = 0;
      return {
        statuses,
        next: () =>
          read < statuses.length
            ? Promise.resolve(statuses[read++])
            : new Promise<ServingStatus>((resolve) => {
                read++;
                pending.push(resolve);
              }),
        cancel: () => stream.cancel(),
      };
    },
    raw,
    close: () => raw.close(),
  };
}

const REFLECTION_PROTO = join(
  dirname(require.resolve('@grpc/reflection/package.json')),
  'build/proto/grpc/reflection/v1/reflection.proto',
);

interface ReflectionResponse {
  listServicesResponse?: { service: { name: string }[] };
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  errorResponse?: { errorCode: number; errorMessage: string };
}

/** Sends one grpc.reflection.v1 request on a fresh stream and resolves with its one response. */
function askReflection(
  target: string,
  request: Record<string, string>,
  channel: ChannelSettings,
): Promise<ReflectionResponse> {
  const pkg = loadPackageDefinition(loadSync(REFLECTION_PROTO, { keepCase: false }));
  const v1 = ((pkg.grpc as GrpcObject).reflection as GrpcObject).v1 as GrpcObject;
  const Ctor = v1.ServerReflection as ServiceClientConstructor;
  const client = new Ctor(
    target,
    channel.credentials ?? credentials.createInsecure(),
    channel.options,
  ) as unknown as Client & { serverReflectionInfo(): ClientDuplexStream<unknown, ReflectionResponse> };
  return new Promise((resolve, reject) => {
    const stream = client.serverReflectionInfo();
    stream.once('data', (response: ReflectionResponse) => {
      resolve(response);
      stream.end();
      client.close();
    });
    stream.once('error', (error: Error) => {
      client.close();
      reject(error);
    });
    stream.write(request);
  });
}

/** The services a server lists through grpc.reflection.v1 (what grpcurl `list` shows). */
export async function listServicesByReflection(
  target: string,
  channel: ChannelSettings = {},
): Promise<string[]> {
  const response = await askReflection(target, { listServices: '*' }, channel);
  return (response.listServicesResponse?.service ?? []).map((s) => s.name).sort();
}

/**
 * What grpcurl does before it calls a method it has no .proto for: asks reflection for the files that
 * define `symbol` (and those they import), and builds a package definition from them alone.
 */
export async function packageDefinitionByReflection(
  target: string,
  symbol: string,
  channel: ChannelSettings = {},
): Promise<GrpcObject> {
  const response = await askReflection(target, { fileContainingSymbol: symbol }, channel);
  if (response.fileDescriptorResponse === undefined)
    throw new Error(`reflection does not know ${symbol}: ${response.errorResponse?.errorMessage}`);
  // A FileDescriptorSet is `repeated FileDescriptorProto file = 1`: each file, length-delimited.
  const set = Buffer.concat(
    response.fileDescriptorResponse.fileDescriptorProto.map((file) =>
      Buffer.concat([Buffer.from([0x0a]), varint(file.length), file]),
    ),
  );
  return loadPackageDefinition(loadFileDescriptorSetFromBuffer(set, { enums: String }));
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  for (; value > 0x7f; value >>>= 7) bytes.push((value & 0x7f) | 0x80);
  bytes.push(value);
  return Buffer.from(bytes);
}
