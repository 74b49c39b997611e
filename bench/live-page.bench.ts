/**
 * bench:live-page — the admin page in headless chromium (Debian's, driven by puppeteer-core), against a
 * real server in this process:
 *
 * 1. First render of the groups table with 1,000 groups: from the page's navigation start to the moment
 *    the table lists all 1,000 (its `aria-rowcount`; the table is windowed, so only the rows in view are in
 *    the DOM) and shows its first rows (performance.now() in the page, checked every animation frame),
 *    over `--rounds` reloads. Goal ≤ 1 s.
 * 2. Time from a rebalance completing to the page showing it: one SDK member stays in a group; a second
 *    joins and leaves, `--rebalances` times in all. For each generation, the server's wall clock at its
 *    `rebalance-completed` event (from a WatchGroups watch) against the page's wall clock when its
 *    generation card shows that generation (a MutationObserver). Both clocks are this machine's. Goal:
 *    median and p99 ≤ 250 ms. Where the time went is printed too: per rebalance, the server's write of
 *    the generation's first frame (often before rebalance-completed: the card shows the generation from
 *    CompletingRebalance on), the page's stream reader decoding it, and the card changing; GC pauses of
 *    this process and long tasks of the page that overlapped; and the page's main-thread time by kind
 *    (script, layout, style: Chromium's Performance metrics) over the rebalances.
 *
 * 3. Server CPU that 10 open pages cost during a rebalance storm: 20 groups each cycling JoinGroup →
 *    SyncGroup → LeaveGroup over raw gRPC (two rebalances a cycle: one completed, one emptied) paced at
 *    `--storm-rate` rebalances/s. `--pairs` pairs; each pair is two fresh servers in child processes,
 *    alike but for the pages, living through the same seconds (`pairWindow`): one never sees a page (the
 *    board never subscribes), the other has had 10 pages open since its warm-up (the board's
 *    subscription, its once-a-second rounds and the streams all count, as they would on a real server).
 *    Both are stormed at once, first a warm-up of `--warm-ms` (V8 must have compiled the hot paths, or the
 *    window measures the JIT as much as the pages), then the measured window of `--storm-ms`, so that
 *    whatever else the shared machine does in those seconds falls on both alike; pairs alternate which of
 *    the two is spawned first. (Measured one after the other, each alone, two servers without pages
 *    differed by up to ±7% a pair, and by 9% in one direction when one of them idled while the other
 *    warmed; side by side, within a few %.) Per window, each stormed child's CPU (every thread's run time
 *    from /proc/PID/task/<tid>/schedstat, in ns; /proc/PID/stat's 10 ms ticks are too coarse for a 5%
 *    target) per rebalance; per pair, what the pages add as a share of the server without; printed: the
 *    median share over the pairs and their spread (min, max).
 *    The pages are readers that make exactly a real page's requests (the page's files, its stream, the
 *    select request naming the group it shows: the first it hears of), and read the stream as fast as it
 *    comes: the server's cost is the same whoever reads, and 10 Chromium pages rendering a storm would take
 *    the 2 cores the server and the storm need. First, one real page in headless Chromium is opened
 *    against a server of its own for a few seconds and every request it makes is recorded; the run fails if it
 *    made one the readers do not, or made any request again after loading (a periodic refresh).
 *    Goal: ≤ 5% with 10 pages at 100 rebalances/s.
 *
 * 4. The same storm's cost in this process, without gRPC or sockets (bench/live-page/board-storm.ts): a
 *    GroupCoordinator alone against one with the board and `--pages` page streams on responses that go
 *    nowhere, in alternating rounds (`--board-rounds`, default 6, of `--board-cycles`, default 1,500,
 *    rounds of the 20 groups' cycles). It takes ~20 s and varies by a few µs a run: a quick check of a
 *    change to the board or the streams. It is not figure 3 (no grpc-js, no socket writes).
 *
 * 5. What the history the server keeps from its start costs with no page open (bench/live-page/history-cost.ts,
 *    in this process): a storm's cycle with and without it, the once-a-second lag round over
 *    `--history-groups` groups (default 1,000) whose lag moves every second, and the heap per group once
 *    every history list is full, each against the server without history in the same run.
 *
 * Run with `npm run bench:live-page`. Options: `--rounds=N` (default 5), `--rebalances=N` (default 100),
 * `--storm-rate=N` (default 100), `--warm-ms=N` (default 10,000), `--storm-ms=N` (default 8,000),
 * `--pairs=N` (default 6), `--pages=N` (default 10; `--pages=0` compares two servers without pages: the
 * spread between alike processes),
 * `--only=render,rebalance,cpu,board,history`, `--server-node-args="..."` (Node flags for figure 3's servers, which
 * are then stopped with SIGTERM, not SIGKILL: `--cpu-prof --cpu-prof-dir=DIR` profiles them).
 * The last line of output is a JSON object of the figures.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { ServerResponse } from 'node:http';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { CohortClient, type GroupWatchEvent } from '../src';
import { createConfig } from '../src/config';
import { createServer } from '../src/server';
import { readFileSync } from 'node:fs';
import { launchChromium } from '../test/support/chromium';
import { groupCoordinatorClient } from '../test/support/grpc-clients';
import { offsetCommitRequest } from '../test/support/group-harness';
import { spawnCohort } from '../test/support/spawn-cohort';
import { boardStorm } from './live-page/board-storm';
import { historyCost } from './live-page/history-cost';
import { stormCycle } from './live-page/storm-cycle';
import { median } from './support/stats';

const GROUPS = 1_000;
const TOPIC = 'bench-orders';

function option(name: string, fallback: number): number {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found === undefined ? fallback : Number(found.slice(name.length + 3));
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** The page's globals, as the functions run in it see them (this project compiles without the DOM lib). */
interface InPage {
  readonly document: {
    querySelectorAll(selector: string): { length: number };
    querySelector(
      selector: string,
    ): { textContent: string | null; getAttribute(name: string): string | null } | null;
  };
  readonly performance: { now(): number; readonly timeOrigin: number };
  readonly MutationObserver: new (callback: () => void) => {
    observe(target: unknown, options: object): void;
  };
  seen?: Record<string, number>;
  /** Generation → when the page's stream reader first decoded a frame of it (Date.now()). */
  arrived?: Record<string, number>;
  /** Long tasks of the page's main thread: [start (wall clock), duration] in ms. */
  longTasks?: [number, number][];
}

/** The rebalancing group's frames as the stream carries them: its state and generation follow its id. */
const FRAME_GENERATIONS = /"groupId":"bench-rebalancing","state":"\w+","generationId":(\d+)/g;

/** Generations named by the rebalancing group's frames in `chunk`. */
function generationsIn(chunk: string): number[] {
  return [...chunk.matchAll(FRAME_GENERATIONS)].map((m) => Number(m[1]));
}

/** Where the time of one rebalance went, each stage from the end of the one before, in ms. */
interface Breakdown {
  readonly generation: number;
  /** rebalance-completed → the page stream's write of the generation's first frame (may be < 0). */
  readonly serverMs: number;
  /** That write → the page's reader decoding it (the socket, the browser's network stack). */
  readonly transportMs: number;
  /** Decoded → the generation card showing it (JSON.parse, the animation frame, the render). */
  readonly pageMs: number;
  readonly totalMs: number;
  /** Server-process GC pauses that overlapped [completed, shown], in ms. */
  readonly serverGcMs: number;
  /** Page long tasks that overlapped [completed, shown], in ms. */
  readonly pageLongTaskMs: number;
}

/** Sum of the parts of `[start, duration]` intervals inside [fromMs, toMs]. */
function overlapMs(intervals: readonly (readonly [number, number])[], fromMs: number, toMs: number): number {
  let sum = 0;
  for (const [start, duration] of intervals) {
    sum += Math.max(0, Math.min(toMs, start + duration) - Math.max(fromMs, start));
  }
  return Math.round(sum);
}

/** CPU time of a process, in seconds: every thread's, and its main thread's (the event loop's) alone. */
interface ProcessCpu {
  readonly all: number;
  readonly main: number;
}

/**
 * CPU seconds the process has used: the run time of each of its threads (/proc/PID/task/TID/schedstat, ns),
 * summed, and the main thread's (its tid is the pid). Node's threads (main, libuv pool, V8's helpers) live
 * as long as the process.
 */
function cpuSecondsOf(pid: number): ProcessCpu {
  let ns = 0;
  let mainNs = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const threadNs = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      ns += threadNs;
      if (Number(tid) === pid) mainNs = threadNs;
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return { all: ns / 1e9, main: mainNs / 1e9 };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the storm for `durationMs` at `ratePerS` rebalances/s; returns the rebalances made. */
async function storm(target: string, ratePerS: number, durationMs: number): Promise<number> {
  const workers = 20;
  const cyclePeriodMs = (workers * 2 * 1000) / ratePerS;
  const endMs = Date.now() + durationMs;
  let rebalances = 0;
  const client = groupCoordinatorClient(target);
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const groupId = `storm-${w}`;
      while (Date.now() < endMs) {
        const started = Date.now();
        await stormCycle(client, groupId);
        rebalances += 2;
        await sleep(Math.max(0, cyclePeriodMs - (Date.now() - started)));
      }
    }),
  );
  client.close();
  return rebalances;
}

/** What index.html loads, in its order (the browser also asks for a favicon: a 404). */
const PAGE_FILES = [
  '/',
  '/assets/uPlot.min.css',
  '/assets/page.css',
  '/assets/uPlot.iife.min.js',
  '/assets/page.js',
  '/favicon.ico',
];

/**
 * One page as the server sees it (static/admin/page.js): it loads the page's files, opens the stream, and
 * once it has heard the stream's id and a group (a page opened at `/` shows the first group it hears of)
 * says so with one select request; then it reads until `signal` aborts. Resolves once the select is sent.
 */
async function openPage(adminUrl: string, signal: AbortSignal): Promise<{ reading: Promise<void> }> {
  for (const path of PAGE_FILES) await (await fetch(`${adminUrl}${path}`, { signal })).arrayBuffer();
  const response = await fetch(`${adminUrl}/api/stream`, { signal });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let streamId: string | undefined;
  let groupId: string | undefined;
  while (streamId === undefined || groupId === undefined) {
    const { done, value } = await reader.read();
    if (done) throw new Error('the stream ended before a group was shown');
    text += decoder.decode(value, { stream: true });
    streamId ??= /"streamId":"([^"]+)"/.exec(text)?.[1];
    groupId ??= /event: row\ndata: \{"groupId":("(?:[^"\\]|\\.)*")/.exec(text)?.[1];
  }
  const query = new URLSearchParams({ stream: streamId, group: JSON.parse(groupId) as string });
  const selected = await fetch(`${adminUrl}/api/stream/select?${query}`, { method: 'POST', signal });
  if (selected.status !== 204) throw new Error(`select answered ${selected.status}`);
  const reading = (async () => {
    for (;;) if ((await reader.read()).done) return;
  })().catch(() => undefined);
  return { reading };
}

/** `METHOD /path` of a request, query left out. */
function requestKey(method: string, url: string): string {
  return `${method} ${new URL(url).pathname}`;
}

/**
 * Opens the page in headless Chromium against a server with groups, records every request it makes while
 * it loads and over the next `watchMs`, and checks that the readers make the same ones and that the page
 * makes none again (no polling).
 */
async function checkPageRequests(ratePerS: number, watchMs: number): Promise<string[]> {
  const flags = process.argv.find((a) => a.startsWith('--server-node-args='))?.slice(19);
  const cohort = spawnCohort(
    ['--listen', '127.0.0.1:0', '--group-initial-rebalance-delay-ms', '0'],
    {},
    // A profile (--cpu-prof) is written at exit: the server must be let to exit, not killed.
    flags === undefined ? {} : { nodeArgs: flags.split(' ').filter((f) => f !== ''), killSignal: 'SIGTERM' },
  );
  const browser = await launchChromium();
  try {
    const listening = (await cohort.waitForLog('cohort listening')) as unknown as {
      address: string;
      adminAddress: string;
    };
    const storming = storm(listening.address, ratePerS, 1_500 + watchMs);
    await sleep(500); // groups exist before the page opens, as in the measured windows
    const page = await browser.newPage();
    const requests: { key: string; atMs: number }[] = [];
    page.on('request', (r) => requests.push({ key: requestKey(r.method(), r.url()), atMs: Date.now() }));
    await page.goto(`http://${listening.adminAddress}/`);
    await page.waitForFunction(
      () => (globalThis as unknown as InPage).document.querySelector('[data-testid=group-title]') !== null,
      { timeout: 10_000 },
    );
    const loadedAtMs = Date.now();
    await sleep(watchMs);
    await page.close();
    await storming;
    const made = [...new Set(requests.map((r) => r.key))];
    const readers = new Set([
      ...PAGE_FILES.map((p) => `GET ${p}`),
      'GET /api/stream',
      'POST /api/stream/select',
    ]);
    const unmatched = made.filter((key) => !readers.has(key));
    if (unmatched.length > 0)
      throw new Error(`the page made requests the readers do not: ${unmatched.join(', ')}`);
    // The select request goes out on the first render after the first group: allow it a second.
    const later = requests.filter((r) => r.atMs > loadedAtMs + 1_000);
    if (later.length > 0)
      throw new Error(`the page kept making requests: ${later.map((r) => r.key).join(', ')}`);
    return made;
  } finally {
    await browser.close();
    await cohort.kill();
  }
}

interface CpuPair {
  readonly withoutUs: number;
  readonly withUs: number;
  /** (with − without) / without. */
  readonly share: number;
  /** The main thread's part of `withUs − withoutUs`, per rebalance (the rest: V8's and libuv's threads). */
  readonly mainAddedUs: number;
}

interface StormedServer {
  readonly cohort: ReturnType<typeof spawnCohort>;
  readonly address: string;
  readonly adminAddress: string;
}

async function startStormed(): Promise<StormedServer> {
  const flags = process.argv.find((a) => a.startsWith('--server-node-args='))?.slice(19);
  const cohort = spawnCohort(
    ['--listen', '127.0.0.1:0', '--group-initial-rebalance-delay-ms', '0'],
    {},
    // A profile (--cpu-prof) is written at exit: the server must be let to exit, not killed.
    flags === undefined ? {} : { nodeArgs: flags.split(' ').filter((f) => f !== ''), killSignal: 'SIGTERM' },
  );
  const listening = (await cohort.waitForLog('cohort listening')) as unknown as {
    address: string;
    adminAddress: string;
  };
  return { cohort, address: listening.address, adminAddress: listening.adminAddress };
}

/**
 * One pair: two fresh servers, alike but for the pages, living through the same seconds. Both are warmed
 * up with the storm at once (`pageCount` pages opened on one of them half a second in), then both are
 * stormed at once for the measured window, so that whatever else the machine does in those seconds
 * (other tenants, frequency, the storm's own client) falls on both alike. Each server's CPU per
 * rebalance in the window.
 */
async function pairWindow(
  ratePerS: number,
  warmMs: number,
  durationMs: number,
  pageCount: number,
  withFirst: boolean,
): Promise<{ withoutUs: number; withUs: number; mainAddedUs: number }> {
  const aborts = Array.from({ length: pageCount }, () => new AbortController());
  const started: StormedServer[] = [];
  try {
    // Spawned one after the other (alternating which first), so neither starts while the other loads.
    for (let i = 0; i < 2; i++) started.push(await startStormed());
    const [withPages, without] = withFirst ? started : [started[1], started[0]];
    // Warm-up (JIT, buffers), and the pages opened once the storm has made groups. It must be long enough
    // for V8 to have compiled the hot paths: after 2 s, V8's compiler threads were still optimizing some
    // 375 functions during an 8 s window (--trace-opt), a one-time cost that falls more on the server with
    // pages, which has more code to compile.
    const warming = Promise.all(started.map((s) => storm(s.address, ratePerS, warmMs)));
    await sleep(500);
    const pages = await Promise.all(
      aborts.map((a) => openPage(`http://${withPages.adminAddress}`, a.signal)),
    );
    await warming;
    // Both in the order they were spawned, which alternates, so that neither server's storm is always
    // the one started (and its CPU read) first.
    const pids = started.map((s) => s.cohort.child.pid!);
    const before = pids.map(cpuSecondsOf);
    const made = await Promise.all(started.map((s) => storm(s.address, ratePerS, durationMs)));
    const after = pids.map(cpuSecondsOf);
    const perRebalanceUs = (server: StormedServer, part: keyof ProcessCpu): number => {
      const i = started.indexOf(server);
      return ((after[i][part] - before[i][part]) * 1e6) / made[i];
    };
    const withoutUs = perRebalanceUs(without, 'all');
    const withUs = perRebalanceUs(withPages, 'all');
    const mainAddedUs = perRebalanceUs(withPages, 'main') - perRebalanceUs(without, 'main');
    for (const a of aborts) a.abort();
    await Promise.all(pages.map((p) => p.reading));
    return { withoutUs, withUs, mainAddedUs };
  } finally {
    for (const a of aborts) a.abort();
    await Promise.all(started.map((s) => s.cohort.kill()));
  }
}

/** `pairs` pairs (see the header and `pairWindow`), alternating which of the two is spawned first. */
async function pageCpu(
  ratePerS: number,
  warmMs: number,
  durationMs: number,
  pairs: number,
  pageCount: number,
): Promise<CpuPair[]> {
  const results: CpuPair[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    const withFirst = pair % 2 === 1;
    const window = await pairWindow(ratePerS, warmMs, durationMs, pageCount, withFirst);
    const { withoutUs, withUs, mainAddedUs } = window;
    const result = { ...window, share: (withUs - withoutUs) / withoutUs };
    console.log(
      `  pair ${pair + 1}/${pairs} (${withFirst ? 'with' : 'without'} spawned first): ` +
        `${withoutUs.toFixed(0)} µs without, ${withUs.toFixed(0)} µs with: ` +
        `${result.share >= 0 ? '+' : ''}${(result.share * 100).toFixed(1)}% ` +
        `(main thread ${mainAddedUs >= 0 ? '+' : ''}${mainAddedUs.toFixed(0)} µs)`,
    );
    results.push(result);
  }
  return results;
}

async function main(): Promise<void> {
  const only = (
    process.argv.find((a) => a.startsWith('--only='))?.slice(7) ?? 'render,rebalance,cpu,board,history'
  ).split(',');
  const figures: Record<string, number> = {};
  if (only.includes('render') || only.includes('rebalance')) Object.assign(figures, await inBrowser());
  if (only.includes('cpu')) {
    const rate = option('storm-rate', 100);
    const made = await checkPageRequests(rate, 3_000);
    console.log(
      `a real page's requests (Chromium), all made by the readers, none repeated: ${made.join(', ')}`,
    );
    const pageCount = option('pages', 10);
    const pairs = await pageCpu(
      rate,
      option('warm-ms', 10_000),
      option('storm-ms', 8_000),
      option('pairs', 6),
      pageCount,
    );
    const shares = pairs.map((p) => p.share * 100);
    const share = median(shares);
    const percent = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(1)}%`;
    const withoutUs = median(pairs.map((p) => p.withoutUs));
    const withUs = median(pairs.map((p) => p.withUs));
    console.log(
      `server CPU per rebalance at ${rate} rebalances/s, median of ${pairs.length} pairs: ` +
        `${withoutUs.toFixed(0)} µs without pages, ${withUs.toFixed(0)} µs with ${pageCount} open; ` +
        `what the pages add: median ${percent(share)} (pairs from ${percent(Math.min(...shares))} ` +
        `to ${percent(Math.max(...shares))}); of what they add, the main thread's: median ` +
        `${median(pairs.map((p) => p.mainAddedUs)).toFixed(0)} µs a rebalance`,
    );
    const tenth = (x: number): number => Math.round(x * 10) / 10;
    Object.assign(figures, {
      cpuPerRebalanceWithoutPagesUs: Math.round(withoutUs),
      cpuPerRebalanceWith10PagesUs: Math.round(withUs),
      tenPagesCpuSharePercent: tenth(share),
      tenPagesCpuShareMinPercent: tenth(Math.min(...shares)),
      tenPagesCpuShareMaxPercent: tenth(Math.max(...shares)),
      tenPagesCpuRatio: Math.round(median(pairs.map((p) => p.withUs / p.withoutUs)) * 1000) / 1000,
      // The main thread's part of what the pages add (the rest falls on V8's and libuv's threads).
      tenPagesMainThreadAddedUs: Math.round(median(pairs.map((p) => p.mainAddedUs))),
      cpuPairs: pairs.length,
      // The key names say ten; this is how many the run opened (--pages).
      cpuPages: pageCount,
    });
  }
  if (only.includes('board')) {
    const pageCount = option('pages', 10);
    console.log(`the board and ${pageCount} page streams in this process (no gRPC, no sockets):`);
    const board = await boardStorm(pageCount, option('board-rounds', 6), option('board-cycles', 1_500));
    console.log(
      `  a cycle (two rebalances): ${board.withoutUs.toFixed(1)} µs alone, ${board.withUs.toFixed(1)} µs ` +
        `with them: median +${board.addedUsPerCycle.toFixed(1)} µs (+${(board.addedShare * 100).toFixed(0)}% ` +
        `of the coordinator's own JavaScript); ${board.writesPerPageSecond.toFixed(2)} writes a page a second`,
    );
    Object.assign(figures, {
      boardCycleAloneUs: Math.round(board.withoutUs * 10) / 10,
      boardCycleWithPagesUs: Math.round(board.withUs * 10) / 10,
      boardAddedUsPerCycle: Math.round(board.addedUsPerCycle * 10) / 10,
      boardCycleRatio: Math.round((board.withUs / board.withoutUs) * 1000) / 1000,
    });
  }
  if (only.includes('history')) {
    const groups = option('history-groups', 1_000);
    console.log(`the history the server keeps with no page open (this process, against none, same run):`);
    const h = await historyCost(option('board-rounds', 6), option('board-cycles', 1_500), groups);
    console.log(
      `  storm cycle (two rebalances): ${h.stormAloneUs.toFixed(1)} µs without, ${h.stormWithHistoryUs.toFixed(1)} µs ` +
        `with history (+${(h.stormWithHistoryUs - h.stormAloneUs).toFixed(1)} µs); lag round over ${groups} groups ` +
        `whose lag moves every second: ${h.lagRoundWithoutUs.toFixed(0)} µs without, ${h.lagRoundWithUs.toFixed(0)} µs ` +
        `with (${((h.lagRoundWithUs - h.lagRoundWithoutUs) / groups).toFixed(1)} µs a group a second); heap once every ` +
        `list is full: ${(h.bytesPerGroup / 1024).toFixed(1)} KiB a group`,
    );
    Object.assign(figures, {
      historyStormCycleWithoutUs: Math.round(h.stormAloneUs * 10) / 10,
      historyStormCycleWithUs: Math.round(h.stormWithHistoryUs * 10) / 10,
      historyLagRoundWithoutUs: Math.round(h.lagRoundWithoutUs),
      historyLagRoundWithUs: Math.round(h.lagRoundWithUs),
      historyGroups: groups,
      historyBytesPerGroup: Math.round(h.bytesPerGroup),
    });
  }
  console.log(JSON.stringify(figures));
}

/** Figures 1 and 2, in headless chromium against a server in this process. */
async function inBrowser(): Promise<Record<string, number>> {
  const rounds = option('rounds', 5);
  const rebalances = option('rebalances', 100);
  const dataDir = mkdtempSync(join(tmpdir(), 'cohort-bench-page-'));
  const server = createServer(
    createConfig({
      dataDir,
      listen: '127.0.0.1:0',
      adminListen: '127.0.0.1:0',
      groupInitialRebalanceDelayMs: 0,
    }),
    { logger: pino({ level: 'silent' }) },
  );
  const { port } = await server.start();
  await server.ready();
  const target = `127.0.0.1:${port}`;
  const url = server.adminAddress!.url;
  const browser = await launchChromium();
  const clients: CohortClient[] = [];
  const newClient = (clientId: string): CohortClient => {
    const c = new CohortClient({ address: target, clientId });
    clients.push(c);
    return c;
  };
  try {
    const admin = newClient('bench-admin');
    await admin.admin().createTopics([{ name: TOPIC, numPartitions: 1 }]);
    // 1,000 groups, each made by a commit outside group membership (no member to keep alive).
    const raw = groupCoordinatorClient(target);
    for (let i = 0; i < GROUPS; i++) {
      await raw.offsetCommit(offsetCommitRequest(`bench-group-${String(i).padStart(4, '0')}`, 0, TOPIC));
    }
    raw.close();

    const page = await browser.newPage();
    const renders: number[] = [];
    for (let round = 0; round < rounds; round++) {
      await page.goto(`${url}/`);
      const handle = await page.waitForFunction(
        (n) => {
          const g = globalThis as unknown as InPage;
          const listed = Number(g.document.querySelector('#groups-table')?.getAttribute('aria-rowcount'));
          return listed >= n + 1 && g.document.querySelectorAll('#groups-body tr[data-group]').length > 0
            ? g.performance.now()
            : false;
        },
        { polling: 'raf', timeout: 30_000 },
        GROUPS,
      );
      renders.push(Math.round((await handle.jsonValue()) as number));
    }
    renders.sort((a, b) => a - b);
    console.log(
      `first render of ${GROUPS} groups: median ${percentile(renders, 50)} ms (rounds ${renders.join(', ')})`,
    );

    // Rebalances: the page shows one group; a second member joins and leaves.
    const groupId = 'bench-rebalancing';
    const stayer = newClient('bench-stayer').join({
      groupId,
      topics: [],
      sessionTimeoutMs: 30_000,
      heartbeatIntervalMs: 20,
    });
    await new Promise((resolve) => stayer.once('assigned', resolve));
    const completedAt = new Map<number, number>();
    const listeners: ((event: GroupWatchEvent) => void)[] = [];
    const watch = newClient('bench-watch').watchGroups([groupId]);
    const watching = (async () => {
      for await (const event of watch as AsyncIterable<GroupWatchEvent>) {
        if (event.reason === 'rebalance-completed')
          completedAt.set(event.group.generationId, event.timestampMs);
        for (const l of listeners) l(event);
      }
    })().catch(() => undefined);
    // Where the time goes (bench instrumentation only): when the server wrote each generation's first
    // frame, when the page's stream reader decoded it, GC pauses here and long tasks in the page.
    const written = new Map<number, number>();
    const write = ServerResponse.prototype.write;
    ServerResponse.prototype.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
      if (typeof chunk === 'string' && chunk.includes('"bench-rebalancing"')) {
        const nowMs = Date.now();
        for (const generation of generationsIn(chunk))
          if (!written.has(generation)) written.set(generation, nowMs);
      }
      return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof write;
    const gcPauses: [number, number][] = [];
    const gcObserver = new PerformanceObserver((list) => {
      for (const entry of list.getEntries())
        gcPauses.push([performance.timeOrigin + entry.startTime, entry.duration]);
    });
    gcObserver.observe({ entryTypes: ['gc'] });
    await page.evaluateOnNewDocument((source: string) => {
      const g = globalThis as unknown as InPage & {
        TextDecoder: { prototype: { decode(...args: unknown[]): string } };
        PerformanceObserver: new (
          cb: (list: { getEntries(): { startTime: number; duration: number }[] }) => void,
        ) => {
          observe(options: object): void;
        };
      };
      const pattern = new RegExp(source, 'g');
      g.arrived = {};
      g.longTasks = [];
      const decode = g.TextDecoder.prototype.decode;
      g.TextDecoder.prototype.decode = function (this: unknown, ...args: unknown[]): string {
        const text = decode.apply(this, args);
        const nowMs = Date.now();
        for (const m of text.matchAll(pattern)) g.arrived![m[1]] ??= nowMs;
        return text;
      };
      new g.PerformanceObserver((list) => {
        for (const e of list.getEntries())
          g.longTasks!.push([g.performance.timeOrigin + e.startTime, e.duration]);
      }).observe({ entryTypes: ['longtask'] });
    }, FRAME_GENERATIONS.source);
    // A new document (not a hash change of the render rounds' one), so that the hooks above run in it.
    await page.goto('about:blank');
    await page.goto(`${url}/#group=${encodeURIComponent(groupId)}`);
    await page.waitForSelector('[data-testid=group-generation]');
    await page.evaluate(() => {
      const g = globalThis as unknown as InPage;
      g.seen = {};
      const record = (): void => {
        const text = g.document.querySelector('[data-testid=group-generation]')?.textContent;
        if (text !== null && text !== undefined && g.seen![text] === undefined) g.seen![text] = Date.now();
      };
      new g.MutationObserver(record).observe(g.document.querySelector('#detail'), {
        childList: true,
        subtree: true,
        characterData: true,
      });
    });
    /** The latest Stable generation the server completed, and its member count. */
    let stable = { generationId: stayer.generationId, members: 1 };
    const stableChanged = new Set<() => void>();
    const onStable = (event: GroupWatchEvent): void => {
      if (event.reason !== 'rebalance-completed') return;
      stable = { generationId: event.group.generationId, members: event.group.members.length };
      for (const wake of stableChanged) wake();
    };
    const stableWith = (members: number, after: number): Promise<number> =>
      new Promise((resolve) => {
        const check = (): void => {
          if (stable.members !== members || stable.generationId <= after) return;
          stableChanged.delete(check);
          resolve(stable.generationId);
        };
        stableChanged.add(check);
        check();
      });
    listeners.push(onStable);
    let visitor: CohortClient | undefined;
    let generation = stable.generationId;
    // The page's main-thread time by kind over the rebalances (Chromium's own counters, in seconds).
    const cdp = await page.createCDPSession();
    await cdp.send('Performance.enable');
    const pageMetrics = async (): Promise<Map<string, number>> => {
      const { metrics } = await cdp.send('Performance.getMetrics');
      return new Map(metrics.map((m) => [m.name, m.value]));
    };
    const metricsBefore = await pageMetrics();
    const latencies: number[] = [];
    const breakdowns: Breakdown[] = [];
    for (let i = 0; i < rebalances; i++) {
      if (i % 2 === 0) {
        visitor = new CohortClient({ address: target, clientId: 'bench-visitor' });
        visitor.join({ groupId, topics: [], sessionTimeoutMs: 30_000, heartbeatIntervalMs: 20 });
      } else {
        await visitor!.close();
        visitor = undefined;
      }
      // A cooperative assignor may take a follow-up rebalance: the step ends at the Stable generation
      // with the expected members, and that generation's completion is what the page must show.
      generation = await stableWith(i % 2 === 0 ? 2 : 1, generation);
      await page.waitForFunction(
        (gen) => (globalThis as unknown as InPage).seen![String(gen)] !== undefined,
        { timeout: 30_000 },
        generation,
      );
      const shown = await page.evaluate(
        (gen) => (globalThis as unknown as InPage).seen![String(gen)],
        generation,
      );
      const completed = completedAt.get(generation)!;
      latencies.push(shown - completed);
      const arrived = await page.evaluate(
        (gen) => (globalThis as unknown as InPage).arrived![String(gen)],
        generation,
      );
      const wrote = written.get(generation) ?? Number.NaN;
      breakdowns.push({
        generation,
        serverMs: wrote - completed,
        transportMs: arrived - wrote,
        pageMs: shown - arrived,
        totalMs: shown - completed,
        serverGcMs: overlapMs(gcPauses, completed, shown),
        pageLongTaskMs: 0,
      });
    }
    await visitor?.close();
    const metricsAfter = await pageMetrics();
    const pageSeconds: Record<string, number> = {};
    for (const name of [
      'TaskDuration',
      'ScriptDuration',
      'LayoutDuration',
      'RecalcStyleDuration',
      'LayoutCount',
    ]) {
      pageSeconds[name] = Number(((metricsAfter.get(name) ?? 0) - (metricsBefore.get(name) ?? 0)).toFixed(3));
    }
    console.log(`page main thread during the rebalances: ${JSON.stringify(pageSeconds)}`);
    await cdp.detach();
    gcObserver.disconnect();
    ServerResponse.prototype.write = write;
    const longTasks = await page.evaluate(() => (globalThis as unknown as InPage).longTasks!);
    for (const [i, b] of breakdowns.entries()) {
      const completed = completedAt.get(b.generation)!;
      breakdowns[i] = { ...b, pageLongTaskMs: overlapMs(longTasks, completed, completed + b.totalMs) };
    }
    const stage = (key: keyof Breakdown): string => {
      const values = breakdowns.map((b) => b[key]).sort((a, b) => a - b);
      return `${key} median ${percentile(values, 50)} p99 ${percentile(values, 99)}`;
    };
    console.log(
      `stages: ${(['serverMs', 'transportMs', 'pageMs', 'serverGcMs', 'pageLongTaskMs'] as const).map(stage).join('; ')}`,
    );
    console.log('slowest 5:');
    for (const b of [...breakdowns].sort((x, y) => y.totalMs - x.totalMs).slice(0, 5))
      console.log(`  ${JSON.stringify(b)}`);
    latencies.sort((a, b) => a - b);
    console.log(
      `rebalance completed → shown: ${latencies.length} rebalances, median ${percentile(latencies, 50)} ms, ` +
        `p99 ${percentile(latencies, 99)} ms, max ${latencies[latencies.length - 1]} ms`,
    );
    void watching;
    return {
      firstRender1000GroupsMedianMs: percentile(renders, 50),
      rebalanceToPageMedianMs: percentile(latencies, 50),
      rebalanceToPageP99Ms: percentile(latencies, 99),
      rebalances: latencies.length,
      pageLayoutSecondsDuringRebalances: pageSeconds.LayoutDuration,
      pageTaskSecondsDuringRebalances: pageSeconds.TaskDuration,
    };
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await browser.close();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
