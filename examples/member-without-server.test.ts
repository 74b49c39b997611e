/**
 * docs/sdk.md, "Testing code that uses the SDK without a server": a GroupMember on a ManualTime, talking to
 * a fake coordinator written for the test. The fake is a group of one, led by the caller.
 */
import { once } from 'node:events';
import {
  ErrorCode,
  GroupMember,
  ManualTime,
  type GroupTransport,
  type HeartbeatResponse,
  type JoinGroupRequest,
  type JoinGroupResponse,
  type LeaveGroupRequest,
  type LeaveGroupResponse,
  type OffsetCommitResponse,
  type OffsetFetchResponse,
  type SyncGroupRequest,
  type SyncGroupResponse,
} from 'cohort';

class GroupOfOne implements GroupTransport {
  heartbeats = 0;
  left: string[] = [];

  async joinGroup(request: JoinGroupRequest): Promise<JoinGroupResponse> {
    const [protocol] = request.protocols;
    return {
      errorCode: ErrorCode.NONE,
      generationId: 1,
      protocolType: request.protocolType,
      protocolName: protocol.name,
      leaderId: 'member-1',
      memberId: 'member-1',
      members: [{ memberId: 'member-1', groupInstanceId: '', metadata: protocol.metadata }],
      skipAssignment: false,
    };
  }
  async syncGroup(request: SyncGroupRequest): Promise<SyncGroupResponse> {
    const mine = request.assignments.find((a) => a.memberId === request.memberId);
    return {
      errorCode: ErrorCode.NONE,
      protocolType: request.protocolType,
      protocolName: request.protocolName,
      assignment: mine?.assignment ?? Buffer.alloc(0),
    };
  }
  async heartbeat(): Promise<HeartbeatResponse> {
    this.heartbeats++;
    return { errorCode: ErrorCode.NONE };
  }
  async leaveGroup(request: LeaveGroupRequest): Promise<LeaveGroupResponse> {
    this.left.push(...request.members.map((m) => m.memberId));
    return { errorCode: ErrorCode.NONE, members: [] };
  }
  async offsetCommit(): Promise<OffsetCommitResponse> {
    return { topics: [] };
  }
  async offsetFetch(): Promise<OffsetFetchResponse> {
    return { errorCode: ErrorCode.NONE, topics: [] };
  }
}

it('heartbeats on its own clock, without a server or real time', async () => {
  const myFakeTransport = new GroupOfOne();
  // #region manual-time
  const time = new ManualTime();
  const member = new GroupMember({ groupId: 'g', topics: [] }, { transport: myFakeTransport, time });
  await once(member, 'assigned'); // joined and synced through the fake
  time.advance(3_000); // runs every heartbeat, deadline and backoff that fell due, synchronously
  // #endregion manual-time
  expect(myFakeTransport.heartbeats).toBe(1);
  await member.close();
  expect(myFakeTransport.left).toEqual(['member-1']);
});
