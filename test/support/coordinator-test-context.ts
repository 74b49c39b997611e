import { ErrorCode } from '../../src/errors';
import type {
  CoordinatorRecordToWrite,
  GroupCoordinatorRouterOptions,
  OffsetRetentionCheckSummary,
} from '../../src/group';
import type { GroupConfig } from '../../src/group/group-config';
import type { StoredGroup } from '../../src/group/stored-group';
import { GroupCoordinatorRouter } from '../../src/group/group-coordinator-router';
import type {
  DeletableGroupResult,
  DescribedGroup,
  JoinGroupResponse,
  LeaveGroupResponse,
  MemberIdentity,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchResponse,
  SyncGroupResponse,
} from '../../src/group/group-protocol';
import type { CommittedOffset } from '../../src/group/committed-offsets';
import {
  decodeGroupMetadataValue,
  decodeKey,
  decodeOffsetCommitValue,
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
  GROUP_METADATA_KEY_TYPE,
  type GroupMetadataKey,
  type GroupMetadataValue,
  type OffsetCommitKey,
} from '../../src/group/records/consumer-offsets-record';
import { ManualTime } from '../../src/time';
import { FakePartitionWriter } from './fake-partition-writer';
import {
  codesOf,
  type Committer,
  CONTEXT,
  DEFAULT_SESSION_TIMEOUT_MS,
  FOLLOWER_INSTANCE_ID,
  GROUP_ID,
  LEADER_INSTANCE_ID,
  offsetCommitRequestOf,
  type OffsetToCommit,
  type JoinOptions,
  joinRequest,
  PROTOCOL_SUPERSET,
  type RebalanceResult,
  type SyncOptions,
  syncRequest,
  TEST_GROUP_CONFIG,
  Tracked,
  type Transition,
} from './group-harness';

/** A record the coordinator appended, decoded: an offset commit or a group's metadata; null: a tombstone. */
export type AppendedRecord =
  | { readonly key: OffsetCommitKey; readonly value: CommittedOffset | null }
  | { readonly key: GroupMetadataKey; readonly value: GroupMetadataValue | null };

/** The router's options but those of its elections (one partition, led at epoch 0, always). */
export type CoordinatorTestContextOptions = Omit<
  GroupCoordinatorRouterOptions,
  'numPartitions' | 'leadershipGuard'
>;

export interface OffsetsExpired {
  readonly groupId: string;
  readonly partitions: number;
  readonly isGroupRemoved: boolean;
}

/** One request sent through the coordinator: the records it appended (synchronously) and its answer. */
export interface CoordinatorCall<Response> {
  readonly records: readonly AppendedRecord[];
  readonly answer: Tracked<Response>;
}

/** An offset commit record of `groupId`, as the coordinator writes it (to seed a partition). */
export function offsetCommitRecord(
  groupId: string,
  topic: string,
  partition: number,
  offset: CommittedOffset,
): CoordinatorRecordToWrite {
  return {
    timestampMs: offset.commitTimestampMs,
    key: encodeOffsetCommitKey(groupId, topic, partition),
    value: encodeOffsetCommitValue(offset),
  };
}

/** The metadata record of a group as the coordinator writes it (to seed a partition). */
export function groupMetadataRecord(group: StoredGroup): CoordinatorRecordToWrite {
  const { groupId, ...value } = group;
  return {
    timestampMs: group.currentStateTimestampMs,
    key: encodeGroupMetadataKey(groupId),
    value: encodeGroupMetadataValue(value),
  };
}

/**
 * The coordinator of one `__consumer_offsets` partition as Kafka's GroupMetadataManagerTestContext drives
 * its shard: a request runs its handler synchronously, so the records it wrote are in `records` the moment
 * the call returns; its answer comes only once the test commits those records (`commit`, the high
 * watermark passing them) or fails the append (`failAppend`). No test waits for the event loop: it awaits
 * an answer it knows is due.
 *
 * Under it: a GroupCoordinatorRouter elected over a FakePartitionWriter (the way the server elects it),
 * loaded by replaying the records the partition starts with, on a ManualTime.
 */
export class CoordinatorTestContext {
  readonly time: ManualTime;
  readonly config: GroupConfig;
  readonly writer: FakePartitionWriter;
  readonly router: GroupCoordinatorRouter;
  /** Every state change, in order. */
  readonly transitions: Transition[] = [];
  /** What the listener heard of offset expiry, in order. */
  readonly offsetsExpired: OffsetsExpired[] = [];
  /** The groups whose expiry failed, in order. */
  readonly offsetExpiryFailures: string[] = [];
  /** Every retention check's summary, in order. */
  readonly retentionChecks: OffsetRetentionCheckSummary[] = [];
  private waiters: { isDue: () => boolean; wake: () => void }[] = [];

  private constructor(
    config: GroupConfig,
    options: CoordinatorTestContextOptions,
    records: readonly CoordinatorRecordToWrite[],
  ) {
    this.time = new ManualTime();
    this.config = config;
    this.writer = new FakePartitionWriter(0, 0, records);
    const listener = options.listener ?? {};
    this.router = new GroupCoordinatorRouter(config, this.time, {
      ...options,
      numPartitions: 1,
      listener: {
        ...listener,
        onStateChange: (groupId, from, to, generationId) => {
          this.transitions.push({ groupId, from, to, generationId });
          listener.onStateChange?.(groupId, from, to, generationId);
        },
        onOffsetsExpired: (groupId, partitions, isGroupRemoved) => {
          this.offsetsExpired.push({ groupId, partitions, isGroupRemoved });
          listener.onOffsetsExpired?.(groupId, partitions, isGroupRemoved);
          this.wakeWaiters();
        },
        onOffsetExpiryFailed: (groupId, error) => {
          this.offsetExpiryFailures.push(groupId);
          listener.onOffsetExpiryFailed?.(groupId, error);
          this.wakeWaiters();
        },
        onOffsetRetentionCheckCompleted: (summary) => {
          this.retentionChecks.push(summary);
          listener.onOffsetRetentionCheckCompleted?.(summary);
          this.wakeWaiters();
        },
      },
    });
  }

  /** A loaded coordinator over a partition holding `options.records` (none by default). */
  static async create(
    config: Partial<GroupConfig> = {},
    options: CoordinatorTestContextOptions & { records?: readonly CoordinatorRecordToWrite[] } = {},
  ): Promise<CoordinatorTestContext> {
    const { records, ...rest } = options;
    const context = new CoordinatorTestContext({ ...TEST_GROUP_CONFIG, ...config }, rest, records ?? []);
    await context.router.onElection(0, 0, context.writer);
    return context;
  }

  /**
   * A coordinator elected over a partition holding `options.records` whose load the test ends: the records
   * are replayed at the election, and the load ends at `writer.releaseLoad()` (or fails at
   * `writer.failLoad(error)`); until then every request gets what a loading partition answers. `loaded`:
   * the election's promise (it resolves once the shard serves, rejects when the load failed).
   */
  static createLoading(
    config: Partial<GroupConfig> = {},
    options: CoordinatorTestContextOptions & { records?: readonly CoordinatorRecordToWrite[] } = {},
  ): { context: CoordinatorTestContext; loaded: Promise<void> } {
    const { records, ...rest } = options;
    const context = new CoordinatorTestContext({ ...TEST_GROUP_CONFIG, ...config }, rest, records ?? []);
    context.writer.isLoadImmediate = false;
    return { context, loaded: context.router.onElection(0, 0, context.writer) };
  }

  /**
   * A new coordinator, loaded, over what this one's partition has committed: a restart (or the next
   * leader) sees those records and nothing else. Its settings are this one's, but where `config` says;
   * it has no listener of the test's. This one goes on until it is shut down.
   */
  restart(config: Partial<GroupConfig> = {}): Promise<CoordinatorTestContext> {
    return CoordinatorTestContext.create({ ...this.config, ...config }, { records: this.committedRecords() });
  }

  /**
   * Resolves once `isDue` holds, checked now and after every expiry, expiry failure and retention check
   * the listener hears of: what retention's writes are awaited by, since nobody waits for their answer.
   */
  until(isDue: () => boolean): Promise<void> {
    if (isDue()) return Promise.resolve();
    return new Promise<void>((wake) => this.waiters.push({ isDue, wake }));
  }

  /** Resolves once `count` expiries have ended over the context's life (committed or failed). */
  untilExpiriesEnded(count: number): Promise<void> {
    return this.until(() => this.offsetsExpired.length + this.offsetExpiryFailures.length >= count);
  }

  /** Commits every append made so far and waits for the expiries among them (`count` in all) to end. */
  async commitExpiries(count: number): Promise<void> {
    this.commit();
    await this.untilExpiriesEnded(count);
  }

  private wakeWaiters(): void {
    const due = this.waiters.filter((waiter) => waiter.isDue());
    this.waiters = this.waiters.filter((waiter) => !due.includes(waiter));
    for (const waiter of due) waiter.wake();
  }

  // ---------------------------------------------------------------------------------------------------
  // The partition

  /** The high watermark passes the oldest `count` appends (every one by default), in order. */
  commit(count?: number): void {
    this.writer.releaseAppends(count);
  }

  /** The oldest append fails with `error` (what the log rejects it with). */
  failAppend(error: unknown): void {
    this.writer.failAppend(error);
  }

  /**
   * Commits the oldest `count` appends (every one made so far by default) and resolves once the coordinator
   * has ended each of those writes (its callbacks on the append have run): a write's caller has its answer,
   * an expiry's listener has heard of it. Answers given before it was called, as calls ran or as the clock
   * moved, have come by then too, whatever `count` (0 included). It awaits no answer, so it cannot hang on
   * one that never comes: a model test reads the answers after it synchronously (Tracked's `result` throws
   * for one still pending), and a missing answer fails the property instead of stalling it.
   */
  async commitAppends(count = this.writer.pending.length): Promise<void> {
    const ended = this.writer.pending.slice(0, count).map((_, index) => this.writer.pendingOutcome(index));
    this.commit(count);
    await Promise.all(ended);
  }

  /**
   * The answer of a call the coordinator answered as it ran (a JoinGroup without member id, a Heartbeat, a
   * LeaveGroup: their handlers return a settled promise), read without committing anything, for a test
   * that leaves appends pending on purpose. It awaits only a race between `answer` and a value that is
   * there already, so it cannot hang: the race goes to the answer only if it had come, and a call left
   * unanswered (parked, or never answered) rejects it with `what` named, failing the property instead of
   * stalling it.
   */
  async answerGiven<T>(answer: Promise<T>, what: string): Promise<T> {
    const notGiven = Symbol('not given');
    const given = await Promise.race([answer, notGiven]);
    if (given === notGiven) throw new Error(`${what} was not answered as it ran`);
    return given as T;
  }

  /** Appends not committed yet. */
  get pendingAppends(): number {
    return this.writer.pending.length;
  }

  /**
   * The records committed so far, those the partition started with included, in order: what a restart
   * loads. Not those of an append pending or failed.
   */
  committedRecords(): CoordinatorRecordToWrite[] {
    return this.writer.committed.map(({ offset, key, value }) => {
      if (key === null) throw new Error(`the record at offset ${offset} has no key`);
      return { key, value };
    });
  }

  /**
   * The latest committed metadata record of `groupId` (what a restart brings the group back from),
   * undefined if none or a tombstone.
   */
  committedGroup(groupId: string): GroupMetadataValue | undefined {
    let latest: GroupMetadataValue | undefined;
    for (const record of this.writer.committed) {
      if (record.key === null) continue;
      const key = decodeKey(record.key);
      if (key.type !== GROUP_METADATA_KEY_TYPE || key.groupId !== groupId) continue;
      latest = record.value === null ? undefined : decodeGroupMetadataValue(record.value);
    }
    return latest;
  }

  /** Runs `send` and returns its answer with the records it appended meanwhile. */
  call<Response>(send: () => Promise<Response>): CoordinatorCall<Response> {
    const from = this.writer.records.length;
    const answer = new Tracked(send());
    return { records: this.writer.records.slice(from).map(decodeRecord), answer };
  }

  // ---------------------------------------------------------------------------------------------------
  // Offsets

  offsetCommit(request: OffsetCommitRequest): CoordinatorCall<OffsetCommitResponse> {
    return this.call(() => this.router.offsetCommit(request, CONTEXT));
  }

  /** An OffsetCommit of `offsets` by `committer` (its group GROUP_ID unless it says). */
  commitOffsets(
    committer: Committer,
    offsets: readonly OffsetToCommit[],
  ): CoordinatorCall<OffsetCommitResponse> {
    return this.offsetCommit(offsetCommitRequestOf(committer, offsets));
  }

  /**
   * An OffsetCommit whose records the test lets commit: its answer, as partition → code
   * ("topic-partition"). A commit refused whole wrote nothing and was answered at once.
   */
  async commitOffsetsAndAnswer(
    committer: Committer,
    offsets: readonly OffsetToCommit[],
  ): Promise<Map<string, ErrorCode>> {
    const call = this.commitOffsets(committer, offsets);
    this.commit();
    return codesOf(await call.answer.promise);
  }

  fetch(
    groupId: string,
    partitions: Array<[string, number[]]> = [],
    requireStable = true,
  ): Promise<OffsetFetchResponse> {
    return this.router.offsetFetch(
      {
        groupId,
        requireStable,
        topics: partitions.map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
      },
      CONTEXT,
    );
  }

  /** The committed offset of one partition as OffsetFetch gives it (-1: none), without require_stable. */
  async fetchOffset(groupId: string, topic: string, partition: number): Promise<number> {
    const fetched = await this.fetch(groupId, [[topic, [partition]]], false);
    return fetched.topics[0]!.partitions[0]!.committedOffset;
  }

  /** The tombstones appended so far, as "group" or "group topic-partition", in order. */
  tombstones(): string[] {
    const found: string[] = [];
    for (const record of this.writer.records) {
      if (record.value !== null || record.key === null) continue;
      const key = decodeKey(record.key);
      found.push(
        key.type === GROUP_METADATA_KEY_TYPE ? key.groupId : `${key.groupId} ${key.topic}-${key.partition}`,
      );
    }
    return found;
  }

  /** The latest metadata record of `groupId` appended (or loaded), undefined if none or a tombstone. */
  storedGroup(groupId: string): GroupMetadataValue | undefined {
    let latest: GroupMetadataValue | undefined;
    for (const record of this.writer.records) {
      if (record.key === null) continue;
      const key = decodeKey(record.key);
      if (key.type !== GROUP_METADATA_KEY_TYPE || key.groupId !== groupId) continue;
      latest = record.value === null ? undefined : decodeGroupMetadataValue(record.value);
    }
    return latest;
  }

  // ---------------------------------------------------------------------------------------------------
  // Groups

  describe(groupId = GROUP_ID): Promise<DescribedGroup> {
    return this.router.describeGroups({ groups: [groupId] }, CONTEXT).then((r) => r.groups[0]!);
  }

  /** DeleteGroups, its records committed: the results, one per group. */
  async deleteGroups(groupIds: string[]): Promise<DeletableGroupResult[]> {
    const call = this.call(() => this.router.deleteGroups({ groupsNames: groupIds }, CONTEXT));
    this.commit();
    return (await call.answer.promise).results;
  }

  /** Sends a JoinGroup; it runs at once, its answer may come later. */
  sendJoin(options: JoinOptions = {}): Tracked<JoinGroupResponse> {
    return new Tracked(this.router.joinGroup(joinRequest(options), options.context ?? CONTEXT));
  }

  /**
   * A JoinGroup, then the clock moves `clockAdvanceMs`: its answer, which must be due by then (answered at
   * once, or when the join completes).
   */
  join(options: JoinOptions = {}, clockAdvanceMs = 0): Promise<JoinGroupResponse> {
    const call = this.sendJoin(options);
    if (clockAdvanceMs > 0) this.time.advance(clockAdvanceMs);
    return call.promise;
  }

  /**
   * Kafka's dynamicJoinGroup: a JoinGroup without member id gets MEMBER_ID_REQUIRED at once; the rejoin
   * with that id is answered when the initial rebalance delay has passed.
   */
  async dynamicJoin(options: JoinOptions = {}): Promise<JoinGroupResponse> {
    const rejoin = await this.sendDynamicJoin(options);
    this.time.advance(this.config.groupInitialRebalanceDelayMs);
    return rejoin.promise;
  }

  /** Gets a member id through MEMBER_ID_REQUIRED and returns the parked second JoinGroup. */
  async sendDynamicJoin(options: JoinOptions = {}): Promise<Tracked<JoinGroupResponse>> {
    const first = await this.router.joinGroup(joinRequest(options), CONTEXT);
    if (first.errorCode !== ErrorCode.MEMBER_ID_REQUIRED) {
      throw new Error(`expected MEMBER_ID_REQUIRED, got ${first.errorCode}`);
    }
    return this.sendJoin({ ...options, memberId: first.memberId });
  }

  /**
   * A JoinGroup of the static instance `groupInstanceId`, then the clock moves `clockAdvanceMs` (the initial
   * rebalance delay by default) and every append made so far commits: its answer. A static member replaced
   * in a Stable group is answered once the group's record with its new member id is committed.
   */
  staticJoin(
    groupInstanceId: string,
    options: JoinOptions = {},
    clockAdvanceMs = this.config.groupInitialRebalanceDelayMs,
  ): Promise<JoinGroupResponse> {
    const call = this.sendJoin({ ...options, groupInstanceId });
    if (clockAdvanceMs > 0) this.time.advance(clockAdvanceMs);
    this.commit();
    return call.promise;
  }

  /**
   * Kafka's staticMembersJoinAndRebalance: a static leader and follower join, the group completes its first
   * rebalance and both sync, the group's record committed. The two advances let the initial delay pass,
   * then the extended one.
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
    this.time.advance(this.config.groupInitialRebalanceDelayMs);
    this.time.advance(this.config.groupInitialRebalanceDelayMs);
    const leader = await leaderJoin.promise;
    const follower = await followerJoin.promise;
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

  /** Sends a SyncGroup: the records it appended (a leader's: the group's) and its answer, when it comes. */
  sendSync(options: SyncOptions): CoordinatorCall<SyncGroupResponse> {
    return this.call(() => this.router.syncGroup(syncRequest(options), options.context ?? CONTEXT));
  }

  /**
   * A SyncGroup whose records (a leader's: the group's) the test lets commit: its answer. Every append made
   * before it commits too, in order.
   */
  sync(options: SyncOptions): Promise<SyncGroupResponse> {
    const call = this.sendSync(options);
    this.commit();
    return call.answer.promise;
  }

  /** A one-member group, joined and synced, its record committed: Stable at generation 1. */
  async stableSingleMemberGroup(options: JoinOptions = {}): Promise<string> {
    const join = await this.dynamicJoin(options);
    if (join.errorCode !== ErrorCode.NONE) throw new Error(`join failed with ${join.errorCode}`);
    const synced = await this.sync({
      groupId: options.groupId,
      generationId: join.generationId,
      memberId: join.memberId,
      assignments: [[join.memberId, Buffer.alloc(0)]],
    });
    if (synced.errorCode !== ErrorCode.NONE) throw new Error(`sync failed with ${synced.errorCode}`);
    return join.memberId;
  }

  async heartbeat(
    memberId: string,
    generationId: number,
    groupInstanceId = '',
    groupId = GROUP_ID,
  ): Promise<ErrorCode> {
    const request = { groupId, memberId, generationId, groupInstanceId };
    return (await this.router.heartbeat(request, CONTEXT)).errorCode;
  }

  async state(groupId = GROUP_ID): Promise<string> {
    return (await this.describe(groupId)).groupState;
  }

  async memberIds(groupId = GROUP_ID): Promise<string[]> {
    return (await this.describe(groupId)).members.map((m) => m.memberId);
  }

  /**
   * A LeaveGroup, its records committed, and its answer: a leave that empties its group is answered once
   * the group's record is committed. The answer is read, not awaited (answerGiven).
   */
  async leaveAndCommit(
    members: Array<Partial<MemberIdentity>>,
    groupId = GROUP_ID,
  ): Promise<LeaveGroupResponse> {
    const answer = this.leave(members, groupId);
    await this.commitAppends();
    return this.answerGiven(answer, 'LeaveGroup');
  }

  /** A LeaveGroup as sent: a leave that empties its group is answered once the group's record commits. */
  leave(members: Array<Partial<MemberIdentity>>, groupId = GROUP_ID): Promise<LeaveGroupResponse> {
    return this.router.leaveGroup(
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

  shutdown(): void {
    this.router.shutdown();
  }

  // ---------------------------------------------------------------------------------------------------
  // Model tests: calls whose answers come when they come

  /**
   * Sends a JoinGroup: the records it appended (a static member replaced in a Stable group: the group's,
   * naming its new member id) and its answer, when it comes.
   */
  sendJoinCall(options: JoinOptions = {}): CoordinatorCall<JoinGroupResponse> {
    return this.call(() => this.router.joinGroup(joinRequest(options), options.context ?? CONTEXT));
  }
}

/** An OffsetCommit request of `offsets`, grouped by topic in the order given. */

function decodeRecord(record: { key: Buffer | null; value: Buffer | null }): AppendedRecord {
  if (record.key === null) throw new Error('the coordinator appended a record without a key');
  const key = decodeKey(record.key);
  if (key.type === GROUP_METADATA_KEY_TYPE) {
    return { key, value: record.value === null ? null : decodeGroupMetadataValue(record.value) };
  }
  return { key, value: record.value === null ? null : decodeOffsetCommitValue(record.value) };
}

export { codesOf, offsetCommitRequestOf, type Committer, type OffsetToCommit };
