import type { ServiceDefinition } from '@grpc/grpc-js';

const identity = (bytes: Buffer): Buffer => bytes;

function method(name: string) {
  return {
    path: `/bench.Bare/${name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  };
}

/** bench:log's bare long-poll service: raw bytes in and out, so neither side pays for encoding. */
export const BARE_SERVICE: ServiceDefinition = {
  Park: method('Park'),
  Release: method('Release'),
  Count: method('Count'),
};
