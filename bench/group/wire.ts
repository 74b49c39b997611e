import type { MethodDefinition, PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { loadSync } from '@grpc/proto-loader';
import { GROUP_WIRE_CODECS, withGroupWireCodecs } from '../../src/server/group-wire';
import { PROTO_DIR, PROTO_FILES, PROTO_LOADER_OPTIONS } from '../../src/server/load-protos';
import { withServerWireCodecs } from '../../src/server/proto-wire';
import { withStrictRequestDecoding } from '../../src/server/wire-schema';

/** The bench's own service (bench/group/noop.proto), loaded beside cohort's protos. */
export const NOOP_SERVICE = 'cohort.bench.v1.Noop';
export const NOOP_PATH = '/cohort.bench.v1.Noop/Noop';
export const GROUP_COORDINATOR_PATH = '/cohort.v1.GroupCoordinator/';

export interface BenchProtos {
  readonly packageDefinition: PackageDefinition;
  readonly groupCoordinator: ServiceDefinition;
  readonly noop: ServiceDefinition;
}

let loaded: BenchProtos | undefined;

/**
 * cohort's protos plus the Noop service, decoded with the server's own options and codecs (the
 * hand-written ones of group-wire.ts over wire-schema.ts's strict check, as `loadCohortProtos` installs
 * them), so the bench server's decoders
 * and encoders are exactly the ones `createServer` uses. Noop decodes its HeartbeatRequest and encodes its
 * HeartbeatResponse with Heartbeat's codecs: the baseline pays for the same wire work.
 */
export function benchProtos(): BenchProtos {
  if (loaded === undefined) {
    const packageDefinition = loadSync([...PROTO_FILES, 'noop.proto'], {
      ...PROTO_LOADER_OPTIONS,
      includeDirs: [PROTO_DIR, __dirname],
    });
    const noop = packageDefinition[NOOP_SERVICE] as ServiceDefinition;
    loaded = {
      packageDefinition,
      groupCoordinator: withGroupWireCodecs(
        withStrictRequestDecoding(packageDefinition, 'cohort.v1.GroupCoordinator'),
      ),
      noop: withServerWireCodecs(noop, { Noop: GROUP_WIRE_CODECS.Heartbeat }),
    };
  }
  return loaded;
}

/** One RPC's codecs as the server sees them (request decode, response encode) and as a client needs them. */
export interface MethodCodec<Req, Res> {
  readonly path: string;
  encodeRequest(request: Req): Buffer;
  decodeRequest(bytes: Buffer): Req;
  encodeResponse(response: Res): Buffer;
  decodeResponse(bytes: Buffer): Res;
}

export function methodCodec<Req, Res>(service: ServiceDefinition, method: string): MethodCodec<Req, Res> {
  const definition = service[method] as unknown as MethodDefinition<Req, Res> | undefined;
  if (definition === undefined) throw new Error(`no method ${method} in the loaded service`);
  return {
    path: definition.path,
    encodeRequest: (request) => definition.requestSerialize(request),
    decodeRequest: (bytes) => definition.requestDeserialize(bytes),
    encodeResponse: (response) => definition.responseSerialize(response),
    decodeResponse: (bytes) => definition.responseDeserialize(bytes),
  };
}

/**
 * A gRPC message as it travels in an HTTP/2 DATA frame: a 1-byte compressed flag (0), a 4-byte big-endian
 * length, then the protobuf bytes. h2load sends this as its request body.
 */
export function grpcFrame(message: Buffer): Buffer {
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame.writeUInt8(0, 0);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}
