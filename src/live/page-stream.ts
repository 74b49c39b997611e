import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Time } from '../time';
import type { ClusterListener, ClusterView } from './cluster-board';
import { CoalescingQueue } from './coalescing-queue';
import type { BoardGroup, BoardGroupRow, BoardHeartbeats } from './board-views';
import type { BoardListener, BoardSeat } from './group-board';
import { SystemTimer, TimerTask } from '../timer';

/** How long a dropped page's connection may take to read its last message before it is cut. */
const DROPPED_SOCKET_TIMEOUT_MS = 10_000;
/**
 * How long a page's frames wait for more before they go out: during a storm every group's changes of
 * that time become one frame, and a page gets one write per interval, not one per change.
 */
export const PAGE_FLUSH_INTERVAL_MS = 100;
/**
 * How often pages are written in a storm of group changes (PageFlushes, PAGE_STORM_CHANGES). A person cannot
 * read ten updates a second of a table that changes everywhere, and every write costs the server the
 * same whatever it holds (about 115 µs of server CPU per write to a local socket on our 2-vCPU VMs, of
 * which the bytes are a small part; bench:live-page, 2026-12-03), so in a storm each page is written once
 * a second, as its tick is.
 */
export const PAGE_STORM_FLUSH_INTERVAL_MS = 1_000;
/**
 * Storm: a flush within the last storm interval wrote some page at least this many group changes (since
 * its write before; the rows of lag rounds are not changes), a rate of 100 changes a second or more at
 * PAGE_FLUSH_INTERVAL_MS. Counting changes, not slots with a change, takes in the storms that come in
 * bursts (a deploy, many groups rebalancing in step: 20 groups cycling every 400 ms lit only 3 of 10
 * slots of 100 ms, and cost each page a write per burst), and leaves out one group rebalancing over and
 * over, which a page should show within 100 ms. A lag round, which gives a row to every consuming group
 * once a second, is no storm: it would keep the pages of any busy cluster at one write a second, and
 * show a rebalance up to a second late on them.
 */
export const PAGE_STORM_CHANGES = 10;

/**
 * How far a page may fall behind before it is dropped. The admin listener passes the gRPC watchers' limits
 * (WatchLimits, src/server/watch-groups.ts): a page is held to the same bounds as a WatchGroups call.
 */
export interface PageLimits {
  /** Groups with a frame waiting for the page's write buffer to drain. */
  readonly maxPendingGroups: number;
  /** How long frames may wait for the write buffer to drain, on the server's monotonic clock. */
  readonly maxLagMs: number;
}

/** One Server-Sent Events frame. JSON.stringify escapes newlines, so `data` is always one line. */
export function sseFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Frames already serialized, by event and view: the board hands every page the same view object, so ten
 * pages cost one JSON.stringify of a change, not ten. Weak: a view nobody holds takes its frame with it.
 */
const SERIALIZED = new Map<string, WeakMap<object, string>>();

function sharedFrame(event: string, data: object): string {
  let byView = SERIALIZED.get(event);
  if (byView === undefined) SERIALIZED.set(event, (byView = new WeakMap()));
  let frame = byView.get(data);
  if (frame === undefined) byView.set(data, (frame = sseFrame(event, data)));
  return frame;
}

/** `later` over `earlier`: each group's members once, the latest time of each, groups in first-seen order. */
function mergeHeartbeats(
  earlier: readonly BoardHeartbeats[],
  later: readonly BoardHeartbeats[],
): BoardHeartbeats[] {
  const byGroup = new Map<string, Map<string, number | null>>();
  for (const change of [...earlier, ...later]) {
    let members = byGroup.get(change.groupId);
    if (members === undefined) byGroup.set(change.groupId, (members = new Map()));
    for (const [memberId, ms] of change.members) members.set(memberId, ms);
  }
  return [...byGroup].map(([groupId, members]) => ({ groupId, members: [...members] }));
}

/** The streams' one flush task, re-added whenever a stream has frames waiting and it is not pending. */
class FlushTask extends TimerTask {
  constructor(
    delayMs: number,
    private readonly flush: () => void,
  ) {
    super(delayMs);
  }

  run(): void {
    this.flush();
  }
}

/**
 * When page streams write: one timer for every page of a server, so that all of them flush in the same
 * turn, every `intervalMs` while any has frames waiting (and never otherwise). The first frame of a quiet
 * stream waits at most `intervalMs`; a group that changed ten times within an interval costs each page
 * one frame, and since every page writes the same group views in the same turn, each view is serialised
 * once for all of them (`sharedFrame`).
 *
 * In a storm (a flush within the last `stormIntervalMs` wrote some page PAGE_STORM_CHANGES group changes
 * or more) the next flush waits `stormIntervalMs` instead, so a page gets one write a second rather than
 * ten. Nothing is lost by it: each group's frame is its latest and holds all the page shows of it (the
 * board keeps the timeline whatever is written). Once a second has passed since the last such flush, the
 * next one is quick again. The storm is one time, set by `flushAll` (no allocation).
 *
 * Worked example, interval 100 ms: group a changes at 0, 20 and 60 ms, b at 80 ms: at 100 ms every page
 * waiting writes a (its 60 ms row) and b in one write each; a change at 120 ms goes out at 220 ms. If
 * 20 groups change at 0 ms, and again every 400 ms, the flush at 100 ms writes all 20; the bursts at
 * 400, 800 and 1,200 ms go out together (each group's latest) at 1,400 ms, those from 1,600 ms at
 * 2,600 ms, and so on.
 */
export class PageFlushes {
  private readonly waiting = new Set<PageStream>();
  private readonly timer: SystemTimer;
  private readonly task: FlushTask;
  private isClosed = false;
  /** When a flush last wrote some page PAGE_STORM_CHANGES group changes or more (monotonic ms). */
  private busyFlushAtMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly time: Time,
    private readonly intervalMs: number = PAGE_FLUSH_INTERVAL_MS,
    private readonly stormIntervalMs: number = PAGE_STORM_FLUSH_INTERVAL_MS,
  ) {
    this.timer = new SystemTimer({ name: 'admin-page-flush', time });
    this.task = new FlushTask(intervalMs, () => this.flushAll());
  }

  /** True within a storm interval of a flush that was a storm's (see the class): flushes are then slower. */
  get isStorm(): boolean {
    return this.time.monotonicMs() - this.busyFlushAtMs < this.stormIntervalMs;
  }

  /** `stream` has frames waiting: it writes them on the next flush. */
  request(stream: PageStream): void {
    if (this.isClosed) return;
    this.waiting.add(stream);
    if (this.task.isPending) return;
    this.task.delayMs = this.isStorm ? this.stormIntervalMs : this.intervalMs;
    this.timer.add(this.task);
  }

  /** Stops the timer; frames still waiting are not written (their streams are being ended). Idempotent. */
  close(): void {
    this.isClosed = true;
    this.waiting.clear();
    this.timer.shutdown();
  }

  private flushAll(): void {
    const streams = [...this.waiting];
    this.waiting.clear();
    let mostChanges = 0;
    let next = 0;
    try {
      for (; next < streams.length; next++) mostChanges = Math.max(mostChanges, streams[next].flush());
    } finally {
      // A flush that threw (a bug) must not leave itself, or the pages after it, waiting for good.
      for (let i = next; i < streams.length; i++) this.request(streams[i]);
    }
    if (mostChanges >= PAGE_STORM_CHANGES) this.busyFlushAtMs = this.time.monotonicMs();
  }
}

/** A `gone` frame's data. */
interface GoneGroup {
  readonly groupId: string;
  readonly reason: string;
  readonly atMs: number;
}

/**
 * One open admin page: its Server-Sent Events stream (`GET /api/stream`), fed by the GroupBoard. A group
 * change costs the page nothing: the board keeps which groups changed once for every page and tells the
 * page once that rows wait (`onRowsWaiting`); the page takes them from its BoardSeat only when it writes,
 * each group once, its latest row. The other frames (a shown group's view, heartbeats, the cluster's view,
 * a group gone) wait in the page itself, one of each kind (gone frames in a CoalescingQueue, one per
 * group). All go out in one write on the next flush of `flushes` (PageFlushes: every
 * PAGE_FLUSH_INTERVAL_MS while something waits, all pages in the same turn): a storm of changes costs a
 * page one write an interval, not one per change, and a rebalance's intermediate states within an
 * interval are never sent (a group's row and view hold all the page shows of it, so nothing is lost). The
 * snapshot of every group on open goes out at once, in one write. Once `write` returns false (the page
 * reads slower than groups change) everything keeps waiting, the rows on the board, until 'drain'. The
 * board never waits. A page with more groups waiting than `maxPendingGroups`, or frames waiting longer
 * than `maxLagMs` (checked when it is told something waits and each second), is dropped: it leaves the
 * board, lets go of what waits, and is sent an `event: dropped` frame saying why (the page shows it and
 * reconnects for a fresh snapshot).
 *
 * Frames: `row` (a group's row of the groups table, BoardGroupRow: for each group on open, on each change,
 * and after its lag changed, at most once a second), `group` (the whole view of the group the page shows,
 * timeline, departed members, partitions and lag samples included: when the page selects it, then on the
 * same occasions as its row; one waits at most, the latest, written after the rows), `gone` (the group was
 * deleted or expired), `cluster` (the cluster panel's whole view, cluster-board.ts: on open and after each
 * change; one waits at most, the latest, written last), `heartbeats` (members of the group the page shows
 * and their last heartbeat: all of them when it selects the group, then those that moved, once a second;
 * those waiting are merged into one, written after the group's view so that an older view never
 * overwrites them), `tick` (the server's clock, once a second: the page shows the stream is alive;
 * written with the frames of the next flush when some wait, with the clock of that flush) and `dropped`.
 * The first frame, `hello`, carries the server's clock and the stream's id, which the page
 * names when it tells the server which group it shows (`POST /api/stream/select`).
 */
export class PageStream implements BoardListener, ClusterListener {
  /** The stream's name for `POST /api/stream/select`: random, so that no page can steer another's. */
  readonly id = randomUUID();
  /** Groups gone, not yet written: one frame per group. */
  private readonly queue = new CoalescingQueue<GoneGroup>();
  /** The latest whole view of the group the page shows, not yet written (one: a page shows one group). */
  private pendingDetail: BoardGroup | undefined;
  /** The latest cluster view not yet written: it replaces any older one. */
  private pendingCluster: ClusterView | undefined;
  /** The latest heartbeats not yet written: a page that fell behind catches up on its next group frames. */
  private pendingHeartbeats: readonly BoardHeartbeats[] | undefined;
  /** A tick is due with the frames waiting: the next flush writes it last, with the clock then. */
  private isTickPending = false;
  /** Groups gone since the last flush (PageFlushes: a storm; the board counts the other changes). */
  private goneSinceFlush = 0;
  /** The board has rows for the page (BoardListener.onRowsWaiting): the next flush takes them. */
  private isRowsWaiting = true;
  private blockedSinceMs: number | undefined;
  private seat: BoardSeat | undefined;
  private isEnded = false;

  constructor(
    private readonly response: ServerResponse,
    private readonly limits: PageLimits,
    private readonly time: Time,
    private readonly flushes: PageFlushes,
    private readonly onDropped: (pendingGroups: number) => void,
  ) {}

  /** Groups with a frame waiting for the page to read: in its queue, or rows it has not taken yet. */
  get pendingFrames(): number {
    return this.queue.size + (this.seat?.pendingGroups() ?? 0);
  }

  /** Starts the stream; `join` adds this page to the boards and returns its seat (whose leave leaves all). */
  open(join: (listener: BoardListener & ClusterListener) => BoardSeat | undefined): void {
    this.response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      // Proxies (nginx) would otherwise buffer the stream and the page would not be live.
      'x-accel-buffering': 'no',
    });
    this.response.on('drain', () => this.onDrain());
    this.response.on('close', () => this.end());
    this.write(sseFrame('hello', { nowMs: this.time.nowMs(), streamId: this.id }));
    const seat = join(this);
    if (seat === undefined) this.end();
    else if (this.isEnded) seat.leave();
    else {
      this.seat = seat;
      // The snapshot (every group's row, the cluster) is what the page renders first: it does not wait.
      this.flush();
    }
  }

  onRowsWaiting(): void {
    if (this.isEnded) return;
    this.isRowsWaiting = true;
    this.scheduleFlush();
  }

  onGroup(group: BoardGroup): void {
    if (this.isEnded) return;
    this.pendingDetail = group;
    this.scheduleFlush();
  }

  onGone(groupId: string, reason: string, atMs: number): void {
    if (this.isEnded) return;
    this.goneSinceFlush++;
    if (this.pendingDetail?.groupId === groupId) this.pendingDetail = undefined;
    this.queue.put(groupId, { groupId, reason, atMs });
    this.scheduleFlush();
  }

  onHeartbeats(changes: readonly BoardHeartbeats[]): void {
    if (this.isEnded) return;
    // One waiting is the common case (shared, serialized once for every page); merged only when behind.
    this.pendingHeartbeats =
      this.pendingHeartbeats === undefined ? changes : mergeHeartbeats(this.pendingHeartbeats, changes);
    this.scheduleFlush();
  }

  onCluster(view: ClusterView): void {
    if (this.isEnded) return;
    this.pendingCluster = view;
    this.scheduleFlush();
  }

  onTick(nowMs: number): void {
    if (this.isEnded) return;
    // A page that reads nothing is dropped after maxLagMs even when no group changes.
    if (this.blockedSinceMs !== undefined) this.checkLimits();
    // With frames waiting (the round's heartbeats, or a storm's rows) the tick goes out in their write:
    // each write costs the server about the same whatever it holds (PAGE_STORM_FLUSH_INTERVAL_MS).
    else if (this.hasPending()) this.isTickPending = true;
    else this.write(sseFrame('tick', { nowMs }));
  }

  /** Ends the stream (the server closes, or the page went away). Idempotent. */
  end(): void {
    if (this.isEnded) return;
    this.stop();
    if (!this.response.writableEnded) this.response.end();
  }

  /** Marks the stream ended, leaves the board and lets go of every frame still waiting. */
  private stop(): void {
    this.isEnded = true;
    this.seat?.leave();
    this.seat = undefined;
    this.isRowsWaiting = false;
    this.queue.clear();
    this.pendingDetail = undefined;
    this.pendingCluster = undefined;
    this.pendingHeartbeats = undefined;
    this.isTickPending = false;
  }

  private hasPending(): boolean {
    return (
      this.isRowsWaiting ||
      this.queue.size > 0 ||
      this.pendingDetail !== undefined ||
      this.pendingCluster !== undefined ||
      this.pendingHeartbeats !== undefined
    );
  }

  private scheduleFlush(): void {
    if (this.blockedSinceMs !== undefined) this.checkLimits();
    else this.flushes.request(this);
  }

  private checkLimits(): void {
    const { maxPendingGroups, maxLagMs } = this.limits;
    if (this.pendingFrames > maxPendingGroups) {
      this.drop(`the page fell behind on more than ${maxPendingGroups} groups (watchMaxPendingGroups)`);
    } else if (this.time.monotonicMs() - this.blockedSinceMs! > maxLagMs) {
      this.drop(`the page has not read its stream for more than ${maxLagMs} ms (watchMaxLagMs)`);
    }
  }

  private write(frame: string): void {
    if (!this.response.write(frame)) this.blockedSinceMs = this.time.monotonicMs();
  }

  /**
   * Writes the groups gone, then the rows it takes from the board (each changed group once, the one
   * changed last last), then the shown group's view, the heartbeats, the
   * cluster's and a tick that was due, in one write (PageFlushes calls it; nothing while the page has not
   * read the last write). Returns how many group changes it heard since its last write.
   */
  flush(): number {
    if (this.isEnded || this.blockedSinceMs !== undefined) return 0;
    if (!this.hasPending() && !this.isTickPending) return 0;
    let rows: readonly BoardGroupRow[] = [];
    let changes = 0;
    if (this.isRowsWaiting && this.seat !== undefined) {
      // Taken only now, at the write: the board keeps which groups changed once for every page, so a
      // change costs nothing per page, and pages that write together share one list (and its frames).
      // Taking may first tell this page of a group gone, or the shown group's view (GroupBoard.catchUp).
      const taken = this.seat.takeRows();
      this.isRowsWaiting = false;
      ({ rows, changes } = taken);
    }
    changes += this.goneSinceFlush;
    this.goneSinceFlush = 0;
    let chunk = '';
    // Gone first: a group that went and came back since the last write is gone, then new, on the page.
    for (let frame = this.queue.shift(); frame !== undefined; frame = this.queue.shift())
      chunk += sharedFrame('gone', frame);
    for (const row of rows) chunk += sharedFrame('row', row);
    if (this.pendingDetail !== undefined) chunk += sharedFrame('group', this.pendingDetail);
    this.pendingDetail = undefined;
    if (this.pendingHeartbeats !== undefined) chunk += sharedFrame('heartbeats', this.pendingHeartbeats);
    this.pendingHeartbeats = undefined;
    if (this.pendingCluster !== undefined) chunk += sharedFrame('cluster', this.pendingCluster);
    this.pendingCluster = undefined;
    if (this.isTickPending) chunk += sseFrame('tick', { nowMs: this.time.nowMs() });
    this.isTickPending = false;
    // The board may have had no rows after all (the opening take of an empty board, or only groups gone).
    if (chunk !== '') this.write(chunk);
    return changes;
  }

  private onDrain(): void {
    this.blockedSinceMs = undefined;
    this.flush();
  }

  private drop(message: string): void {
    this.onDropped(this.pendingFrames);
    this.stop();
    // The last frame waits behind what the page has not read; a page that never reads is cut.
    this.response.socket?.setTimeout(DROPPED_SOCKET_TIMEOUT_MS, () => this.response.socket?.destroy());
    this.response.end(sseFrame('dropped', { message: `${message}: reload the page` }));
  }
}
