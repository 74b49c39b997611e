/**
 * The live page's server-side JavaScript in a storm, in this process and nothing else: a GroupCoordinator
 * on a manual clock, 20 groups each cycling JoinGroup (for a member id) → JoinGroup → SyncGroup →
 * LeaveGroup, with and without a GroupBoard and `pages` PageStreams on responses that take every write
 * and send nothing. There is no gRPC, no socket and no other process, so it measures what the board and
 * the streams' code add to the coordinator's own and nothing else, within a percent or two a run: a quick
 * check of a change to group-board.ts or page-stream.ts before the ~6-minute `--only=cpu` run, which is
 * what the issue's figure is. (In `--only=cpu` the coordinator's share of a rebalance is small beside
 * grpc-js's, and the writes to real sockets add ~115 µs each, so the two figures are not comparable.)
 *
 * The clock advances 20 ms after every round of 20 cycles (40 rebalances): 2,000 rebalances a second of
 * clock, so page flushes (every 100 ms, every second in a storm), lag rounds and ticks fall due as they
 * would, per rebalance, in a 100 rebalances/s storm; every page shows the first group, as the bench's
 * readers do. Rounds alternate: the coordinator alone (no board subscribed), then with a fresh board and
 * its pages; each measured by process.cpuUsage per cycle.
 */
import { DEFAULT_GROUP_CONFIG } from '../../src/group/group-config';
import { GroupCoordinator } from '../../src/group/group-coordinator';
import type { ServerResponse } from 'node:http';
import { GroupBoard } from '../../src/live/group-board';
import { PageFlushes, PageStream } from '../../src/live/page-stream';
import { ManualTime } from '../../src/time';
import { median } from '../support/stats';
import { stormCycle, type StormCalls } from './storm-cycle';

const GROUP_COUNT = 20;
const CLOCK_STEP_MS = 20;
const CONTEXT = { clientHost: '127.0.0.1' };
const LIMITS = { maxPendingGroups: 100_000, maxLagMs: 3_600_000 };

/** A response that takes every write: the streams' code runs in full, and no byte goes anywhere. */
class SinkResponse {
  writes = 0;
  writableEnded = false;
  readonly socket = undefined;
  writeHead(): this {
    return this;
  }
  on(): this {
    return this;
  }
  write(): boolean {
    this.writes++;
    return true;
  }
  end(): void {
    this.writableEnded = true;
  }
}

export interface BoardStormFigures {
  /** The coordinator alone, µs of CPU per cycle (two rebalances), median of the rounds. */
  readonly withoutUs: number;
  /** With the board and the pages. */
  readonly withUs: number;
  /** Per round: with − without, as a share of without; the median. */
  readonly addedShare: number;
  readonly addedUsPerCycle: number;
  /** Page writes per second of the manual clock, per page (a storm: about one). */
  readonly writesPerPageSecond: number;
}

export async function boardStorm(
  pageCount: number,
  rounds: number,
  cycles: number,
): Promise<BoardStormFigures> {
  const time = new ManualTime();
  const coordinator = new GroupCoordinator(
    { ...DEFAULT_GROUP_CONFIG, groupInitialRebalanceDelayMs: 0 },
    time,
  );
  const calls: StormCalls = {
    joinGroup: (request) => coordinator.joinGroup(request, CONTEXT),
    syncGroup: (request) => coordinator.syncGroup(request, CONTEXT),
    leaveGroup: (request) => coordinator.leaveGroup(request, CONTEXT),
  };
  const cycle = (groupId: string): Promise<void> => stormCycle(calls, groupId);
  const groupIds = Array.from({ length: GROUP_COUNT }, (_, g) => `storm-${g}`);
  /** µs of CPU per cycle over `rounds` rounds of every group's cycle. */
  const run = async (count: number): Promise<number> => {
    const start = process.cpuUsage();
    for (let i = 0; i < count; i++) {
      await Promise.all(groupIds.map(cycle));
      time.advance(CLOCK_STEP_MS);
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / (count * GROUP_COUNT);
  };
  const flushes = new PageFlushes(time);
  let writes = 0;
  let pageMs = 0;
  const withPages = async (count: number): Promise<number> => {
    const board = new GroupBoard({
      watchGroups: coordinator.watchGroups.bind(coordinator),
      lastHeartbeats: coordinator.lastHeartbeats.bind(coordinator),
      lag: undefined,
      time,
    });
    const responses = Array.from({ length: pageCount }, () => new SinkResponse());
    const streams = responses.map(
      (response) =>
        new PageStream(response as unknown as ServerResponse, LIMITS, time, flushes, () => undefined),
    );
    for (const stream of streams) {
      stream.open((listener) => {
        const seat = board.open(listener);
        board.select(listener, groupIds[0]);
        return seat;
      });
    }
    const perCycleUs = await run(count);
    for (const stream of streams) stream.end();
    board.close();
    writes += responses.reduce((sum, r) => sum + r.writes, 0);
    pageMs += count * CLOCK_STEP_MS * pageCount;
    return perCycleUs;
  };
  // Warm-up: V8 compiles both paths before anything is measured.
  await run(cycles);
  await withPages(cycles);
  writes = 0;
  pageMs = 0;
  const pairs: [number, number][] = [];
  for (let round = 0; round < rounds; round++) {
    const without = await run(cycles);
    const withUs = await withPages(cycles);
    pairs.push([without, withUs]);
    console.log(
      `  round ${round + 1}/${rounds}: ${without.toFixed(1)} µs a cycle alone, ${withUs.toFixed(1)} µs with ` +
        `the board and ${pageCount} pages: +${(withUs - without).toFixed(1)} µs`,
    );
  }
  flushes.close();
  coordinator.shutdown();
  return {
    withoutUs: median(pairs.map(([a]) => a)),
    withUs: median(pairs.map(([, b]) => b)),
    addedShare: median(pairs.map(([a, b]) => (b - a) / a)),
    addedUsPerCycle: median(pairs.map(([a, b]) => b - a)),
    writesPerPageSecond: pageCount === 0 ? 0 : (writes * 1000) / pageMs,
  };
}
