import { loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * How the client decodes messages: camelCase, enums and int64 as numbers, bytes as Buffers, every field
 * present. int64 as Number is exact for every offset the server accepts (it rejects those above 2^53 - 1).
 */
export const CLIENT_PROTO_LOADER_OPTIONS: Options = Object.freeze({
  keepCase: false,
  longs: Number,
  enums: Number,
  bytes: Buffer,
  defaults: true,
  arrays: true,
});

const PROTO_FILE = join('cohort', 'v1', 'group_coordinator.proto');

/**
 * The `proto/` directory: the first one found walking up from this file, so it resolves the same from
 * `src/client` (run from source: npm scripts, tests) and from `dist/src/client` (the built package).
 */
export function findProtoDir(from: string = __dirname): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'proto');
    if (existsSync(join(candidate, PROTO_FILE))) return candidate;
    if (dirname(dir) === dir) throw new Error(`cannot find proto/${PROTO_FILE} above ${from}`);
  }
}

let constructor: ServiceClientConstructor | undefined;

/** The grpc-js client class of `cohort.v1.GroupCoordinator`, loaded once per process. */
export function groupCoordinatorClient(): ServiceClientConstructor {
  if (constructor === undefined) {
    const definition = loadSync(PROTO_FILE, {
      ...CLIENT_PROTO_LOADER_OPTIONS,
      includeDirs: [findProtoDir()],
    });
    const v1 = (loadPackageDefinition(definition).cohort as GrpcObject).v1 as GrpcObject;
    constructor = v1.GroupCoordinator as ServiceClientConstructor;
  }
  return constructor;
}
