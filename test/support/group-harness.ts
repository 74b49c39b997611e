/**
 * What the group layer's tests share: Kafka's GroupCoordinatorTest settings, request builders and ids, and
 * Tracked. The coordinator they drive is CoordinatorTestContext (coordinator-test-context.ts).
 */
import type { ErrorCode } from '../../src/errors';
import { DEFAULT_GROUP_CONFIG, type GroupConfig } from '../../src/group/group-config';
import type {
  DescribedGroup,
  JoinGroupRequest,
  OffsetCommitRequest,
  OffsetCommitResponse,
  Protocol,
  RequestContext,
  SyncGroupRequest,
} from '../../src/group/group-protocol';
import type { GroupState } from '../../src/group/group-state';

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

/** A promise whose outcome can be inspected synchronously once its callbacks have run. */
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

/** What Kafka's staticMembersJoinAndRebalance gives: the generation, and each member's id and assignment. */
export interface RebalanceResult {
  generation: number;
  leaderId: string;
  leaderAssignment: Buffer;
  followerId: string;
  followerAssignment: Buffer;
}

/** One state change of a group, as the coordinator's listener heard it. */
export interface Transition {
  groupId: string;
  from: GroupState;
  to: GroupState;
  generationId: number;
}
