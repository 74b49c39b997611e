import { performance } from 'node:perf_hooks';
import { encodeAssignment, encodeSubscription } from '../../src/client/consumer-protocol';
import { ErrorCode } from '../../src/errors';
import type {
  HeartbeatRequest,
  HeartbeatResponse,
  JoinGroupRequest,
  JoinGroupResponse,
  SyncGroupRequest,
  SyncGroupResponse,
} from '../../src/group/group-protocol';
import type { UnaryChannels } from './unary-channels';
import { benchProtos, methodCodec, type MethodCodec } from './wire';

/**
 * Forms groups and drives rebalances over real gRPC, with the wire messages a Kafka consumer would send:
 * protocol type `consumer`, the range protocol with an encoded subscription, an encoded assignment of two
 * partitions per member. Every answer's error code is checked; an unexpected one fails the bench.
 */

export const SESSION_TIMEOUT_MS = 1_800_000; // the longest the default config allows: nobody expires mid-run
export const REBALANCE_TIMEOUT_MS = 60_000;
const TOPICS = ['orders', 'payments'];

export interface FormedGroup {
  readonly groupId: string;
  /** In join order; members[i] uses channel i. */
  readonly memberIds: string[];
  leaderId: string;
  generationId: number;
  /** Bumped by each measured rebalance: a changed subscription is what makes every member rejoin. */
  metadataVersion: number;
}

export interface Codecs {
  readonly joinGroup: MethodCodec<JoinGroupRequest, JoinGroupResponse>;
  readonly syncGroup: MethodCodec<SyncGroupRequest, SyncGroupResponse>;
  readonly heartbeat: MethodCodec<HeartbeatRequest, HeartbeatResponse>;
  readonly noop: MethodCodec<HeartbeatRequest, HeartbeatResponse>;
}

export function codecs(): Codecs {
  const protos = benchProtos();
  return {
    joinGroup: methodCodec(protos.groupCoordinator, 'JoinGroup'),
    syncGroup: methodCodec(protos.groupCoordinator, 'SyncGroup'),
    heartbeat: methodCodec(protos.groupCoordinator, 'Heartbeat'),
    noop: methodCodec(protos.noop, 'Noop'),
  };
}

/** Fails the bench when an answer carries another code than the one the driver expects. */
export function expectCode(what: string, actual: ErrorCode, expected: ErrorCode): void {
  if (actual !== expected) {
    throw new Error(`${what}: error code ${ErrorCode[actual]} (${actual}), expected ${ErrorCode[expected]}`);
  }
}

export function joinRequest(
  groupId: string,
  memberId: string,
  index: number,
  metadataVersion: number,
): JoinGroupRequest {
  return {
    groupId,
    memberId,
    groupInstanceId: '',
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    rebalanceTimeoutMs: REBALANCE_TIMEOUT_MS,
    protocolType: 'consumer',
    protocols: [
      {
        name: 'range',
        metadata: encodeSubscription({
          topics: TOPICS,
          userData: Buffer.from(`v${metadataVersion}`),
          generationId: -1,
        }),
      },
    ],
    clientId: `consumer-${index}`,
    reason: '',
  };
}

export function syncRequest(
  group: FormedGroup,
  memberId: string,
  generationId: number,
  withAssignments: boolean,
): SyncGroupRequest {
  return {
    groupId: group.groupId,
    generationId,
    memberId,
    groupInstanceId: '',
    protocolType: 'consumer',
    protocolName: 'range',
    assignments: withAssignments
      ? group.memberIds.map((id, i) => ({
          memberId: id,
          assignment: encodeAssignment({
            partitions: [
              { topic: TOPICS[0], partition: i },
              { topic: TOPICS[1], partition: i },
            ],
          }),
        }))
      : [],
  };
}

/**
 * KIP-394's two-step join for `size` dynamic members (MEMBER_ID_REQUIRED, then a rejoin with the id), the
 * initial rebalance delay, and a SyncGroup from everyone with the leader's assignment: the group ends
 * Stable at generation 1.
 */
export async function formGroup(
  channels: UnaryChannels,
  c: Codecs,
  groupId: string,
  size: number,
): Promise<FormedGroup> {
  const first = await Promise.all(
    Array.from({ length: size }, (_, i) =>
      channels.call(
        i,
        c.joinGroup.path,
        c.joinGroup.encodeRequest(joinRequest(groupId, '', i, 0)),
        c.joinGroup.decodeResponse,
      ),
    ),
  );
  const memberIds = first.map((response, i) => {
    expectCode(`first JoinGroup of ${groupId}/${i}`, response.errorCode, ErrorCode.MEMBER_ID_REQUIRED);
    return response.memberId;
  });
  const joined = await Promise.all(
    memberIds.map((memberId, i) =>
      channels.call(
        i,
        c.joinGroup.path,
        c.joinGroup.encodeRequest(joinRequest(groupId, memberId, i, 0)),
        c.joinGroup.decodeResponse,
      ),
    ),
  );
  for (const response of joined) expectCode(`JoinGroup of ${groupId}`, response.errorCode, ErrorCode.NONE);
  const { leaderId, generationId } = joined[0];
  const group: FormedGroup = { groupId, memberIds, leaderId, generationId, metadataVersion: 0 };
  const synced = await Promise.all(
    memberIds.map((memberId, i) =>
      channels.call(
        i,
        c.syncGroup.path,
        c.syncGroup.encodeRequest(syncRequest(group, memberId, generationId, memberId === leaderId)),
        c.syncGroup.decodeResponse,
      ),
    ),
  );
  for (const response of synced) expectCode(`SyncGroup of ${groupId}`, response.errorCode, ErrorCode.NONE);
  return group;
}

export interface RebalanceTiming {
  /** From the last JoinGroup sent to the last JoinGroup answer received. */
  readonly joinMs: number;
  /** From the last JoinGroup sent to the last SyncGroup answer received. */
  readonly syncMs: number;
  /**
   * From issuing the JoinGroups (one synchronous loop) to the last one written to its connection: the
   * client's sending time, left out of the two figures above. 0 when the client cannot tell (grpc-js),
   * whose figures then count from the end of the issuing loop.
   */
  readonly sendMs: number;
}

/**
 * One full rebalance of a Stable group: every member rejoins with a changed subscription (so whichever
 * JoinGroup arrives first starts the rebalance and the rest park), and each member sends its SyncGroup the
 * moment its JoinGroup answer arrives, the leader with everyone's assignment. All requests are encoded
 * before the clock starts; the generation they carry is the next one, which every answer must confirm.
 */
export async function rebalance(
  channels: UnaryChannels,
  c: Codecs,
  group: FormedGroup,
): Promise<RebalanceTiming> {
  const version = group.metadataVersion + 1;
  const nextGeneration = group.generationId + 1;
  const joins = group.memberIds.map((id, i) =>
    c.joinGroup.encodeRequest(joinRequest(group.groupId, id, i, version)),
  );
  const syncs = group.memberIds.map((id) =>
    c.syncGroup.encodeRequest(syncRequest(group, id, nextGeneration, id === group.leaderId)),
  );
  const size = group.memberIds.length;
  let lastJoinMs = 0;
  let lastSyncMs = 0;
  let lastJoinWrittenMs = 0;
  const onJoinWritten = (): void => {
    lastJoinWrittenMs = performance.now();
  };
  let failure: Error | undefined;
  const fail = (error: unknown): void => {
    failure ??= error instanceof Error ? error : new Error(String(error));
  };
  const pending: Promise<void>[] = new Array(size);
  for (let i = 0; i < size; i++) {
    pending[i] = channels
      .call(i, c.joinGroup.path, joins[i], c.joinGroup.decodeResponse, onJoinWritten)
      .then((join) => {
        lastJoinMs = performance.now();
        expectCode(`rebalance JoinGroup of ${group.groupId}`, join.errorCode, ErrorCode.NONE);
        if (join.generationId !== nextGeneration || join.leaderId !== group.leaderId) {
          throw new Error(
            `rebalance of ${group.groupId}: generation ${join.generationId} leader ${join.leaderId}, expected ${nextGeneration} ${group.leaderId}`,
          );
        }
        if (join.memberId === group.leaderId && join.members.length !== size) {
          throw new Error(
            `the leader of ${group.groupId} got ${join.members.length} members, expected ${size}`,
          );
        }
        return channels.call(i, c.syncGroup.path, syncs[i], c.syncGroup.decodeResponse);
      })
      .then((sync) => {
        lastSyncMs = performance.now();
        expectCode(`rebalance SyncGroup of ${group.groupId}`, sync.errorCode, ErrorCode.NONE);
      })
      .catch(fail);
  }
  const issuedMs = performance.now();
  await Promise.all(pending);
  if (failure !== undefined) throw failure;
  const sentMs = Math.max(issuedMs, lastJoinWrittenMs);
  group.metadataVersion = version;
  group.generationId = nextGeneration;
  return { joinMs: lastJoinMs - sentMs, syncMs: lastSyncMs - sentMs, sendMs: sentMs - issuedMs };
}

/** The encoded HeartbeatRequest of every member of `groups`, for h2load bodies and the sampling client. */
export function heartbeatRequests(groups: readonly FormedGroup[]): HeartbeatRequest[] {
  const requests: HeartbeatRequest[] = [];
  for (const group of groups) {
    for (const memberId of group.memberIds) {
      requests.push({
        groupId: group.groupId,
        generationId: group.generationId,
        memberId,
        groupInstanceId: '',
      });
    }
  }
  return requests;
}
