import { status } from '@grpc/grpc-js';
import { ErrorCode } from '../../../src/errors';
import type { GroupCoordinatorService, OffsetCommitRequest } from '../../../src/group/group-protocol';
import { groupCoordinatorService } from '../../../src/server/group-coordinator-service';
import { captureLogger } from '../../support/capture-logger';
import { FakeGroupCoordinator } from '../../support/fake-group-coordinator';
import { FakeUnaryCall, settle, unaryOf } from './fake-unary-call';

const RPCS: [string, Exclude<keyof GroupCoordinatorService, 'shutdown'>][] = [
  ['JoinGroup', 'joinGroup'],
  ['SyncGroup', 'syncGroup'],
  ['Heartbeat', 'heartbeat'],
  ['LeaveGroup', 'leaveGroup'],
  ['OffsetCommit', 'offsetCommit'],
  ['OffsetFetch', 'offsetFetch'],
  ['DescribeGroups', 'describeGroups'],
  ['ListGroups', 'listGroups'],
  ['DeleteGroups', 'deleteGroups'],
];

function commitWire(committedOffset: string): unknown {
  return {
    groupId: 'g',
    generationId: -1,
    memberId: '',
    groupInstanceId: '',
    topics: [
      {
        name: 't',
        partitions: [
          { partitionIndex: 0, committedOffset: '0', committedLeaderEpoch: -1, committedMetadata: '' },
          { partitionIndex: 1, committedOffset, committedLeaderEpoch: 4, committedMetadata: 'm' },
        ],
      },
    ],
  };
}

describe('groupCoordinatorService', () => {
  it.each(RPCS)('routes %s to coordinator.%s and answers with its response', async (rpc, method) => {
    const response = { errorCode: ErrorCode.NONE, marker: rpc };
    const coordinator = new FakeGroupCoordinator({ [method]: async () => response });
    const service = groupCoordinatorService(coordinator, captureLogger().logger);
    const request = rpc === 'OffsetCommit' ? commitWire('1') : { groupId: 'g' };
    const call = new FakeUnaryCall<unknown>(request, '192.168.0.9:1234');
    unaryOf(service, rpc)(call, call.callback);
    await settle();
    expect(call.replies).toEqual([{ error: null, response }]);
    expect(coordinator.calls.map((c) => c.method)).toEqual([method]);
    expect(coordinator.calls[0].context.clientHost).toBe('192.168.0.9');
  });

  it('hands OffsetCommit offsets to the coordinator as exact numbers', async () => {
    const received: OffsetCommitRequest[] = [];
    const coordinator = new FakeGroupCoordinator({
      offsetCommit: async (request) => {
        received.push(request);
        return { topics: [] };
      },
    });
    const service = groupCoordinatorService(coordinator, captureLogger().logger);
    const call = new FakeUnaryCall<unknown>(commitWire('9007199254740991'));
    unaryOf(service, 'OffsetCommit')(call, call.callback);
    await settle();
    expect(received[0].topics[0].partitions.map((p) => p.committedOffset)).toEqual([
      0,
      Number.MAX_SAFE_INTEGER,
    ]);
    expect(received[0].topics[0].partitions[1]).toEqual({
      partitionIndex: 1,
      committedOffset: Number.MAX_SAFE_INTEGER,
      committedLeaderEpoch: 4,
      committedMetadata: 'm',
    });
    expect(received[0].generationId).toBe(-1);
  });

  it('refuses an OffsetCommit whose offset a number cannot hold exactly, without reaching the coordinator', async () => {
    const coordinator = new FakeGroupCoordinator({ offsetCommit: async () => ({ topics: [] }) });
    const service = groupCoordinatorService(coordinator, captureLogger().logger);
    const call = new FakeUnaryCall<unknown>(commitWire('9007199254740993'));
    unaryOf(service, 'OffsetCommit')(call, call.callback);
    await settle();
    expect(call.replies).toHaveLength(1);
    expect(call.replies[0].error?.code).toBe(status.INVALID_ARGUMENT);
    expect(call.replies[0].error?.details).toContain(
      'topics[0].partitions[1].committed_offset (9007199254740993)',
    );
    expect(coordinator.calls).toEqual([]);
  });
});
