import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';

/**
 * Stands in for a request whose bytes did not decode. grpc-js answers a throwing deserializer with
 * INTERNAL, but a malformed request is the client's fault: returning this marker instead lets the unary
 * adapter answer INVALID_ARGUMENT, through the same single reply path as every other outcome.
 */
export class UndecodableRequest {
  constructor(readonly cause: unknown) {}
}

export interface EncodeFailureReporter {
  (error: unknown, method: string): void;
}

/**
 * A copy of `definition` whose request decoders never throw (they return UndecodableRequest) and whose
 * response encoders report a failure (a bug: the domain built a response that does not fit the contract)
 * before rethrowing it without its text, which grpc-js would otherwise send to the client.
 */
export function guardServiceDefinition(
  definition: ServiceDefinition,
  onEncodeFailure: EncodeFailureReporter,
): ServiceDefinition {
  const guarded: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition)) {
    const m = method as MethodDefinition<unknown, unknown>;
    guarded[name] = {
      ...m,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return m.requestDeserialize(bytes);
        } catch (error) {
          return new UndecodableRequest(error);
        }
      },
      responseSerialize: (value: unknown) => {
        try {
          return m.responseSerialize(value);
        } catch (error) {
          onEncodeFailure(error, m.path);
          throw new Error('response could not be encoded');
        }
      },
    };
  }
  return guarded as ServiceDefinition;
}
