import type { StatusObject } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { ErrorCode } from '../../../src/errors';
import type { HeartbeatResponse, RequestContext } from '../../../src/group/group-protocol';
import {
  heartbeatStreamHandler,
  HeartbeatStreams,
  type HeartbeatStreamCall,
} from '../../../src/server/heartbeat-stream';
import { UndecodableRequest } from '../../../src/server/undecodable-request';
import { captureLogger } from '../../support/capture-logger';
import { FakeDuplexCall } from '../../support/fake-duplex-call';
import { FakeGroupCoordinator } from '../../support/fake-group-coordinator';

function deferred(): { promise: Promise<HeartbeatResponse>; resolve: (code: ErrorCode) => void } {
  let resolve!: (code: ErrorCode) => void;
  const promise = new Promise<HeartbeatResponse>((r) => (resolve = (errorCode) => r({ errorCode })));
  return { promise, resolve };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

const HEARTBEAT = { groupId: 'g', memberId: 'm', groupInstanceId: '', generationId: 1 };

function open(coordinator: FakeGroupCoordinator, streams = new HeartbeatStreams()) {
  const call = new FakeDuplexCall();
  const { logger } = captureLogger();
  heartbeatStreamHandler(
    '/cohort.v1.GroupCoordinator/HeartbeatStream',
    coordinator,
    streams,
    logger,
  )(call as unknown as HeartbeatStreamCall);
  return call;
}

describe('heartbeatStreamHandler', () => {
  it('answers in request order even when the coordinator settles them out of order', async () => {
    const first = deferred();
    const coordinator = new FakeGroupCoordinator({
      heartbeat: (request) =>
        request.generationId === 1
          ? first.promise
          : Promise.resolve({ errorCode: ErrorCode.ILLEGAL_GENERATION }),
    });
    const call = open(coordinator);
    call.emit('data', HEARTBEAT);
    call.emit('data', { ...HEARTBEAT, generationId: 2 });
    await settle();
    expect(call.written).toEqual([]);
    first.resolve(ErrorCode.REBALANCE_IN_PROGRESS);
    await settle();
    expect(call.written).toEqual([
      { errorCode: ErrorCode.REBALANCE_IN_PROGRESS, sequence: 1 },
      { errorCode: ErrorCode.ILLEGAL_GENERATION, sequence: 2 },
    ]);
  });

  it('gives every heartbeat the stream as its context, whose watcher pushes with sequence 0', async () => {
    const coordinator = new FakeGroupCoordinator({
      heartbeat: () => Promise.resolve({ errorCode: ErrorCode.NONE }),
    });
    const call = open(coordinator);
    call.emit('data', HEARTBEAT);
    await settle();
    const context = coordinator.calls[0].context as RequestContext;
    expect(context.clientHost).toBe('127.0.0.1');
    context.generationWatcher?.onGenerationOver(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(call.written).toEqual([
      { errorCode: ErrorCode.NONE, sequence: 1 },
      { errorCode: ErrorCode.REBALANCE_IN_PROGRESS, sequence: 0 },
    ]);
    // Once the stream is gone, a late push is dropped, and the member's slot is emptied.
    call.cancel();
    context.generationWatcher?.onGenerationOver(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(call.written).toHaveLength(2);
    expect(coordinator.unwatched).toEqual([['g', 'm', context.generationWatcher]]);
    expect(call.statuses).toEqual([]);
  });

  it('ends with INVALID_ARGUMENT after the answers owed when the bytes do not decode', async () => {
    const first = deferred();
    const coordinator = new FakeGroupCoordinator({ heartbeat: () => first.promise });
    const call = open(coordinator);
    call.emit('data', HEARTBEAT);
    call.emit('data', new UndecodableRequest(new RangeError('truncated')));
    call.emit('data', HEARTBEAT); // ignored: the stream is ending
    first.resolve(ErrorCode.NONE);
    await settle();
    expect(call.written).toEqual([{ errorCode: ErrorCode.NONE, sequence: 1 }]);
    expect(call.statuses).toHaveLength(1);
    expect((call.statuses[0] as StatusObject).code).toBe(status.INVALID_ARGUMENT);
    expect(coordinator.calls).toHaveLength(1);
  });

  it('is ended by HeartbeatStreams.endAll, and a stream opened after it ends at once', async () => {
    const coordinator = new FakeGroupCoordinator({
      heartbeat: () => Promise.resolve({ errorCode: ErrorCode.NONE }),
    });
    const streams = new HeartbeatStreams();
    const call = open(coordinator, streams);
    expect(streams.size).toBe(1);
    call.emit('data', HEARTBEAT);
    streams.endAll();
    await settle();
    expect(call.written).toEqual([{ errorCode: ErrorCode.NONE, sequence: 1 }]);
    expect(call.statuses).toEqual(['OK']);
    expect(streams.size).toBe(0);
    const late = open(coordinator, streams);
    expect(late.statuses).toEqual(['OK']);
    expect(streams.size).toBe(0);
  });
});
