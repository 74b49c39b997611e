import { ErrorCode } from '../../src/errors';
import { GroupCoordinator, type GroupCoordinatorOptions } from '../../src/group/group-coordinator';
import { DEFAULT_GROUP_CONFIG, type GroupConfig } from '../../src/group/group-config';
import type {
  DescribedGroup,
  HeartbeatRequest,
  JoinGroupRequest,
  JoinGroupResponse,
  LeaveGroupResponse,
  MemberIdentity,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchResponse,
  Protocol,
  RequestContext,
  SyncGroupRequest,
  SyncGroupResponse,
} from '../../src/group/group-protocol';
import type { GroupState } from '../../src/group/group-state';
import { ManualTime } from '../../src/time';

/** Kafka's GroupCoordinatorTest settings, so its scenarios carry over number for number. */
export const GROUP_MIN_SESSION_TIMEOUT_MS = 10;
export const GROUP_MAX_SESSION_TIMEOUT_MS = 10 * 60 * 1000;
export const GROUP_MAX_SIZE = 4;
export const DEFAULT_REBALANCE_TIMEOUT_MS = 500;
export const DEFAULT_SESSION_TIMEOUT_MS = 500;
export const GROUP_INITIAL_REBALANCE_DELAY_MS = 50;

export const TEST_GROUP_CONFIG: GroupConfig = Object.freeze({
  groupMinSessionTimeoutMs: GROUP_MIN_SESSION_TIMEOUT_MS,
  groupMaxSessionTimeoutMs: GROUP_MAX_SESSION_TIMEOUT_MS,
  groupInitialRebalanceDelayMs: GROUP_INITIAL_REBALANCE_DELAY_MS,
  groupMaxSize: GROUP_MAX_SIZE,
  offsetMetadataMaxBytes: 4096,
  maxGroups: DEFAULT_GROUP_CONFIG.maxGroups,
  memberMetadataMaxBytes: DEFAULT_GROUP_CONFIG.memberMetadataMaxBytes,
  groupMaxMetadataBytes: DEFAULT_GROUP_CONFIG.groupMaxMetadataBytes,
  groupMaxCommittedPartitions: DEFAULT_GROUP_CONFIG.groupMaxCommittedPartitions,
  offsetsRetentionMinutes: DEFAULT_GROUP_CONFIG.offsetsRetentionMinutes,
  offsetsRetentionCheckIntervalMs: DEFAULT_GROUP_CONFIG.offsetsRetentionCheckIntervalMs,
});

export const GROUP_ID = 'groupId';
export const PROTOCOL_TYPE = 'consumer';
export const PROTOCOL_NAME = 'range';
export const CLIENT_ID = 'consumer-test';
export const CLIENT_HOST = 'localhost';
export const LEADER_INSTANCE_ID = 'leader';
export const FOLLOWER_INSTANCE_ID = 'follower';

export function protocol(name: string, metadata: Buffer = Buffer.alloc(0)): Protocol {
  return { name, metadata };
}
/** One protocol, "range". */
export const PROTOCOLS: Protocol[] = [protocol(PROTOCOL_NAME)];
/** "range" then "roundrobin". */
export const PROTOCOL_SUPERSET: Protocol[] = [protocol(PROTOCOL_NAME), protocol('roundrobin')];

export const CONTEXT: RequestContext = Object.freeze({ clientHost: CLIENT_HOST });

/** A promise whose outcome can be inspected synchronously once the event loop has had a turn. */
export class Tracked<T> {
  value: T | undefined = undefined;
  error: unknown = undefined;
  isSettled = false;
  readonly promise: Promise<T>;

  constructor(promise: Promise<T>) {
    this.promise = promise;
    promise.then(
      (value) => {
        this.value = value;
        this.isSettled = true;
      },
      (error: unknown) => {
        this.error = error;
        this.isSettled = true;
      },
    );
  }

  /** The settled value; throws if still pending or rejected (a test asking too early is a test bug). */
  get result(): T {
    if (!this.isSettled) throw new Error('call still parked');
    if (this.error !== undefined) throw this.error;
    return this.value as T;
  }
}

/** Lets every resolved promise run its callbacks and the reply dispatcher finish its turns. */
/** An offset to commit, as tests write them. */
export interface OffsetToCommit {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly metadata?: string;
  readonly leaderEpoch?: number;
}

/** Who commits: a member of a generation, or -1 and no member for a commit outside the group protocol. */
export interface Committer {
  readonly groupId?: string;
  readonly memberId: string;
  readonly generationId: number;
  readonly groupInstanceId?: string;
}

export function offsetCommitRequestOf(
  committer: Committer,
  offsets: readonly OffsetToCommit[],
): OffsetCommitRequest {
  const byTopic = new Map<string, OffsetCommitRequest['topics'][number]>();
  for (const { topic, partition, offset, metadata, leaderEpoch } of offsets) {
    let entry = byTopic.get(topic);
    if (entry === undefined) {
      entry = { name: topic, partitions: [] };
      byTopic.set(topic, entry);
    }
    entry.partitions.push({
      partitionIndex: partition,
      committedOffset: offset,
      committedLeaderEpoch: leaderEpoch ?? -1,
      committedMetadata: metadata ?? '',
    });
  }
  return {
    groupId: committer.groupId ?? GROUP_ID,
    generationId: committer.generationId,
    memberId: committer.memberId,
    groupInstanceId: committer.groupInstanceId ?? '',
    topics: [...byTopic.values()],
  };
}

/** An OffsetCommit response as partition ("topic-partition") → code, in the response's order. */
export function codesOf(response: OffsetCommitResponse): Map<string, ErrorCode> {
  const codes = new Map<string, ErrorCode>();
  for (const topic of response.topics) {
    for (const partition of topic.partitions)
      codes.set(`${topic.name}-${partition.partitionIndex}`, partition.errorCode);
  }
  return codes;
}

/**
 * A description without each member's lastHeartbeatMs, for comparing descriptions taken at different
 * times: a heartbeat moves it without being a change of the group (no event, nothing stored).
 */
export function withoutLastHeartbeats(group: DescribedGroup): unknown {
  return { ...group, members: group.members.map(({ lastHeartbeatMs: _, ...rest }) => rest) };
}

export async function settle(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export interface JoinOptions {
  groupId?: string;
  memberId?: string;
  groupInstanceId?: string;
  protocolType?: string;
  protocols?: Protocol[];
  sessionTimeoutMs?: number;
  rebalanceTimeoutMs?: number;
  clientId?: string;
  context?: RequestContext;
}

export interface SyncOptions {
  groupId?: string;
  generationId: number;
  memberId: string;
  groupInstanceId?: string;
  protocolType?: string;
  protocolName?: string;
  assignments?: Array<[string, Buffer]>;
  context?: RequestContext;
}

/** A JoinGroup with Kafka's test settings, unless `options` says otherwise. */
export function joinRequest(options: JoinOptions = {}): JoinGroupRequest {
  return {
    groupId: options.groupId ?? GROUP_ID,
    memberId: options.memberId ?? '',
    groupInstanceId: options.groupInstanceId ?? '',
    sessionTimeoutMs: options.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS,
    rebalanceTimeoutMs: options.rebalanceTimeoutMs ?? DEFAULT_REBALANCE_TIMEOUT_MS,
    protocolType: options.protocolType ?? PROTOCOL_TYPE,
    protocols: options.protocols ?? PROTOCOLS,
    clientId: options.clientId ?? CLIENT_ID,
    reason: '',
  };
}

export function syncRequest(options: SyncOptions): SyncGroupRequest {
  return {
    groupId: options.groupId ?? GROUP_ID,
    generationId: options.generationId,
    memberId: options.memberId,
    groupInstanceId: options.groupInstanceId ?? '',
    protocolType: options.protocolType ?? '',
    protocolName: options.protocolName ?? '',
    assignments: (options.assignments ?? []).map(([memberId, assignment]) => ({ memberId, assignment })),
  };
}

/**
 * An OffsetCommit of `offset` for partition 0 of `topic`, outside any generation: also how tests make a
 * group that has offsets and no member to keep alive.
 */
export function offsetCommitRequest(groupId: string, offset: number, topic = 'topic'): OffsetCommitRequest {
  return {
    groupId,
    generationId: -1,
    memberId: '',
    groupInstanceId: '',
    topics: [
      {
        name: topic,
        partitions: [
          { partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: -1, committedMetadata: '' },
        ],
      },
    ],
  };
}

export interface RebalanceResult {
  generation: number;
  leaderId: string;
  leaderAssignment: Buffer;
  followerId: string;
  followerAssignment: Buffer;
}

export interface Transition {
  groupId: string;
  from: GroupState;
  to: GroupState;
  generationId: number;
}

/**
 * A coordinator under a ManualTime with Kafka's test settings, and the helpers of Kafka's
 * GroupCoordinatorTest (sendJoinGroup, dynamicJoinGroup, staticMembersJoinAndRebalance, ...) as async
 * functions. Every state change is recorded in `transitions`.
 */
export class GroupHarness {
  readonly time = new ManualTime();
  readonly coordinator: GroupCoordinator;
  readonly config: GroupConfig;
  readonly transitions: Transition[] = [];

  constructor(config: Partial<GroupConfig> = {}, options: GroupCoordinatorOptions = {}) {
    this.config = { ...TEST_GROUP_CONFIG, ...config };
    this.coordinator = new GroupCoordinator(this.config, this.time, {
      ...options,
      listener: {
        ...options.listener,
        onStateChange: (groupId, from, to, generationId) => {
          this.transitions.push({ groupId, from, to, generationId });
          options.listener?.onStateChange?.(groupId, from, to, generationId);
        },
      },
    });
  }

  advance(ms: number): void {
    this.time.advance(ms);
  }

  joinRequest(options: JoinOptions = {}): JoinGroupRequest {
    return joinRequest(options);
  }

  /** Sends a JoinGroup and returns at once; the answer may come later. */
  sendJoin(options: JoinOptions = {}): Tracked<JoinGroupResponse> {
    return new Tracked(this.coordinator.joinGroup(this.joinRequest(options), options.context ?? CONTEXT));
  }

  /** Sends a JoinGroup, advances the clock, and returns the answer (which must have come by then). */
  async join(options: JoinOptions = {}, clockAdvanceMs = 0): Promise<JoinGroupResponse> {
    const call = this.sendJoin(options);
    await settle();
    if (clockAdvanceMs > 0) this.advance(clockAdvanceMs);
    await settle();
    return call.result;
  }

  /**
   * Kafka's dynamicJoinGroup: join with an empty member id, get MEMBER_ID_REQUIRED, rejoin with the given
   * id, let the initial delay pass. Returns the first response if it was not MEMBER_ID_REQUIRED.
   */
  async dynamicJoin(options: JoinOptions = {}): Promise<JoinGroupResponse> {
    if ((options.memberId ?? '') === '') {
      const first = await this.join(options);
      if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED) return first;
      return this.join({ ...options, memberId: first.memberId }, this.config.groupInitialRebalanceDelayMs);
    }
    return this.join(options, this.config.groupInitialRebalanceDelayMs);
  }

  /** Gets a member id through MEMBER_ID_REQUIRED and returns the parked second JoinGroup. */
  async sendDynamicJoin(options: JoinOptions = {}): Promise<Tracked<JoinGroupResponse>> {
    const first = await this.join(options);
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    return this.sendJoin({ ...options, memberId: first.memberId });
  }

  async staticJoin(
    groupInstanceId: string,
    options: JoinOptions = {},
    clockAdvanceMs = this.config.groupInitialRebalanceDelayMs,
  ): Promise<JoinGroupResponse> {
    return this.join({ ...options, groupInstanceId }, clockAdvanceMs);
  }

  syncRequest(options: SyncOptions): SyncGroupRequest {
    return syncRequest(options);
  }

  sendSync(options: SyncOptions): Tracked<SyncGroupResponse> {
    return new Tracked(this.coordinator.syncGroup(this.syncRequest(options), options.context ?? CONTEXT));
  }

  async sync(options: SyncOptions): Promise<SyncGroupResponse> {
    const call = this.sendSync(options);
    await settle();
    return call.result;
  }

  async heartbeat(
    memberId: string,
    generationId: number,
    groupInstanceId = '',
    groupId = GROUP_ID,
  ): Promise<ErrorCode> {
    const request: HeartbeatRequest = { groupId, memberId, generationId, groupInstanceId };
    return (await this.coordinator.heartbeat(request, CONTEXT)).errorCode;
  }

  async commit(
    options: { groupId?: string; memberId: string; generationId: number; groupInstanceId?: string },
    offsets: Array<{
      topic: string;
      partition: number;
      offset: number;
      metadata?: string;
      leaderEpoch?: number;
    }>,
  ): Promise<Map<string, ErrorCode>> {
    return codesOf(await this.coordinator.offsetCommit(offsetCommitRequestOf(options, offsets), CONTEXT));
  }

  async fetch(
    groupId: string,
    partitions: Array<[string, number[]]> = [],
    requireStable = true,
  ): Promise<OffsetFetchResponse> {
    return this.coordinator.offsetFetch(
      {
        groupId,
        requireStable,
        topics: partitions.map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
      },
      CONTEXT,
    );
  }

  async leave(members: Array<Partial<MemberIdentity>>, groupId = GROUP_ID): Promise<LeaveGroupResponse> {
    return this.coordinator.leaveGroup(
      {
        groupId,
        members: members.map((m) => ({
          memberId: m.memberId ?? '',
          groupInstanceId: m.groupInstanceId ?? '',
          reason: '',
        })),
      },
      CONTEXT,
    );
  }

  async describe(groupId = GROUP_ID): Promise<DescribedGroup> {
    return (await this.coordinator.describeGroups({ groups: [groupId] }, CONTEXT)).groups[0];
  }

  async state(groupId = GROUP_ID): Promise<string> {
    return (await this.describe(groupId)).groupState;
  }

  async memberIds(groupId = GROUP_ID): Promise<string[]> {
    return (await this.describe(groupId)).members.map((m) => m.memberId);
  }

  /**
   * Kafka's staticMembersJoinAndRebalance: a static leader and follower join, the group completes its first
   * rebalance and both sync. The two advances let the initial delay pass, then the extended one.
   */
  async staticMembersJoinAndRebalance(
    leaderInstanceId = LEADER_INSTANCE_ID,
    followerInstanceId = FOLLOWER_INSTANCE_ID,
    sessionTimeoutMs = DEFAULT_SESSION_TIMEOUT_MS,
  ): Promise<RebalanceResult> {
    const leaderJoin = this.sendJoin({
      groupInstanceId: leaderInstanceId,
      protocols: PROTOCOL_SUPERSET,
      sessionTimeoutMs,
    });
    const followerJoin = this.sendJoin({
      groupInstanceId: followerInstanceId,
      protocols: PROTOCOL_SUPERSET,
      sessionTimeoutMs,
    });
    this.advance(this.config.groupInitialRebalanceDelayMs);
    this.advance(this.config.groupInitialRebalanceDelayMs);
    await settle();
    const leader = leaderJoin.result;
    const follower = followerJoin.result;
    expect(leader.errorCode).toBe(ErrorCode.NONE);
    expect(follower.errorCode).toBe(ErrorCode.NONE);
    expect(leader.generationId).toBe(1);
    expect(follower.generationId).toBe(1);
    expect(leader.leaderId).toBe(leader.memberId);
    const leaderAssignment = Buffer.from('leader-assignment');
    const followerAssignment = Buffer.from('follower-assignment');
    const leaderSync = await this.sync({
      generationId: 1,
      memberId: leader.memberId,
      assignments: [
        [leader.memberId, leaderAssignment],
        [follower.memberId, followerAssignment],
      ],
    });
    expect(leaderSync.errorCode).toBe(ErrorCode.NONE);
    expect(await this.state()).toBe('Stable');
    const followerSync = await this.sync({ generationId: 1, memberId: follower.memberId });
    expect(followerSync.errorCode).toBe(ErrorCode.NONE);
    return {
      generation: 1,
      leaderId: leader.memberId,
      leaderAssignment: leaderSync.assignment,
      followerId: follower.memberId,
      followerAssignment: followerSync.assignment,
    };
  }

  /** A one-member group, joined and synced: Stable at generation 1. Returns the member id. */
  async stableSingleMemberGroup(options: JoinOptions = {}): Promise<string> {
    const join = await this.dynamicJoin(options);
    expect(join.errorCode).toBe(ErrorCode.NONE);
    const sync = await this.sync({
      groupId: options.groupId,
      generationId: join.generationId,
      memberId: join.memberId,
      assignments: [[join.memberId, Buffer.alloc(0)]],
    });
    expect(sync.errorCode).toBe(ErrorCode.NONE);
    return join.memberId;
  }

  shutdown(): void {
    this.coordinator.shutdown();
  }
}
