import { ErrorCode } from '../errors';
import type { GroupChange, GroupChangeListener, MemberLastHeartbeat } from '../group';
import type { Time } from '../time';
import { SystemTimer, TimerTask } from '../timer';
import type { BoardGroup, BoardGroupRow, BoardHeartbeats } from './board-views';
import { trackTimeline } from './group-timeline';
import { GroupEntry, heartbeatMsOf, membersOf, rowOf, viewOf } from './group-entry';
import { relabelOwners, sampleGroupLag, type BoardLagSources } from './group-lag';

/** How often lag and high watermarks are sampled while a page is open: the page never polls faster. */
export const BOARD_LAG_INTERVAL_MS = 1_000;
/**
 * Changes the board holds before it works them in (GroupBoard.catchUp): it works them in when a page takes
 * its rows, opens or shows a group, at the lag round, and at this many.
 */
export const BOARD_BACKLOG_LIMIT = 1_000;

/**
 * What a page hears: that rows wait for it (`onRowsWaiting`: it takes them from its BoardSeat when it
 * next writes), the whole view of the group it shows (GroupBoard.select: when it selects it, then after
 * each change of it), that group's members' heartbeats (once a second), or a group's end.
 */
export interface BoardListener {
  /**
   * Some group changed since the page last took its rows (a change of the group, its lag, or its end):
   * it should take them (BoardSeat.takeRows) on its next write, which may then give no row (a group that
   * ended is told by `onGone`). Called once until the page takes them.
   */
  onRowsWaiting(): void;
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

/** What a page takes from its seat: the rows changed since its last take, and how many changes made them. */
export interface TakenRows {
  /** Each group whose row changed since the last take, once, its latest row; oldest change first. */
  readonly rows: readonly BoardGroupRow[];
  /**
   * Group changes since the last take (a lag round's rows are not changes, nor the first take's, nor a
   * group's end: the page counts its `onGone`).
   */
  readonly changes: number;
}

/** A page's place on the board (GroupBoard.open). */
export interface BoardSeat {
  /**
   * The rows changed since the last take; the first take gives every group's row. It first works in the
   * changes the board holds (GroupBoard.catchUp), so this page and others may hear `onGone` and `onGroup`
   * before it returns.
   */
  takeRows(): TakenRows;
  /**
   * Groups whose rows wait to be taken, at most: each change the board still holds counts as one. Works
   * nothing in and calls no listener, so a page may ask while it is being told.
   */
  pendingGroups(): number;
  /** The page leaves the board. Idempotent. */
  leave(): void;
}

/**
 * Hears the groups other nodes coordinate (cluster mode, ClusterGroupFeed): each node's changes of the groups
 * it coordinates, in its order, and that a node's changes stopped (its watch ended: it died, or drains).
 */
export interface RemoteGroupListener {
  onChange(nodeId: number, change: GroupChange): void;
  onNodeLost(nodeId: number): void;
}

export interface GroupBoardOptions {
  /** The coordinator's `watchGroups` (GroupEvents.subscribe). */
  readonly watchGroups: (groupIds: readonly string[], listener: GroupChangeListener) => () => void;
  /** This node's id: the coordinator of the groups `watchGroups` tells of. */
  readonly localNodeId?: number;
  /**
   * Cluster mode: the groups the other nodes coordinate (ClusterGroupFeed.subscribe), so that every node's
   * page shows every group of the cluster. Subscribed with `watchGroups`; returns its unsubscribe.
   */
  readonly remoteGroups?: (listener: RemoteGroupListener) => () => void;
  /**
   * The coordinator's `lastHeartbeats` (group-protocol.ts); without it heartbeat ages are those of each
   * group's last change.
   */
  readonly lastHeartbeats: ((groupId: string) => readonly MemberLastHeartbeat[] | undefined) | undefined;
  readonly lag: BoardLagSources | undefined;
  readonly time: Time;
}

/** One page on the board: where it stands in the list of changes. */
class Seat implements BoardSeat {
  /** The board's `seq` at the page's last take (0: it has taken nothing, so every row waits). */
  cursor = 0;
  /** The board's count of group changes at the page's last take. */
  changesTaken: number;
  /** The page was told rows wait, and has not taken them since. */
  isTold = false;
  isSeated = true;

  constructor(
    readonly listener: BoardListener,
    private readonly board: GroupBoard,
    changes: number,
  ) {
    this.changesTaken = changes;
  }

  takeRows(): TakenRows {
    return this.board.takeRows(this);
  }

  pendingGroups(): number {
    return this.board.pendingGroups(this);
  }

  leave(): void {
    this.board.leave(this);
  }
}

const NO_ROWS: readonly BoardGroupRow[] = Object.freeze([]);
/** The node id of this node's changes when the board was given none (`localNodeId`): no coordinator shown. */
const LOCAL_NODE = -1;
/** Held in the backlog where a node's watch ended (RemoteGroupListener.onNodeLost), with the node's id. */
const NODE_LOST: GroupChange = Object.freeze({
  group: Object.freeze({
    errorCode: ErrorCode.NONE,
    errorMessage: '',
    groupId: '',
    groupState: '',
    protocolType: '',
    protocolData: '',
    members: [],
    generationId: -1,
  }),
  reason: 'snapshot',
  timestampMs: 0,
  isSnapshot: false,
});

/** The board's once-a-second lag sample, re-added after each run. */
class LagTick extends TimerTask {
  constructor(private readonly sample: () => void) {
    super(BOARD_LAG_INTERVAL_MS);
  }

  run(): void {
    this.sample();
  }
}

/**
 * The admin page's model of every group: one subscription to the coordinator's group changes, shared by
 * every open page, turned into what the page shows: members and their partitions, a timeline of
 * rebalances (start, reasons, generation, end), members that left or expired, and lag per partition.
 * Every page gets each changed group's row (BoardGroupRow, the groups table's few fields); only the pages
 * that show a group (`select`) hear its whole view, which is most of the bytes.
 *
 * Rows are pulled, not pushed: a change costs the same however many pages are open. The board keeps its
 * entries in a list in the order their rows last changed (`touch`: one move, one count), and each
 * page's seat (BoardSeat) remembers only where in it the page last took; a page is told once that rows
 * wait and takes them when it writes (page-stream.ts), every changed group once, its latest row. Pages
 * that take at the same point (all of them, in a storm: they are written in the same turn) share one
 * list of rows, so the frames are serialised once too. A page that cannot write takes nothing and costs
 * nothing while groups change.
 *
 * The board subscribes when the first page opens, or when the server starts (`keepHistory`: the server
 * calls it, so that a page opened late shows what happened before it), and stays subscribed until
 * `close()`, so that a page reloaded a minute later still sees the rebalance it missed; a board that
 * neither kept history nor had a page watches nothing, and the coordinator pays nothing. It hears every change (listeners run synchronously inside the
 * coordinator: the board's listener only holds the change, `hear`, and works the changes held in
 * together later, in order, `catchUp`), so the timeline is exact even when a slow page's stream coalesces
 * its events. Lag has no events: committed offsets and high watermarks are sampled every
 * BOARD_LAG_INTERVAL_MS while a page is open, computed as the CLI computes them (partition-lag.ts), and
 * pages hear only of groups whose lag changed (keeping history, it samples with no page open too). Heartbeats have no events either (the heartbeat path stays
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
  private readonly seats = new Map<BoardListener, Seat>();
  /** Seats not told that rows wait (Seat.isTold false): a change tells them, and only them. */
  private untold = 0;
  /** The group each page shows, for those that show one. */
  private readonly selections = new Map<BoardListener, string>();
  /** The list of changes: every entry, the one whose row changed longest ago first. */
  private oldest: GroupEntry | undefined;
  private newest: GroupEntry | undefined;
  /** Row changes so far (each entry's `seq` is its latest's). */
  private seq = 0;
  /** Group changes so far (a lag round's row changes are not). */
  private changes = 0;
  /** The last take's rows, for the next seat taking from the same cursor (pages flush together). */
  private lastTake:
    { readonly cursor: number; readonly seq: number; readonly rows: BoardGroupRow[] } | undefined;
  /** Changes heard and not yet worked in (catchUp), in the order they happened. */
  private backlog: GroupChange[] = [];
  /**
   * For each held change, the node that told of it: its coordinator then (this node's id, or -1 when the
   * board has none). A node lost is held as a change of its own (NODE_LOST) at its place in the order.
   */
  private backlogNodes: number[] = [];
  private unsubscribe: (() => void) | undefined;
  private unsubscribeRemote: (() => void) | undefined;
  private timer: SystemTimer | undefined;
  private readonly tick: TimerTask;
  private isClosed = false;
  /** keepHistory: subscribed from the server's start, lag sampled with no page open. */
  private isKeepingHistory = false;

  constructor(private readonly options: GroupBoardOptions) {
    this.tick = new LagTick(() => this.sampleLag());
  }

  /** Groups known now (the changes held worked in first). */
  get size(): number {
    this.catchUp();
    return this.groups.size;
  }

  /**
   * Adds a page: its seat's first take gives every group's row; after that, a change of a group's row
   * tells the page rows wait (`onRowsWaiting`, once until it takes them), until it leaves. A listener
   * opened again leaves its older seat, and the group it showed. Undefined once the board is closed.
   */
  open(listener: BoardListener): BoardSeat | undefined {
    if (this.isClosed) return undefined;
    this.catchUp();
    if (this.unsubscribe === undefined) {
      this.subscribe();
    } else if (this.seats.size === 0 && !this.isKeepingHistory) {
      // No page was open, so lag was not sampled: a page opened now must not see it stale. (With pages
      // open it is at most a second old, and sampling again for each page would cost every page.)
      const lag = this.options.lag;
      if (lag !== undefined)
        for (const entry of this.groups.values()) sampleGroupLag(entry, lag, this.options.time);
      this.lastTake = undefined;
    }
    const seat = new Seat(listener, this, this.changes);
    this.seats.get(listener)?.leave();
    this.seats.set(listener, seat);
    this.untold++;
    return seat;
  }

  /** BoardSeat.takeRows: the rows of every entry changed since the seat's cursor, oldest first. */
  takeRows(seat: Seat): TakenRows {
    if (!seat.isSeated) return { rows: NO_ROWS, changes: 0 };
    this.catchUp();
    // The page may have left while the changes were worked in (told of them, it dropped itself).
    if (!seat.isSeated) return { rows: NO_ROWS, changes: 0 };
    const changes = this.changes - seat.changesTaken;
    seat.changesTaken = this.changes;
    if (seat.isTold) {
      seat.isTold = false;
      this.untold++;
    }
    if (seat.cursor === this.seq) return { rows: NO_ROWS, changes };
    const cursor = seat.cursor;
    seat.cursor = this.seq;
    const last = this.lastTake;
    if (last !== undefined && last.cursor === cursor && last.seq === this.seq)
      return { rows: last.rows, changes };
    const rows: BoardGroupRow[] = [];
    for (let entry = this.firstAfter(cursor); entry !== undefined; entry = entry.newer)
      rows.push(rowOf(entry));
    this.lastTake = { cursor, seq: this.seq, rows };
    return { rows, changes };
  }

  /** BoardSeat.pendingGroups: entries changed since the seat's last take, and the changes held. */
  pendingGroups(seat: Seat): number {
    if (!seat.isSeated) return 0;
    let count = this.backlog.length;
    for (let entry = this.newest; entry !== undefined && entry.seq > seat.cursor; entry = entry.older)
      count++;
    return count;
  }

  /** BoardSeat.leave. */
  leave(seat: Seat): void {
    if (!seat.isSeated) return;
    seat.isSeated = false;
    if (!seat.isTold) this.untold--;
    if (this.seats.get(seat.listener) === seat) {
      this.seats.delete(seat.listener);
      this.selections.delete(seat.listener);
    }
  }

  /**
   * The page `listener` shows `groupId`'s detail (undefined: none): it hears the group's whole view now and
   * after each change, and every member's last heartbeat now, read from the coordinator, then once a
   * second those that moved. Pages showing the same group hear of the members that moved now. Nothing for
   * a page that left; for a group not known yet, its view once it appears (and the next rounds read its
   * heartbeats).
   */
  select(listener: BoardListener, groupId: string | undefined): void {
    if (!this.seats.has(listener)) return;
    this.catchUp();
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
    listener.onGroup(viewOf(entry));
    if (entry.members.length === 0) return;
    listener.onHeartbeats([{ groupId, members: entry.members.map((m) => [m.memberId, m.lastHeartbeatMs]) }]);
  }

  /**
   * Keeps the groups' history from now on, page or no page: subscribes now (not when the first page
   * opens) and samples lag every BOARD_LAG_INTERVAL_MS, so that a page opened later shows the rebalances,
   * departed members and lag samples of the time before it (each as bounded as ever: BOARD_HISTORY_LENGTH,
   * BOARD_LAG_SAMPLES a group). The server calls it as it starts. Idempotent; nothing once closed.
   */
  keepHistory(): void {
    if (this.isClosed || this.isKeepingHistory) return;
    this.isKeepingHistory = true;
    if (this.unsubscribe === undefined) this.subscribe();
  }

  /** Unsubscribes and stops sampling. Idempotent. */
  close(): void {
    this.isClosed = true;
    this.backlog = [];
    this.backlogNodes = [];
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.unsubscribeRemote?.();
    this.unsubscribeRemote = undefined;
    this.timer?.shutdown();
    this.timer = undefined;
    for (const seat of this.seats.values()) seat.isSeated = false;
    this.seats.clear();
    this.untold = 0;
    this.selections.clear();
  }

  /** Watches every group (this node's and, in a cluster, the other nodes'), and starts the lag rounds. */
  private subscribe(): void {
    // Each group's snapshot samples its lag as it arrives, so a page's first view of a group has it.
    const localId = this.options.localNodeId ?? LOCAL_NODE;
    this.unsubscribe = this.options.watchGroups([], (change) => this.hear(change, localId));
    this.unsubscribeRemote = this.options.remoteGroups?.({
      onChange: (nodeId, change) => this.hear(change, nodeId),
      onNodeLost: (nodeId) => this.hear(NODE_LOST, nodeId),
    });
    this.timer = new SystemTimer({ name: 'admin-page', time: this.options.time });
    this.sampleLag();
  }

  /**
   * A change, as the coordinator makes it: held, not worked in. The coordinator's turn pays one push; the
   * board works the changes in together when someone needs them (catchUp), in one run with its code and
   * data warm, where one change at a time between gRPC calls cost several times as much (a storm's CPU
   * profile, docs/performance.md). Pages not yet told hear now that rows wait, so their flush is due when
   * it would have been.
   */
  private hear(change: GroupChange, nodeId: number): void {
    this.backlog.push(change);
    this.backlogNodes.push(nodeId);
    this.tellSeats();
    if (this.backlog.length >= BOARD_BACKLOG_LIMIT) this.catchUp();
  }

  /**
   * Works in every change held, in order, as if each had been heard at once: the timeline, the departed
   * members and each group's state and row come out the same (a new group's lag is read now, not at its
   * change). Then each page showing a group that changed hears its view, once (its latest). A page that
   * takes its rows from inside a listener call of this (a test's page) takes the changes worked in so
   * far, and is told again at the end if more came after. A change whose working-in throws (a bug) is
   * lost; the ones after it stay held.
   */
  private catchUp(): void {
    const changes = this.backlog;
    const nodes = this.backlogNodes;
    if (changes.length === 0) return;
    this.backlog = [];
    this.backlogNodes = [];
    const since = this.seq;
    let done = 0;
    try {
      while (done < changes.length) {
        const change = changes[done];
        const nodeId = nodes[done++];
        if (change === NODE_LOST) this.onNodeLost(nodeId);
        else this.onChange(change, nodeId);
      }
    } finally {
      if (done < changes.length) {
        this.backlog = [...changes.slice(done), ...this.backlog];
        this.backlogNodes = [...nodes.slice(done), ...this.backlogNodes];
      }
    }
    this.tellChangedSince(since);
  }

  /**
   * After rows changed (`seq` moved past `since`): the seats not told hear that rows wait, and each page
   * showing a group that changed hears its view, once (its latest, built once for all its pages).
   */
  private tellChangedSince(since: number): void {
    if (this.seq === since) return;
    this.tellSeats();
    if (this.selections.size === 0) return;
    const views = new Map<string, BoardGroup | null>();
    for (const [l, groupId] of this.selections) {
      let view = views.get(groupId);
      if (view === undefined) {
        const entry = this.groups.get(groupId);
        views.set(groupId, (view = entry === undefined || entry.seq <= since ? null : viewOf(entry)));
      }
      if (view !== null) l.onGroup(view);
    }
  }

  /**
   * A node's watch ended: the groups it coordinated keep what they showed, with no coordinator known until
   * a node tells of them again (their partition's new leader loads them: `group-loaded`).
   */
  private onNodeLost(nodeId: number): void {
    for (const entry of this.groups.values()) {
      if (entry.coordinatorId !== nodeId) continue;
      entry.coordinatorId = null;
      entry.view = undefined;
      this.touch(entry, true);
    }
  }

  private onChange(change: GroupChange, nodeId: number): void {
    const { group, reason, timestampMs } = change;
    const groupId = group.groupId;
    if (group.errorCode !== ErrorCode.NONE && group.groupState !== 'Dead') {
      // Not described (NOT_COORDINATOR: `group-unloaded`, its partition moved away; a snapshot taken while
      // loading): the node no longer tells of the group. What it showed stays, its coordinator unknown until
      // the partition's new leader tells of it; another node's word changes nothing.
      const entry = this.groups.get(groupId);
      if (entry === undefined || entry.coordinatorId !== nodeId) return;
      entry.coordinatorId = null;
      entry.view = undefined;
      this.touch(entry, true);
      return;
    }
    if (group.groupState === 'Dead') {
      const entry = this.groups.get(groupId);
      if (entry === undefined) return;
      // A node that no longer coordinates the group cannot end it (its word may come after the new one's).
      if (entry.coordinatorId !== null && entry.coordinatorId !== nodeId) return;
      this.groups.delete(groupId);
      this.unlink(entry);
      this.lastTake = undefined;
      for (const seat of this.seats.values()) seat.listener.onGone(groupId, reason, timestampMs);
      return;
    }
    let entry = this.groups.get(groupId);
    const isNew = entry === undefined;
    if (entry === undefined) this.groups.set(groupId, (entry = new GroupEntry()));
    const members = membersOf(group);
    if (!isNew) trackTimeline(entry, group, members, reason, timestampMs);
    entry.coordinatorId = nodeId === LOCAL_NODE ? null : nodeId;
    entry.described = group;
    entry.members = members;
    entry.reason = reason;
    entry.changedAtMs = timestampMs;
    // The owners of partitions change with the assignment; offsets are refreshed on the next sample.
    if (isNew && this.options.lag !== undefined) sampleGroupLag(entry, this.options.lag, this.options.time);
    else relabelOwners(entry);
    entry.view = undefined;
    this.touch(entry, true);
  }

  /** The entry's row changed: it moves last in the list of changes, its row to be built again. */
  private touch(entry: GroupEntry, isGroupChange: boolean): void {
    entry.row = undefined;
    if (this.newest !== entry) {
      this.unlink(entry);
      entry.older = this.newest;
      if (this.newest === undefined) this.oldest = entry;
      else this.newest.newer = entry;
      this.newest = entry;
    }
    entry.seq = ++this.seq;
    if (isGroupChange) this.changes++;
  }

  /** The seats not told since their last take hear that rows wait. */
  private tellSeats(): void {
    if (this.untold === 0) return;
    for (const seat of this.seats.values()) {
      if (seat.isTold) continue;
      seat.isTold = true;
      this.untold--;
      seat.listener.onRowsWaiting();
    }
  }

  /** Takes the entry out of the list of changes (if it is in it). */
  private unlink(entry: GroupEntry): void {
    const { older, newer } = entry;
    if (older === undefined && this.oldest !== entry) return;
    if (older === undefined) this.oldest = newer;
    else older.newer = newer;
    if (newer === undefined) this.newest = older;
    else newer.older = older;
    entry.older = undefined;
    entry.newer = undefined;
  }

  /** The oldest entry of the list of changes changed after `cursor` (a `seq`), or undefined. */
  private firstAfter(cursor: number): GroupEntry | undefined {
    let first: GroupEntry | undefined;
    for (let entry = this.newest; entry !== undefined && entry.seq > cursor; entry = entry.older)
      first = entry;
    return first;
  }

  /** Samples committed offsets and high watermarks; pages hear of the groups whose lag changed. */
  private sampleLag(): void {
    this.catchUp();
    const lag = this.options.lag;
    if (lag !== undefined && (this.seats.size > 0 || this.isKeepingHistory)) {
      const since = this.seq;
      for (const entry of this.groups.values())
        if (sampleGroupLag(entry, lag, this.options.time)) this.touch(entry, false);
      this.tellChangedSince(since);
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
    for (const seat of this.seats.values()) seat.listener.onTick(nowMs);
    if (!this.isClosed) this.timer?.add(this.tick);
  }

  /**
   * Reads the group's last heartbeats from the coordinator now and returns the members whose heartbeat
   * moved, or undefined when none did (or the group is not known, or has no members). Members are matched
   * by id: every caller has worked in the changes held (catchUp), so the coordinator has the same members,
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
}
