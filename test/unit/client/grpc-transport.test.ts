import { status, type ServiceError, Metadata } from '@grpc/grpc-js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { codeForStatus, errorFromStatus } from '../../../src/client/error-from-status';
import { brokerClient } from '../../../src/client/broker-proto';
import { findProtoDir, groupCoordinatorClient } from '../../../src/client/group-coordinator-proto';
import { GrpcTransport } from '../../../src/client/grpc-transport';
import { CohortError, ErrorCode } from '../../../src/errors';

function serviceError(code: status, details: string): ServiceError {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), {
    code,
    details,
    metadata: new Metadata(),
  });
}

describe('gRPC status mapping', () => {
  it.each([
    [status.DEADLINE_EXCEEDED, ErrorCode.REQUEST_TIMED_OUT, true],
    [status.UNAVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE, true],
    [status.CANCELLED, ErrorCode.COORDINATOR_NOT_AVAILABLE, true],
    [status.UNAUTHENTICATED, ErrorCode.GROUP_AUTHORIZATION_FAILED, false],
    [status.PERMISSION_DENIED, ErrorCode.GROUP_AUTHORIZATION_FAILED, false],
    [status.INVALID_ARGUMENT, ErrorCode.INVALID_REQUEST, false],
    [status.UNIMPLEMENTED, ErrorCode.INVALID_REQUEST, false],
    [status.RESOURCE_EXHAUSTED, ErrorCode.MESSAGE_TOO_LARGE, false],
    [status.INTERNAL, ErrorCode.UNKNOWN_SERVER_ERROR, false],
    [status.UNKNOWN, ErrorCode.UNKNOWN_SERVER_ERROR, false],
  ])('status %i becomes code %i (retriable: %s)', (grpcStatus, code, retriable) => {
    expect(codeForStatus(grpcStatus)).toBe(code);
    const error = errorFromStatus(serviceError(grpcStatus, 'x'), 'Heartbeat');
    expect(error).toMatchObject({ code, retriable });
  });

  it('reads the cohort-error-code trailer for a status that says no more, when the table agrees', () => {
    const withTrailer = (code: status, trailer: string): ServiceError => {
      const error = serviceError(code, 'x');
      error.metadata.set('cohort-error-code', trailer);
      return error;
    };
    const moved = errorFromStatus(withTrailer(status.FAILED_PRECONDITION, '16'), 'WatchGroups');
    expect(moved).toMatchObject({ code: ErrorCode.NOT_COORDINATOR, retriable: true });
    // A code the table sends with another status, an unknown code, garbage: the status decides.
    expect(codeForStatus(status.FAILED_PRECONDITION, withTrailer(status.OK, '15').metadata)).toBe(
      ErrorCode.UNKNOWN_SERVER_ERROR,
    );
    expect(codeForStatus(status.FAILED_PRECONDITION, withTrailer(status.OK, '99999').metadata)).toBe(
      ErrorCode.UNKNOWN_SERVER_ERROR,
    );
    expect(codeForStatus(status.FAILED_PRECONDITION, withTrailer(status.OK, '16x').metadata)).toBe(
      ErrorCode.UNKNOWN_SERVER_ERROR,
    );
    // A status with a mapping of its own keeps it.
    expect(codeForStatus(status.UNAVAILABLE, withTrailer(status.OK, '16').metadata)).toBe(
      ErrorCode.COORDINATOR_NOT_AVAILABLE,
    );
  });

  it('never carries the server text in the message, only as the cause', () => {
    const cause = serviceError(status.INTERNAL, 'stack trace of the server');
    const error = errorFromStatus(cause, 'JoinGroup to the group coordinator');
    expect(error).toBeInstanceOf(CohortError);
    expect(error.message).toMatch(
      /^JoinGroup to the group coordinator ended with gRPC status INTERNAL: UNKNOWN_SERVER_ERROR/,
    );
    expect(error.message).not.toContain('stack trace');
    expect(error.cause).toBe(cause);
  });
});

describe('GrpcTransport', () => {
  it('finds the proto directory from the source tree', () => {
    const dir = findProtoDir();
    expect(existsSync(join(dir, 'cohort', 'v1', 'group_coordinator.proto'))).toBe(true);
    expect(() => findProtoDir('/')).toThrow(/cannot find proto/);
  });

  it('loads a client class with every coordinator RPC the member uses', () => {
    const Ctor = groupCoordinatorClient();
    for (const method of [
      'joinGroup',
      'syncGroup',
      'heartbeat',
      'leaveGroup',
      'offsetCommit',
      'offsetFetch',
    ]) {
      expect(typeof (Ctor.prototype as Record<string, unknown>)[method]).toBe('function');
    }
  });

  it('rejects an empty address', () => {
    expect(() => new GrpcTransport({ address: '' })).toThrow(/host:port/);
  });

  it('rejects a call whose signal is already aborted without sending it', async () => {
    // The channel connects lazily: nothing touches the network here.
    const transport = new GrpcTransport({ address: '127.0.0.1:1' });
    const controller = new AbortController();
    controller.abort();
    await expect(
      transport.heartbeat(
        { groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: '' },
        { timeoutMs: 1_000, signal: controller.signal },
      ),
    ).rejects.toMatchObject({ code: ErrorCode.REQUEST_TIMED_OUT });
    transport.close();
  });

  it('loads a Broker client class with every log RPC', () => {
    const Ctor = brokerClient();
    for (const method of ['createTopics', 'metadata', 'produce', 'fetch', 'listOffsets']) {
      expect(typeof (Ctor.prototype as Record<string, unknown>)[method]).toBe('function');
    }
  });

  it('rejects an aborted Broker call without sending it, naming the broker', async () => {
    const transport = new GrpcTransport({ address: '127.0.0.1:1' });
    const controller = new AbortController();
    controller.abort();
    await expect(
      transport.fetch(
        { replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 1, topics: [] },
        { timeoutMs: 1_000, signal: controller.signal },
      ),
    ).rejects.toThrow(/^Fetch to the broker was cancelled/);
    transport.close();
  });
});
