import { status as grpcStatus } from '@grpc/grpc-js';
import type {
  sendUnaryData,
  Server,
  ServerUnaryCall,
  ServerWritableStream,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';
import { service as healthServiceDefinition } from 'grpc-health-check';
import { Reader } from './proto-wire';
import type { EncodeFailureReporter } from './undecodable-request';
import { guardServiceDefinition, UndecodableRequest } from './undecodable-request';

/** What grpc.health.v1 says of a service; SERVICE_UNKNOWN only ever travels on Watch. */
export type ServingStatus = 'SERVING' | 'NOT_SERVING';

/** What Watch streams are told when the server drains: the stream is over, the client may look elsewhere. */
export const HEALTH_SHUTTING_DOWN_MESSAGE = 'the server is shutting down';
/** grpc-health-check's cap on List, kept: a List never grows with what clients ask. */
const LIST_MAX_SERVICES = 100;

const HEALTH_CHECK_REQUEST = 'grpc.health.v1.HealthCheckRequest';
const HEALTH_LIST_REQUEST = 'grpc.health.v1.HealthListRequest';

/**
 * Decodes a HealthCheckRequest with the strict reader every request goes through (proto-wire.ts): a
 * truncated tag, length or field, a length past the end, field number 0, wire types 6 and 7, an unclosed
 * group, `service` with another wire type than length-delimited, and a `service` that is not valid UTF-8
 * (proto3 requires it) throw a RangeError. Unknown fields are skipped; the last `service` wins, as proto3
 * merges a repeated scalar.
 */
export function decodeHealthCheckRequest(bytes: Buffer): { service: string } {
  const r = new Reader(bytes, 0, bytes.length);
  let service = '';
  while (!r.isDone) {
    const tag = r.tag();
    if (tag >>> 3 === 1) service = r.stringField(tag);
    else r.skipField(tag);
  }
  return { service };
}

/** Decodes a HealthListRequest (no fields of its own; unknown ones are skipped), or throws a RangeError. */
export function decodeHealthListRequest(bytes: Buffer): Record<string, never> {
  const r = new Reader(bytes, 0, bytes.length);
  while (!r.isDone) r.skipField(r.tag());
  return {};
}

function undecodable(type: string): { code: grpcStatus; details: string } {
  return { code: grpcStatus.INVALID_ARGUMENT, details: `the request is not a valid ${type}` };
}

/**
 * The standard gRPC health service (grpc.health.v1.Health: Check, Watch, List), as grpc-health-check
 * implements it, with two differences a server facing untrusted clients needs:
 *
 * - a request that does not decode gets INVALID_ARGUMENT (grpc-js answers a throwing deserializer with
 *   INTERNAL, as though the server were broken), through the same UndecodableRequest marker as cohort's own
 *   services;
 * - `endWatches()` ends every Watch stream with UNAVAILABLE, so a drain is never held open by a health
 *   client, which needs no token; once called, a new Watch ends the same way at once.
 */
export class HealthService {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Map<string, Set<ServerWritableStream<unknown, unknown>>>();
  private isEnded = false;

  constructor(initial: Readonly<Record<string, ServingStatus>>) {
    for (const [service, status] of Object.entries(initial)) this.statuses.set(service, status);
  }

  setStatus(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    for (const call of this.watchers.get(service) ?? []) call.write({ status });
  }

  /** Ends every open Watch stream with UNAVAILABLE, after the statuses already written; idempotent. */
  endWatches(): void {
    this.isEnded = true;
    const open = [...this.watchers.values()].flatMap((calls) => [...calls]);
    this.watchers.clear();
    for (const call of open) endWatch(call);
  }

  addToServer(server: Server, onEncodeFailure: EncodeFailureReporter): void {
    server.addService(this.definition(onEncodeFailure), this.implementation());
  }

  private definition(onEncodeFailure: EncodeFailureReporter): ServiceDefinition {
    const base = healthServiceDefinition as ServiceDefinition;
    const withDecoder = (
      name: 'Check' | 'Watch' | 'List',
      decode: (bytes: Buffer) => unknown,
    ): MethodDefinition<object, object> => ({
      ...(base[name] as MethodDefinition<object, object>),
      requestDeserialize: decode as (bytes: Buffer) => object,
    });
    return guardServiceDefinition(
      {
        Check: withDecoder('Check', decodeHealthCheckRequest),
        Watch: withDecoder('Watch', decodeHealthCheckRequest),
        List: withDecoder('List', decodeHealthListRequest),
      },
      onEncodeFailure,
    );
  }

  private implementation(): UntypedServiceImplementation {
    return {
      check: (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
        const request = call.request;
        if (request instanceof UndecodableRequest) {
          callback(undecodable(HEALTH_CHECK_REQUEST));
          return;
        }
        const service = (request as { service: string }).service;
        const status = this.statuses.get(service);
        if (status === undefined) {
          callback({ code: grpcStatus.NOT_FOUND, details: `Health status unknown for service ${service}` });
          return;
        }
        callback(null, { status });
      },
      watch: (call: ServerWritableStream<unknown, unknown>) => {
        const request = call.request;
        if (request instanceof UndecodableRequest) {
          call.emit('error', undecodable(HEALTH_CHECK_REQUEST));
          return;
        }
        if (this.isEnded) {
          endWatch(call);
          return;
        }
        const service = (request as { service: string }).service;
        let calls = this.watchers.get(service);
        if (calls === undefined) {
          calls = new Set();
          this.watchers.set(service, calls);
        }
        calls.add(call);
        call.on('cancelled', () => {
          const watching = this.watchers.get(service);
          watching?.delete(call);
          if (watching?.size === 0) this.watchers.delete(service);
        });
        call.write({ status: this.statuses.get(service) ?? 'SERVICE_UNKNOWN' });
      },
      list: (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
        if (call.request instanceof UndecodableRequest) {
          callback(undecodable(HEALTH_LIST_REQUEST));
          return;
        }
        if (this.statuses.size > LIST_MAX_SERVICES) {
          callback({ code: grpcStatus.RESOURCE_EXHAUSTED, details: 'Too many services to list.' });
          return;
        }
        const statuses: Record<string, { status: ServingStatus }> = {};
        for (const [service, status] of this.statuses) statuses[service] = { status };
        callback(null, { statuses });
      },
    };
  }
}

/** grpc-js ends a server stream with the status of an `error` event (after what was already written). */
function endWatch(call: ServerWritableStream<unknown, unknown>): void {
  call.emit('error', { code: grpcStatus.UNAVAILABLE, details: HEALTH_SHUTTING_DOWN_MESSAGE });
}
