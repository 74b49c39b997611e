import { join } from 'node:path';
import type { Options, PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { loadSync } from '@grpc/proto-loader';

/** `proto/` at the repository root; the files import each other as `cohort/v1/...`. */
export const PROTO_DIR = join(__dirname, '..', '..', 'proto');

export const PROTO_FILES = [
  'cohort/v1/group_coordinator.proto',
  'cohort/v1/test_clock.proto',
  'cohort/v1/broker.proto',
] as const;

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
  readonly groupCoordinator: ServiceDefinition;
  readonly testClock: ServiceDefinition;
  readonly broker: ServiceDefinition;
}

let loaded: CohortProtos | undefined;

/** Parses the .proto files once per process; every server shares the (immutable) definitions. */
export function loadCohortProtos(): CohortProtos {
  if (loaded === undefined) {
    const packageDefinition = loadSync([...PROTO_FILES], PROTO_LOADER_OPTIONS);
    loaded = Object.freeze({
      packageDefinition,
      groupCoordinator: packageDefinition['cohort.v1.GroupCoordinator'] as ServiceDefinition,
      testClock: packageDefinition['cohort.v1.TestClock'] as ServiceDefinition,
      broker: packageDefinition['cohort.v1.Broker'] as ServiceDefinition,
    });
  }
  return loaded;
}
