import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Options, PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as HEALTH_PROTO_PATH } from 'grpc-health-check';
import { withBrokerWireCodecs } from './broker-wire';
import { withGroupWireCodecs } from './group-wire';
import { withStrictRequestDecoding } from './wire-schema';

export const PROTO_FILES = [
  'cohort/v1/group_coordinator.proto',
  'cohort/v1/test_clock.proto',
  'cohort/v1/broker.proto',
] as const;

/**
 * The `proto/` directory that holds `cohort/v1/`: the first found walking up from `from`. This file runs
 * from `src/server` (npm start through the TypeScript hook, tests) and from `dist/src/server` (the compiled server, the Docker image),
 * which sit at different depths below the package root; a fixed `../..` finds it from only one of them.
 */
export function findProtoDir(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, PROTO_FILES[0]))) return candidate;
    if (dirname(dir) === dir) throw new Error(`cannot find proto/${PROTO_FILES[0]} above ${from}`);
  }
}

/** `proto/` of this package; the files import each other as `cohort/v1/...`. */
export const PROTO_DIR = findProtoDir(__dirname);

/**
 * How messages are decoded: camelCase fields, enums as numbers, bytes as Buffers, every field present
 * (`defaults`, `arrays`), so decoded requests already have the shape of the domain's request types.
 *
 * int64 is decoded as a decimal string (`longs: String`), not a number: `longs: Number` rounds anything
 * beyond 2^53 - 1 silently, so an offset of 2^53 + 1 would be committed as 2^53. Strings keep the exact
 * value and `decodeInt64` turns it into a number or rejects the request with INVALID_ARGUMENT. Responses
 * are encoded from plain numbers, which protobufjs accepts for int64.
 */
export const PROTO_LOADER_OPTIONS: Options = Object.freeze({
  keepCase: false,
  longs: String,
  enums: Number,
  bytes: Buffer,
  defaults: true,
  arrays: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
});

export interface CohortProtos {
  /** Every cohort.v1 type, for reflection. */
  readonly packageDefinition: PackageDefinition;
  /**
   * grpc.health.v1, for reflection only: grpc-health-check serves the Health service from its own copy of
   * the proto, which reflection cannot see unless it is handed the descriptors too.
   */
  readonly healthPackageDefinition: PackageDefinition;
  readonly groupCoordinator: ServiceDefinition;
  readonly testClock: ServiceDefinition;
  readonly broker: ServiceDefinition;
}

let loaded: CohortProtos | undefined;

/** Parses the .proto files once per process; every server shares the (immutable) definitions. */
export function loadCohortProtos(): CohortProtos {
  if (loaded === undefined) {
    const packageDefinition = loadSync([...PROTO_FILES], PROTO_LOADER_OPTIONS);
    // Every request is read strictly (wire-schema.ts): checked before protobufjs decodes it, or decoded by
    // hand with the same strict Reader.
    const strict = (service: string) => withStrictRequestDecoding(packageDefinition, service);
    loaded = Object.freeze({
      packageDefinition,
      healthPackageDefinition: loadSync(HEALTH_PROTO_PATH, PROTO_LOADER_OPTIONS),
      // JoinGroup, SyncGroup and Heartbeat are decoded and encoded by hand on the server (group-wire.ts).
      groupCoordinator: withGroupWireCodecs(strict('cohort.v1.GroupCoordinator')),
      testClock: strict('cohort.v1.TestClock'),
      // The server's hot path encodes and decodes these by hand (broker-wire.ts).
      broker: withBrokerWireCodecs(strict('cohort.v1.Broker')),
    });
  }
  return loaded;
}
