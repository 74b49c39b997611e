import { ErrorCode } from '../errors';
import type { GroupEventReason } from '../protocol/group-event-reason';
import { groupPartitionFor } from '../protocol/group-placement';
import type { PurgatoryStats } from '../purgatory';
import type { Time } from '../time';
import {
  checkDeleteGroupsRequest,
  checkDescribeGroupsRequest,
  checkHeartbeatRequest,
  checkJoinGroupRequest,
  checkLeaveGroupRequest,
  checkListGroupsRequest,
  checkOffsetCommitRequest,
  checkOffsetFetchRequest,
  checkSyncGroupRequest,
} from './check-request';
import type { CommittedOffsetsReader } from './committed-offsets';
import type { CoordinatorPartitionWriter } from './coordinator-partition-writer';
import type { GroupConfig } from './group-config';
import type { GroupCoordinatorRuntimeOptions } from './group-coordinator-options';
import { GroupCoordinatorRuntime } from './group-coordinator-runtime';
import { describedError, GroupCoordinatorShard } from './group-coordinator-shard';
import type { GroupChangeListener } from './group-events';
import type {
  DeletableGroupResult,
  DeleteGroupsRequest,
  DeleteGroupsResponse,
  DescribedGroup,
  DescribeGroupsRequest,
  DescribeGroupsResponse,
  GenerationWatcher,
  GroupCoordinatorService,
  HeartbeatRequest,
  HeartbeatResponse,
  JoinGroupRequest,
  JoinGroupResponse,
  LeaveGroupRequest,
  LeaveGroupResponse,
  ListGroupsRequest,
  ListGroupsResponse,
  MemberLastHeartbeat,
  OffsetCommitRequest,
  OffsetCommitResponse,
  OffsetFetchRequest,
  OffsetFetchResponse,
  RequestContext,
  SyncGroupRequest,
  SyncGroupResponse,
} from './group-protocol';
import { heartbeatReply, joinError, leaveError, syncError } from './group-responses';
import { type GroupState, parseGroupState } from './group-state';
import { emptyGroupStats, type GroupStats } from './group-stats';
import { commitResponse } from './group-offsets';
import { OffsetRetention } from './offset-retention';

/** The router's options: the runtime's, and how many partitions `__consumer_offsets` has. */
export interface GroupCoordinatorRouterOptions extends GroupCoordinatorRuntimeOptions {
  /**
   * Partitions of `__consumer_offsets`; a group belongs to `groupPartitionFor(groupId, numPartitions)`.
   * Undefined when not known yet (the topic does not exist yet): every group request is NOT_COORDINATOR
   * until `setNumPartitions`.
   */
  readonly numPartitions?: number;
  /**
   * Whether this node may act as a coordinator right now (cluster mode: its session with etcd is certainly
   * alive, read from the clock on every request). While it says no, every group request is NOT_COORDINATOR
   * even before the shards have been told to resign: a node resumed after a pause past its session must not
   * answer a single heartbeat for groups another node took over, whichever of the expiry timer and the
   * queued requests the event loop runs first. Absent: always (single-node mode).
   */
  readonly leadershipGuard?: { isActive(): boolean };
}

type ListedGroup = ListGroupsResponse['groups'][number];

/**
 * The group coordinator of a node: routes each group request to the coordinator shard of the group's
 * `__consumer_offsets` partition (Kafka's placement, `groupPartitionFor`), and keeps one shard per partition
 * this node leads, as Kafka's coordinator runtime does (`scheduleLoadOperation`,
 * `scheduleUnloadOperation`; GroupMetadataManager's `onElection` / `onResignation` before it).
 *
 * What a request gets before its shard sees it, in Kafka's order (`validateGroupStatus`): a malformed
 * request is rejected; an empty group id is INVALID_GROUP_ID where the API needs one; after shutdown
 * everything is COORDINATOR_NOT_AVAILABLE; a partition this node does not lead is NOT_COORDINATOR (16). The
 * shard then answers COORDINATOR_LOAD_IN_PROGRESS (14) while it loads, with Kafka's exceptions: Heartbeat
 * gets NONE, SyncGroup REBALANCE_IN_PROGRESS. Requests over several groups (DescribeGroups, DeleteGroups)
 * are split by partition and answered per group; ListGroups lists every serving shard and says
 * COORDINATOR_LOAD_IN_PROGRESS while any partition loads, as Kafka's `handleListGroups` does.
 *
 * Leadership arrives from the log layer: `onElection` makes a shard over the partition's writer and loads
 * it by replaying the partition's records, `onResignation` unloads it. A notification older than the
 * partition's current epoch is late (the leadership it speaks of is gone) and ignored. A newer election of
 * a partition already led is a resignation of the old epoch and an election of the new one: the old
 * shard's parked calls get NOT_COORDINATOR and its late appends touch nothing, since the new epoch has a
 * shard of its own.
 */
export class GroupCoordinatorRouter implements GroupCoordinatorService {
  private partitionCount: number | undefined;
  private readonly runtime: GroupCoordinatorRuntime;
  private readonly retention: OffsetRetention;
  /** The shard of each partition this node leads (loading, serving or failed to load), by index. */
  private readonly shards: (GroupCoordinatorShard | undefined)[];
  /**
   * The newest leader epoch heard of for each partition (-1: none), led or resigned: a later notification
   * of an older epoch is stale.
   */
  private readonly epochs: number[];
  private isActive = true;
  private readonly leadershipGuard: { isActive(): boolean } | undefined;
  private readonly time: Time;
  /** The load of each partition led here (settled or not), by index: what `whenLoaded` waits for. */
  private readonly loads = new Map<number, Promise<void>>();

  constructor(config: GroupConfig, time: Time, options: GroupCoordinatorRouterOptions) {
    this.leadershipGuard = options.leadershipGuard;
    this.time = time;
    this.shards = [];
    this.epochs = [];
    if (options.numPartitions !== undefined) this.setNumPartitions(options.numPartitions);
    this.runtime = new GroupCoordinatorRuntime(
      config,
      time,
      options,
      {
        describeGroup: (groupId) => this.describeGroup(groupId),
        groupIds: () => this.groupIds(),
      },
      () => this.numGroups,
    );
    this.retention = new OffsetRetention(
      config,
      time,
      () => this.ledShards(),
      options.listener,
      options.onTimerError,
      options.retentionCheckOffsetsPerTurn,
    );
  }

  /** Partitions of `__consumer_offsets`, once known. */
  get numPartitions(): number | undefined {
    return this.partitionCount;
  }

  /**
   * Sets the partition count once it is known (the topic's, from the cluster metadata or the data dir).
   * It may change only while no partition is led here: groups would otherwise move between shards under
   * their members. Setting the same count again is a no-op.
   */
  setNumPartitions(numPartitions: number): void {
    if (!Number.isSafeInteger(numPartitions) || numPartitions < 1) {
      throw new RangeError(`numPartitions must be a positive integer, got ${numPartitions}`);
    }
    if (numPartitions === this.partitionCount) return;
    if (this.shards.some((shard) => shard !== undefined)) {
      throw new RangeError(
        `numPartitions cannot change from ${this.partitionCount} to ${numPartitions} while partitions are led`,
      );
    }
    this.partitionCount = numPartitions;
    this.shards.length = numPartitions;
    this.shards.fill(undefined);
    // Epochs heard of for partitions that remain stay: a late notification is as stale as before.
    const known = this.epochs.length;
    this.epochs.length = numPartitions;
    if (known < numPartitions) this.epochs.fill(-1, known);
  }

  /**
   * Which `__consumer_offsets` partition `groupId` belongs to (for FindCoordinator, describe); undefined
   * while the partition count is unknown.
   */
  partitionFor(groupId: string): number | undefined {
    const count = this.partitionCount;
    if (count === undefined) return undefined;
    return count === 1 ? 0 : groupPartitionFor(groupId, count);
  }

  /**
   * Resolves once every partition led here now has loaded (its shard serves, or was unloaded before it
   * finished); rejects with the first load that failed. A single-node server is ready only then.
   */
  whenLoaded(): Promise<void> {
    return Promise.all(this.loads.values()).then(() => undefined);
  }

  /** Whether this node leads `partitionIndex` now (loading, serving, or failed to load). */
  isLeading(partitionIndex: number): boolean {
    return this.shards[partitionIndex] !== undefined;
  }

  // ---------------------------------------------------------------------------------------------------
  // Leadership

  /**
   * This node now leads `partitionIndex` at `leaderEpoch`, and appends to it through `writer` (Kafka's
   * scheduleLoadOperation): a new shard over the writer loads the partition's groups by replaying its
   * records, answering COORDINATOR_LOAD_IN_PROGRESS meanwhile; its members' sessions start from the end of
   * the load. The listener hears of the replay (`onPartitionReplayed`) and of every record it could not
   * decode (`onCorruptRecord`). Ignored if `leaderEpoch` is not newer than the newest epoch heard of for the
   * partition; a shard of an older epoch is unloaded first (NOT_COORDINATOR to its parked calls).
   * `numPartitions`: the topic's partition count as the log knows it, taken when it differs from the
   * router's (see `setNumPartitions`).
   *
   * Returns the load's end: it resolves once the shard serves its groups (or at once when the election is
   * ignored, or once the shard is unloaded before it finished) and rejects when the load failed (the
   * listener hears of it too). A single-node server is ready only once its partitions' loads resolved.
   */
  onElection(
    partitionIndex: number,
    leaderEpoch: number,
    writer: CoordinatorPartitionWriter,
    numPartitions?: number,
  ): Promise<void> {
    if (numPartitions !== undefined && numPartitions !== this.partitionCount) {
      this.setNumPartitions(numPartitions);
    }
    const shard = this.elect(partitionIndex, leaderEpoch, writer);
    if (shard === undefined) return Promise.resolve();
    const listener = this.runtime.listener;
    const electedAtMs = this.time.monotonicMs();
    const loaded = shard.load();
    this.loads.set(partitionIndex, loaded);
    loaded.then(
      () => {
        if (!shard.isActive) return;
        // The shard told the watchers of its groups; a group watched by name that the partition does not
        // have was NOT_COORDINATOR (or loading) to its watchers, and is now GROUP_ID_NOT_FOUND here.
        this.notifyNamedWatchers(partitionIndex, (groupId) => !shard.groups.has(groupId), 'group-loaded');
        listener?.onShardLoaded?.(
          partitionIndex,
          leaderEpoch,
          shard.numGroups,
          this.time.monotonicMs() - electedAtMs,
        );
      },
      (error: unknown) => {
        if (shard.isActive) listener?.onShardLoadFailed?.(partitionIndex, leaderEpoch, error);
      },
    );
    return loaded;
  }

  /**
   * This node no longer leads `partitionIndex` (it led it at `leaderEpoch`): the shard's parked calls get
   * NOT_COORDINATOR, its timers and watchers are dropped, its groups unloaded; later requests for them get
   * NOT_COORDINATOR. Ignored when the partition's shard is of a newer epoch (a late resignation).
   */
  onResignation(partitionIndex: number, leaderEpoch: number): void {
    this.checkPartition(partitionIndex);
    if (!this.isActive) return;
    const current = this.epochs[partitionIndex];
    if (leaderEpoch < current) {
      this.runtime.listener?.onStaleLeadership?.(partitionIndex, leaderEpoch, current);
      return;
    }
    this.epochs[partitionIndex] = leaderEpoch;
    this.resign(partitionIndex);
  }

  /**
   * Installs the shard of a new epoch over `writer` without loading it (the caller loads it, or has
   * nothing to load). Undefined when the election is stale or the router has shut down.
   */
  protected elect(
    partitionIndex: number,
    leaderEpoch: number,
    writer: CoordinatorPartitionWriter,
  ): GroupCoordinatorShard | undefined {
    this.checkPartition(partitionIndex);
    if (!this.isActive) return undefined;
    const current = this.epochs[partitionIndex];
    if (leaderEpoch <= current) {
      this.runtime.listener?.onStaleLeadership?.(partitionIndex, leaderEpoch, current);
      return undefined;
    }
    this.resign(partitionIndex);
    this.epochs[partitionIndex] = leaderEpoch;
    const shard = new GroupCoordinatorShard(this.runtime, partitionIndex, leaderEpoch, writer);
    this.shards[partitionIndex] = shard;
    return shard;
  }

  /**
   * The committed offsets of the groups of every partition served here, for what reads offsets across
   * groups outside the coordinator (the consumer-lag metrics, the live page). A partition is read only
   * once its load is done: before, its offsets are partial, or hold records a failover could still take
   * back (the load waits for the high watermark to cover what it replayed).
   */
  readonly committedOffsets: CommittedOffsetsReader = {
    groupIds: () => this.offsetGroupIds(),
    list: (groupId) => this.servingShardOf(groupId)?.offsets.committedOffsets.list(groupId) ?? [],
    committedPartitions: (groupId) =>
      this.servingShardOf(groupId)?.offsets.committedOffsets.committedPartitions(groupId) ?? 0,
  };

  /** The shard of `partitionIndex`, if this node leads it. */
  protected shardOf(partitionIndex: number): GroupCoordinatorShard | undefined {
    return this.shards[partitionIndex];
  }

  private resign(partitionIndex: number): void {
    const shard = this.shards[partitionIndex];
    if (shard === undefined) return;
    this.loads.delete(partitionIndex);
    const groupIds = [...shard.groups.keys()];
    this.shards[partitionIndex] = undefined;
    shard.unload(ErrorCode.NOT_COORDINATOR, true);
    this.runtime.listener?.onShardUnloaded?.(partitionIndex, shard.leaderEpoch, groupIds.length);
    // After the shard left its slot, so that watchers see each group as this node now describes it:
    // NOT_COORDINATOR, no state. Groups watched by name that the partition did not have change too (they
    // were GROUP_ID_NOT_FOUND here).
    if (this.runtime.events.size > 0) {
      for (const groupId of groupIds) this.runtime.notifyWatchers(groupId, 'group-unloaded');
      const had = new Set(groupIds);
      this.notifyNamedWatchers(partitionIndex, (groupId) => !had.has(groupId), 'group-unloaded');
    }
  }

  /** Tells the watchers by name of the groups of `partitionIndex` that `isConcerned` picks. */
  private notifyNamedWatchers(
    partitionIndex: number,
    isConcerned: (groupId: string) => boolean,
    reason: GroupEventReason,
  ): void {
    const events = this.runtime.events;
    if (events.size === 0) return;
    for (const groupId of events.namedGroupIds()) {
      if (this.partitionFor(groupId) === partitionIndex && isConcerned(groupId)) {
        this.runtime.notifyWatchers(groupId, reason);
      }
    }
  }

  private checkPartition(partitionIndex: number): void {
    const count = this.partitionCount;
    if (count === undefined) {
      throw new RangeError(`partition ${partitionIndex} led before the partition count is known`);
    }
    if (!Number.isSafeInteger(partitionIndex) || partitionIndex < 0 || partitionIndex >= count) {
      throw new RangeError(
        `partition ${partitionIndex} is not a partition of __consumer_offsets (0..${count - 1})`,
      );
    }
  }

  /** The shard of `groupId`'s partition, or the code a request for it gets without one. */
  private route(groupId: string): GroupCoordinatorShard | ErrorCode {
    if (!this.isActive) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const partitionIndex = this.partitionFor(groupId);
    if (partitionIndex === undefined) return ErrorCode.NOT_COORDINATOR;
    const shard = this.shards[partitionIndex];
    if (shard === undefined || this.leadershipGuard?.isActive() === false) return ErrorCode.NOT_COORDINATOR;
    return shard;
  }

  /** The shards of the partitions led here; none while the leadership guard says this node may not act. */
  private *ledShards(): Iterable<GroupCoordinatorShard> {
    if (this.leadershipGuard?.isActive() === false) return;
    for (const shard of this.shards) if (shard !== undefined) yield shard;
  }

  private *offsetGroupIds(): Iterable<string> {
    for (const shard of this.ledShards()) {
      if (shard.isServing) yield* shard.offsets.committedOffsets.groupIds();
    }
  }

  /** The shard of `groupId`'s partition if it serves its groups now. */
  private servingShardOf(groupId: string): GroupCoordinatorShard | undefined {
    const shard = this.route(groupId);
    return typeof shard === 'object' && shard.isServing ? shard : undefined;
  }

  private *groupIds(): Iterable<string> {
    for (const shard of this.ledShards()) if (shard.isServing) yield* shard.groups.keys();
  }

  // ---------------------------------------------------------------------------------------------------
  // Gauges

  /** Groups currently known on every shard (any state but Dead). */
  get numGroups(): number {
    let groups = 0;
    for (const shard of this.shards) if (shard !== undefined) groups += shard.numGroups;
    return groups;
  }

  /** The shared purgatories' gauges (every shard's operations together). */
  purgatoryStats(): PurgatoryStats[] {
    return this.runtime.purgatoryStats();
  }

  /** Groups and members by state over every shard. Walks every group: for metrics on scrape, never per request. */
  groupStats(): GroupStats {
    const stats = emptyGroupStats();
    for (const shard of this.ledShards()) shard.addGroupStats(stats);
    return stats;
  }

  // ---------------------------------------------------------------------------------------------------
  // Requests of one group

  joinGroup(request: JoinGroupRequest, context: RequestContext): Promise<JoinGroupResponse> {
    const invalid = checkJoinGroupRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (request.groupId === '')
      return Promise.resolve(joinError(request.memberId, ErrorCode.INVALID_GROUP_ID));
    const shard = this.route(request.groupId);
    if (typeof shard === 'number') return Promise.resolve(joinError(request.memberId, shard));
    return shard.membership.joinGroup(request, context);
  }

  syncGroup(request: SyncGroupRequest, context: RequestContext): Promise<SyncGroupResponse> {
    const invalid = checkSyncGroupRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (request.groupId === '') return Promise.resolve(syncError(ErrorCode.INVALID_GROUP_ID));
    const shard = this.route(request.groupId);
    if (typeof shard === 'number') return Promise.resolve(syncError(shard));
    return shard.membership.syncGroup(request, context);
  }

  /** The hot path: a hash of the group id and an array lookup before the shard's own work. */
  heartbeat(request: HeartbeatRequest, context: RequestContext): Promise<HeartbeatResponse> {
    const invalid = checkHeartbeatRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (request.groupId === '') return heartbeatReply(ErrorCode.INVALID_GROUP_ID);
    const shard = this.route(request.groupId);
    if (typeof shard === 'number') return heartbeatReply(shard);
    return shard.membership.heartbeat(request, context);
  }

  leaveGroup(request: LeaveGroupRequest, context: RequestContext): Promise<LeaveGroupResponse> {
    const invalid = checkLeaveGroupRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (request.groupId === '') return Promise.resolve(leaveError(ErrorCode.INVALID_GROUP_ID));
    const shard = this.route(request.groupId);
    if (typeof shard === 'number') return Promise.resolve(leaveError(shard));
    return shard.membership.leaveGroup(request, context);
  }

  unwatchMember(groupId: string, memberId: string, watcher: GenerationWatcher): void {
    const shard = this.route(groupId);
    if (typeof shard !== 'number') shard.membership.unwatchMember(groupId, memberId, watcher);
  }

  /** The empty group id is allowed for offsets, as in Kafka (old clients commit under it). */
  offsetCommit(request: OffsetCommitRequest, context: RequestContext): Promise<OffsetCommitResponse> {
    const invalid = checkOffsetCommitRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    const shard = this.route(request.groupId);
    if (typeof shard === 'number') return Promise.resolve(commitResponse(request, shard));
    return shard.offsets.offsetCommit(request, context);
  }

  offsetFetch(request: OffsetFetchRequest, context: RequestContext): Promise<OffsetFetchResponse> {
    const invalid = checkOffsetFetchRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    const shard = this.route(request.groupId);
    if (typeof shard === 'number') return Promise.resolve({ errorCode: shard, topics: [] });
    return shard.offsets.offsetFetch(request, context);
  }

  // ---------------------------------------------------------------------------------------------------
  // Requests over several groups: answered per group, or over every shard

  describeGroups(request: DescribeGroupsRequest, _context: RequestContext): Promise<DescribeGroupsResponse> {
    const invalid = checkDescribeGroupsRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    const groups: DescribedGroup[] = request.groups.map((groupId) => this.describeGroup(groupId));
    return Promise.resolve({ groups });
  }

  private describeGroup(groupId: string): DescribedGroup {
    const shard = this.route(groupId);
    if (typeof shard === 'number') return describedError(groupId, shard, '', '');
    return shard.describeGroup(groupId);
  }

  /** The last heartbeat of each member of `groupId`, from its shard; undefined where it is not served here. */
  lastHeartbeats(groupId: string): readonly MemberLastHeartbeat[] | undefined {
    const shard = this.route(groupId);
    return typeof shard === 'number' ? undefined : shard.lastHeartbeats(groupId);
  }

  /**
   * Every serving shard's groups. The code says what the list may miss: COORDINATOR_NOT_AVAILABLE after
   * shutdown or while a partition's load has failed, else COORDINATOR_LOAD_IN_PROGRESS while one loads.
   */
  listGroups(request: ListGroupsRequest, _context: RequestContext): Promise<ListGroupsResponse> {
    const invalid = checkListGroupsRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    if (!this.isActive)
      return Promise.resolve({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, groups: [] });
    // Names are matched case-insensitively; a name that is no state matches nothing.
    let wanted: Set<GroupState> | undefined;
    if (request.statesFilter.length > 0) {
      wanted = new Set();
      for (const name of request.statesFilter) {
        const state = parseGroupState(name);
        if (state !== undefined) wanted.add(state);
      }
    }
    let errorCode = ErrorCode.NONE;
    const groups: ListedGroup[] = [];
    for (const shard of this.ledShards()) {
      if (shard.isServing) shard.addListedGroups(wanted, groups);
      else if (shard.availability === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) {
        if (errorCode === ErrorCode.NONE) errorCode = shard.availability;
      } else errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
    return Promise.resolve({ errorCode, groups });
  }

  /** Each group's result from its own shard (or NOT_COORDINATOR), in the request's order, each id once. */
  deleteGroups(request: DeleteGroupsRequest, _context: RequestContext): Promise<DeleteGroupsResponse> {
    const invalid = checkDeleteGroupsRequest(request);
    if (invalid !== undefined) return Promise.reject(invalid);
    const byShard = new Map<GroupCoordinatorShard, string[]>();
    const unrouted = new Map<string, DeletableGroupResult>();
    const order = new Set<string>();
    for (const groupId of request.groupsNames) {
      if (order.has(groupId)) continue;
      order.add(groupId);
      const shard = this.route(groupId);
      if (typeof shard === 'number') unrouted.set(groupId, { groupId, errorCode: shard });
      else {
        let ids = byShard.get(shard);
        if (ids === undefined) byShard.set(shard, (ids = []));
        ids.push(groupId);
      }
    }
    // One shard (the common case, and every case of a single partition): its answer is the answer.
    if (unrouted.size === 0 && byShard.size === 1) {
      const [[shard, ids]] = byShard;
      return shard.deleteGroups(ids).then((results) => ({ results }));
    }
    return Promise.all([...byShard].map(([shard, ids]) => shard.deleteGroups(ids))).then((answers) => {
      const byId = new Map(unrouted);
      for (const results of answers) for (const result of results) byId.set(result.groupId, result);
      return { results: [...order].map((groupId) => byId.get(groupId) as DeletableGroupResult) };
    });
  }

  /**
   * Hands `listener` a snapshot of each group of `groupIds` (every group when empty), then every observable
   * change of them, synchronously as it happens, until the function returned is called (group-events.ts
   * says what a snapshot holds; GROUP_EVENT_REASONS lists the reasons). Every shard's groups, and those of
   * partitions elected later (`group-loaded`); a group whose partition resigns gets `group-unloaded`,
   * described NOT_COORDINATOR (docs/protocol.md, "Watching groups").
   */
  watchGroups(groupIds: readonly string[], listener: GroupChangeListener): () => void {
    return this.runtime.events.subscribe(groupIds, listener);
  }

  /** Runs the offset retention check now (as its timer does every offsetsRetentionCheckIntervalMs). */
  onOffsetRetentionCheck(): void {
    this.retention.onOffsetRetentionCheck();
  }

  /**
   * Answers every parked call of every shard with COORDINATOR_NOT_AVAILABLE (clients look for the
   * coordinator again), delivers every queued reply, and stops the timers. Later requests get
   * COORDINATOR_NOT_AVAILABLE. Idempotent.
   */
  shutdown(): void {
    if (!this.isActive) return;
    this.isActive = false;
    for (const shard of this.shards) shard?.unload(ErrorCode.COORDINATOR_NOT_AVAILABLE, false);
    this.retention.shutdown();
    this.runtime.shutdown();
  }
}
