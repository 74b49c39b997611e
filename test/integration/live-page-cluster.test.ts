import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { CohortClient, type GroupMember } from '../../src/client';
import { groupPartitionFor } from '../../src/protocol/group-placement';
import { liveChildProcesses } from '../support/child-processes';
import { launchChromium } from '../support/chromium';
import { CohortCluster } from '../support/cohort-cluster';
import type { PartitionRef } from '../support/log-history';

/**
 * The live page's Cluster panel on a real cluster: etcd and three cohort nodes as processes
 * (test/support/cohort-cluster.ts), a topic of three partitions with three replicas each, and headless
 * Chromium on the admin page of a node that does not lead partition 0. Its leader is killed with SIGKILL: once
 * its session expires the controller elects another leader without it, and the page, not reloaded,
 * shows the new leader, the higher leader epoch, the shrunk ISR (under-replicated) and the dead node as
 * not live, as the watching node's own Metadata says.
 *
 * COHORT_SCREENSHOTS=docs writes the panel's screenshot, after the kill, to
 * docs/images/live-page-cluster.png (docs/live-page.md shows it); otherwise it goes to the temp directory.
 */
const REF: PartitionRef = { topic: 'orders', partition: 0 };
const PARTITIONS = 3;
const SCREENSHOT =
  process.env.COHORT_SCREENSHOTS === 'docs'
    ? join(__dirname, '../../docs/images/live-page-cluster.png')
    : join(tmpdir(), `cohort-live-page-cluster-${process.pid}.png`);
/**
 * Kill → a leader elected without the dead node: the session timeout (3 s), the controller's decision and
 * the watching node applying it; on a loaded 2-core machine that tail has been seconds (cluster-log-faults).
 */
const TAKEOVER_TIMEOUT_MS = 30_000;

/** The page's globals the functions run in it read (this project compiles without the DOM library). */
interface InPage {
  readonly document: {
    querySelector(selector: string): { textContent: string | null } | null;
    querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }>;
  };
  notReloaded?: boolean;
}

let browser: Browser | undefined;
let cluster: CohortCluster | undefined;

beforeAll(async () => {
  // Room for an apt-get install of chromium or etcd on a fresh machine.
  browser = await launchChromium();
  cluster = await CohortCluster.start({ nodeCount: 3, minInsyncReplicas: 2 });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
  expect(liveChildProcesses().filter((c) => /src\/main\.ts|etcd/.test(c.command))).toEqual([]);
}, 60_000);

const ROW = `#cluster tr[data-topic-partition="${REF.topic}/${REF.partition}"]`;

/** The partition row's cells, by test id, as the page shows them now (undefined before the row exists). */
function partitionRow(page: Page): Promise<Record<string, string> | undefined> {
  return page.evaluate((row) => {
    const doc = (globalThis as unknown as InPage).document;
    if (doc.querySelector(row) === null) return undefined;
    const cells: Record<string, string> = {};
    for (const id of ['leader', 'epoch', 'isr', 'status'])
      cells[id] = doc.querySelector(`${row} [data-testid=partition-${id}]`)?.textContent ?? '';
    return cells;
  }, ROW);
}

it("shows a partition's new leader and shrunk ISR on a surviving node's page after kill -9 of its leader, without a reload", async () => {
  const c = cluster!;
  await c.createTopic(REF.topic, PARTITIONS, 3);
  const before = await c.awaitIsr(REF, [1, 2, 3]);
  const watcher = c.nodeIds().find((id) => id !== before.nodeId)!;
  const page = await browser!.newPage();
  await page.goto(`http://${c.node(watcher).adminAddress!}/`);
  await page.waitForFunction(
    (row, leader) =>
      (globalThis as unknown as InPage).document
        .querySelector(`${row} [data-testid=partition-isr]`)
        ?.textContent?.split(', ')
        .sort()
        .join() === '1,2,3' &&
      (globalThis as unknown as InPage).document.querySelector(`${row} [data-testid=partition-leader]`)
        ?.textContent === leader,
    { timeout: 20_000 },
    ROW,
    String(before.nodeId),
  );
  expect(await partitionRow(page)).toMatchObject({ status: 'ok' });
  expect(await page.$eval('[data-testid=cluster-nodes]', (e) => e.textContent)).toBe('3 / 3');
  expect(await page.$eval('[data-testid=cluster-controller]', (e) => e.textContent)).toMatch(/^node [123]$/);
  expect(
    await page.$eval(`#cluster tr[data-node="${watcher}"] [data-testid=node-role]`, (e) => e.textContent),
  ).toContain('this node');
  const epochBefore = Number((await partitionRow(page))!.epoch);
  await page.evaluate(() => ((globalThis as unknown as InPage).notReloaded = true));

  await c.kill(before.nodeId);
  await page.waitForFunction(
    (row, dead) => {
      const doc = (globalThis as unknown as InPage).document;
      const leader = doc.querySelector(`${row} [data-testid=partition-leader]`)?.textContent;
      const isr = doc.querySelector(`${row} [data-testid=partition-isr]`)?.textContent ?? '';
      return leader !== undefined && leader !== 'none' && leader !== dead && !isr.split(', ').includes(dead);
    },
    { timeout: TAKEOVER_TIMEOUT_MS },
    ROW,
    String(before.nodeId),
  );
  const after = (await partitionRow(page))!;
  expect(after.status).toBe('under-replicated');
  expect(Number(after.epoch)).toBeGreaterThan(epochBefore);
  // The page says what the watching node's own Metadata says.
  const metadata = await c.partitionMetadata(watcher, REF);
  expect(after.leader).toBe(String(metadata!.leaderId));
  expect(after.isr.split(', ').sort()).toEqual(metadata!.isrNodes.map(String).sort());
  await page.waitForFunction(
    (dead) =>
      (globalThis as unknown as InPage).document.querySelector(
        `#cluster tr[data-node="${dead}"] [data-testid=node-status]`,
      )?.textContent === 'not live',
    { timeout: TAKEOVER_TIMEOUT_MS },
    String(before.nodeId),
  );
  // Every partition has a replica on the dead node: each leader drops it from its ISR in turn.
  await page.waitForFunction(
    (count) =>
      (globalThis as unknown as InPage).document.querySelector('[data-testid=cluster-under-replicated]')
        ?.textContent === count,
    { timeout: TAKEOVER_TIMEOUT_MS },
    String(PARTITIONS),
  );
  expect(await page.evaluate(() => (globalThis as unknown as InPage).notReloaded)).toBe(true);
  mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
  await (await page.$('#cluster'))!.screenshot({ path: SCREENSHOT });
  expect(readFileSync(SCREENSHOT).subarray(1, 4).toString('latin1')).toBe('PNG');
  await page.close();
}, 120_000);

/** The text of the first element `selector` finds on the page now, or undefined. */
function textOf(page: Page, selector: string): Promise<string | undefined> {
  return page.evaluate(
    (sel) => (globalThis as unknown as InPage).document.querySelector(sel)?.textContent ?? undefined,
    selector,
  );
}

/** Waits until the element `selector` finds holds `text` (one of them, when several are given). */
async function untilText(page: Page, selector: string, text: string | readonly string[], timeoutMs: number) {
  const texts = typeof text === 'string' ? [text] : text;
  await page
    .waitForFunction(
      (sel, wanted) =>
        wanted.includes((globalThis as unknown as InPage).document.querySelector(sel)?.textContent ?? ''),
      { timeout: timeoutMs },
      selector,
      texts,
    )
    .catch(async (error: Error) => {
      throw new Error(
        `${selector} never read ${texts.join(' or ')}: it reads ${await textOf(page, selector)}`,
        {
          cause: error,
        },
      );
    });
}

it('shows every group of the cluster with its coordinator on a node that is not the coordinator, and follows the group when its coordinator is killed', async () => {
  const c = cluster!;
  // The test above leaves a node killed: the walk-through starts from three.
  for (const id of c.nodeIds()) if (!c.runningNodeIds().includes(id)) await c.startNode(id);
  const groupId = 'billing';
  const client = new CohortClient({
    bootstrap: c.nodeIds().map((id) => c.node(id).target),
    clientId: 'live-page',
  });
  try {
    // Two members, each with a session well beyond a coordinator's failover (the node session, 3 s,
    // and an election): the group rides through it Stable, with the same members.
    const members: GroupMember[] = [];
    const assigned = ['a', 'b'].map(
      () =>
        new Promise<void>((resolve) => {
          const member = client.join({
            groupId,
            topics: [REF.topic],
            partitionsPerTopic: new Map([[REF.topic, PARTITIONS]]),
            sessionTimeoutMs: 45_000,
            rebalanceTimeoutMs: 20_000,
            heartbeatIntervalMs: 500,
          });
          member.on('error', () => undefined);
          member.on('assigned', () => resolve());
          members.push(member);
        }),
    );
    await Promise.all(assigned);
    const coordinator = await c.coordinatorOf(groupId);
    const watcher = c.nodeIds().find((id) => id !== coordinator)!;
    const page = await browser!.newPage();
    await page.goto(`http://${c.node(watcher).adminAddress!}/`);

    const row = `#groups-body tr[data-group="${groupId}"]`;
    await untilText(page, `${row} [data-testid=group-coordinator]`, String(coordinator), 20_000);
    // The Cluster panel lists __consumer_offsets: the group's partition, led by its coordinator, who leads
    // some of the topic's partitions.
    const offsetsPartition = `#cluster tr[data-topic-partition="__consumer_offsets/${groupPartitionFor(groupId, 50)}"]`;
    await untilText(page, `${offsetsPartition} [data-testid=partition-leader]`, String(coordinator), 20_000);
    const leads = Number(
      await textOf(page, `#cluster tr[data-node="${coordinator}"] [data-testid=node-leads]`),
    );
    expect(leads).toBeGreaterThan(1);
    await page.click(row);
    await untilText(page, '[data-testid=group-coordinator-node]', `node ${coordinator}`, 10_000);
    await untilText(page, '[data-testid=group-state]', 'Stable', 10_000);
    await page.evaluate(() => ((globalThis as unknown as InPage).notReloaded = true));

    await c.kill(coordinator);
    const next = await c.coordinatorOf(groupId, coordinator, TAKEOVER_TIMEOUT_MS);
    await untilText(page, `${row} [data-testid=group-coordinator]`, String(next), TAKEOVER_TIMEOUT_MS);
    await untilText(
      page,
      `${offsetsPartition} [data-testid=partition-leader]`,
      String(next),
      TAKEOVER_TIMEOUT_MS,
    );
    await untilText(page, '[data-testid=group-coordinator-node]', `node ${next}`, 10_000);
    await untilText(page, '[data-testid=group-state]', 'Stable', TAKEOVER_TIMEOUT_MS);
    expect(await textOf(page, '[data-testid=group-members]')).toBe('2');
    expect(await page.evaluate(() => (globalThis as unknown as InPage).notReloaded)).toBe(true);
    await page.close();
  } finally {
    await client.close();
  }
}, 150_000);
