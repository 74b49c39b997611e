import type { MethodDefinition, ServiceDefinition } from '@grpc/proto-loader';
import fc from 'fast-check';
import { service as healthServiceDefinition } from 'grpc-health-check';
import { decodeHealthCheckRequest, decodeHealthListRequest } from '../../../src/server/health-service';
import {
  expectDecodesOrRangeError,
  GROUP_FIELD_15,
  textValue,
  unknownFields,
} from '../../support/protobuf-wire';

// grpc-health-check's own codecs (protobufjs), as every health client has them, are the reference.
const check = (healthServiceDefinition as ServiceDefinition).Check as MethodDefinition<
  { service: string },
  unknown
>;
const encode = (service: string): Buffer => check.requestSerialize({ service });

describe('decodeHealthCheckRequest', () => {
  it('reads what protobufjs writes, for any service name', () => {
    fc.assert(
      fc.property(textValue, (service) => {
        expect(decodeHealthCheckRequest(encode(service))).toEqual({ service });
      }),
    );
  });

  it('reads an empty request as the whole server', () => {
    expect(decodeHealthCheckRequest(Buffer.alloc(0))).toEqual({ service: '' });
  });

  it('skips unknown fields of every wire type, groups included, and keeps the last service', () => {
    const bytes = Buffer.concat([
      encode('first'),
      unknownFields(),
      Buffer.from(GROUP_FIELD_15),
      encode('cohort.v1.Broker'),
    ]);
    expect(decodeHealthCheckRequest(bytes)).toEqual({ service: 'cohort.v1.Broker' });
    expect(check.requestDeserialize(bytes)).toEqual({ service: 'cohort.v1.Broker' });
  });

  it.each([
    ['a length past the end', [0x0a, 0xff]],
    ['a truncated service', [0x0a, 0x05, 0x61, 0x62]],
    ['a truncated tag', [0x80]],
    ['a varint longer than 10 bytes', [0x08, ...Array<number>(10).fill(0xff), 0x01]],
    ['service that is not UTF-8', [0x0a, 0x02, 0xc3, 0x28]],
    ['service as a varint', [0x08, 0x01]],
    ['field number 0', [0x02, 0x00]],
    ['wire type 7', [0x0f]],
    ['an end-group without its start', [0x7c]],
    ['a group that is not closed', [0x7b, 0x08, 0x01]],
    ['a truncated fixed64', [0x79, 1, 2, 3]],
  ])('refuses %s with a RangeError', (_what, bytes) => {
    expect(() => decodeHealthCheckRequest(Buffer.from(bytes))).toThrow(RangeError);
  });

  it('returns or throws a RangeError on any bytes, never anything else', () => {
    expectDecodesOrRangeError(decodeHealthCheckRequest);
  });
});

describe('decodeHealthListRequest', () => {
  it('reads an empty request and skips unknown fields', () => {
    expect(decodeHealthListRequest(Buffer.alloc(0))).toEqual({});
    expect(decodeHealthListRequest(Buffer.concat([unknownFields(), encode('ignored')]))).toEqual({});
  });

  it('refuses truncated bytes with a RangeError', () => {
    expect(() => decodeHealthListRequest(Buffer.from([0x0a, 0x03, 0x61]))).toThrow(RangeError);
    expectDecodesOrRangeError(decodeHealthListRequest);
  });
});
