import { COOPERATIVE_STICKY_ASSIGNOR } from './assignors/cooperative-sticky-assignor';
import type { PartitionAssignor } from './assignors/partition-assignor';
import { CONSUMER_PROTOCOL_TYPE } from './consumer-protocol';

/** Partition counts per topic, or a function the leader calls for them at each rebalance. */
export type PartitionCounts =
  | ReadonlyMap<string, number>
  | (() => ReadonlyMap<string, number> | PromiseLike<ReadonlyMap<string, number>>);

/** How to join a group. Durations in milliseconds; defaults are Kafka's consumer defaults. */
export interface GroupMemberOptions {
  /** The group to join. */
  readonly groupId: string;
  /**
   * Makes this a static member (KIP-345): restarts within `sessionTimeoutMs` cause no rebalance, and
   * `close()` sends no LeaveGroup (the session timeout decides). Must be unique in the group.
   */
  readonly groupInstanceId?: string;
  /** The topics this member wants partitions of. May be empty. */
  readonly topics: readonly string[];
  /**
   * The assignors this member supports, preferred first; the group votes for one all members support, and
   * the leader runs its `assign`. Default: `[COOPERATIVE_STICKY_ASSIGNOR]`. Rebalancing is cooperative only
   * when every listed assignor is cooperative.
   */
  readonly protocols?: readonly PartitionAssignor[];
  /** Default `consumer`. All members of a group must use the same type. */
  readonly protocolType?: string;
  /**
   * Partition count of each topic, needed when this member is the leader; a bare member is not tied to a log,
   * so the application supplies it (a `Consumer` reads it from Metadata). Required when `topics` is not
   * empty.
   */
  readonly partitionsPerTopic?: PartitionCounts;
  /** Opaque bytes sent to the leader's assignor with the subscription. */
  readonly userData?: Buffer | null;
  /** The coordinator evicts the member after this long without a heartbeat. Default 45,000. */
  readonly sessionTimeoutMs?: number;
  /** How long the coordinator waits for every member to rejoin during a rebalance. Default 300,000. */
  readonly rebalanceTimeoutMs?: number;
  /** Time between heartbeats; lower than `sessionTimeoutMs`, ideally a third of it. Default 3,000. */
  readonly heartbeatIntervalMs?: number;
  /**
   * The stall guard: when work started with `GroupMember.process` runs longer than this, the member leaves
   * the group (its partitions move to healthy members) and rejoins once the work ends. Off when unset.
   */
  readonly maxProcessingIntervalMs?: number;
  /**
   * Heartbeat over one `HeartbeatStream` call per member instead of one unary Heartbeat each (default
   * `true`). The heartbeats, their interval and their answers are the same; the stream also brings the
   * coordinator's pushes, so a member learns at once, not at its next heartbeat, that the group is
   * rebalancing (it rejoins), that it was removed (it rejoins with a new id) or that it was fenced (it
   * fails). Against a server that does not serve the method (UNIMPLEMENTED) the member falls back to unary
   * heartbeats for good; when a stream breaks, that heartbeat goes unary and the next one reopens it.
   */
  readonly heartbeatOverStream?: boolean;
  /** Deadline of each call other than JoinGroup and SyncGroup (which may park for a rebalance). Default 30,000. */
  readonly requestTimeoutMs?: number;
  /** First wait before retrying a retriable failure; it doubles per attempt. Default 100. */
  readonly retryBackoffMs?: number;
  /** Longest wait between retries. Default 1,000. */
  readonly retryBackoffMaxMs?: number;
  /** Default deadline of `close()`. Default 30,000. */
  readonly closeTimeoutMs?: number;
  /** Sent with JoinGroup; shown by `groups describe`. Set by `CohortClient`. */
  readonly clientId?: string;
  /** Aborting it closes the member. */
  readonly signal?: AbortSignal;
}

/** `GroupMemberOptions` with every default filled in, validated and frozen. */
export interface ResolvedGroupMemberOptions {
  readonly groupId: string;
  readonly groupInstanceId: string | undefined;
  readonly topics: readonly string[];
  readonly protocols: readonly PartitionAssignor[];
  readonly protocolType: string;
  readonly partitionsPerTopic: PartitionCounts | undefined;
  readonly userData: Buffer | null;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly maxProcessingIntervalMs: number | undefined;
  readonly heartbeatOverStream: boolean;
  readonly requestTimeoutMs: number;
  readonly retryBackoffMs: number;
  readonly retryBackoffMaxMs: number;
  readonly closeTimeoutMs: number;
  readonly clientId: string;
}

/** Kafka's consumer defaults (session.timeout.ms, max.poll.interval.ms, heartbeat.interval.ms, ...). */
export const GROUP_MEMBER_DEFAULTS = Object.freeze({
  sessionTimeoutMs: 45_000,
  rebalanceTimeoutMs: 300_000,
  heartbeatIntervalMs: 3_000,
  requestTimeoutMs: 30_000,
  retryBackoffMs: 100,
  retryBackoffMaxMs: 1_000,
  closeTimeoutMs: 30_000,
});

const INT32_MAX = 2_147_483_647;

/**
 * Fills in defaults and checks everything at once; throws a RangeError listing every problem, each with
 * what to change.
 */
export function resolveGroupMemberOptions(options: GroupMemberOptions): ResolvedGroupMemberOptions {
  const problems: string[] = [];
  const d = GROUP_MEMBER_DEFAULTS;
  const duration = (name: string, value: number | undefined, fallback: number, min: number): number => {
    const v = value ?? fallback;
    if (!Number.isSafeInteger(v) || v < min || v > INT32_MAX) {
      problems.push(
        `${name} must be a whole number of milliseconds between ${min} and ${INT32_MAX}, got ${v}`,
      );
    }
    return v;
  };

  if (typeof options.groupId !== 'string' || options.groupId === '')
    problems.push('groupId must be a non-empty string');
  const instance = options.groupInstanceId;
  if (instance !== undefined && (typeof instance !== 'string' || instance === '')) {
    problems.push('groupInstanceId must be a non-empty string, or left out for a dynamic member');
  }
  const topics = options.topics;
  if (!Array.isArray(topics) || topics.some((t) => typeof t !== 'string' || t === '')) {
    problems.push('topics must be an array of non-empty topic names');
  } else if (new Set(topics).size !== topics.length) {
    problems.push('topics lists a topic twice');
  }
  const protocols = options.protocols ?? [COOPERATIVE_STICKY_ASSIGNOR];
  if (protocols.length === 0) problems.push('protocols must list at least one assignor');
  const names = new Set<string>();
  for (const p of protocols) {
    if (typeof p?.name !== 'string' || p.name === '' || typeof p.assign !== 'function') {
      problems.push('each protocol needs a non-empty name and an assign function');
    } else if (names.has(p.name)) {
      problems.push(`protocols lists "${p.name}" twice`);
    } else if (p.rebalanceProtocol !== 'eager' && p.rebalanceProtocol !== 'cooperative') {
      problems.push(
        `protocol "${p.name}" has rebalanceProtocol ${String(p.rebalanceProtocol)}; use eager or cooperative`,
      );
    }
    names.add(p?.name);
  }
  const protocolType = options.protocolType ?? CONSUMER_PROTOCOL_TYPE;
  if (typeof protocolType !== 'string' || protocolType === '')
    problems.push('protocolType must be a non-empty string');
  if (Array.isArray(topics) && topics.length > 0 && options.partitionsPerTopic === undefined) {
    problems.push(
      "partitionsPerTopic is required when topics is not empty: the leader needs each topic's partition count",
    );
  }

  const sessionTimeoutMs = duration('sessionTimeoutMs', options.sessionTimeoutMs, d.sessionTimeoutMs, 1);
  const rebalanceTimeoutMs = duration(
    'rebalanceTimeoutMs',
    options.rebalanceTimeoutMs,
    d.rebalanceTimeoutMs,
    1,
  );
  const heartbeatIntervalMs = duration(
    'heartbeatIntervalMs',
    options.heartbeatIntervalMs,
    d.heartbeatIntervalMs,
    1,
  );
  if (heartbeatIntervalMs >= sessionTimeoutMs) {
    problems.push(
      `heartbeatIntervalMs (${heartbeatIntervalMs}) must be lower than sessionTimeoutMs (${sessionTimeoutMs}); ` +
        `a third of it leaves room for two lost heartbeats`,
    );
  }
  const maxProcessingIntervalMs =
    options.maxProcessingIntervalMs === undefined
      ? undefined
      : duration('maxProcessingIntervalMs', options.maxProcessingIntervalMs, 0, 1);
  const requestTimeoutMs = duration('requestTimeoutMs', options.requestTimeoutMs, d.requestTimeoutMs, 1);
  const retryBackoffMs = duration('retryBackoffMs', options.retryBackoffMs, d.retryBackoffMs, 0);
  const retryBackoffMaxMs = duration('retryBackoffMaxMs', options.retryBackoffMaxMs, d.retryBackoffMaxMs, 0);
  if (retryBackoffMaxMs < retryBackoffMs) {
    problems.push(
      `retryBackoffMaxMs (${retryBackoffMaxMs}) must not be lower than retryBackoffMs (${retryBackoffMs})`,
    );
  }
  const closeTimeoutMs = duration('closeTimeoutMs', options.closeTimeoutMs, d.closeTimeoutMs, 0);
  if (options.heartbeatOverStream !== undefined && typeof options.heartbeatOverStream !== 'boolean') {
    problems.push(`heartbeatOverStream must be true or false, got ${String(options.heartbeatOverStream)}`);
  }

  if (problems.length > 0) {
    throw new RangeError(`invalid group member options:\n  - ${problems.join('\n  - ')}`);
  }
  return Object.freeze({
    groupId: options.groupId,
    groupInstanceId: instance,
    topics: Object.freeze([...topics]),
    protocols: Object.freeze([...protocols]),
    protocolType,
    partitionsPerTopic: options.partitionsPerTopic,
    userData: options.userData ?? null,
    sessionTimeoutMs,
    rebalanceTimeoutMs,
    heartbeatIntervalMs,
    maxProcessingIntervalMs,
    heartbeatOverStream: options.heartbeatOverStream ?? true,
    requestTimeoutMs,
    retryBackoffMs,
    retryBackoffMaxMs,
    closeTimeoutMs,
    clientId: options.clientId ?? '',
  });
}
