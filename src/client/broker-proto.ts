import { loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { join } from 'node:path';
import { CLIENT_PROTO_LOADER_OPTIONS, findProtoDir } from './group-coordinator-proto';

const PROTO_FILE = join('cohort', 'v1', 'broker.proto');

let constructor: ServiceClientConstructor | undefined;

/**
 * The grpc-js client class of `cohort.v1.Broker`, loaded once per process. Unlike the coordinator's, its
 * int64 fields decode as decimal strings (`longs: String`): offsets become `bigint`s exactly, whatever their
 * size (see broker-wire.ts).
 */
export function brokerClient(): ServiceClientConstructor {
  if (constructor === undefined) {
    const definition = loadSync(PROTO_FILE, {
      ...CLIENT_PROTO_LOADER_OPTIONS,
      longs: String,
      includeDirs: [findProtoDir()],
    });
    const v1 = (loadPackageDefinition(definition).cohort as GrpcObject).v1 as GrpcObject;
    constructor = v1.Broker as ServiceClientConstructor;
  }
  return constructor;
}
