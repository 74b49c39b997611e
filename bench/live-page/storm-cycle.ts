/**
 * One cycle of bench:live-page's rebalance storm for one group: a JoinGroup for a member id, the JoinGroup
 * that completes the join (the server runs with no initial rebalance delay), the member's SyncGroup as the
 * leader and its LeaveGroup. Two rebalances: one completed (Stable), one emptied (Empty). The same cycle
 * drives a server over gRPC (figure 3) and a coordinator in the bench process (board-storm.ts).
 */
import type {
  JoinGroupRequest,
  JoinGroupResponse,
  LeaveGroupRequest,
  LeaveGroupResponse,
  SyncGroupRequest,
  SyncGroupResponse,
} from '../../src/group/group-protocol';

/** Where the cycle's calls go: a gRPC client, or a coordinator with a request context bound. */
export interface StormCalls {
  joinGroup(request: JoinGroupRequest): Promise<JoinGroupResponse>;
  syncGroup(request: SyncGroupRequest): Promise<SyncGroupResponse>;
  leaveGroup(request: LeaveGroupRequest): Promise<LeaveGroupResponse>;
}

const JOIN = Object.freeze({
  groupInstanceId: '',
  sessionTimeoutMs: 30_000,
  rebalanceTimeoutMs: 30_000,
  protocolType: 'consumer',
  protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
  clientId: 'storm',
  reason: '',
});

const EMPTY_ASSIGNMENT = Buffer.alloc(0);

export async function stormCycle(calls: StormCalls, groupId: string): Promise<void> {
  const first = await calls.joinGroup({ ...JOIN, groupId, memberId: '' });
  const joined = await calls.joinGroup({ ...JOIN, groupId, memberId: first.memberId });
  await calls.syncGroup({
    groupId,
    generationId: joined.generationId,
    memberId: joined.memberId,
    groupInstanceId: '',
    protocolType: 'consumer',
    protocolName: 'range',
    assignments: [{ memberId: joined.memberId, assignment: EMPTY_ASSIGNMENT }],
  });
  await calls.leaveGroup({
    groupId,
    members: [{ memberId: joined.memberId, groupInstanceId: '', reason: '' }],
  });
}
