/**
 * bench:live-page — the admin page in headless chromium (Debian's, driven by puppeteer-core), against a
 * real server in this process:
 *
 * 1. First render of the groups table with 1,000 groups: from the page's navigation start to the moment
 *    all 1,000 rows are in the table (performance.now() in the page, checked every animation frame), over
 *    `--rounds` reloads. Goal ≤ 1 s.
 * 2. Time from a rebalance completing to the page showing it: one SDK member stays in a group; a second
 *    joins and leaves, `--rebalances` times in all. For each generation, the server's wall clock at its
 *    `rebalance-completed` event (from a WatchGroups watch) against the page's wall clock when its
 *    generation card shows that generation (a MutationObserver). Both clocks are this machine's. Goal:
 *    median and p99 ≤ 250 ms.
 *
 * 3. Server CPU that open pages cost during a rebalance storm: a server in a child process, 20 groups
 *    each cycling JoinGroup → SyncGroup → LeaveGroup over raw gRPC (two rebalances a cycle: one completed,
 *    one emptied) paced at `--storm-rate` rebalances/s for `--storm-ms`; first with no page ever opened,
 *    then with 10 streams open (fetch readers: a page costs the server the same whatever reads it). The
 *    child's CPU (/proc/PID/stat) per rebalance, and what the pages add as a share of the run without.
 *    Goal: ≤ 5% with 10 pages at 100 rebalances/s.
 *
 * Run with `npm run bench:live-page`. Options: `--rounds=N` (default 5), `--rebalances=N` (default 100),
 * `--storm-rate=N` (default 100), `--storm-ms=N` (default 10,000), `--only=render,rebalance,cpu`.
 * The last line of output is a JSON object of the figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { CohortClient, type GroupWatchEvent } from '../src';
import { createConfig } from '../src/config';
import { createServer } from '../src/server';
import { readFileSync } from 'node:fs';
import { launchChromium } from '../test/support/chromium';
import { groupCoordinatorClient } from '../test/support/grpc-clients';
import { spawnCohort } from '../test/support/spawn-cohort';

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
    querySelector(selector: string): { textContent: string | null } | null;
  };
  readonly performance: { now(): number };
  readonly MutationObserver: new (callback: () => void) => {
    observe(target: unknown, options: object): void;
  };
  seen?: Record<string, number>;
}

/** CPU seconds (user + system) the process has used, from /proc (clock ticks of 10 ms). */
function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the storm for `durationMs` at `ratePerS` rebalances/s; returns the rebalances made. */
async function storm(target: string, ratePerS: number, durationMs: number): Promise<number> {
  const workers = 20;
  const cyclePeriodMs = (workers * 2 * 1000) / ratePerS;
  const endMs = Date.now() + durationMs;
  let rebalances = 0;
  const client = groupCoordinatorClient(target);
  const protocols = [{ name: 'range', metadata: Buffer.alloc(0) }];
  const join = {
    groupInstanceId: '',
    sessionTimeoutMs: 30_000,
    rebalanceTimeoutMs: 30_000,
    protocolType: 'consumer',
    protocols,
    clientId: 'storm',
    reason: '',
  };
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const groupId = `storm-${w}`;
      while (Date.now() < endMs) {
        const started = Date.now();
        const first = await client.joinGroup({ ...join, groupId, memberId: '' });
        const joined = await client.joinGroup({ ...join, groupId, memberId: first.memberId });
        await client.syncGroup({
          groupId,
          generationId: joined.generationId,
          memberId: joined.memberId,
          groupInstanceId: '',
          protocolType: 'consumer',
          protocolName: 'range',
          assignments: [{ memberId: joined.memberId, assignment: Buffer.alloc(0) }],
        });
        await client.leaveGroup({
          groupId,
          members: [{ memberId: joined.memberId, groupInstanceId: '', reason: '' }],
        });
        rebalances += 2;
        await sleep(Math.max(0, cyclePeriodMs - (Date.now() - started)));
      }
    }),
  );
  client.close();
  return rebalances;
}

/** Server CPU per rebalance without pages, then with 10 open streams, on a server in a child process. */
async function pageCpu(ratePerS: number, durationMs: number): Promise<{ withoutUs: number; withUs: number }> {
  const cohort = spawnCohort(['--listen', '127.0.0.1:0', '--group-initial-rebalance-delay-ms', '0']);
  try {
    const listening = (await cohort.waitForLog('cohort listening')) as unknown as {
      address: string;
      adminAddress: string;
    };
    const pid = cohort.child.pid!;
    await storm(listening.address, ratePerS, 2_000); // warm-up: JIT, buffers
    const measure = async (): Promise<number> => {
      const before = cpuSecondsOf(pid);
      const made = await storm(listening.address, ratePerS, durationMs);
      return ((cpuSecondsOf(pid) - before) * 1e6) / made;
    };
    const withoutUs = await measure();
    const aborts = Array.from({ length: 10 }, () => new AbortController());
    const readers = aborts.map(async (abort) => {
      const response = await fetch(`http://${listening.adminAddress}/api/stream`, { signal: abort.signal });
      const reader = response.body!.getReader();
      for (;;) if ((await reader.read()).done) return;
    });
    const withUs = await measure();
    for (const abort of aborts) abort.abort();
    await Promise.allSettled(readers);
    return { withoutUs, withUs };
  } finally {
    await cohort.kill();
  }
}

async function main(): Promise<void> {
  const only = (process.argv.find((a) => a.startsWith('--only='))?.slice(7) ?? 'render,rebalance,cpu').split(
    ',',
  );
  const figures: Record<string, number> = {};
  if (only.includes('render') || only.includes('rebalance')) Object.assign(figures, await inBrowser());
  if (only.includes('cpu')) {
    const rate = option('storm-rate', 100);
    const { withoutUs, withUs } = await pageCpu(rate, option('storm-ms', 10_000));
    const share = (withUs - withoutUs) / withoutUs;
    console.log(
      `server CPU per rebalance at ${rate} rebalances/s: ${withoutUs.toFixed(0)} µs without pages, ` +
        `${withUs.toFixed(0)} µs with 10 open: +${(share * 100).toFixed(1)}%`,
    );
    Object.assign(figures, {
      cpuPerRebalanceWithoutPagesUs: Math.round(withoutUs),
      cpuPerRebalanceWith10PagesUs: Math.round(withUs),
      tenPagesCpuSharePercent: Math.round(share * 1000) / 10,
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
      await raw.offsetCommit({
        groupId: `bench-group-${String(i).padStart(4, '0')}`,
        generationId: -1,
        memberId: '',
        groupInstanceId: '',
        topics: [
          {
            name: TOPIC,
            partitions: [
              { partitionIndex: 0, committedOffset: 0, committedLeaderEpoch: -1, committedMetadata: '' },
            ],
          },
        ],
      });
    }
    raw.close();

    const page = await browser.newPage();
    const renders: number[] = [];
    for (let round = 0; round < rounds; round++) {
      await page.goto(`${url}/`);
      const handle = await page.waitForFunction(
        (n) => {
          const g = globalThis as unknown as InPage;
          return g.document.querySelectorAll('#groups-body tr').length >= n ? g.performance.now() : false;
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
    const latencies: number[] = [];
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
      latencies.push(shown - completedAt.get(generation)!);
    }
    await visitor?.close();
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
