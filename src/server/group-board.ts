import type { GroupChange, GroupChangeListener, MemberLastHeartbeat, OffsetStore } from '../group';
import { REBALANCE_REASONS } from '../group';
import { topicPartitionKey } from '../log';
import { CONSUMER_PROTOCOL_TYPE, decodeAssignment } from '../protocol/consumer-protocol';
import type { DescribedGroup } from '../protocol/group-messages';
import {
  lagPartitions,
  partitionLags,
  type CommittedPartitionOffset,
  type LagMember,
} from '../protocol/partition-lag';
import type { TopicPartition } from '../protocol/topic-partition';
import type { Time } from '../time';
import { SystemTimer, TimerTask } from '../timer';

/** How often lag and high watermarks are sampled while a page is open: the page never polls faster. */
export const BOARD_LAG_INTERVAL_MS = 1_000;
/** Rebalances and departed members each group remembers. */
export const BOARD_HISTORY_LENGTH = 20;
/** Lag samples each group remembers for its chart (one per change, at most one a second: five minutes+). */
export const BOARD_LAG_SAMPLES = 300;

/**
 * Reasons that start (or join into) a rebalance: Kafka's prepareRebalance reasons, and the join phase
 * timing out with members removed (`rejoin-expired`), which the same rebalance goes on with.
 */
const REBALANCE_CAUSES: ReadonlySet<string> = new Set<string>([...REBALANCE_REASONS, 'rejoin-expired']);

/** One member as the page shows it. */
export interface BoardMember {
  readonly memberId: string;
  readonly groupInstanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  /** Owned partitions; null unless the group is a consumer group whose assignment decodes. */
  readonly assignment: readonly TopicPartition[] | null;
  /**
   * When the coordinator last heard from the member (its wall clock, ms); null when it does not know (a
   * member on its first join). As of the group's last change, and at most a lag round old while a page
   * shows the group (GroupBoard.select). The page shows the age and lets it grow.
   */
  readonly lastHeartbeatMs: number | null;
}

/** A member that left the group, and how. */
export interface DepartedMember {
  readonly memberId: string;
  readonly groupInstanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  /** `session-expired`, `member-left`, or the reason of the change that removed it. */
  readonly reason: string;
  readonly atMs: number;
}

/**
 * One rebalance: from the change that started it until the group was Stable (or Empty) again. Never
 * changed once made: a change of the rebalance replaces it (views share them, see GroupEntry).
 */
export interface Rebalance {
  readonly startMs: number;
  /** Every reason that joined in, first the one that started it (deduplicated, in order). */
  readonly reasons: readonly string[];
  /** The generation the rebalance made (set at join-completed); the previous one until then. */
  readonly generationId: number;
  readonly endMs: number | null;
  /** `Stable` or `Empty` once done. */
  readonly endState: string | null;
}

/** One partition's lag as the stream sends it (offsets as decimal strings: JSON has no int64). */
export interface BoardPartitionLag {
  readonly topic: string;
  readonly partition: number;
  readonly committedOffset: string | null;
  readonly highWatermark: string | null;
  readonly lag: string | null;
  readonly memberId: string | null;
}

/** Everything the page shows of one group. */
export interface BoardGroup {
  readonly groupId: string;
  readonly state: string;
  readonly generationId: number;
  readonly protocolType: string;
  readonly protocol: string;
  readonly members: readonly BoardMember[];
  /** The reason of the latest change, and when it happened (the coordinator's wall clock). */
  readonly reason: string;
  readonly changedAtMs: number;
  readonly rebalances: readonly Rebalance[];
  readonly departed: readonly DepartedMember[];
  readonly partitions: readonly BoardPartitionLag[];
  /** Lag summed over the partitions whose lag is known; null when none is. */
  readonly totalLag: string | null;
  /** `[timeMs, totalLag]` pairs, oldest first. */
  readonly lagSamples: readonly (readonly [number, number])[];
}

/**
 * One group as the groups table shows it: what every page hears of every group. A few hundred bytes,
 * where a whole view (BoardGroup) holds a timeline, departed members, partitions and lag samples that
 * only the page showing the group needs. `groupId`, `state` and `generationId` come first, as in a view.
 */
export interface BoardGroupRow {
  readonly groupId: string;
  readonly state: string;
  readonly generationId: number;
  readonly protocolType: string;
  readonly protocol: string;
  readonly memberCount: number;
  /** As in the view: lag summed over the partitions whose lag is known; null when none is. */
  readonly totalLag: string | null;
  /** When the last rebalance ended, or started while it is in progress; null before any. */
  readonly lastRebalanceMs: number | null;
}

/**
 * Members of one group and their last heartbeat (`[memberId, ms]` pairs): those that moved since the
 * previous round, or every member when a page has just selected the group.
 */
export interface BoardHeartbeats {
  readonly groupId: string;
  readonly members: readonly (readonly [string, number | null])[];
}

/**
 * What a page hears: every group's row (on a change, and at most once a second when its lag changed), the
 * whole view of the group it shows (GroupBoard.select: when it selects it, then on the same occasions),
 * that group's members' heartbeats (once a second), or a group's end.
 */
export interface BoardListener {
  /** A group's row; `isGroupChange`: after a change of the group (not a lag round's, nor the opening's). */
  onRow(row: BoardGroupRow, isGroupChange: boolean): void;
  /** The whole view of the group the page selected; never of another. */
  onGroup(group: BoardGroup): void;
  /**
   * For the group the page selected (GroupBoard.select): every member at once, then once per lag round,
   * before `onTick`, the members whose last heartbeat moved (never empty).
   */
  onHeartbeats(changes: readonly BoardHeartbeats[]): void;
  /** The group went Dead (deleted or expired): its last message. */
  onGone(groupId: string, reason: string, atMs: number): void;
  /** Once per lag round, after every row and view of the round. */
  onTick(nowMs: number): void;
}

/** Where the board reads lag: committed offsets (the group layer) and high watermarks (the log). */
export interface BoardLagSources {
  readonly offsets: Pick<OffsetStore, 'list'>;
  readonly highWatermark: (topicPartitionKey: string) => number | undefined;
}

export interface GroupBoardOptions {
  /** The coordinator's `watchGroups` (GroupEvents.subscribe). */
  readonly watchGroups: (groupIds: readonly string[], listener: GroupChangeListener) => () => void;
  /**
   * The coordinator's `lastHeartbeats` (group-protocol.ts); without it heartbeat ages are those of each
   * group's last change.
   */
  readonly lastHeartbeats: ((groupId: string) => readonly MemberLastHeartbeat[] | undefined) | undefined;
  readonly lag: BoardLagSources | undefined;
  readonly time: Time;
}

/**
 * What the board knows of one group. Its lists are never changed in place, only replaced (a new list, or a
 * new rebalance in a list's place), so a view can hold them as they are: building a view copies nothing,
 * and a view already handed to the pages (and serialised once for all of them, page-stream.ts) never
 * changes under them.
 */
class GroupEntry {
  members: BoardMember[] = [];
  described!: DescribedGroup;
  reason = 'snapshot';
  changedAtMs = 0;
  rebalances: readonly Rebalance[] = [];
  departed: readonly DepartedMember[] = [];
  partitions: BoardPartitionLag[] = [];
  totalLag: string | null = null;
  /** The partitions' lag as one string, to tell a changed sample from an unchanged one cheaply. */
  lagSignature = '';
  lagSamples: readonly (readonly [number, number])[] = [];
  view: BoardGroup | undefined;
  row: BoardGroupRow | undefined;
}

/** The board's once-a-second lag sample, re-added after each run. */
class LagTick extends TimerTask {
  constructor(private readonly sample: () => void) {
    super(BOARD_LAG_INTERVAL_MS);
  }

  run(): void {
    this.sample();
  }
}

function membersOf(group: DescribedGroup): BoardMember[] {
  const isConsumer = group.protocolType === CONSUMER_PROTOCOL_TYPE;
  return group.members.map((m) => {
    let assignment: TopicPartition[] | null = null;
    if (isConsumer && group.groupState === 'Stable') {
      try {
        assignment = decodeAssignment(m.memberAssignment).partitions;
      } catch {
        // Not the consumer protocol after all (a custom client): the page shows no partitions for it.
      }
    }
    return {
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      assignment,
      lastHeartbeatMs: heartbeatMsOf(m.lastHeartbeatMs),
    };
  });
}

/** A member's last heartbeat as the page shows it: the coordinator's 0 (not known) is null. */
function heartbeatMsOf(ms: number): number | null {
  return ms === 0 ? null : ms;
}

/** `list` with `item` added last, its oldest items left out beyond `max`: a new list. */
function appendBounded<T>(list: readonly T[], item: T, max: number): T[] {
  const next = list.slice(Math.max(0, list.length + 1 - max));
  next.push(item);
  return next;
}

/** `list` with its last item replaced by `item`: a new list. */
function replaceLast<T>(list: readonly T[], item: T): T[] {
  const next = list.slice();
  next[next.length - 1] = item;
  return next;
}

/**
 * The admin page's model of every group: one subscription to the coordinator's group changes, shared by
 * every open page, turned into what the page shows: members and their partitions, a timeline of
 * rebalances (start, reasons, generation, end), members that left or expired, and lag per partition.
 * Every page hears each group's row (BoardGroupRow, the groups table's few fields) on each change; only
 * the pages that show a group (`select`) hear its whole view, which is most of the bytes.
 *
 * The board subscribes when the first page opens and stays subscribed until `close()`, so that a page
 * reloaded a minute later still sees the rebalance it missed; before any page opened nobody watches and
 * the coordinator pays nothing. It hears every change (listeners run synchronously inside the
 * coordinator: each is a few Map operations and no I/O), so the timeline is exact even when a slow page's
 * stream coalesces its events. Lag has no events: committed offsets and high watermarks are sampled every
 * BOARD_LAG_INTERVAL_MS while a page is open, computed as the CLI computes them (partition-lag.ts), and
 * pages hear only of groups whose lag changed. Heartbeats have no events either (the heartbeat path stays
 * as it is), and only a group's detail shows them, not the groups table: a page says which group it shows
 * (`select`), and on the same round the board reads the last heartbeats of those groups only, one
 * `lastHeartbeats` call per group selected by any page (members' ids and times, no description), and each
 * page hears, in one small `onHeartbeats`, the members of its group whose heartbeat moved. A page computes
 * the age itself, so it grows between rounds.
 *
 * Worked example: a Stable group at generation 3 whose member's session expires gives (session-expired,
 * PreparingRebalance): a rebalance opens with reasons [session-expired], the member is departed as
 * session-expired; (join-completed, CompletingRebalance, generation 4) sets its generation to 4;
 * (rebalance-completed, Stable) closes it.
 */
export class GroupBoard {
  private readonly groups = new Map<string, GroupEntry>();
  private readonly listeners = new Set<BoardListener>();
  /** The group each page shows, for those that show one. */
  private readonly selections = new Map<BoardListener, string>();
  private unsubscribe: (() => void) | undefined;
  private timer: SystemTimer | undefined;
  private readonly tick: TimerTask;
  private isClosed = false;

  constructor(private readonly options: GroupBoardOptions) {
    this.tick = new LagTick(() => this.sampleLag());
  }

  /** Groups known now. */
  get size(): number {
    return this.groups.size;
  }

  /**
   * Adds a page: it is handed every group now (`onGroup`, synchronously), then every change until the
   * function returned is called. False-y return (undefined) once the board is closed.
   */
  open(listener: BoardListener): (() => void) | undefined {
    if (this.isClosed) return undefined;
    if (this.unsubscribe === undefined) {
      // Each group's snapshot samples its lag as it arrives, so a page's first view of a group has it.
      this.unsubscribe = this.options.watchGroups([], (change) => this.onChange(change));
      this.timer = new SystemTimer({ name: 'admin-page', time: this.options.time });
      this.sampleLag();
    } else if (this.listeners.size === 0) {
      // No page was open, so lag was not sampled: a page opened now must not see it stale. (With pages
      // open it is at most a second old, and sampling again for each page would cost every page.)
      const lag = this.options.lag;
      if (lag !== undefined) for (const entry of this.groups.values()) this.sampleGroup(entry, lag);
    }
    this.listeners.add(listener);
    for (const entry of this.groups.values()) listener.onRow(this.rowOf(entry), false);
    return () => {
      this.listeners.delete(listener);
      this.selections.delete(listener);
    };
  }

  /**
   * The page `listener` shows `groupId`'s detail (undefined: none): it hears the group's whole view now and
   * after each change, and every member's last heartbeat now, read from the coordinator, then once a
   * second those that moved. Pages showing the same group hear of the members that moved now. Nothing for
   * a page that left; for a group not known yet, its view once it appears (and the next rounds read its
   * heartbeats).
   */
  select(listener: BoardListener, groupId: string | undefined): void {
    if (!this.listeners.has(listener)) return;
    if (groupId === undefined) {
      this.selections.delete(listener);
      return;
    }
    this.selections.set(listener, groupId);
    const moved = this.sampleHeartbeats(groupId);
    if (moved !== undefined) {
      const changes = [moved];
      for (const [other, selected] of this.selections)
        if (other !== listener && selected === groupId) other.onHeartbeats(changes);
    }
    const entry = this.groups.get(groupId);
    if (entry === undefined) return;
    listener.onGroup(this.viewOf(entry));
    if (entry.members.length === 0) return;
    listener.onHeartbeats([{ groupId, members: entry.members.map((m) => [m.memberId, m.lastHeartbeatMs]) }]);
  }

  /** Unsubscribes and stops sampling. Idempotent. */
  close(): void {
    this.isClosed = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.timer?.shutdown();
    this.timer = undefined;
    this.listeners.clear();
    this.selections.clear();
  }

  private onChange(change: GroupChange): void {
    const { group, reason, timestampMs } = change;
    const groupId = group.groupId;
    if (group.groupState === 'Dead') {
      if (this.groups.delete(groupId)) for (const l of this.listeners) l.onGone(groupId, reason, timestampMs);
      return;
    }
    let entry = this.groups.get(groupId);
    const isNew = entry === undefined;
    if (entry === undefined) this.groups.set(groupId, (entry = new GroupEntry()));
    const members = membersOf(group);
    if (!isNew) this.track(entry, group, members, reason, timestampMs);
    entry.described = group;
    entry.members = members;
    entry.reason = reason;
    entry.changedAtMs = timestampMs;
    // The owners of partitions change with the assignment; offsets are refreshed on the next sample.
    if (isNew && this.options.lag !== undefined) this.sampleGroup(entry, this.options.lag);
    else this.relabelOwners(entry);
    entry.view = undefined;
    entry.row = undefined;
    this.tellChanged(entry, true);
  }

  /** Every page hears the group's row, and the pages that show it its whole view (built once for all). */
  private tellChanged(entry: GroupEntry, isGroupChange: boolean): void {
    if (this.listeners.size === 0) return;
    const row = this.rowOf(entry);
    for (const l of this.listeners) l.onRow(row, isGroupChange);
    let view: BoardGroup | undefined;
    for (const [l, groupId] of this.selections)
      if (groupId === row.groupId) l.onGroup((view ??= this.viewOf(entry)));
  }

  /** The rebalance timeline and departed members, from one change of a known group. */
  private track(
    entry: GroupEntry,
    after: DescribedGroup,
    members: readonly BoardMember[],
    reason: string,
    atMs: number,
  ): void {
    const remaining = new Set(members.map((m) => m.memberId));
    for (const m of entry.members) {
      if (remaining.has(m.memberId)) continue;
      entry.departed = appendBounded(
        entry.departed,
        {
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          reason,
          atMs,
        },
        BOARD_HISTORY_LENGTH,
      );
    }
    let last = entry.rebalances[entry.rebalances.length - 1];
    const isOpen = last !== undefined && last.endMs === null;
    const update = (changed: Partial<Rebalance>): void => {
      last = { ...last!, ...changed };
      entry.rebalances = replaceLast(entry.rebalances, last);
    };
    const isRebalancing =
      after.groupState === 'PreparingRebalance' || after.groupState === 'CompletingRebalance';
    if (REBALANCE_CAUSES.has(reason) || reason === 'join-completed') {
      if (isOpen) {
        if (REBALANCE_CAUSES.has(reason) && !last.reasons.includes(reason))
          update({ reasons: [...last.reasons, reason] });
        if (reason === 'join-completed') update({ generationId: after.generationId });
      } else if (isRebalancing) {
        entry.rebalances = appendBounded(
          entry.rebalances,
          {
            startMs: atMs,
            reasons: [reason],
            generationId: after.generationId,
            endMs: null,
            endState: null,
          },
          BOARD_HISTORY_LENGTH,
        );
      }
    }
    if (isOpen && !isRebalancing && (after.groupState === 'Stable' || after.groupState === 'Empty')) {
      update({ generationId: after.generationId, endMs: atMs, endState: after.groupState });
    }
  }

  private relabelOwners(entry: GroupEntry): void {
    if (entry.partitions.length === 0) return;
    const owners = new Map<string, string>();
    for (const m of entry.members) {
      for (const tp of m.assignment ?? []) owners.set(topicPartitionKey(tp.topic, tp.partition), m.memberId);
    }
    entry.partitions = entry.partitions.map((p) => ({
      ...p,
      memberId: owners.get(topicPartitionKey(p.topic, p.partition)) ?? null,
    }));
  }

  /** Samples committed offsets and high watermarks; pages hear of the groups whose lag changed. */
  private sampleLag(): void {
    const lag = this.options.lag;
    if (lag !== undefined && this.listeners.size > 0) {
      for (const entry of this.groups.values())
        if (this.sampleGroup(entry, lag)) this.tellChanged(entry, false);
    }
    // Each selected group is read once however many pages show it, and its pages share one message.
    const heartbeats = new Map<string, readonly BoardHeartbeats[] | null>();
    for (const [l, groupId] of this.selections) {
      let changes = heartbeats.get(groupId);
      if (changes === undefined) {
        const moved = this.sampleHeartbeats(groupId);
        heartbeats.set(groupId, (changes = moved === undefined ? null : [moved]));
      }
      if (changes !== null) l.onHeartbeats(changes);
    }
    const nowMs = this.options.time.nowMs();
    for (const l of this.listeners) l.onTick(nowMs);
    if (!this.isClosed) this.timer?.add(this.tick);
  }

  /**
   * Reads the group's last heartbeats from the coordinator now and returns the members whose heartbeat
   * moved, or undefined when none did (or the group is not known, or has no members). Members are matched
   * by id: the board hears every membership change synchronously, so the coordinator has the same members,
   * and a member it lacks is left as it is.
   */
  private sampleHeartbeats(groupId: string): BoardHeartbeats | undefined {
    const entry = this.groups.get(groupId);
    if (entry === undefined || entry.members.length === 0) return undefined;
    const latest = this.options.lastHeartbeats?.(groupId);
    if (latest === undefined) return undefined;
    const lastHeartbeats = new Map(latest);
    let moved: [string, number | null][] | undefined;
    const members = entry.members.map((m) => {
      const ms = lastHeartbeats.get(m.memberId);
      if (ms === undefined) return m;
      const lastHeartbeatMs = heartbeatMsOf(ms);
      if (lastHeartbeatMs === m.lastHeartbeatMs) return m;
      (moved ??= []).push([m.memberId, lastHeartbeatMs]);
      return { ...m, lastHeartbeatMs };
    });
    if (moved === undefined) return undefined;
    entry.members = members;
    entry.view = undefined;
    return { groupId, members: moved };
  }

  /** True if the group's lag changed. */
  private sampleGroup(entry: GroupEntry, lag: BoardLagSources): boolean {
    const groupId = entry.described.groupId;
    const committed: CommittedPartitionOffset[] = [];
    for (const { topic, partition, offset } of lag.offsets.list(groupId)) {
      committed.push({ topic, partition, offset: BigInt(offset.committedOffset) });
    }
    const members: LagMember[] = entry.members;
    const partitions = lagPartitions(members, committed);
    const highWatermarks = partitions.map((tp) => {
      const hw = lag.highWatermark(topicPartitionKey(tp.topic, tp.partition));
      return hw === undefined ? null : BigInt(hw);
    });
    const rows = partitionLags(partitions, members, committed, highWatermarks);
    let signature = '';
    let total: bigint | null = null;
    for (const r of rows) {
      signature += `${r.topic}\u0000${r.partition}\u0000${r.committedOffset}\u0000${r.highWatermark}\u0001`;
      if (r.lag !== null) total = (total ?? 0n) + r.lag;
    }
    if (signature === entry.lagSignature) return false;
    entry.lagSignature = signature;
    entry.partitions = rows.map((r) => ({
      topic: r.topic,
      partition: r.partition,
      committedOffset: r.committedOffset === null ? null : String(r.committedOffset),
      highWatermark: r.highWatermark === null ? null : String(r.highWatermark),
      lag: r.lag === null ? null : String(r.lag),
      memberId: r.memberId,
    }));
    entry.totalLag = total === null ? null : String(total);
    entry.row = undefined;
    if (total !== null) {
      entry.lagSamples = appendBounded(
        entry.lagSamples,
        [this.options.time.nowMs(), Number(total)] as const,
        BOARD_LAG_SAMPLES,
      );
    }
    entry.view = undefined;
    return true;
  }

  private rowOf(entry: GroupEntry): BoardGroupRow {
    if (entry.row !== undefined) return entry.row;
    const g = entry.described;
    const last = entry.rebalances[entry.rebalances.length - 1];
    return (entry.row = {
      groupId: g.groupId,
      state: g.groupState,
      generationId: g.generationId,
      protocolType: g.protocolType,
      protocol: g.protocolData,
      memberCount: entry.members.length,
      totalLag: entry.totalLag,
      lastRebalanceMs: last === undefined ? null : (last.endMs ?? last.startMs),
    });
  }

  private viewOf(entry: GroupEntry): BoardGroup {
    if (entry.view !== undefined) return entry.view;
    const g = entry.described;
    return (entry.view = {
      groupId: g.groupId,
      state: g.groupState,
      generationId: g.generationId,
      protocolType: g.protocolType,
      protocol: g.protocolData,
      members: entry.members,
      reason: entry.reason,
      changedAtMs: entry.changedAtMs,
      rebalances: entry.rebalances,
      departed: entry.departed,
      partitions: entry.partitions,
      totalLag: entry.totalLag,
      lagSamples: entry.lagSamples,
    });
  }
}
