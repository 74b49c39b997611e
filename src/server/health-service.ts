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

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A strict reader of the two health requests' wire format: `HealthCheckRequest { string service = 1; }`
 * and the empty `HealthListRequest`. Unknown fields are skipped, as proto3 wants; anything else that a
 * protobuf parser would have to guess at is refused with a RangeError: a truncated tag, length or field, a
 * length past the end, field number 0, wire types 6 and 7, an end-group without its start, `service` with
 * a wire type other than length-delimited, and a `service` that is not valid UTF-8 (proto3 requires it).
 */
class HealthRequestReader {
  private offset = 0;

  constructor(private readonly bytes: Buffer) {}

  /** The last `service` field's value ('' without one), as proto3 merges a repeated scalar. */
  readService(serviceField: boolean): string {
    let service = '';
    while (this.offset < this.bytes.length) {
      const tag = this.readVarint('tag');
      const fieldNumber = Math.floor(tag / 8);
      const wireType = tag % 8;
      if (fieldNumber === 0 || fieldNumber > 0x1fffffff) throw new RangeError(`field number ${fieldNumber}`);
      if (serviceField && fieldNumber === 1) {
        if (wireType !== 2) throw new RangeError(`service has wire type ${wireType}, not 2`);
        const text = this.readLengthDelimited('service');
        try {
          service = UTF8.decode(text);
        } catch {
          throw new RangeError('service is not valid UTF-8');
        }
        continue;
      }
      this.skip(fieldNumber, wireType);
    }
    return service;
  }

  private skip(fieldNumber: number, wireType: number): void {
    switch (wireType) {
      case 0:
        this.readVarint(`field ${fieldNumber}`);
        return;
      case 1:
        this.advance(8, `field ${fieldNumber}`);
        return;
      case 2:
        this.readLengthDelimited(`field ${fieldNumber}`);
        return;
      case 3:
        this.skipGroup(fieldNumber);
        return;
      case 5:
        this.advance(4, `field ${fieldNumber}`);
        return;
      default:
        // 4 (an end-group here has no start) and 6, 7 (no such wire type).
        throw new RangeError(`field ${fieldNumber} has wire type ${wireType}`);
    }
  }

  /** A proto2 group: every field up to the end-group of the same number. */
  private skipGroup(groupNumber: number): void {
    for (;;) {
      if (this.offset >= this.bytes.length) throw new RangeError(`group ${groupNumber} is not closed`);
      const tag = this.readVarint('tag');
      const fieldNumber = Math.floor(tag / 8);
      const wireType = tag % 8;
      if (wireType === 4) {
        if (fieldNumber !== groupNumber) throw new RangeError(`group ${groupNumber} ends as ${fieldNumber}`);
        return;
      }
      if (fieldNumber === 0) throw new RangeError('field number 0');
      this.skip(fieldNumber, wireType);
    }
  }

  private readLengthDelimited(what: string): Buffer {
    const length = this.readVarint(`the length of ${what}`);
    const start = this.offset;
    this.advance(length, what);
    return this.bytes.subarray(start, start + length);
  }

  private advance(count: number, what: string): void {
    if (count > this.bytes.length - this.offset) throw new RangeError(`${what} is truncated`);
    this.offset += count;
  }

  /** A varint of at most 10 bytes, as a number (exact up to 2^53, which every length and tag here is). */
  private readVarint(what: string): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.offset >= this.bytes.length) throw new RangeError(`${what} is truncated`);
      const byte = this.bytes[this.offset++];
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw new RangeError(`${what} is a varint longer than 10 bytes`);
  }
}

/** Decodes a HealthCheckRequest, or throws a RangeError saying why the bytes are not one. */
export function decodeHealthCheckRequest(bytes: Buffer): { service: string } {
  return { service: new HealthRequestReader(bytes).readService(true) };
}

/** Decodes a HealthListRequest (no fields of its own), or throws a RangeError. */
export function decodeHealthListRequest(bytes: Buffer): Record<string, never> {
  new HealthRequestReader(bytes).readService(false);
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
